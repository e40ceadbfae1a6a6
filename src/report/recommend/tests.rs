use super::*;
use crate::run::{self, Options};

/// One real run of the smallest scenario, to copy and reshape.
pub(in crate::report) fn template() -> RunReport {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sc =
        crate::scenario::Scenario::load(&root.join("sims/seed-000-retry-by-post.toml")).unwrap();
    run::run_arm(&sc, 0, "unguarded".parse().unwrap(), &Options::default())
        .unwrap()
        .0
}

/// A run of `server` on `scenario` and `seed` with `failed` of `ops`
/// operations failed, all of `cause`, and migrations of `latency` µs.
pub(in crate::report) fn run_of(
    t: &RunReport,
    (scenario, server, seed): (&str, &str, u64),
    (failed, ops): (u64, u64),
    cause: &str,
    latency: &[(u64, u64)],
) -> RunReport {
    let mut r = t.clone();
    r.scenario = scenario.into();
    r.server = server.into();
    r.seed = seed;
    r.verdict = "pass".into();
    r.failed_expectations.clear();
    r.metrics = Default::default();
    r.metrics.operations = ops;
    r.metrics.ops_failed = failed;
    r.metrics.ops_ok = ops - failed;
    if failed > 0 {
        r.metrics.failures_by_cause.insert(cause.into(), failed);
    }
    r.migration_latency_hist_us = latency.to_vec();
    r
}

fn summary(runs: Vec<RunReport>) -> Summary {
    Summary::from_runs(runs)
}

#[test]
fn the_fewest_failed_per_operation_wins_pooled_over_scenarios() {
    let t = template();
    // keys: 3 of 1,000 + 0 of 10 = 2.97 per 1,000; guarded: 0 of 1,000
    // + 1 of 10 = 0.99 per 1,000; unguarded: 9 of 1,010.
    let s = summary(vec![
        run_of(
            &t,
            ("big", "unguarded", 0),
            (8, 1000),
            "retry_without_key",
            &[],
        ),
        run_of(
            &t,
            ("small", "unguarded", 0),
            (1, 10),
            "retry_without_key",
            &[],
        ),
        run_of(&t, ("big", "keys", 0), (3, 1000), "retry_without_key", &[]),
        run_of(&t, ("small", "keys", 0), (0, 10), "", &[]),
        run_of(&t, ("big", "guarded", 0), (0, 1000), "", &[]),
        run_of(&t, ("small", "guarded", 0), (1, 10), "fin_race", &[]),
    ]);
    let rec = recommend(&s).unwrap();
    let order: Vec<&str> = rec.ranked.iter().map(|x| x.server.as_str()).collect();
    assert_eq!(order, ["guarded", "keys", "unguarded"]);
    assert_eq!(rec.server, "guarded");
    assert_eq!(rec.baseline().unwrap().server, "unguarded");
    assert_eq!(rec.best().failed, 1);
    assert_eq!(rec.best().operations, 1010);
    assert!((rec.best().rate() - 1000.0 / 1010.0).abs() < 1e-9);
    let md = markdown(&s, &Beside::default());
    assert!(
        md.starts_with("## What to deploy\n\n### The answer, by what you control"),
        "{md}"
    );
    assert!(
        md.contains("**On the 2025-11-25 wire**\n\n| you control | deploy |"),
        "{md}"
    );
    assert!(
        md.contains("| the server only | `guarded` with the scenarios' own clients | 0.99 (0.99–0.99, 1 seed) | 8.91 → 0.99: removes 89 % | this run |"),
        "{md}"
    );
    assert!(md.contains("\n**Deploy `guarded`"), "{md}");
    // 9 → 1 failed of the same 1,010 operations: 89% removed.
    assert!(md.contains("it removes 89% of failed operations"), "{md}");
    assert!(
        md.contains("- `fin_race`: 1 (0.99 per 1,000). Removed by"),
        "{md}"
    );
    // keys shows fin_race removed (0 of it): named as evidence.
    assert!(
        md.contains("shown by `keys` with the scenarios' own clients: 0 of it"),
        "{md}"
    );
}

/// A configuration with a little less of a cause than the one to
/// deploy is no evidence of a remedy: it is not named.
#[test]
fn a_configuration_with_a_little_less_of_a_cause_is_not_evidence() {
    let t = template();
    let s = summary(vec![
        run_of(&t, ("a", "unguarded", 0), (60, 1000), "affinity_lost", &[]),
        run_of(&t, ("a", "guarded", 0), (40, 1000), "wrong_replica", &[]),
        run_of(&t, ("b", "guarded", 0), (12, 1000), "affinity_lost", &[]),
        run_of(&t, ("b", "keys", 0), (9, 1000), "affinity_lost", &[]),
        run_of(&t, ("a", "keys", 0), (45, 1000), "wrong_replica", &[]),
    ]);
    let md = markdown(&s, &Beside::default());
    assert!(md.contains("- `affinity_lost`: 12"), "{md}");
    let line = md
        .lines()
        .find(|l| l.starts_with("- `affinity_lost`"))
        .unwrap();
    assert!(!line.contains("shown by"), "{line}");
}

#[test]
fn the_interval_is_the_min_and_max_of_per_seed_rates() {
    let t = template();
    let s = summary(vec![
        run_of(&t, ("a", "guarded", 0), (1, 100), "eviction", &[]),
        run_of(&t, ("b", "guarded", 0), (1, 100), "eviction", &[]),
        run_of(&t, ("a", "guarded", 1), (0, 100), "", &[]),
        run_of(&t, ("b", "guarded", 1), (5, 100), "eviction", &[]),
    ]);
    let best = standings(&s).remove(0);
    // seed 0: 2 of 200 = 10; seed 1: 5 of 200 = 25.
    assert_eq!(best.seed_rates, (10.0, 25.0));
    assert_eq!(best.rate(), 7.0 * 1000.0 / 400.0);
}

/// Among tied configurations the fewest mechanisms come first; at equal
/// mechanisms, the lower p99 migration latency.
#[test]
fn among_the_tied_the_fewest_mechanisms_then_the_lower_costs_come_first() {
    let t = template();
    let s = summary(vec![
        run_of(&t, ("a", "keys", 0), (0, 100), "", &[(900_000, 10)]),
        run_of(&t, ("a", "cancel", 0), (0, 100), "", &[(5_000, 10)]),
        run_of(&t, ("a", "guarded", 0), (0, 100), "", &[(1_000, 10)]),
        run_of(&t, ("a", "unguarded", 0), (0, 100), "", &[(2_000_000, 10)]),
    ]);
    let rec = recommend(&s).unwrap();
    let order: Vec<&str> = rec.ranked.iter().map(|x| x.server.as_str()).collect();
    assert_eq!(order, ["unguarded", "cancel", "keys", "guarded"]);
    assert!(rec.ranked.iter().all(|x| x.tied));
    let md = markdown(&s, &Beside::default());
    assert!(
        md.contains("none fails an operation, and it has the fewest mechanisms"),
        "{md}"
    );
    assert!(md.contains("do not separate them"), "{md}");
    assert!(md.contains("seeds are too few"), "{md}");
    assert!(md.contains("| =1 | `unguarded` (baseline) |"), "{md}");
}

/// A tie is judged by the intervals over seeds, against the best only:
/// `keys` (2 of 1,000 in each of 5 seeds) and `guarded` (0 to 4, mean 2)
/// overlap `cancel`'s (1.8 on average, steady); `unguarded` (30) does not.
#[test]
fn a_tie_is_an_interval_reaching_the_best_and_the_fewest_mechanisms_win_it() {
    let t = template();
    let mut runs = Vec::new();
    for seed in 0..5u64 {
        let g = [0, 4, 2, 1, 3][seed as usize];
        let c = [2, 2, 1, 2, 2][seed as usize];
        runs.push(run_of(
            &t,
            ("a", "guarded", seed),
            (g, 1000),
            "eviction",
            &[],
        ));
        runs.push(run_of(
            &t,
            ("a", "cancel", seed),
            (c, 1000),
            "eviction",
            &[],
        ));
        runs.push(run_of(&t, ("a", "keys", seed), (2, 1000), "eviction", &[]));
        runs.push(run_of(
            &t,
            ("a", "unguarded", seed),
            (30, 1000),
            "eviction",
            &[],
        ));
    }
    let s = summary(runs);
    let rec = recommend(&s).unwrap();
    let order: Vec<(&str, bool)> = rec
        .ranked
        .iter()
        .map(|x| (x.server.as_str(), x.tied))
        .collect();
    // cancel has the lowest rate (1.8); keys and guarded are tied with
    // it; keys and cancel add one mechanism each, so cost orders them.
    assert_eq!(
        order,
        [
            ("cancel", true),
            ("keys", true),
            ("guarded", true),
            ("unguarded", false)
        ]
    );
    let text = text(&s, &Beside::default());
    assert!(text.contains("Tied with it"), "{text}");
    assert!(!text.contains("too few"), "{text}");
}

/// A `--set` the whole comparison shares (`era=2026-07-28`) is the
/// baseline's too; a setting only some runs have is not.
#[test]
fn the_baseline_shares_the_settings_every_run_shares() {
    let t = template();
    let with = |r: RunReport, sets: &[&str]| RunReport {
        overrides: sets.iter().map(|x| x.to_string()).collect(),
        ..r
    };
    let era = ["era=2026-07-28"];
    let s = summary(vec![
        with(run_of(&t, ("a", "guarded", 0), (0, 100), "", &[]), &era),
        with(
            run_of(
                &t,
                ("a", "unguarded", 0),
                (9, 100),
                "cancelled_after_effect",
                &[],
            ),
            &era,
        ),
    ]);
    let rec = recommend(&s).unwrap();
    assert_eq!(rec.baseline().map(|b| b.server.as_str()), Some("unguarded"));
    let mixed = summary(vec![
        with(run_of(&t, ("a", "guarded", 0), (0, 100), "", &[]), &era),
        with(
            run_of(&t, ("a", "unguarded", 0), (9, 100), "eviction", &[]),
            &era,
        ),
        run_of(&t, ("a", "keys", 0), (1, 100), "eviction", &[]),
    ]);
    assert!(recommend(&mixed).unwrap().baseline().is_none());
}

#[test]
fn without_the_baseline_the_report_says_so() {
    let t = template();
    let s = summary(vec![run_of(
        &t,
        ("a", "guarded", 0),
        (2, 100),
        "eviction",
        &[],
    )]);
    let md = markdown(&s, &Beside::default());
    assert!(md.contains("The baseline (`unguarded`"), "{md}");
    assert!(md.contains(remedy("eviction")), "{md}");
}

#[test]
fn every_cause_the_oracle_names_has_a_remedy() {
    for c in crate::oracle::causes::PRECEDENCE {
        assert!(
            REMEDIES.iter().any(|(x, _)| *x == c.as_str()),
            "no remedy for cause {}",
            c.as_str()
        );
    }
}

/// The answer's rows: the server-only row keeps the scenarios' own
/// clients; a summary beside that ran the same scenarios answers the
/// clients row; one that ran other scenarios answers nothing; an era set
/// explicitly is the era's row.
#[test]
fn the_answer_searches_by_what_the_user_controls() {
    let t = template();
    let here = summary(vec![
        retry_run(&t, "unguarded", 50),
        retry_run(&t, "guarded", 20),
    ]);
    let mut keyed = run_of(&t, ("a", "guarded", 0), (1, 1000), "fin_race", &[]);
    keyed.clients = "keys".into();
    let mut elsewhere = run_of(&t, ("b", "keys", 0), (0, 1000), "", &[]);
    elsewhere.clients = "keys".into();
    let mut new_era = keyed.clone();
    new_era.overrides = vec!["era=2026-07-28".into()];
    let beside = Beside {
        dirs: Vec::new(),
        sources: vec![
            ("m".into(), summary(vec![keyed])),
            ("other".into(), summary(vec![elsewhere])),
            ("e".into(), summary(vec![new_era])),
        ],
    };
    let rows = answer::rows(&here, &beside);
    let picked: Vec<String> = rows
        .iter()
        .map(|r| {
            let best = r.best.as_ref().map_or("none".to_string(), |b| {
                format!(
                    "{} {} from {}",
                    b.standing.server, b.standing.clients, b.from
                )
            });
            format!("{:?} {}: {best}", r.control, r.era.as_str())
        })
        .collect();
    assert_eq!(
        picked,
        [
            "Server 2025-11-25: guarded scenario from this run",
            "ServerClients 2025-11-25: guarded keys from m",
            "Everything 2025-11-25: guarded keys from m",
            "Server 2026-07-28: none",
            "ServerClients 2026-07-28: guarded keys from e",
            "Everything 2026-07-28: guarded keys from e",
        ]
    );
    let md = answer::markdown(&here, &beside);
    assert!(
        md.contains("**On the 2026-07-28 wire**\n\n| you control | deploy | failed per 1,000 (95 % interval) | against the baseline | from |\n|---|---|---|---|---|\n| the server only | not run over these scenarios |"),
        "{md}"
    );
    assert!(
        md.contains("`keys` clients: clients that send an `Idempotency-Key`"),
        "{md}"
    );
    assert!(
        md.contains("- server and clients, 2025-11-25: `mcp-chaos compare --servers guarded --clients keys --seeds"),
        "{md}"
    );
}

#[test]
fn a_row_the_baseline_wins_says_to_keep_it() {
    let t = template();
    // One seed each: no interval, so the lower rate wins outright.
    let answer_with_keys_failing = |failed: u64| {
        let s = summary(vec![
            retry_run(&t, "unguarded", 50),
            retry_run(&t, "keys", failed),
        ]);
        answer::markdown(&s, &Beside::default())
    };
    let md = answer_with_keys_failing(60);
    assert!(
        md.contains("| the server only | nothing beats the baseline here: keep `unguarded` with the scenarios' own clients |"),
        "{md}"
    );
    let md = answer_with_keys_failing(40);
    assert!(
        md.contains("| the server only | `keys` with the scenarios' own clients |"),
        "{md}"
    );
    assert!(!md.contains("nothing beats the baseline"), "{md}");
}

/// A run of scenario `a`, seed 0, on `server`: `failed` of 1,000
/// operations failed, all `retry_without_key`.
fn retry_run(t: &RunReport, server: &str, failed: u64) -> RunReport {
    run_of(
        t,
        ("a", server, 0),
        (failed, 1000),
        "retry_without_key",
        &[],
    )
}

/// A comparison beside that ran none of this one's scenarios is no
/// evidence of a remedy, however little of the cause it had; one that
/// ran them is.
#[test]
fn a_comparison_beside_that_ran_other_scenarios_is_not_evidence() {
    let t = template();
    let s = summary(vec![
        run_of(&t, ("field", "unguarded", 0), (9, 10), "stale_session", &[]),
        run_of(&t, ("field", "guarded", 0), (9, 10), "stale_session", &[]),
    ]);
    let line_with = |beside: &Beside| {
        let md = markdown(&s, beside);
        md.lines()
            .find(|l| l.starts_with("- `stale_session`"))
            .map(String::from)
            .unwrap()
    };
    for (scenario, shown) in [("other", false), ("field", true)] {
        let there = summary(vec![run_of(&t, (scenario, "keys", 0), (0, 1000), "", &[])]);
        let beside = Beside {
            dirs: vec![("results/matrix".into(), standings(&there))],
            sources: vec![("results/matrix".into(), there)],
        };
        let line = line_with(&beside);
        assert_eq!(line.contains("shown by"), shown, "{scenario}: {line}");
    }
}

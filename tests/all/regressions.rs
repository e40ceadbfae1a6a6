//! Regressions: a shrunk scenario keeps its violation with fewer faults,
//! and every scenario of `sims/regressions/` holds its expectations.

use crate::simulate::{path, scenario, simulate_scenario};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::collections::BTreeSet;

#[test]
fn shrink_keeps_the_violation_with_fewer_faults() {
    // A seeded failure of the unguarded server: it must not duplicate, but
    // half-open makes it.
    let mut s = scenario("half-open.toml");
    let mut e = mcp_chaos::scenario::Expect::default();
    e.max.insert("duplicate_side_effects".into(), 0);
    s.expect.set("unguarded", e);
    let shrunk = mcp_chaos::shrink::shrink(&s, 0, Variant::Unguarded).unwrap();
    assert!(
        shrunk.faults_after < shrunk.faults_before,
        "{} → {}",
        shrunk.faults_before,
        shrunk.faults_after
    );
    assert_eq!(shrunk.faults_after, shrunk.scenario.faults.explicit.len());
    assert!(
        shrunk.clients.1 < shrunk.clients.0,
        "clients {:?}",
        shrunk.clients
    );
    // The shrunk scenario still fails the same way: the pinned expectation
    // (duplicates at least 1) holds, the original one (at most 0) would not.
    let r = simulate_scenario(
        &shrunk.scenario,
        "regressions/shrunk.toml",
        0,
        Variant::Unguarded,
        false,
    );
    r.check(
        r.report.failed_expectations.is_empty(),
        "the shrunk scenario reproduces the violation",
    );
    r.check(r.metric("duplicate_side_effects") >= 1, "still duplicates");
}

/// Every scenario of `sims/regressions/` holds its expectations, at seed
/// 0, under every arm it names: the arm its `[regression]` table pins (as
/// `shrink` writes it) and every arm an `[expect.<arm>]` table names, an
/// `[expect.<era>.<arm>]` table in that era. An empty directory, or a file
/// that names no arm, fails: there would be nothing to hold.
#[test]
fn regressions_hold() {
    let dir = path("regressions");
    let files = mcp_chaos::cli::scenario_files(&dir)
        .unwrap_or_else(|e| panic!("{e}: no regression is held"));
    assert!(
        !files.is_empty(),
        "{} holds no scenario file: no regression is held",
        dir.display()
    );
    let mut held = 0;
    for f in files {
        let name = format!("regressions/{}", f.file_name().unwrap().to_str().unwrap());
        for (arm, era) in named_arms(&name, &scenario(&name)) {
            let opts = Options {
                sets: era.iter().map(|e| ("era".to_string(), e.clone())).collect(),
                ..Options::default()
            };
            let at = format!("sims/{name}");
            let repro = run::repro_command(&at, 0, arm, &opts);
            let (r, _) = run::run_arm(&scenario(&name), 0, arm, &opts)
                .unwrap_or_else(|e| panic!("{name} under {arm}: {e}\nreproduce: {repro}"));
            assert!(
                r.failed_expectations.is_empty(),
                "{name} under {arm}: {:?}\nreproduce: {repro}",
                r.failed_expectations
            );
            eprintln!(
                "{name}: held under {arm}{}",
                era.map(|e| format!(" in {e}")).unwrap_or_default()
            );
            held += 1;
        }
    }
    eprintln!("{held} regression runs held");
}

/// The runs a regression file asks for: each arm it names, with the era
/// to run it in when a table names one other than the file's own. An arm
/// this build cannot run (rmcp's, without the feature) is left out; a
/// name that is no arm fails, and so does a file that names none.
fn named_arms(name: &str, s: &Scenario) -> BTreeSet<(Arm, Option<String>)> {
    let mut named: Vec<(String, Option<String>)> = Vec::new();
    if let Some(reg) = &s.regression {
        named.push((reg.server.clone(), None));
    }
    for (table, _) in s.expect.all() {
        match table.split_once('.') {
            Some((era, arm)) if era != s.era.as_str() => {
                named.push((arm.to_string(), Some(era.to_string())))
            }
            Some((_, arm)) => named.push((arm.to_string(), None)),
            None => named.push((table, None)),
        }
    }
    assert!(
        !named.is_empty(),
        "{name}: no [regression] table and no [expect.<arm>] table: it names no arm to hold"
    );
    let mut runs = BTreeSet::new();
    for (arm, era) in named {
        match arm.parse::<Arm>() {
            Ok(a) => {
                runs.insert((a, era));
            }
            Err(_) if Arm::NAMES.contains(&arm.as_str()) => {
                eprintln!("{name}: {arm} is not in this build, not run");
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
    runs
}

/// The arms `regressions_hold` runs for a file: the `[regression]`
/// table's, each `[expect.<arm>]` table's, and an era table's in its era;
/// each once.
#[test]
fn a_regression_runs_every_arm_it_names() {
    use mcp_chaos::scenario::{Expect, Regression, RegressionKind};
    use mcp_chaos::settings::Era;
    let mut s = scenario("seed-000-retry-by-post.toml");
    s.regression = Some(Regression {
        kind: RegressionKind::Bug,
        server: "keys".into(),
        metrics: vec!["ops_failed".into()],
    });
    s.expect.set("cancel", Expect::default());
    s.expect.set("keys", Expect::default());
    s.expect.1.insert(
        Era::Y2026,
        [("guarded".to_string(), Expect::default())].into(),
    );
    let runs: Vec<(String, Option<String>)> = named_arms("named", &s)
        .into_iter()
        .map(|(a, e)| (a.as_str().to_string(), e))
        .collect();
    let want = [
        ("guarded", None),
        ("guarded", Some("2026-07-28")),
        ("unguarded", None),
        ("keys", None),
        ("cancel", None),
    ];
    let mut want: Vec<(String, Option<String>)> = want
        .iter()
        .map(|(a, e)| (a.to_string(), e.map(str::to_string)))
        .collect();
    let mut runs = runs;
    want.sort();
    runs.sort();
    assert_eq!(runs, want);
}

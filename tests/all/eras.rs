//! The 2026-07-28 wire in the simulation: what each arm does with a close
//! (cancel on every arm; guarded keeps a keyed execution whose effect is
//! taken), the keyless refusal, rmcp's stateless path agreeing with the
//! model, same seed same bytes, what is not applicable, and `compare
//! --eras`.

use crate::cli::{code, run, scratch};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{run_arm, Options, Profile, RunReport, NOT_APPLICABLE};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::settings::Era;
use std::path::Path;

fn scenario(path: &str) -> Scenario {
    Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

pub(crate) fn go(
    s: &Scenario,
    seed: u64,
    arm: &str,
    clients: Option<Profile>,
    sets: &[(&str, &str)],
) -> RunReport {
    let opts = Options {
        clients,
        sets: sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        deployment: String::new(),
    };
    let arm: Arm = arm.parse().unwrap();
    run_arm(s, seed, arm, &opts)
        .unwrap_or_else(|e| panic!("{} seed {seed} {arm}: {e}", s.name))
        .0
}

const CAUSE: &str = "sims/causes/cancelled_after_effect.toml";

/// A drop after the first chunk: unguarded and keys cancel the execution
/// whose effect was taken and run it again on the re-issue; guarded with a
/// key keeps it past the close and answers the re-issue with its result
/// (degraded: the client missed its progress), and a transactional effect
/// makes the cancel harmless on every arm.
#[test]
fn a_close_cancels_on_every_arm_and_guarded_keeps_a_keyed_effect() {
    let s = scenario(CAUSE);
    assert_eq!(s.era, Era::Y2026);
    for arm in ["unguarded", "keys"] {
        let r = go(&s, 0, arm, None, &[]);
        assert_eq!(r.metrics.ops_failed, 1, "{arm}");
        assert_eq!(
            r.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
            vec!["cancelled_after_effect"],
            "{arm}"
        );
        assert_eq!(r.metrics.extra_executions, 1, "{arm}: the tool ran twice");
    }
    let g = go(&s, 0, "guarded", None, &[]);
    assert_eq!((g.metrics.ops_failed, g.metrics.ops_degraded), (0, 1));
    assert_eq!(
        g.metrics.extra_executions, 0,
        "one execution, kept past the close"
    );
    let tx = [("server.effects", "transactional")];
    for arm in ["unguarded", "keys", "guarded"] {
        let r = go(&s, 0, arm, None, &tx);
        assert_eq!(
            r.metrics.ops_failed, 0,
            "{arm}: a cancelled execution commits nothing"
        );
    }
}

/// Guarded refuses a keyless call to a tool that is not idempotent: plain
/// clients never run it (the operation is lost, not duplicated).
#[test]
fn guarded_refuses_keyless_calls_on_the_new_wire() {
    let s = scenario(CAUSE);
    let r = go(&s, 0, "guarded", Some(Profile::Plain), &[]);
    assert_eq!(r.metrics.ops_failed, 1);
    assert_eq!(r.metrics.ops_duplicated, 0);
    assert_eq!(r.metrics.extra_executions, 0);
    assert!(r.metrics.ops_lost == 1, "{:?}", r.metrics);
}

/// rmcp 3.11's stateless path cancels on disconnect: on the same fault
/// plan it fails as the `unguarded` model does, for the same cause.
#[cfg(feature = "rmcp")]
#[test]
fn rmcp_stateless_agrees_with_the_unguarded_model() {
    let s = scenario(CAUSE);
    let model = go(&s, 0, "unguarded", None, &[]);
    let sdk = go(&s, 0, "rmcp", None, &[]);
    assert_eq!(
        sdk.metrics.failures_by_cause,
        model.metrics.failures_by_cause
    );
    let flaky = scenario("sims/flaky-mobile.toml");
    let era = [("era", "2026-07-28")];
    let model = go(&flaky, 0, "unguarded", None, &era);
    let sdk = go(&flaky, 0, "rmcp", None, &era);
    assert_eq!(
        sdk.metrics.ops_failed, model.metrics.ops_failed,
        "flaky-mobile seed 0"
    );
    let n = |r: &RunReport| {
        r.metrics
            .failures_by_cause
            .get("cancelled_after_effect")
            .copied()
    };
    assert!(n(&sdk).is_some_and(|x| x > 0) && n(&model).is_some_and(|x| x > 0));
}

/// Same seed, same bytes on the new wire too; another seed, other bytes.
#[test]
fn the_new_wire_is_deterministic() {
    let s = scenario("sims/half-open.toml");
    let era = [("era", "2026-07-28")];
    let a = go(&s, 3, "guarded", Some(Profile::Keys), &era);
    let b = go(&s, 3, "guarded", Some(Profile::Keys), &era);
    let c = go(&s, 4, "guarded", Some(Profile::Keys), &era);
    assert_eq!(a.trace_sha256, b.trace_sha256);
    assert_ne!(a.trace_sha256, c.trace_sha256);
    let old = go(&s, 3, "guarded", Some(Profile::Keys), &[]);
    assert_ne!(a.trace_sha256, old.trace_sha256, "the era changes the run");
}

/// `cancel` (this era's remedy on the old wire) and transport-switch
/// clients are not applicable on the new wire; `[expect.<arm>]`, written
/// for the scenario's own era, does not apply in another.
#[test]
fn what_is_not_applicable_on_the_new_wire() {
    let era = [("era", "2026-07-28")];
    let flaky = scenario("sims/flaky-mobile.toml");
    assert_eq!(go(&flaky, 0, "cancel", None, &era).verdict, NOT_APPLICABLE);
    let cross = scenario("sims/seed-004-cross-transport.toml");
    assert_eq!(go(&cross, 0, "guarded", None, &era).verdict, NOT_APPLICABLE);
    // The cause scenario expects `cancelled_after_effect` under unguarded
    // in its own era (2026-07-28) and, by `[expect."2025-11-25".unguarded]`,
    // `key_not_honored` on the old wire: each holds in its era.
    let s = scenario(CAUSE);
    let r = go(&s, 0, "unguarded", None, &[("era", "2025-11-25")]);
    assert!(
        r.failed_expectations.is_empty(),
        "{:?}",
        r.failed_expectations
    );
    assert_eq!(
        r.metrics.ops_failed, 1,
        "re-posted on the old wire, its key ignored by unguarded"
    );
    assert!(r.metrics.failures_by_cause.contains_key("key_not_honored"));
    // An era's table is read in its era only: one nothing can meet breaks
    // there and nowhere else.
    let mut strict = s.clone();
    let mut never = mcp_chaos::scenario::Expect::default();
    never.min.insert("operations".into(), 1_000_000);
    strict
        .expect
        .1
        .entry(Era::Y2025)
        .or_default()
        .insert("guarded".into(), never);
    let old = go(&strict, 0, "guarded", None, &[("era", "2025-11-25")]);
    assert_eq!(
        old.failed_expectations.len(),
        1,
        "{:?}",
        old.failed_expectations
    );
    let own = go(&strict, 0, "guarded", None, &[]);
    assert!(
        own.failed_expectations.is_empty(),
        "{:?}",
        own.failed_expectations
    );
}

/// `compare --eras`: one summary per era, each in its directory, and
/// eras.md with both eras, n/a where an arm does not take part, and what
/// to deploy in each.
#[test]
fn compare_eras_sets_the_wires_side_by_side() {
    let dir = scratch("eras");
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(CAUSE),
        sims.join("cause.toml"),
    )
    .unwrap();
    let out = dir.join("out");
    let o = run(&[
        "compare",
        "--sims",
        sims.to_str().unwrap(),
        "--seeds",
        "1",
        "--servers",
        "unguarded,guarded,cancel",
        "--clients",
        "keys",
        "--eras",
        "2025-11-25,2026-07-28",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    for era in ["2025-11-25", "2026-07-28"] {
        assert!(out.join(era).join("summary.json").exists(), "{era}");
        assert!(out.join(era).join("report.html").exists(), "{era}");
    }
    let md = std::fs::read_to_string(out.join("eras.md")).unwrap();
    assert!(md.starts_with("# Eras: 2025-11-25 and 2026-07-28"), "{md}");
    assert!(
        md.contains("| 2026-07-28 | keys | 1000.0 (cancelled_after_effect 1000.0) | 0 | n/a |"),
        "unguarded ran it twice, guarded once, cancel n/a: {md}"
    );
    assert!(
        md.contains("- **2026-07-28**: `guarded` with `keys` clients: 0 failed per 1,000"),
        "{md}"
    );
    // One answer per era, the same in stdout, the era's report.md and
    // eras.md (the era a condition of the line, not a setting).
    let stdout = String::from_utf8_lossy(&o.stdout);
    let said: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("recommendation: deploy "))
        .map(|l| l.split(" — ").next().unwrap())
        .collect();
    assert_eq!(said.len(), 2, "{stdout}");
    for (era, line) in ["2025-11-25", "2026-07-28"].iter().zip(&said) {
        assert!(line.ends_with(&format!(" on the {era} wire")), "{line}");
        let (arm, clients) = (
            line.split(' ').next().unwrap(),
            line.split(" with ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap(),
        );
        let report = std::fs::read_to_string(out.join(era).join("report.md")).unwrap();
        assert!(
            report.contains(&format!(
                "**Deploy `{arm}` with `{clients}` clients on the {era} wire.**"
            )),
            "{era}: {report}"
        );
        assert!(
            md.contains(&format!("- **{era}**: `{arm}` with `{clients}` clients:")),
            "{era}: {md}"
        );
        assert!(md.contains("seeds are too few to separate"), "{md}");
    }
    let page = std::fs::read_to_string(out.join("eras.html")).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(
        page.find("id=\"what-to-deploy\"").unwrap() < page.find("<svg").unwrap()
            && page.find("<svg").unwrap()
                < page
                    .find("id=\"failed-operations-per-1-000-by-cause\"")
                    .unwrap(),
        "the answer, then the chart, then the table: {page}"
    );
    assert!(
        page.contains(">Eras: 2025-11-25 and 2026-07-28</h1>"),
        "{page}"
    );
    assert!(page.contains("<table>") && !page.contains("<script"));
    assert!(
        !page.contains("<td>---</td>"),
        "the separator row is no row: {page}"
    );
    let bad = run(&["compare", "--eras", "2026-07-28,2026-07-28"]);
    assert_eq!(code(&bad), 3, "an era named twice is refused");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("twice"));
}

/// `on_close = "run_on"` (the `typescript` preset): a close stops nothing,
/// so the dropped call runs to its end and the re-issue runs it again.
/// Transactional effects, which make a cancelled execution harmless, no
/// longer help: the first execution commits too.
#[test]
fn a_close_that_only_signals_lets_the_execution_run_on() {
    let s = scenario(CAUSE);
    let tx = ("server.effects", "transactional");
    for sets in [
        vec![tx, ("server.on_close", "run_on")],
        vec![tx, ("server.sdk", "typescript")],
    ] {
        let r = go(&s, 0, "unguarded", None, &sets);
        assert_eq!(r.metrics.ops_failed, 1, "{sets:?}");
        assert_eq!(
            r.metrics.extra_executions, 1,
            "{sets:?}: both executions ran"
        );
        assert_eq!(
            r.metrics.duplicate_side_effects, 1,
            "{sets:?}: both executions committed"
        );
        assert_eq!(
            r.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
            vec!["key_not_honored"],
            "{sets:?}: the re-issue's key is the remedy unguarded lacks"
        );
    }
    let cancel = go(
        &s,
        0,
        "unguarded",
        None,
        &[tx, ("server.on_close", "cancel")],
    );
    assert_eq!(cancel.metrics.ops_failed, 0, "the close stops the first");
}

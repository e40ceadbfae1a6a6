//! One run's report as `run` prints it: the run in one sentence, its
//! metrics, its faults; and what a regression file's run means for what
//! it pins.

use crate::run::{self, RunReport};
use crate::scenario::{RegressionKind, Scenario};

/// For a run of a regression file on its arm: whether what it pins still
/// reproduces, and what that means for its kind.
pub fn regression_line(s: &Scenario, r: &RunReport) -> Option<String> {
    let reg = s.regression.as_ref().filter(|g| g.server == r.server)?;
    let shows = reg
        .metrics
        .iter()
        .all(|m| r.metrics.get(m).is_some_and(|v| v > 0));
    let what = reg.metrics.join(", ");
    Some(match (reg.kind, shows) {
        (RegressionKind::Hazard, true) => {
            format!("regression (hazard): {what} still reproduces: passes, as a hazard should")
        }
        (RegressionKind::Hazard, false) => format!(
            "regression (hazard): {what} no longer reproduces: its expectations break (the arm changed? re-shrink or retire the file)"
        ),
        (RegressionKind::Bug, true) => {
            format!("regression (bug): {what} still reproduces: its expectations break until fixed")
        }
        (RegressionKind::Bug, false) => {
            format!("regression (bug): {what} no longer reproduces: fixed, passes")
        }
    })
}

/// The run in one sentence of the report's words: a run passes when its
/// expectations hold; its operations are ok, degraded or failed.
pub fn run_outcome(r: &RunReport) -> String {
    let m = &r.metrics;
    let verdict = match r.verdict.as_str() {
        "pass" => "the run passes: its expectations hold".to_string(),
        run::NOT_APPLICABLE => {
            "not applicable: the arm could serve none of its clients".to_string()
        }
        kind => format!(
            "its expectations break ({kind}): {}",
            r.failed_expectations.join("; ")
        ),
    };
    format!(
        "{verdict}; operations: {} ok, {} degraded, {} failed of {}",
        m.ops_ok, m.ops_degraded, m.ops_failed, m.operations
    )
}

/// `run`'s text: the run's line, its outcome, the metrics shown, the
/// faults planned, applied and not applied.
pub fn text_report(r: &RunReport, scenario: &Scenario) -> String {
    let mut out = format!(
        "{} · seed {} · {} server · {} ms simulated · {} records · trace {}\n{}\n",
        r.scenario,
        r.seed,
        r.server,
        r.sim_ms,
        r.records,
        &r.trace_sha256[..16],
        run_outcome(r)
    );
    for name in super::SHOWN {
        if let Some(v) = r.metrics.get(name) {
            out.push_str(&format!("  {name:<24} {v}\n"));
        }
    }
    out.push_str(&format!(
        "  {:<24} {}\n",
        "failed by cause",
        super::causes_line(&r.metrics)
    ));
    let l = &r.metrics.migration_latency_us;
    out.push_str(&format!(
        "  {:<24} n={} p50={} p90={} p99={} max={}\n",
        "migration_latency_us", l.count, l.p50, l.p90, l.p99, l.max
    ));
    out.push_str(&format!(
        "  faults planned {:?} applied {:?}\n",
        r.faults.planned, r.faults.applied
    ));
    // A large fleet can leave thousands unapplied: the text shows the first
    // few; `--format json` lists them all.
    const SHOWN: usize = 20;
    for n in r.faults.not_applied.iter().take(SHOWN) {
        match crate::never_applied::sentence(n, r.sim_ms, Some(scenario)) {
            Some(said) => out.push_str(&format!("  not applied: {said}\n")),
            None => {
                let fault = crate::never_applied::label(&n.fault, Some(scenario));
                out.push_str(&format!("  not applied: {fault}: {}\n", n.reason));
            }
        }
    }
    if r.faults.not_applied.len() > SHOWN {
        out.push_str(&format!(
            "  not applied: {} more (all of them with --format json)\n",
            r.faults.not_applied.len() - SHOWN
        ));
    }
    out
}

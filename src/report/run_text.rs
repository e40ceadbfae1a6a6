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

/// The run in one sentence of the report's words, its operations first: a
/// run passes when its expectations hold and none of its operations
/// failed; failed operations are named with their causes whatever the
/// expectations allow (a hazard scenario expects some), and `--fail-on
/// ops` fails the command on them.
pub fn run_outcome(r: &RunReport) -> String {
    let m = &r.metrics;
    let mut ops = format!(
        "operations: {} ok, {} degraded, {} failed of {}",
        m.ops_ok, m.ops_degraded, m.ops_failed, m.operations
    );
    if m.ops_failed > 0 {
        ops.push_str(&format!(
            " ({})",
            crate::run::gate::causes(&m.failures_by_cause)
        ));
    }
    let verdict = match r.verdict.as_str() {
        "pass" if m.ops_failed == 0 => "the run passes: its expectations hold".to_string(),
        "pass" => "its expectations hold (they allow these failures; --fail-on ops fails on them)"
            .to_string(),
        run::NOT_APPLICABLE => {
            "not applicable: the arm could serve none of its clients".to_string()
        }
        kind => format!(
            "its expectations break ({kind}): {}",
            r.failed_expectations.join("; ")
        ),
    };
    format!("{ops}; {verdict}")
}

/// A duration of `us` microseconds as a person reads it: ms below a
/// second, seconds above.
pub fn duration(us: u64) -> String {
    match us {
        0..=999 => format!("{:.2} ms", us as f64 / 1e3),
        1_000..=999_999 => format!("{:.0} ms", us as f64 / 1e3),
        1_000_000..=59_999_999 => format!("{:.1} s", us as f64 / 1e6),
        _ => format!("{:.0} s", us as f64 / 1e6),
    }
}

/// `run`'s text: the run's line, its outcome, the metrics shown, the
/// faults planned, applied and not applied.
pub fn text_report(r: &RunReport, scenario: &Scenario) -> String {
    let mut out = format!(
        "{}\n{} · seed {} · {} server · {} simulated · {} records · trace {}\n",
        run_outcome(r),
        r.scenario,
        r.seed,
        r.server,
        duration(r.sim_ms * 1000),
        r.records,
        &r.trace_sha256[..16],
    );
    for name in super::SHOWN {
        if let Some(v) = r.metrics.get(name) {
            out.push_str(&format!("  {name:<24} {v}\n"));
        }
    }
    // Events: the deliveries, when the run had readers.
    let deliveries = [
        "deliveries",
        "deliveries_ok",
        "deliveries_announced_lost",
        "deliveries_failed",
    ];
    for name in deliveries.into_iter().filter(|_| r.metrics.deliveries > 0) {
        let v = r.metrics.get(name).unwrap_or(0);
        out.push_str(&format!("  {name:<24} {v}\n"));
    }
    let d = &r.metrics.delivery_latency_us;
    if d.count > 0 {
        out.push_str(&format!("  {:<24} {}\n", "delivery latency", figures(d)));
    }
    out.push_str(&format!(
        "  {:<24} {}\n",
        "failed by cause",
        super::causes_line(&r.metrics)
    ));
    let l = &r.metrics.migration_latency_us;
    let latency = if l.count == 0 {
        "none (no operation migrated)".to_string()
    } else {
        figures(l)
    };
    out.push_str(&format!("  {:<24} {latency}\n", "migration latency"));
    out.push_str(&format!(
        "  faults planned {:?} applied {:?}\n",
        r.faults.planned, r.faults.applied
    ));
    // A large fleet can leave thousands unapplied: the text shows the first
    // few; `--format json` lists them all.
    const SHOWN: usize = 20;
    for n in r.faults.not_applied.iter().take(SHOWN) {
        match crate::run::never_applied::sentence(n, r.sim_ms, Some(scenario)) {
            Some(said) => out.push_str(&format!("  not applied: {said}\n")),
            None => {
                let fault = crate::run::never_applied::label(&n.fault, Some(scenario));
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

/// A latency's count and percentiles, as the run text prints them.
fn figures(l: &crate::oracle::Latency) -> String {
    format!(
        "n={} p50 {} · p90 {} · p99 {} · max {}",
        l.count,
        duration(l.p50),
        duration(l.p90),
        duration(l.p99),
        duration(l.max)
    )
}

//! Shrinking: delta-debug a failing run (its fault plan, its clients, their
//! workloads and the faults' timing: `reduce`) down to a small one that
//! still produces the same violation, and write it as a scenario of
//! explicit faults, ready to commit under `sims/regressions/`.
//!
//! What must be preserved is either the run's failed expectations (the
//! default) or metrics the run shows above 0 (`--until`), whatever the
//! scenario expects. The shrunk scenario pins it with a `[regression]`
//! table: a hazard passes while it reproduces, a bug fails until fixed.

pub mod command;
mod reduce;

use crate::fault::FaultSpec;
use crate::hosts::sut::Arm;
use crate::run::{self, Options, RunReport};
use crate::scenario::{Expect, Regression, RegressionKind, Scenario};
pub use reduce::DEFAULT_MAX_RUNS;
use std::collections::BTreeSet;

/// What a shrink preserves and how the result pins it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Goal {
    /// Metrics (names as `[expect.*]` writes them, e.g.
    /// `duplicate_side_effects`, `failures_by_cause.gave_up`) that must
    /// each stay above 0; empty: the run's failed expectations.
    pub until: Vec<String>,
    /// How the shrunk scenario pins it.
    pub kind: RegressionKind,
    /// Most simulations the reductions may run (`--max-runs`).
    pub max_runs: u64,
}

/// Rounds of reductions at most: each after the first only retries what
/// an earlier removal may have freed.
const MAX_ROUNDS: usize = 4;

impl Default for Goal {
    fn default() -> Self {
        Goal {
            until: Vec::new(),
            kind: RegressionKind::Hazard,
            max_runs: reduce::DEFAULT_MAX_RUNS,
        }
    }
}

/// The metric named by a failed expectation line (`NAME = v, expected ...`).
fn metric_of(failed: &str) -> Option<&str> {
    failed.split_whitespace().next()
}

/// Whether `r` shows each of `until` above 0.
fn shows(r: &RunReport, until: &[String]) -> bool {
    until
        .iter()
        .all(|m| r.metrics.get(m).is_some_and(|v| v > 0))
}

/// A run's failed expectations as (metric, value, bound, "at most"|"at
/// least"): the "violation" a shrink must preserve is the set of metrics.
fn failures(s: &Scenario, seed: u64, v: Arm) -> Result<Vec<(String, bool, u64)>, String> {
    let r = run::run_arm_streaming(s, seed, v, &Options::default()).map_err(|e| e.to_string())?;
    Ok(r.failed_expectations
        .iter()
        .filter_map(|f| {
            // "<metric> = <v>, expected at most <m>" / "... at least <m>"
            let metric = f.split_whitespace().next()?.to_string();
            let most = f.contains("at most");
            let bound = f.rsplit(' ').next()?.parse().ok()?;
            Some((metric, most, bound))
        })
        .collect())
}

fn failing_metrics(s: &Scenario, seed: u64, v: Arm) -> Result<BTreeSet<String>, String> {
    Ok(failures(s, seed, v)?.into_iter().map(|(m, ..)| m).collect())
}

/// The scenario with its generators off and `faults` as its explicit list.
fn with_faults(s: &Scenario, faults: &[crate::fault::Fault]) -> Scenario {
    let mut out = s.clone();
    out.faults = FaultSpec {
        explicit: faults.to_vec(),
        ..FaultSpec::default()
    };
    out
}

/// The scenario exactly as a run of `seed` plays it: the fault plan that
/// seed draws, as an explicit list, with every generator off. Run under
/// the same seed it replays the same trace (the plan is all the `faults`
/// child seed decides).
pub fn as_run(s: &Scenario, seed: u64) -> Scenario {
    with_faults(s, &s.fault_plan(seed).faults)
}

/// What a shrink found.
#[derive(Debug)]
pub struct Shrunk {
    /// The minimal scenario (explicit faults, expectations that pin the violation).
    pub scenario: Scenario,
    /// Faults in the original plan.
    pub faults_before: usize,
    /// Faults left.
    pub faults_after: usize,
    /// Clients before and after.
    pub clients: (u32, u32),
    /// The violated metrics preserved.
    pub metrics: BTreeSet<String>,
    /// Calls planned (over every client) before and after.
    pub calls: (u64, u64),
    /// Simulations run (the reductions' and the final checks of each
    /// arm's bounds).
    pub runs: u64,
    /// The reductions' budget of runs (`--max-runs`).
    pub max_runs: u64,
    /// The budget ran out before a round removed nothing: a larger one may
    /// shrink further.
    pub exhausted: bool,
    /// Bounds of the original scenario that fail on the shrunk one and
    /// were dropped, as `expect.ARM: what failed`.
    pub pruned: Vec<String>,
}

/// Shrinks the failing run (`scenario`, `seed`, `v`) preserving its failed
/// expectations, pinned as a hazard; errs when it does not fail, or its
/// fault plan alone does not reproduce the failure.
pub fn shrink(scenario: &Scenario, seed: u64, v: impl Into<Arm>) -> Result<Shrunk, String> {
    shrink_to(scenario, seed, v.into(), &Goal::default())
}

/// Shrinks the run (`scenario`, `seed`, `v`) to a minimal one that still
/// shows what `goal` names; errs when the run does not show it, or its
/// fault plan alone does not reproduce it.
pub fn shrink_to(scenario: &Scenario, seed: u64, v: Arm, goal: &Goal) -> Result<Shrunk, String> {
    let by_metric = !goal.until.is_empty();
    let (failed, target) = target_of(scenario, seed, v, goal)?;
    let holds = |s: &Scenario| -> Result<bool, String> {
        if by_metric {
            let r = run::run_arm_streaming(s, seed, v, &Options::default())
                .map_err(|e| e.to_string())?;
            Ok(shows(&r, &goal.until))
        } else {
            let got = failing_metrics(s, seed, v)?;
            Ok(target.iter().all(|m| got.contains(m)))
        }
    };
    let plan = scenario.fault_plan(seed);
    let explicit = as_run(scenario, seed);
    if !holds(&explicit)? {
        return Err("the explicit fault plan does not reproduce the failure on its own".into());
    }
    // The original run and its explicit form: two runs, then the reductions
    // within the budget, a round at a time until one removes nothing.
    let mut budget = reduce::Budget {
        used: 2,
        max: goal.max_runs.max(2),
        exhausted: false,
    };
    let current = reduce_within(&explicit, &mut budget, &holds);
    let calls_before = reduce::Plan::of(&explicit).calls();
    let calls_after = current.calls();
    let base = current.scenario(&explicit);
    let mut runs = budget.used;
    let clients_before = scenario.client_count();
    let current = base.faults.explicit.clone();
    let mut out = base;
    out.name = crate::scenario::fit_name(&format!(
        "{}-seed{seed}-{}-shrunk",
        scenario.name,
        v.as_str()
    ));
    out.description = format!(
        "Shrunk from {} seed {seed} ({} of {} faults, {} of {clients_before} clients, \
         {calls_after} of {calls_before} calls): the {} server still shows {}",
        scenario.name,
        current.len(),
        plan.faults.len(),
        out.client_count(),
        v.as_str(),
        target.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    let what = target.iter().cloned().collect::<Vec<_>>();
    pin(&mut out, v, goal, &failed, &what)?;
    let (out, pruned) = keep_what_holds(out, seed, v, &what, &mut runs)?;
    Ok(Shrunk {
        faults_before: plan.faults.len(),
        faults_after: current.len(),
        clients: (clients_before, out.client_count()),
        calls: (calls_before, calls_after),
        scenario: out,
        metrics: target,
        runs,
        max_runs: budget.max,
        exhausted: budget.exhausted,
        pruned,
    })
}

/// A run's failed expectations as (metric, whether the bound is a most,
/// the bound).
type Failed = Vec<(String, bool, u64)>;

/// What a shrink keeps: the run's failed expectations (metric, most,
/// bound) and their metrics, or (with `--until`) the metrics `goal` names;
/// errs on an unknown metric, or when the run shows nothing to keep.
fn target_of(
    scenario: &Scenario,
    seed: u64,
    v: Arm,
    goal: &Goal,
) -> Result<(Failed, BTreeSet<String>), String> {
    for m in &goal.until {
        if !crate::oracle::Metrics::is_known(m) {
            return Err(format!(
                "--until {m}: unknown metric (known: {}, and failures_by_cause.CAUSE, \
                 hazards.HAZARD, rejections.REASON)",
                crate::oracle::Metrics::NAMES.join(", ")
            ));
        }
    }
    if goal.until.is_empty() {
        let failed = failures(scenario, seed, v)?;
        let target: BTreeSet<String> = failed.iter().map(|(m, ..)| m.clone()).collect();
        if target.is_empty() {
            return Err(format!(
                "{} seed {seed} on the {} server does not fail: nothing to shrink \
                 (name what it shows with --until METRIC, e.g. --until duplicate_side_effects)",
                scenario.name,
                v.as_str()
            ));
        }
        return Ok((failed, target));
    }
    let r = run::run_arm_streaming(scenario, seed, v, &Options::default())
        .map_err(|e| e.to_string())?;
    if !shows(&r, &goal.until) {
        let got: Vec<String> = goal
            .until
            .iter()
            .map(|m| format!("{m} = {}", r.metrics.get(m).unwrap_or(0)))
            .collect();
        return Err(format!(
            "{} seed {seed} on the {} server does not show {} ({}): nothing to shrink; \
             try another seed or server",
            scenario.name,
            v.as_str(),
            goal.until.join(", "),
            got.join(", ")
        ));
    }
    Ok((Vec::new(), goal.until.iter().cloned().collect()))
}

/// The reductions' rounds over the plan of `explicit` until one removes
/// nothing (at most [`MAX_ROUNDS`]), each candidate run only while
/// `budget` lasts and kept only when `holds`.
fn reduce_within(
    explicit: &Scenario,
    budget: &mut reduce::Budget,
    holds: &dyn Fn(&Scenario) -> Result<bool, String>,
) -> reduce::Plan {
    let mut current = reduce::Plan::of(explicit);
    let mut test = |p: &reduce::Plan| -> bool {
        // A candidate the simulator refuses (a bound it no longer
        // fits) does not reproduce.
        budget.take() && holds(&p.scenario(explicit)).unwrap_or(false)
    };
    for _ in 0..MAX_ROUNDS {
        let next = reduce::round(current.clone(), &mut test);
        let done = next == current;
        current = next;
        if done {
            break;
        }
    }
    current
}

/// Pins `what` in the shrunk scenario's expectations for `v` and its
/// `[regression]` table: a hazard passes while it reproduces, a bug fails
/// until fixed. Without `--until`, a failure that is not a metric above 0
/// (a bound "at least" missed) has no `[regression]` form: the
/// expectations alone pin it.
fn pin(
    out: &mut Scenario,
    v: Arm,
    goal: &Goal,
    failed: &[(String, bool, u64)],
    what: &[String],
) -> Result<(), String> {
    let mut pin = out.expect.of(v.as_str());
    if !goal.until.is_empty() {
        for m in what {
            pin.min.remove(m);
            pin.max.remove(m);
            match goal.kind {
                RegressionKind::Hazard => pin.min.insert(m.clone(), 1),
                RegressionKind::Bug => pin.max.insert(m.clone(), 0),
            };
        }
    } else if goal.kind == RegressionKind::Hazard {
        pin = Expect::default();
        for (metric, most, bound) in failed {
            if *most {
                pin.min.insert(metric.clone(), bound + 1);
            } else {
                pin.max.insert(metric.clone(), bound.saturating_sub(1));
            }
        }
    }
    out.expect.set(v.as_str(), pin);
    out.regression = Some(Regression {
        kind: goal.kind,
        server: v.as_str().to_string(),
        metrics: what.to_vec(),
    });
    if crate::check::parse(&toml::to_string(&*out).map_err(|e| e.to_string())?).is_err() {
        out.regression = None;
    }
    Ok(())
}

/// The shrunk scenario's other bounds that fail on it (its arm's, beside
/// the pinned metrics, and every other arm's) are dropped, so that the file
/// means exactly what its kind promises; returns the dropped bounds.
fn keep_what_holds(
    mut s: Scenario,
    seed: u64,
    v: Arm,
    pinned: &[String],
    runs: &mut u64,
) -> Result<(Scenario, Vec<String>), String> {
    let mut dropped = Vec::new();
    let arms: Vec<String> = s.expect.0.keys().cloned().collect();
    let text = toml::to_string(&s).map_err(|e| e.to_string())?;
    let loaded = crate::check::parse(&text)?;
    for arm in arms {
        let Ok(a) = arm.parse::<Arm>() else { continue };
        *runs += 1;
        let failed: Vec<String> =
            match run::run_arm_streaming(&loaded, seed, a, &Options::default()) {
                Ok(r) => r.failed_expectations,
                Err(_) => {
                    // An arm this build cannot run: its bounds are not checked.
                    if a != v {
                        s.expect.0.remove(&arm);
                        dropped.push(format!("expect.{arm} (cannot run here)"));
                    }
                    continue;
                }
            };
        let mut e = s.expect.of(&arm);
        for f in &failed {
            let Some(m) = metric_of(f) else { continue };
            if a == v && pinned.iter().any(|p| p == m) {
                continue;
            }
            if e.min.remove(m).is_some() || e.max.remove(m).is_some() {
                dropped.push(format!("expect.{arm}: {f}"));
            }
        }
        s.expect.set(&arm, e);
    }
    Ok((s, dropped))
}

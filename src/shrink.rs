//! Shrinking: delta-debug a failing run's fault plan down to a minimal set
//! of faults that still produces the same violation, and write it as a
//! scenario of explicit faults, ready to commit under `sims/regressions/`.

use crate::fault::FaultPlan;
use crate::run::{self, Options};
use crate::scenario::{Expect, FaultSpec, Scenario};
use crate::server::Variant;
use std::collections::BTreeSet;

/// A run's failed expectations as (metric, value, bound, "at most"|"at
/// least"): the "violation" a shrink must preserve is the set of metrics.
fn failures(s: &Scenario, seed: u64, v: Variant) -> Result<Vec<(String, bool, u64)>, String> {
    let (r, _) = run::run(s, seed, v, Options::default()).map_err(|e| e.to_string())?;
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

fn failing_metrics(s: &Scenario, seed: u64, v: Variant) -> Result<BTreeSet<String>, String> {
    Ok(failures(s, seed, v)?.into_iter().map(|(m, ..)| m).collect())
}

/// The scenario with its generators off and `faults` as its explicit list.
fn with_faults(s: &Scenario, faults: &[crate::scenario::Fault]) -> Scenario {
    let mut out = s.clone();
    out.faults = FaultSpec {
        explicit: faults.to_vec(),
        ..FaultSpec::default()
    };
    out
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
    /// The violated metrics preserved.
    pub metrics: BTreeSet<String>,
    /// Simulations run.
    pub runs: u64,
}

/// Shrinks the failing run (`scenario`, `seed`, `v`); errs when it does not
/// fail, or its fault plan alone does not reproduce the failure.
pub fn shrink(scenario: &Scenario, seed: u64, v: Variant) -> Result<Shrunk, String> {
    let failed = failures(scenario, seed, v)?;
    let target: BTreeSet<String> = failed.iter().map(|(m, ..)| m.clone()).collect();
    if target.is_empty() {
        return Err(format!(
            "{} seed {seed} on the {} server does not fail: nothing to shrink",
            scenario.name,
            v.as_str()
        ));
    }
    let plan = FaultPlan::draw(scenario, seed);
    let mut runs = 1;
    let mut fails = |faults: &[crate::scenario::Fault]| -> Result<bool, String> {
        runs += 1;
        let got = failing_metrics(&with_faults(scenario, faults), seed, v)?;
        Ok(target.iter().all(|m| got.contains(m)))
    };
    if !fails(&plan.faults)? {
        return Err("the explicit fault plan does not reproduce the failure on its own".into());
    }
    // ddmin: remove chunks of faults while the failure persists.
    let mut current = plan.faults.clone();
    let mut n = 2usize;
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(n);
        let mut reduced = false;
        for start in (0..current.len()).step_by(chunk) {
            let complement: Vec<_> = current[..start]
                .iter()
                .chain(current[(start + chunk).min(current.len())..].iter())
                .cloned()
                .collect();
            if fails(&complement)? {
                current = complement;
                n = (n - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if n >= current.len() {
                break;
            }
            n = (n * 2).min(current.len());
        }
    }
    if current.len() == 1 && fails(&[])? {
        current.clear();
    }
    let mut out = with_faults(scenario, &current);
    out.name = format!("{}-seed{seed}-{}-shrunk", scenario.name, v.as_str());
    out.description = format!(
        "Shrunk from {} seed {seed} ({} of {} faults): the {} server still shows {}",
        scenario.name,
        current.len(),
        plan.faults.len(),
        v.as_str(),
        target.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    // Pin the violation as an expectation: the regression holds while the
    // server keeps showing it (and the other server keeps its own).
    let mut pin = Expect::default();
    for (metric, most, bound) in failed {
        if most {
            pin.min.insert(metric, bound + 1);
        } else {
            pin.max.insert(metric, bound.saturating_sub(1));
        }
    }
    match v {
        Variant::Guarded => out.expect.guarded = pin,
        Variant::Unguarded => out.expect.unguarded = pin,
    }
    Ok(Shrunk {
        faults_before: plan.faults.len(),
        faults_after: current.len(),
        scenario: out,
        metrics: target,
        runs,
    })
}

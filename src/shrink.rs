//! Shrinking: delta-debug a failing run's fault plan down to a minimal set
//! of faults that still produces the same violation, and write it as a
//! scenario of explicit faults, ready to commit under `sims/regressions/`.

use crate::fault::FaultPlan;
use crate::run::{self, Options};
use crate::scenario::{Expect, FaultSpec, Scenario};
use crate::sut::Arm;
use std::collections::BTreeSet;

/// A run's failed expectations as (metric, value, bound, "at most"|"at
/// least"): the "violation" a shrink must preserve is the set of metrics.
fn failures(s: &Scenario, seed: u64, v: Arm) -> Result<Vec<(String, bool, u64)>, String> {
    let (r, _) = run::run_arm(s, seed, v, &Options::default()).map_err(|e| e.to_string())?;
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
fn with_faults(s: &Scenario, faults: &[crate::scenario::Fault]) -> Scenario {
    let mut out = s.clone();
    out.faults = FaultSpec {
        explicit: faults.to_vec(),
        ..FaultSpec::default()
    };
    out
}

/// `s` with group `g` cut to its first `keep` clients: faults naming a
/// removed client are dropped, later clients renumbered.
fn without_clients(s: &Scenario, g: usize, keep: u32) -> Scenario {
    use crate::scenario::Fault;
    let start: u32 = s.clients[..g].iter().map(|c| c.count).sum();
    let old = s.clients[g].count;
    let (cut_from, cut) = (start + keep, old - keep);
    let renumber = |c: u32| -> Option<u32> {
        if c < cut_from {
            Some(c)
        } else if c < start + old {
            None
        } else {
            Some(c - cut)
        }
    };
    let mut out = s.clone();
    out.clients[g].count = keep;
    out.faults.explicit = s
        .faults
        .explicit
        .iter()
        .filter_map(|f| match f {
            Fault::Drop {
                client,
                call,
                after_event,
            } => renumber(*client).map(|client| Fault::Drop {
                client,
                call: *call,
                after_event: *after_event,
            }),
            Fault::Switch { client, after_call } => renumber(*client).map(|client| Fault::Switch {
                client,
                after_call: *after_call,
            }),
            other => Some(other.clone()),
        })
        .collect();
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
    /// Clients before and after.
    pub clients: (u32, u32),
    /// The violated metrics preserved.
    pub metrics: BTreeSet<String>,
    /// Simulations run.
    pub runs: u64,
}

/// Shrinks the failing run (`scenario`, `seed`, `v`); errs when it does not
/// fail, or its fault plan alone does not reproduce the failure.
pub fn shrink(scenario: &Scenario, seed: u64, v: impl Into<Arm>) -> Result<Shrunk, String> {
    let v: Arm = v.into();
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
    // Then the client count: halve each group while the failure persists
    // (faults naming removed clients go; later clients are renumbered).
    let mut base = with_faults(scenario, &current);
    for g in 0..base.clients.len() {
        while base.clients[g].count > 1 {
            let candidate = without_clients(&base, g, base.clients[g].count / 2);
            runs += 1;
            let got = failing_metrics(&candidate, seed, v)?;
            if target.iter().all(|m| got.contains(m)) {
                base = candidate;
            } else {
                break;
            }
        }
    }
    let clients_before = scenario.client_count();
    let current = base.faults.explicit.clone();
    let mut out = base;
    out.name = format!("{}-seed{seed}-{}-shrunk", scenario.name, v.as_str());
    out.description = format!(
        "Shrunk from {} seed {seed} ({} of {} faults, {} of {clients_before} clients): the {} server still shows {}",
        scenario.name,
        current.len(),
        plan.faults.len(),
        out.client_count(),
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
    out.expect.set(v.as_str(), pin);
    Ok(Shrunk {
        faults_before: plan.faults.len(),
        faults_after: current.len(),
        clients: (clients_before, out.client_count()),
        scenario: out,
        metrics: target,
        runs,
    })
}

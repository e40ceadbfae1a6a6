//! What became of a run's planned faults: counted by kind, and each one
//! not applied with why.

use super::is_zero;
use crate::fault::{kind_name, Fate, Fault, FaultPlan, PlannedFault};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Faults planned and applied, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// In the plan.
    pub planned: BTreeMap<String, u64>,
    /// Actually applied (a drop planned for a call that never ran, or a
    /// fault timed past the fault phase, is not applied).
    pub applied: BTreeMap<String, u64>,
    /// Every planned fault that was not applied, with why, sorted: for each
    /// kind, `planned = applied + not_applied + not_applied_omitted`. Empty
    /// (and not written) in a sweep's aggregates: see each run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_applied: Vec<NotApplied>,
    /// Not-applied faults a summary left out of `not_applied` (it keeps
    /// [`EXAMPLES`] per kind): counted here, so the sum still holds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_applied_omitted: u64,
}

/// How many examples a summary keeps of each run's failed or degraded
/// operations per cause, and of its not-applied faults per kind: the
/// counts are whole in the metrics, the examples are what a report links.
/// A run where every operation fails would otherwise write one verdict per
/// operation (a 12,000-operation run, 1.5 MB of JSON).
pub const EXAMPLES: usize = 10;

/// A planned fault that was not applied.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NotApplied {
    /// The fault, as `[[faults.explicit]]` writes it.
    pub fault: Fault,
    /// Why it was not applied.
    pub reason: String,
}

impl Faults {
    /// Not-applied faults by kind.
    pub fn not_applied_counts(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for n in &self.not_applied {
            *m.entry(kind_name(&n.fault).to_string()).or_insert(0) += 1;
        }
        m
    }
}

/// Faults planned, applied and not applied (with why): a count over the
/// fate the world gave each planned fault.
pub(super) fn fault_accounts(plan: &FaultPlan, faults: &[PlannedFault]) -> Faults {
    let mut applied = BTreeMap::new();
    let mut not_applied = Vec::new();
    for p in faults {
        match &p.fate {
            Fate::Applied => *applied.entry(kind_name(&p.fault).to_string()).or_insert(0) += 1,
            Fate::NotApplied(reason) => not_applied.push(NotApplied {
                fault: p.fault.clone(),
                reason: reason.clone(),
            }),
        }
    }
    not_applied.sort();
    Faults {
        planned: plan.counts(),
        applied,
        not_applied,
        not_applied_omitted: 0,
    }
}

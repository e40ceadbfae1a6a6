//! The world's records: timed faults as they start and end, and the heal
//! phase.

use serde::Serialize;

/// World records: faults and phases.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorldRecord {
    /// A timed fault began.
    FaultStarted {
        /// Index in the plan.
        index: u32,
        /// Kind.
        kind: &'static str,
        /// The client host it acts on (partitions, latency).
        host: Option<u32>,
    },
    /// A timed fault ended (partition repaired, latency restored).
    FaultEnded {
        /// Index in the plan.
        index: u32,
    },
    /// Faults are off; the heal phase began.
    HealStarted,
}

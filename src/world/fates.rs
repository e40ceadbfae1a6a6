//! The fates of the faults the clients apply (drops, placed drops,
//! switches), from what the clients record as the records arrive.

use crate::fault::{Close, Fate, Fault, FaultPlan, PlannedFault};
use crate::history::{ClientRecord, Entry, FaultKind, Observer, Rec};
use std::collections::{BTreeMap, BTreeSet};

/// What the clients' records say about their drops and switches, as the
/// records arrive: which planned drop hit its call, which client switched,
/// each not-applied report, and which of the calls the plan names began.
pub(super) struct Fates {
    /// The (client, call) pairs the plan's drops and switches name.
    named: BTreeSet<(u32, u32)>,
    dropped: BTreeSet<(u32, u32)>,
    switched: BTreeSet<u32>,
    reported: BTreeMap<Fault, String>,
    started: BTreeSet<(u32, u32)>,
}

impl Fates {
    pub(super) fn watching(plan: &FaultPlan) -> Fates {
        let named = plan
            .faults
            .iter()
            .filter_map(|f| match *f {
                Fault::Drop { client, call, .. } => Some((client, call)),
                Fault::Placed { on, .. } => Some((on.client, on.call)),
                Fault::Switch { client, after_call } => Some((client, after_call)),
                _ => None,
            })
            .collect();
        Fates {
            named,
            dropped: BTreeSet::new(),
            switched: BTreeSet::new(),
            reported: BTreeMap::new(),
            started: BTreeSet::new(),
        }
    }
}

impl Observer for Fates {
    fn entry(&mut self, e: &Entry) {
        let Rec::Client(r) = &e.record else { return };
        match r {
            ClientRecord::Dropped { client, .. } => {
                if let Some(op) = r.op() {
                    self.dropped.insert((*client, op.call));
                }
            }
            ClientRecord::Switched { client, .. } => {
                self.switched.insert(*client);
            }
            ClientRecord::OpStarted { client, .. } => {
                if let Some(op) = r.op() {
                    if self.named.contains(&(*client, op.call)) {
                        self.started.insert((*client, op.call));
                    }
                }
            }
            ClientRecord::FaultNotApplied {
                client,
                kind,
                call,
                after_event,
                reason,
            } => {
                let fault = if *kind == FaultKind::Switch {
                    Fault::Switch {
                        client: *client,
                        after_call: *call,
                    }
                } else {
                    Fault::Drop {
                        client: *client,
                        call: *call,
                        after_event: after_event.unwrap_or(0),
                        close: Close::Fin,
                    }
                };
                self.reported.insert(fault, reason.clone());
            }
            _ => {}
        }
    }
}

/// Every planned drop's and switch's fate, from what the clients recorded.
pub(super) fn client_fates(
    plan: &FaultPlan,
    fates: &Fates,
    sim_ms: u64,
    clients_finished: bool,
) -> Vec<PlannedFault> {
    let Fates {
        dropped,
        switched,
        reported,
        started,
        ..
    } = fates;
    let ended = |client: u32, call: u32| {
        let state = if started.contains(&(client, call)) {
            "unresolved"
        } else {
            "not started"
        };
        if clients_finished {
            format!("client {client} gave no account of it (call {call} {state})")
        } else {
            format!(
                "the run ended at {sim_ms} ms with client {client} still running (call {call} {state})"
            )
        }
    };
    let mut fates = Vec::new();
    for f in &plan.faults {
        let fate = match *f {
            Fault::Drop {
                client,
                call,
                after_event,
                ..
            } => {
                // The clients report a drop without its close.
                let key = Fault::Drop {
                    client,
                    call,
                    after_event,
                    close: Close::Fin,
                };
                if dropped.contains(&(client, call)) {
                    Fate::Applied
                } else if let Some(reason) = reported.get(&key) {
                    Fate::NotApplied(reason.clone())
                } else {
                    Fate::NotApplied(ended(client, call))
                }
            }
            Fault::Switch { client, after_call } => {
                let first = plan.switch_for(client);
                if let Some(reason) = reported.get(f) {
                    Fate::NotApplied(reason.clone())
                } else if first != Some(after_call) {
                    Fate::NotApplied(format!(
                        "a client switches once: client {client}'s switch after call {} \
                         comes first in the plan",
                        first.unwrap_or(after_call)
                    ))
                } else if switched.contains(&client) {
                    Fate::Applied
                } else {
                    Fate::NotApplied(ended(client, after_call))
                }
            }
            Fault::Placed { on, .. } if f.placed_drop().is_some() => {
                if dropped.contains(&(on.client, on.call)) {
                    Fate::Applied
                } else {
                    let state = if started.contains(&(on.client, on.call)) {
                        "its call began"
                    } else {
                        "its call never began"
                    };
                    Fate::NotApplied(format!(
                        "its boundary, {on}, was not reached with the request out ({state})"
                    ))
                }
            }
            // Timed faults: the schedule decided their fates.
            _ => continue,
        };
        fates.push(PlannedFault {
            fault: f.clone(),
            fate,
        });
    }
    fates
}

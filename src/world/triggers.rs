//! Faults placed at protocol boundaries (`at = …` in
//! `[[faults.explicit]]`): which boundaries of which operations the run
//! reached, in the order it reached them, read from the records as they
//! arrive (a call's request sent, its first execution in the ledger) and
//! from the clients' taps (the response head, which no record names, and
//! each event and the result as the client counts them for its drops); and the placed faults each
//! reached boundary fires. The driver applies what fired after the step
//! in which it was reached: a placed fault acts at its boundary, not at a
//! time.

use super::schedule::Schedule;
use crate::client::{Reports, Tap};
use crate::fault::{At, Boundary, Fault, FaultPlan, PlannedFault};
use crate::history::{ClientRecord, Entry, LedgerRecord, Observer, OpId, Rec, Sent};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// The boundaries reached and the placed faults waiting for theirs.
pub(super) struct Triggers {
    /// Placed faults not yet fired: (index among the plan's faults the
    /// world schedules, boundary, the planned fault).
    armed: Vec<(u32, Boundary, Fault)>,
    /// Fired, for the driver to apply.
    due: Vec<(u32, Boundary, Fault)>,
    /// Every boundary reached, the first time each, in order.
    pub(super) reached: Vec<Boundary>,
    seen: BTreeSet<Boundary>,
}

impl Triggers {
    /// Watching for the placed faults of `plan` that the world fires
    /// (every one but a drop at a response head or a result: its client
    /// sees those boundaries and drops there itself), numbered after the
    /// plan's `timed` faults.
    pub(super) fn of(plan: &FaultPlan, timed: u32) -> Triggers {
        let armed = plan
            .faults
            .iter()
            .filter_map(|f| match f {
                Fault::Placed { on, .. } => Some((*on, f)),
                _ => None,
            })
            .enumerate()
            .filter(|(_, (on, f))| {
                f.placed_drop().is_none() || matches!(on.at, At::RequestSent | At::RequestReceived)
            })
            .map(|(k, (on, f))| (timed + k as u32, on, f.clone()))
            .collect();
        Triggers {
            armed,
            due: Vec::new(),
            reached: Vec::new(),
            seen: BTreeSet::new(),
        }
    }

    fn reach(&mut self, op: OpId, at: At, after_event: u32) {
        let b = Boundary {
            client: op.client,
            call: op.call,
            at,
            after_event,
        };
        if !self.seen.insert(b) {
            return;
        }
        self.reached.push(b);
        let mut i = 0;
        while i < self.armed.len() {
            if self.armed[i].1 == b {
                let fired = self.armed.remove(i);
                self.due.push(fired);
            } else {
                i += 1;
            }
        }
    }

    /// What the clients saw since the last call: response heads, events
    /// (counted as drops count them) and results.
    pub(super) fn reports(&mut self, reports: &Reports) {
        let got = std::mem::take(&mut *reports.borrow_mut());
        for (tag, at, n) in got {
            if let Some(op) = OpId::of_tag(&tag) {
                let after_event = if at == At::Event { n } else { 0 };
                self.reach(op, at, after_event);
            }
        }
    }

    /// The placed faults whose boundary was reached since the last call.
    pub(super) fn take_due(&mut self) -> Vec<(u32, Fault)> {
        self.due.drain(..).map(|(i, _, f)| (i, f)).collect()
    }

    /// The placed faults the world fires that never fired (their
    /// boundary not reached, or reached once the fault phase was over),
    /// not applied; a placed drop's fate is its client's.
    pub(super) fn unfired(&self) -> Vec<PlannedFault> {
        self.armed
            .iter()
            .chain(&self.due)
            .filter(|(_, _, f)| f.placed_drop().is_none())
            .map(|(_, on, f)| {
                let why = format!("its boundary, {on}, was not reached in the fault phase");
                PlannedFault::not_applied(f.clone(), why)
            })
            .collect()
    }
}

impl Observer for Triggers {
    fn entry(&mut self, e: &Entry) {
        let op = |tag: &str| OpId::of_tag(tag);
        match &e.record {
            Rec::Client(ClientRecord::Sent {
                what: Sent::Call,
                tag: Some(tag),
                ..
            }) => {
                if let Some(op) = op(tag) {
                    self.reach(op, At::RequestSent, 0);
                }
            }
            Rec::Ledger(LedgerRecord::Execution { tag, .. }) => {
                if let Some(op) = op(tag) {
                    self.reach(op, At::RequestReceived, 0);
                }
            }
            _ => {}
        }
    }
}

/// What the driver fires placed faults with: the triggers, what the
/// clients report, each client's tap (by global index).
pub(super) struct Placing<'a> {
    pub(super) triggers: &'a Rc<RefCell<Triggers>>,
    pub(super) reports: &'a Reports,
    pub(super) taps: &'a [Tap],
}

impl Placing<'_> {
    /// Fires every placed fault whose boundary was reached in the last
    /// step: a drop through its client's tap, any other kind scheduled to
    /// start at `now_ms`.
    pub(super) fn fire(&self, now_ms: u64, schedule: &mut Schedule) {
        let mut t = self.triggers.borrow_mut();
        t.reports(self.reports);
        for (index, f) in t.take_due() {
            match f.placed_drop() {
                Some(on) => {
                    let tag = crate::history::op_tag(on.client, on.call);
                    if let Some(tap) = self.taps.get(on.client as usize) {
                        tap.drop_call(&tag);
                    }
                }
                None => schedule.place(index, now_ms, &f),
            }
        }
    }
}

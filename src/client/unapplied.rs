//! The end-of-run report on planned faults: why a planned drop or switch
//! did not happen, so that no planned fault goes missing silently.

use super::actor::Client;
use super::ops::OpState;
use crate::history::{ClientRecord, FaultKind, Outcome};

impl Client {
    /// One `FaultNotApplied` record per planned drop or switch that did not
    /// happen, with why.
    pub(super) fn report_unapplied(&self) {
        let index = self.spec.index;
        let calls = self.calls() as u32;
        // A call below `calls` whose operation was never made never started.
        let never = super::actor::Op::never_started(self.spec.index);
        let op = |n: u32| {
            ((n as usize) < self.calls()).then(|| self.ops.get(n as usize).unwrap_or(&never))
        };
        let mut out: Vec<(FaultKind, u32, Option<u32>, String)> = Vec::new();
        for (&call, &after) in &self.spec.drops {
            if self.planned.drops_fired.contains(&call) {
                continue;
            }
            let reason = match op(call) {
                None => format!("client {index} makes only {calls} calls"),
                Some(o) if !o.started => format!(
                    "call {call} never started: the client gave up after {} failed initializations",
                    self.init_attempts
                ),
                Some(o) if o.ran_as_task => {
                    let seen = self.planned.drops_missed.get(&call).map_or(0, |m| m.0);
                    format!(
                        "call {call} ran as a task and ended after {seen} of its answers (its \
                         creation, then polls) were read, before answer {after}"
                    )
                }
                Some(o) => match self.planned.drops_missed.get(&call) {
                    Some(&(seen, _, Outcome::Done)) if o.json_result => format!(
                        "call {call} got its result as a JSON response (no events) after \
                         {seen} counted events, before event {after}"
                    ),
                    Some(&(seen, _, Outcome::Done)) => {
                        let per_call = if after > self.g().chunks {
                            format!(" (a call has {})", self.g().chunks)
                        } else {
                            String::new()
                        };
                        format!(
                            "call {call} ended after {seen} counted events, before event \
                             {after}{per_call}"
                        )
                    }
                    Some(&(seen, _, _)) => format!(
                        "call {call} was abandoned after {} attempts and {seen} counted events, \
                         before event {after}",
                        o.attempts
                    ),
                    None => format!("call {call} ended without reaching event {after}"),
                },
            };
            out.push((FaultKind::Drop, call, Some(after), reason));
        }
        if let Some(after) = self.spec.switch_after {
            let reason = match (&self.planned.switched, op(after)) {
                (Some(None), _) => None,
                _ if !self.policy.legacy_first() => Some(format!(
                    "client {index} is a {} client: only transport-switch clients switch",
                    self.g().behaviour.as_str()
                )),
                (_, None) => Some(format!("client {index} makes only {calls} calls")),
                (Some(Some(why)), _) => Some(format!(
                    "the client had already left the legacy transport before call {after} \
                     ended: {why}"
                )),
                (None, Some(o)) if !o.started => Some(format!(
                    "call {after} never started: the client gave up after {} failed \
                     initializations",
                    self.init_attempts
                )),
                (None, Some(o)) if o.state == OpState::Abandoned => Some(format!(
                    "call {after} was abandoned after {} attempts",
                    o.attempts
                )),
                (None, Some(_)) if after + 1 == calls => Some(format!(
                    "call {after} is the client's last: it finished before switching"
                )),
                (None, Some(_)) => {
                    Some(format!("call {after} ended but the client never switched"))
                }
            };
            if let Some(reason) = reason {
                out.push((FaultKind::Switch, after, None, reason));
            }
        }
        for (kind, call, after_event, reason) in out {
            self.record(ClientRecord::FaultNotApplied {
                client: index,
                kind,
                call,
                after_event,
                reason,
            });
        }
    }
}

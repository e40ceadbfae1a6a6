//! The builder's streaming half: operations taken out one at a time as
//! they become final, each judged with what the records so far say, and
//! the order violations an operation is the earlier one of, counted
//! against its client's operations handled before it.

use super::verdict::outcome;
use super::{Builder, ClientFacts, Failure, OpFacts, RunFacts, JUDGED, NO_OP};

/// One client's state for judging its operations one at a time.
#[derive(Clone, Debug, Default)]
pub(super) struct Live {
    /// The latest start of an operation of it (they begin in time order).
    pub last_start: Option<u64>,
    /// Tag ids of its operations not yet judged.
    pub ops: Vec<u32>,
    /// (handled seq, first sent seq) of its handled operations that may
    /// still be the later operation of an order violation: one whose send
    /// came after the result of an operation not yet judged.
    pub handled: Vec<(u64, u64)>,
}

impl Builder {
    /// Streaming: whether operation `tag` has every event its executions
    /// emitted (else a late replay may still deliver one, and the batch
    /// judge counts every receipt: such an operation waits for the end).
    pub(in crate::oracle) fn whole(&self, tag: &str) -> bool {
        let Some(t) = self.tags.get(tag) else {
            return true;
        };
        match self.op_of.get(t as usize) {
            Some(&i) if i != NO_OP && i != JUDGED => self.ops[i as usize]
                .execs
                .iter()
                .all(|x| x.received_count() >= x.emitted),
            _ => true,
        }
    }

    /// Streaming: takes operation `tag` out, judged with what the records
    /// so far say (its outcome, hazards and order violations), with the
    /// order it began in; `None` when no operation has that tag or it was
    /// judged already. Late records of it change nothing.
    pub(in crate::oracle) fn take(&mut self, tag: &str, hosts: &[u32]) -> Option<(u64, OpFacts)> {
        let t = self.tags.get(tag)?;
        self.take_id(t, hosts)
    }

    fn take_id(&mut self, t: u32, hosts: &[u32]) -> Option<(u64, OpFacts)> {
        let i = *self.op_of.get(t as usize)?;
        if i == NO_OP || i == JUDGED {
            return None;
        }
        let i = i as usize;
        let mut op = self.ops.swap_remove(i);
        let (_, order) = self.slot.swap_remove(i);
        if let Some(&(moved, _)) = self.slot.get(i) {
            self.op_of[moved as usize] = i as u32;
        }
        self.op_of[t as usize] = JUDGED;
        let c = op.client as usize;
        outcome(&mut op, &self.clients[c], hosts.get(c).copied(), &self.run);
        self.order_violations_of(&mut op, t);
        Some((order, op))
    }

    /// Streaming, at the end of the run: every operation not yet taken,
    /// judged, in the order they began; and each client's operations never
    /// begun counted.
    pub(in crate::oracle) fn take_rest(
        &mut self,
        calls: &[u32],
        hosts: &[u32],
        clients_finished: bool,
        end_us: u64,
    ) -> Vec<(u64, OpFacts)> {
        self.run.clients_finished = clients_finished;
        self.close_open_faults(end_us);
        self.count_never_begun(calls);
        let mut rest = self.slot.clone();
        rest.sort_unstable_by_key(|&(_, order)| order);
        rest.into_iter()
            .filter_map(|(t, _)| self.take_id(t, hosts))
            .collect()
    }

    /// Streaming: the order violations `op` (tag id `t`) is the earlier
    /// operation of, against its client's operations handled before it;
    /// then what no operation still open can need is forgotten.
    fn order_violations_of(&mut self, op: &mut OpFacts, t: u32) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let l = &mut live[op.client as usize];
        if let Some(k) = l.ops.iter().position(|&x| x == t) {
            l.ops.swap_remove(k);
        }
        if let (Some(h), Some(_)) = (&op.handled, op.first_sent_seq) {
            // A's result: the earliest any execution produced one.
            if let Some(r) = op.execs.iter().filter_map(|x| x.result_seq).min() {
                let n = l
                    .handled
                    .iter()
                    .filter(|&&(hs, sent)| hs < h.seq && sent > r)
                    .count() as u64;
                if n > 0 {
                    op.order_pairs = n;
                    op.failures.insert(Failure::OutOfOrder);
                }
            }
        }
        // A handled operation sent at or before the earliest result of
        // every open operation can count against none of them (nor against
        // one whose result is still to come, which is later still).
        let (ops, op_of) = (&self.ops, &self.op_of);
        let earliest = l
            .ops
            .iter()
            .filter_map(|&x| {
                let i = op_of[x as usize] as usize;
                ops[i].execs.iter().filter_map(|x| x.result_seq).min()
            })
            .min();
        match earliest {
            None => l.handled.clear(),
            Some(r) => l.handled.retain(|&(_, sent)| sent > r),
        }
    }

    /// The run's facts so far.
    pub(in crate::oracle) fn run(&self) -> &RunFacts {
        &self.run
    }

    /// Each client's facts so far.
    pub(in crate::oracle) fn clients(&self) -> &[ClientFacts] {
        &self.clients
    }

    /// Operations held now (begun and not yet judged).
    pub(in crate::oracle) fn open(&self) -> usize {
        self.ops.len()
    }
}

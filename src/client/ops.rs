//! A client's operations, one per call, indexed by call number. A long
//! session makes thousands: the table keeps those from the oldest one
//! still needed on, and retires each older one once it is finished and
//! nothing refers to it ([`super::actor::Client::retire_ops`]). A retired
//! operation's index stays valid: it reads as finished (the end-of-run
//! report's calls, those a planned drop or switch names, are kept whole),
//! its tag is made again from its number, and a write to it lands in a
//! scratch copy nobody reads.

use crate::protocol::jsonrpc::RequestId;
use std::collections::{BTreeMap, VecDeque};
use std::ops::{Index, IndexMut};
use std::rc::Rc;

pub(super) struct Op {
    /// Its tag: read through [`Ops::tag`], which knows a retired one's.
    tag: Rc<str>,
    pub(super) posts: u32,
    pub(super) attempts: u32,
    /// Refusals that said when to come back (`Retry-After`), not counted
    /// as attempts.
    pub(super) waits_told: u32,
    pub(super) state: OpState,
    pub(super) interrupted: bool,
    /// The stream its response rides, once known.
    pub(super) stream: Option<u64>,
    /// Earlier POSTs of it whose response stream the client never saw
    /// begin (no headers, or no priming event).
    pub(super) unseen: Vec<RequestId>,
    /// The request id of its latest POST.
    pub(super) rpc: Option<RequestId>,
    /// The session its latest POST went out on, while that request may
    /// still run (no result, no refusal answered it): what a
    /// `notifications/cancelled` would name, if the client leaves it.
    pub(super) in_doubt_on: Option<crate::history::SessionId>,
    /// The call went out (`OpStarted`).
    pub(super) started: bool,
    /// Its result came as a JSON response (no events).
    pub(super) json_result: bool,
    /// The task its latest call created (tasks extension), while it waits
    /// on it.
    pub(super) task: Option<Box<OpTask>>,
    /// It cancelled a task once (a call cancels at most one).
    pub(super) cancelled_task: bool,
    /// A call of it was answered with a task.
    pub(super) ran_as_task: bool,
    /// What it answers on its retries, once a call of it asked for input.
    pub(super) answer: Option<Box<Answer>>,
}

impl Op {
    /// What a call never made stands for in client `index`'s end-of-run
    /// report: pending, not started.
    pub(super) fn never_started(index: u32) -> Op {
        Op::pending(crate::history::op_tag(index, u32::MAX).into())
    }

    /// A call not started yet, tagged `tag`.
    fn pending(tag: Rc<str>) -> Op {
        Op {
            tag,
            posts: 0,
            attempts: 0,
            waits_told: 0,
            state: OpState::Pending,
            interrupted: false,
            stream: None,
            unseen: Vec::new(),
            rpc: None,
            in_doubt_on: None,
            started: false,
            json_result: false,
            task: None,
            cancelled_task: false,
            ran_as_task: false,
            answer: None,
        }
    }
}

/// The operations of client `client`: see the module's text.
pub(super) struct Ops {
    client: u32,
    /// The index of `window`'s first operation: every one before it is
    /// retired.
    first: usize,
    window: VecDeque<Op>,
    /// Retired operations kept whole: those the end-of-run report reads.
    kept: BTreeMap<usize, Op>,
    /// What any other retired operation reads as.
    retired: Op,
    /// Where a write to a retired operation lands.
    scratch: Op,
}

impl Ops {
    pub(super) fn new(client: u32) -> Ops {
        let finished = || Op {
            state: OpState::Done,
            ..Op::pending("".into())
        };
        Ops {
            client,
            first: 0,
            window: VecDeque::new(),
            kept: BTreeMap::new(),
            retired: finished(),
            scratch: finished(),
        }
    }

    /// The operations made so far (retired ones too).
    pub(super) fn len(&self) -> usize {
        self.first + self.window.len()
    }

    /// Makes the operations up to `n`, pending.
    pub(super) fn make_up_to(&mut self, n: usize) {
        while self.len() <= n {
            let tag = crate::history::op_tag(self.client, self.len() as u32);
            self.window.push_back(Op::pending(tag.into()));
        }
    }

    /// Operation `n` when it was made.
    pub(super) fn get(&self, n: usize) -> Option<&Op> {
        (n < self.len()).then(|| &self[n])
    }

    /// Operation `n`'s tag.
    pub(super) fn tag(&self, n: usize) -> Rc<str> {
        match n.checked_sub(self.first).and_then(|i| self.window.get(i)) {
            Some(o) => o.tag.clone(),
            None => crate::history::op_tag(self.client, n as u32).into(),
        }
    }

    /// The oldest operation not retired, and its index.
    pub(super) fn oldest(&self) -> Option<(usize, &Op)> {
        self.window.front().map(|o| (self.first, o))
    }

    /// Retires the oldest operation (finished), keeping it whole when
    /// `keep`.
    pub(super) fn retire_oldest(&mut self, keep: bool) {
        if let Some(o) = self.window.pop_front() {
            if keep {
                self.kept.insert(self.first, o);
            }
            self.first += 1;
        }
    }

    /// Every operation not retired, mutably.
    pub(super) fn live_mut(&mut self) -> impl Iterator<Item = &mut Op> {
        self.window.iter_mut()
    }
}

impl Index<usize> for Ops {
    type Output = Op;

    fn index(&self, n: usize) -> &Op {
        match n.checked_sub(self.first) {
            Some(i) => &self.window[i],
            None => self.kept.get(&n).unwrap_or(&self.retired),
        }
    }
}

impl IndexMut<usize> for Ops {
    fn index_mut(&mut self, n: usize) -> &mut Op {
        match n.checked_sub(self.first) {
            Some(i) => &mut self.window[i],
            None => match self.kept.get_mut(&n) {
                Some(o) => o,
                None => &mut self.scratch,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_operation_reads_as_finished_with_its_tag_made_again() {
        let mut ops = Ops::new(7);
        ops.make_up_to(3);
        assert_eq!(ops.len(), 4);
        ops[0].state = OpState::Abandoned;
        ops[0].attempts = 3;
        ops[1].state = OpState::Abandoned;
        ops[1].attempts = 2;
        ops[2].state = OpState::Active;
        let kept_tag = ops.tag(1);
        ops.retire_oldest(false);
        ops.retire_oldest(true);
        assert_eq!(ops.len(), 4, "indices stay valid");
        assert_eq!(ops.oldest().map(|(n, _)| n), Some(2));
        // Retired: reads as finished, its tag the same text.
        assert_eq!(ops[0].state, OpState::Done);
        assert_eq!(&*ops.tag(0), "c7-op0");
        assert_eq!(ops.tag(1), kept_tag);
        // Kept whole: the end-of-run report reads its state and attempts.
        assert_eq!((ops[1].state, ops[1].attempts), (OpState::Abandoned, 2));
        // A write to a retired operation is dropped.
        ops[0].attempts = 9;
        ops[0].unseen.push(RequestId::Num(1));
        assert_eq!(ops.get(0).map(|o| o.attempts), Some(0));
        assert!(ops[0].unseen.is_empty());
        // The live ones are untouched, and made later ones go on from 4.
        assert_eq!(ops[2].state, OpState::Active);
        ops.make_up_to(5);
        assert_eq!(&*ops.tag(5), "c7-op5");
        assert!(ops.get(6).is_none());
        assert_eq!(ops.live_mut().count(), 4);
    }
}

/// Where an operation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OpState {
    Pending,
    Active,
    Done,
    Abandoned,
}

/// The task an operation waits on.
#[derive(Clone, Debug)]
pub(super) struct OpTask {
    pub id: Rc<str>,
    /// How often to poll it, ms.
    pub poll_ms: u64,
    /// When the client learnt of it, µs.
    pub created_us: u64,
    /// Polls and cancels sent for it (they number their request ids).
    pub requests: u32,
}

/// What an operation answers on its retries.
#[derive(Clone, Debug)]
pub(super) struct Answer {
    /// The answers, by the question's keys.
    pub responses: serde_json::Value,
    /// The state to echo, if the question carried one.
    pub state: Option<String>,
}

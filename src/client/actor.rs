//! The client's actor: its state (operations, slots, streams, timers), the
//! decision loop that owns it, and what every behaviour shares: attempts,
//! results and their outcomes, and the hold behind a resume.
//!
//! One loop changes the state: reader tasks ([`super::reader`]) forward what
//! they see over a channel, timers fire [`Timer`]s. The other parts of the
//! client are `impl Client` blocks of their own: sending
//! ([`super::send`]), receiving ([`super::receive`]), performing what the
//! sans-IO core ([`super::core::react`]) decides for each answer
//! ([`super::reactions`]), and the end-of-run report on planned faults
//! ([`super::unapplied`]). What differs per behaviour is data the
//! policies return ([`super::behaviour`]).

use super::behaviour::{self, Policy};
use super::core::{ClientSpec, SlotId};
use super::ops::OpState;
pub(super) use super::ops::{Op, Ops};
use super::reader::{DropRules, Input, Pool, Spawner};
use crate::history::{ClientRecord, History, Outcome, SessionId, Transport};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use crate::scenario::{ClientGroup, Connections};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub(super) enum SlotKind {
    Init,
    /// `GET /sse`: the legacy stream.
    LegacyOpen,
    /// A POST to the legacy `/messages` endpoint (its answer rides the stream).
    LegacyPost,
    /// A streamable `resources/subscribe` (JSON answer).
    Subscribe,
    Call {
        op: usize,
    },
    Resume {
        stream: u64,
    },
    Open,
    /// `notifications/cancelled` for request `rpc` of `op`, which the
    /// client gave up (its answer only says whether the server took it).
    Cancel {
        op: usize,
        rpc: crate::protocol::RequestId,
    },
    /// `tasks/get` (or, `cancel`, `tasks/cancel`) of an operation's task.
    Task {
        op: usize,
        cancel: bool,
    },
}

pub(super) struct Slot {
    pub(super) kind: SlotKind,
    /// The client stream this slot's events belong to, once known.
    pub(super) stream: Option<u64>,
    pub(super) last_activity_us: u64,
    /// When its request went out, µs.
    pub(super) sent_us: u64,
    pub(super) expecting: Rc<Cell<bool>>,
    pub(super) task: AbortHandle,
    /// A resume slot whose `replay-end` has not arrived yet.
    pub(super) marker_pending: bool,
    /// Its response headers arrived.
    pub(super) answered: bool,
    /// Messages it brought (events with data: not priming events, not
    /// `replay-end`). A resume that ends cleanly with none failed.
    pub(super) messages: u32,
    /// A standalone stream open before any event named it (its priming
    /// event had no id).
    pub(super) open_unnamed: bool,
    /// An event with an id (a priming event, a message, a marker) arrived.
    pub(super) id_seen: bool,
    /// An initialize answered with a stream: the session its headers
    /// named, until the result arrives on it.
    pub(super) init_session: Option<SessionId>,
    /// The last `retry:` advice its stream carried, ms.
    pub(super) retry_ms: Option<u64>,
}

/// A stream as the client knows it, named by its first (priming) event id.
pub(super) struct CStream {
    pub(super) last_seen: u64,
    pub(super) live: Option<SlotId>,
    pub(super) finished: bool,
    pub(super) standalone: bool,
    /// Operations whose events rode it.
    pub(super) ops: OpSet,
}

/// How many retired streams a client remembers ([`Client::unretire`]): a
/// Rule M conflict names the stream a POST is blocked behind, which is
/// among the latest (a session's calls run a few at a time).
pub(super) const RETIRED_KEPT: usize = 64;

/// A set of operation indices, sorted: most streams carry one operation,
/// so a vector costs a few bytes where a B-tree node cost a hundred, for
/// every stream a client ever saw.
#[derive(Default)]
pub(super) struct OpSet(Vec<u32>);

impl OpSet {
    pub(super) fn insert(&mut self, op: usize) {
        let op = u32::try_from(op).expect("a client plans at most u32::MAX operations");
        if let Err(at) = self.0.binary_search(&op) {
            self.0.reserve_exact(1);
            self.0.insert(at, op);
        }
    }

    pub(super) fn contains(&self, op: &usize) -> bool {
        u32::try_from(*op).is_ok_and(|op| self.0.binary_search(&op).is_ok())
    }

    /// The operations, in increasing order.
    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|&op| op as usize)
    }
}

/// What a timer does when it fires.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    Init,
    StartNext,
    Post(usize),
    Resume(u64),
    Open,
    /// The hold of that generation timed out (if it still holds).
    ReleaseHolds(u64),
    /// The planned network change: leave the legacy transport.
    Switch,
    /// (Re-)subscribe to the clock resource.
    Subscribe,
    /// Poll the operation's task (or cancel it, past the deadline).
    Poll(usize),
    /// Resume the stream as the server asked (after its `retry:`), or as
    /// the reconnect policy says: not an attempt.
    Reconnect(u64),
}

/// A result as the client got it: the request id it answered, the chunk
/// its payload names, and whether the server marked it as a replay.
#[derive(Clone, Debug)]
pub(super) struct Got {
    pub(super) rpc: RequestId,
    pub(super) chunk: Option<mcp::ChunkRef>,
    pub(super) replayed: bool,
}

impl Got {
    pub(super) fn of(rpc: RequestId, msg: &Message) -> Got {
        Got {
            rpc,
            chunk: mcp::chunk_of(msg),
            replayed: mcp::is_replayed(msg),
        }
    }
}

/// The client's I/O handles: what starts its readers, the channel they
/// report on, the history it writes, and its timers.
pub(super) struct Io {
    /// Starts a reader task on the client's connector.
    pub(super) spawner: Spawner,
    pub(super) history: History,
    pub(super) tx: mpsc::UnboundedSender<Input>,
    /// What fires when, in the order scheduled at one instant.
    pub(super) timers: BTreeMap<(Instant, u64), Timer>,
    pub(super) timer_seq: u64,
    /// Its one idle connection, when it keeps connections alive.
    pub(super) pool: Option<Pool>,
    /// The world's hook, for faults placed at protocol boundaries.
    pub(super) tap: super::Tap,
}

/// Results held behind a resume, so they are handled in stream order.
#[derive(Default)]
pub(super) struct Hold {
    /// The results waiting, in arrival order.
    pub(super) results: VecDeque<(usize, Got)>,
    /// The stream being resumed whose `replay-end` has not arrived: results
    /// on other streams wait for it (with a generation for its timeout).
    pub(super) on: Option<(u64, u64)>,
    pub(super) generation: u64,
}

/// What became of the client's planned faults (drops, the switch), for
/// the end-of-run report on those that did not happen.
#[derive(Default)]
pub(super) struct Planned {
    /// The drops its readers still apply.
    pub(super) drop_rules: DropRules,
    /// Calls whose planned drop fired.
    pub(super) drops_fired: BTreeSet<u32>,
    /// Calls whose connection drops as their response head arrives.
    pub(super) head_drops: BTreeSet<Rc<str>>,
    /// Calls that ended with their planned drop still waiting: (counted
    /// events seen, events the drop waited for, how the call ended).
    pub(super) drops_missed: BTreeMap<u32, (u32, u32, Outcome)>,
    /// The planned switch is scheduled (its call completed on legacy).
    pub(super) switch_due: bool,
    /// A planned drop closed the legacy stream during this call.
    pub(super) legacy_dropped: Option<u32>,
    /// The client left the legacy transport: `Some(None)` at its planned
    /// point, `Some(Some(why))` before it.
    pub(super) switched: Option<Option<String>>,
}

/// One virtual client: what it is (spec, policy), its session, exchanges
/// and streams, its workload, and beside them its I/O handles, the hold
/// and its planned faults.
pub(super) struct Client {
    pub(super) spec: ClientSpec,
    /// What its behaviour decides.
    pub(super) policy: &'static dyn Policy,
    pub(super) io: Io,
    pub(super) session: Option<SessionId>,
    /// The transport the client speaks now.
    pub(super) transport: Transport,
    /// The legacy `/messages` URI from the endpoint event.
    pub(super) legacy_endpoint: Option<String>,
    pub(super) init_attempts: u32,
    /// `fresh-session-per-call`: the call a fresh session was opened for.
    pub(super) fresh_for: Option<usize>,
    /// The next initialize is that fresh one: not an attempt, it does not
    /// count toward the bound on initializes.
    pub(super) fresh_init: bool,
    pub(super) slots: BTreeMap<SlotId, Slot>,
    pub(super) next_slot: SlotId,
    pub(super) streams: BTreeMap<u64, CStream>,
    /// Streams retired lately ([`Client::retire_streams`]), as (key, last
    /// seen id), newest last, at most [`RETIRED_KEPT`].
    pub(super) retired: VecDeque<(u64, u64)>,
    pub(super) standalone: Option<u64>,
    /// Streams the server names otherwise than the client does: its
    /// legacy stream, after a mapped resume, by its first event id in the
    /// streamable namespace (server's name → client's key).
    pub(super) names: BTreeMap<u64, u64>,
    /// The servers' event ids, numbered.
    pub(super) event_ids: super::event_ids::EventIds,
    /// Ids given so far to the 2026-07-28 wire's unnumbered events.
    pub(super) local_ids: u64,
    pub(super) ops: Ops,
    /// The operations in `OpState::Active`, ascending (kept beside `ops`
    /// so that a long session's scans cost its active calls, not every
    /// call it ever made; set through [`Client::activate`] and `finish`).
    pub(super) active: BTreeSet<usize>,
    pub(super) next_op: usize,
    pub(super) hold: Hold,
    /// Calls to re-send once the resume of a stream is accepted.
    pub(super) resend_after_resume: BTreeMap<u64, Vec<usize>>,
    /// A new op waits for the standalone stream to open (session-stream).
    pub(super) open_before_next: bool,
    /// resume-then-post: the next call goes out once a resume's headers arrive.
    pub(super) next_on_resume: bool,
    /// A switch's resume is in flight: hold the workload until it resolves.
    pub(super) switch_pending: bool,
    pub(super) planned: Planned,
}

impl Client {
    /// A client of `spec` that has sent nothing yet; its readers report on `tx`.
    pub(super) fn new(
        spec: ClientSpec,
        spawner: Spawner,
        history: History,
        tx: mpsc::UnboundedSender<Input>,
    ) -> Client {
        let pool = (spec.group.connections == Connections::KeepAlive)
            .then(|| Pool::new(Duration::from_millis(spec.group.pool_idle_ms)));
        let mut c = Client {
            // Made as each call starts (`Client::op_at`): nothing is held
            // per planned call, nor per finished one.
            ops: Ops::new(spec.index),
            policy: behaviour::of(spec.group.behaviour),
            spec,
            io: Io {
                spawner,
                history,
                tx,
                timers: BTreeMap::new(),
                timer_seq: 0,
                pool,
                tap: super::Tap::default(),
            },
            session: None,
            transport: Transport::Streamable,
            legacy_endpoint: None,
            init_attempts: 0,
            fresh_for: None,
            fresh_init: false,
            slots: BTreeMap::new(),
            next_slot: 0,
            streams: BTreeMap::new(),
            retired: VecDeque::new(),
            standalone: None,
            names: BTreeMap::new(),
            event_ids: Default::default(),
            local_ids: 0,
            active: BTreeSet::new(),
            next_op: 0,
            hold: Hold::default(),
            resend_after_resume: BTreeMap::new(),
            open_before_next: false,
            next_on_resume: false,
            switch_pending: false,
            planned: Planned::default(),
        };
        if c.policy.legacy_first() {
            c.transport = Transport::Legacy;
        }
        c.planned.drop_rules.borrow_mut().require_event_field = c.spec.group.require_event_field;
        c
    }

    /// Whether this client's calls carry `Idempotency-Key` (= the tag), by
    /// its group's rule (`ClientGroup::keyed`).
    pub(super) fn keyed(&self) -> bool {
        self.g().keyed()
    }

    /// Whether this client's POSTs present its cursors (`Last-Event-ID`
    /// list, `Mcp-Lost-Requests`). The one place that decides it.
    pub(super) fn cursor_on_post(&self) -> bool {
        self.g().cursor_on_post && !self.modern()
    }

    /// Whether it speaks the 2026-07-28 wire: no session, no resumption,
    /// a broken stream's request re-issued with a new id.
    pub(super) fn modern(&self) -> bool {
        self.spec.era == crate::settings::Era::Y2026
    }

    pub(super) async fn run(&mut self, mut rx: mpsc::UnboundedReceiver<Input>) {
        loop {
            if self.finished() {
                break;
            }
            let due = self.io.timers.keys().next().map(|(t, _)| *t);
            tokio::select! {
                biased;
                Some(input) = rx.recv() => self.on_input(input),
                _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => self.fire_timers(),
            }
            self.retire_streams();
            self.retire_ops();
        }
        // A drop that fired on a call's last event arrives after the event
        // that finished the client: it was applied all the same.
        while let Ok(input) = rx.try_recv() {
            if let Input::Dropped {
                tag, after_event, ..
            } = input
            {
                self.dropped(tag, after_event);
            }
        }
        for slot in self.slots.values() {
            slot.task.abort();
        }
        self.report_unapplied();
    }

    /// The world's placed drop of call `tag`'s request: its connection
    /// closes now, if the request is still out.
    pub(super) fn kill(&mut self, tag: Rc<str>) {
        let Some(op) = self.op_by_tag(&tag) else {
            return;
        };
        let slot = self
            .slots
            .iter()
            .find(|(_, s)| matches!(s.kind, SlotKind::Call { op: o } if o == op))
            .map(|(&id, _)| id);
        if let Some(slot) = slot {
            self.drop_now(slot, tag);
        }
    }

    /// A placed drop of `slot`'s connection (call `tag`'s) now: its reader
    /// stops, the drop is recorded, and the slot ends as broken.
    pub(super) fn drop_now(&mut self, slot: SlotId, tag: Rc<str>) {
        self.planned
            .drop_rules
            .borrow_mut()
            .reset_if_planned(slot, &tag);
        if let Some(s) = self.slots.get(&slot) {
            s.task.abort();
        }
        self.dropped(tag, 0);
        self.on_end(slot, false);
    }

    pub(super) fn dropped(&mut self, tag: Rc<str>, after_event: u32) {
        if let Some(op) = self.op_by_tag(&tag) {
            self.planned.drops_fired.insert(op as u32);
            if self.transport == Transport::Legacy {
                self.planned.legacy_dropped = Some(op as u32);
            }
        }
        self.record(ClientRecord::Dropped {
            client: self.spec.index,
            tag,
            after_event,
        });
    }

    pub(super) fn finished(&self) -> bool {
        // Every operation before `next_op` was activated; none is pending.
        self.next_op >= self.calls() && self.active.is_empty()
    }

    /// The calls the client makes (its operations, made as they start).
    pub(super) fn calls(&self) -> usize {
        self.spec.group.calls as usize
    }

    /// Call `n`'s operation (`n < calls`), made pending, with every one
    /// before it, if it was not made yet.
    pub(super) fn op_at(&mut self, n: usize) -> &mut Op {
        self.ops.make_up_to(n);
        &mut self.ops[n]
    }

    /// Marks `op` active (from pending, or again).
    pub(super) fn activate(&mut self, op: usize) {
        self.op_at(op).state = OpState::Active;
        self.active.insert(op);
    }

    pub(super) fn g(&self) -> &ClientGroup {
        &self.spec.group
    }

    pub(super) fn record(&self, r: ClientRecord) {
        self.io.history.record(r);
    }

    pub(super) fn schedule(&mut self, after: Duration, action: Timer) {
        self.io.timer_seq += 1;
        self.io
            .timers
            .insert((Instant::now() + after, self.io.timer_seq), action);
    }

    pub(super) fn backoff(&self, attempts: u32) -> Duration {
        let exp = self
            .g()
            .backoff_ms
            .saturating_mul(1u64 << attempts.saturating_sub(1).min(16));
        Duration::from_millis(exp.min(self.g().backoff_max_ms))
    }

    pub(super) fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(entry) = self.io.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let action = entry.remove();
            self.act(action);
        }
    }

    pub(super) fn act(&mut self, action: Timer) {
        match action {
            Timer::Init => self.send_init(),
            Timer::StartNext => self.start_next(false),
            Timer::Post(op) => {
                if self.ops[op].state == OpState::Active {
                    self.send_call(op);
                }
            }
            Timer::Resume(stream) => self.send_resume(stream, true),
            Timer::Reconnect(stream) => self.send_resume(stream, false),
            Timer::Open => self.send_open(),
            Timer::Switch => self.switch(),
            Timer::Subscribe => self.subscribe(),
            Timer::Poll(op) => self.poll_task(op),
            Timer::ReleaseHolds(generation) => {
                if self.hold.on.is_some_and(|(_, g)| g == generation) {
                    self.release_holds();
                }
            }
        }
    }

    /// (Re-)arms the hold on `stream`: it lasts until the marker, or until
    /// the resume has been silent for the read timeout (re-armed by each
    /// resume attempt, its headers, and each event it brings).
    pub(super) fn arm_hold(&mut self, stream: u64) {
        self.arm_hold_for(stream, Duration::ZERO);
    }

    /// [`Self::arm_hold`], with the silence counted from `after` from now.
    pub(super) fn arm_hold_for(&mut self, stream: u64, after: Duration) {
        self.hold.generation += 1;
        self.hold.on = Some((stream, self.hold.generation));
        let generation = self.hold.generation;
        self.schedule(
            after + Duration::from_millis(self.g().read_timeout_ms),
            Timer::ReleaseHolds(generation),
        );
    }

    /// Resumes `stream` after `wait` (an `attempt` of what it resumes for,
    /// or not: a resume the server asked for). A hold on it lasts until
    /// that resume has been silent for the read timeout (the backoff grows
    /// with the attempts, beyond the read timeout).
    pub(super) fn schedule_resume(&mut self, wait: Duration, stream: u64, attempt: bool) {
        let timer = if attempt {
            Timer::Resume(stream)
        } else {
            Timer::Reconnect(stream)
        };
        self.schedule(wait, timer);
        if self.hold.on.is_some_and(|(h, _)| h == stream) {
            self.arm_hold_for(stream, wait);
        }
    }

    /// Takes one attempt of `op` for a request about to go out (a POST of
    /// it, or a resume for it): false, and the operation abandoned, past
    /// the bound.
    pub(super) fn take_attempt(&mut self, op: usize) -> bool {
        if !self.count_attempt(op) {
            return false;
        }
        self.ops[op].attempts += 1;
        true
    }

    /// The active operations a resume of `stream` is for: those whose
    /// result rides it, and those to re-send once it is accepted.
    pub(super) fn resuming_for(&self, stream: u64) -> Vec<usize> {
        let mut ops = self.ops_on(stream);
        for &op in self.resend_after_resume.get(&stream).into_iter().flatten() {
            if self.ops[op].state == OpState::Active && !ops.contains(&op) {
                ops.push(op);
            }
        }
        ops
    }

    /// Whether `op` may make another attempt; abandons it past the bound.
    pub(super) fn count_attempt(&mut self, op: usize) -> bool {
        let max = self.g().max_attempts;
        let o = &mut self.ops[op];
        if o.attempts >= max {
            self.finish(op, Outcome::Abandoned);
            return false;
        }
        true
    }

    pub(super) fn ops_on(&self, stream: u64) -> Vec<usize> {
        self.active
            .iter()
            .copied()
            .filter(|&i| self.ops[i].stream == Some(stream))
            .collect()
    }

    pub(super) fn op_by_tag(&self, tag: &str) -> Option<usize> {
        // The canonical spelling only (`OpId::of_tag`): the client's own.
        let id = crate::history::OpId::of_tag(tag)?;
        let n = id.call as usize;
        (id.client == self.spec.index && n < self.ops.len()).then_some(n)
    }

    /// A result arrived for `op`: handle it, or hold it behind a resume.
    pub(super) fn deliver(&mut self, op: usize, got: Got, via: Option<SlotId>) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        if let Some((held_stream, _)) = self.hold.on {
            let via_stream = via.and_then(|v| self.slots.get(&v)).and_then(|s| s.stream);
            if via_stream != Some(held_stream) {
                if !self.hold.results.iter().any(|(o, _)| *o == op) {
                    self.hold.results.push_back((op, got));
                }
                return;
            }
        }
        self.handle(op, got);
    }

    pub(super) fn handle(&mut self, op: usize, got: Got) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        self.record(ClientRecord::Handled {
            client: self.spec.index,
            tag: self.ops.tag(op),
            rpc_id: got.rpc,
            chunk: got.chunk,
            replayed: got.replayed,
        });
        self.finish(op, Outcome::Done);
    }

    pub(super) fn finish(&mut self, op: usize, outcome: Outcome) {
        let tag = self.ops.tag(op);
        if matches!(self.ops[op].state, OpState::Done | OpState::Abandoned) {
            return;
        }
        if outcome == Outcome::Abandoned {
            self.leave(op);
        }
        let o = &mut self.ops[op];
        o.state = if outcome == Outcome::Done {
            OpState::Done
        } else {
            OpState::Abandoned
        };
        o.unseen.clear();
        self.active.remove(&op);
        let missed = {
            let mut rules = self.planned.drop_rules.borrow_mut();
            let answers = rules.answers.remove(&tag);
            rules.events.remove(&tag).or(answers)
        };
        if let Some((after, seen)) = missed {
            self.planned
                .drops_missed
                .insert(op as u32, (seen, after, outcome));
        }
        if outcome == Outcome::Done
            && self.spec.switch_after == Some(op as u32)
            && self.transport == Transport::Legacy
        {
            self.planned.switch_due = true;
            self.schedule(Duration::ZERO, Timer::Switch);
        }
        // Nothing left to wait for on the held stream: stop holding.
        if let Some((held, _)) = self.hold.on {
            if self.ops_on(held).is_empty() {
                self.release_holds();
            }
        }
        self.record(ClientRecord::Outcome {
            client: self.spec.index,
            tag: self.ops.tag(op),
            outcome,
            attempts: self.ops[op].attempts,
        });
        // Only a stream with a live connection has a flag to set.
        let live: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, st)| st.live.is_some())
            .map(|(&k, _)| k)
            .collect();
        for s in live {
            self.set_expecting(s);
        }
        // The sequential workload moves on once nothing is active
        // (resume-then-post already moved on at its resume).
        if self.next_op < self.calls() && self.active.is_empty() {
            self.next_on_resume = false;
            let think = Duration::from_millis(self.g().think_ms);
            self.schedule(think, Timer::StartNext);
        }
    }

    /// Forgets the streams nothing can use any more: ended (cleanly, or
    /// their resume refused), with no connection, no active operation, no
    /// hold, re-send or resume waiting on them, and not the standalone
    /// stream. A long session would otherwise keep a record of every call's
    /// stream. The last [`RETIRED_KEPT`] are remembered by their last seen
    /// id, for a Rule M conflict that names one ([`Client::unretire`]).
    pub(super) fn retire_streams(&mut self) {
        let done: Vec<u64> = self
            .streams
            .iter()
            .filter(|&(&key, st)| self.retirable(key, st))
            .map(|(&key, _)| key)
            .collect();
        for key in done {
            if let Some(st) = self.streams.remove(&key) {
                if self.retired.len() == RETIRED_KEPT {
                    self.retired.pop_front();
                }
                self.retired.push_back((key, st.last_seen));
            }
        }
    }

    fn retirable(&self, key: u64, st: &CStream) -> bool {
        st.finished
            && st.live.is_none()
            && !st.standalone
            && self.standalone != Some(key)
            && !st.ops.iter().any(|o| self.ops[o].state == OpState::Active)
            && self.ops_on(key).is_empty()
            && self.hold.on.is_none_or(|(h, _)| h != key)
            && !self.resend_after_resume.contains_key(&key)
            && !self
                .io
                .timers
                .values()
                .any(|t| matches!(t, Timer::Resume(s) | Timer::Reconnect(s) if *s == key))
    }

    /// A retired stream back as it was left (ended, no connection, its
    /// last seen id), when it is among the last retired: what a kept
    /// stream would give. Its finished operations are not listed again:
    /// nothing reads a stream's operations but for the active ones.
    pub(super) fn unretire(&mut self, key: u64) {
        let Some(i) = self.retired.iter().position(|&(k, _)| k == key) else {
            return;
        };
        let (_, last_seen) = self.retired.remove(i).expect("found");
        self.streams.insert(
            key,
            CStream {
                last_seen,
                live: None,
                finished: true,
                standalone: false,
                ops: OpSet::default(),
            },
        );
    }

    /// Retires the oldest operations nothing refers to any more
    /// ([`Ops`]): finished, with no request out (no slot), no result held,
    /// no re-send or timer waiting. One a planned drop or switch names is
    /// kept whole for the end-of-run report.
    pub(super) fn retire_ops(&mut self) {
        while let Some((n, o)) = self.ops.oldest() {
            let referred = !matches!(o.state, OpState::Done | OpState::Abandoned)
                || self.slots.values().any(|s| {
                    matches!(s.kind, SlotKind::Call { op } | SlotKind::Task { op, .. } if op == n)
                })
                || self.hold.results.iter().any(|(op, _)| *op == n)
                || self.resend_after_resume.values().any(|v| v.contains(&n))
                || self
                    .io
                    .timers
                    .values()
                    .any(|t| matches!(t, Timer::Post(op) | Timer::Poll(op) if *op == n));
            if referred {
                return;
            }
            let call = n as u32;
            let keep = self.spec.drops.contains_key(&call) || self.spec.switch_after == Some(call);
            self.ops.retire_oldest(keep);
        }
    }

    pub(super) fn set_expecting(&self, stream: u64) {
        let Some(st) = self.streams.get(&stream) else {
            return;
        };
        if let Some(s) = st.live.and_then(|l| self.slots.get(&l)) {
            let expecting = !self.ops_on(stream).is_empty();
            s.expecting.set(expecting || s.marker_pending);
        }
    }

    pub(super) fn end_hold(&mut self, stream: u64) {
        if self.hold.on.is_some_and(|(s, _)| s == stream) {
            self.release_holds();
        }
    }

    pub(super) fn release_holds(&mut self) {
        self.hold.on = None;
        for (op, got) in std::mem::take(&mut self.hold.results) {
            self.handle(op, got);
        }
    }
}

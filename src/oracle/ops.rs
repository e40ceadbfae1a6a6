//! Per-operation facts and outcomes, from the black box only: the clients'
//! records, the side-effect ledger and the world's fault records
//! (docs/causes.md). Nothing here reads a server record, so the same verdict holds for
//! any server under test.
//!
//! One pass over the history builds [`OpFacts`] for every operation (a
//! tag), keyed by small integers: a workload operation's tag names its slot
//! (`c{client}-op{n}`), any other tag and every session id is interned
//! ([`super::intern`]). A second pass per operation decides its failures,
//! and one per client counts order violations with a Fenwick tree over
//! trace positions. The whole is linear in the history (up to a log
//! factor).

use super::intern::{FxMap, Sessions, Tags};
use crate::history::{
    ClientRecord, Entry, FaultKind, LedgerRecord, Outcome, Rec, Sent, SessionId, WorldRecord,
};
use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use std::collections::HashMap;
use std::rc::Rc;

/// What can go wrong with one operation (it may have several).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// More than one execution committed its effect.
    Duplicated,
    /// A counted event of the handled execution never reached the client,
    /// and nothing announced it.
    SilentLoss,
    /// Its result was handled after that of a later operation of the same
    /// client (one sent after this result was produced).
    OutOfOrder,
    /// The handled result was produced by no execution of this operation.
    WrongResult,
    /// No result was handled (given up, or unresolved at the end).
    Lost,
}

/// A set of failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failures(u8);

impl Failures {
    fn bit(f: Failure) -> u8 {
        1 << f as u8
    }
    /// Adds one.
    pub fn insert(&mut self, f: Failure) {
        self.0 |= Self::bit(f);
    }
    /// Whether it holds `f`.
    pub fn contains(self, f: Failure) -> bool {
        self.0 & Self::bit(f) != 0
    }
    /// Whether it is empty (the operation did not fail).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// What put operations at risk, whatever the server then did.
pub const HAZARDS: &[&str] = &[
    "drop",
    "partition",
    "latency",
    "restart",
    "eviction",
    "switch",
];

/// One execution of an operation, as the ledger and the client saw it.
#[derive(Clone, Debug)]
pub struct Exec {
    /// The request that ran it.
    pub rpc_id: RequestId,
    /// When it started, µs.
    pub start_us: u64,
    /// It took its effect: at its start (`effects = immediate`), or by a
    /// commit at its end. One that committed nothing (killed, cancelled,
    /// refused) is owed to nobody.
    pub committed: bool,
    /// Chunks it emitted.
    pub emitted: u32,
    /// Index of its result chunk, once emitted.
    pub result_index: Option<u32>,
    /// When its result was emitted, µs.
    pub result_us: Option<u64>,
    /// Trace position of its result's emission.
    pub result_seq: Option<u64>,
    /// Which chunks the client received (bit i-1 for index i).
    pub received: Vec<bool>,
    /// A chunk was received while an earlier one of the same execution
    /// never was: the server skipped events (its store lost them).
    pub hole: bool,
}

impl Exec {
    fn received_count(&self) -> u32 {
        self.received.iter().filter(|r| **r).count() as u32
    }
}

/// The handled result.
#[derive(Clone, Debug)]
pub struct Handled {
    /// Trace position.
    pub seq: u64,
    /// Time, µs.
    pub t_us: u64,
    /// The chunk its payload named.
    pub chunk: Option<ChunkRef>,
    /// Served from the key table, marked as such.
    pub replayed: bool,
    /// Event ids named by the gaps its client received on the stream the
    /// result arrived on, before the result (the rule: `Builder::gap_budget`).
    pub gap_named: u64,
}

/// Everything the oracle knows about one operation.
#[derive(Clone, Debug, Default)]
pub struct OpFacts {
    /// The client it belongs to.
    pub client: u32,
    /// Its tag.
    pub tag: Rc<str>,
    /// When the client began it, µs.
    pub start_us: u64,
    /// When its outcome was recorded, µs.
    pub end_us: Option<u64>,
    /// Trace position of its first POST.
    pub first_sent_seq: Option<u64>,
    /// How it ended for the client.
    pub outcome: Option<Outcome>,
    /// The handled result.
    pub handled: Option<Handled>,
    /// The fault that first interrupted it, µs.
    pub interrupted_us: Option<u64>,
    /// Its executions, in order (execution n at n−1).
    pub execs: Vec<Exec>,
    /// POSTs of it sent.
    pub calls_sent: u32,
    /// A re-sent POST carried no `Idempotency-Key`.
    pub keyless_retry: bool,
    /// Requests of it whose response the client never saw begin.
    pub unseen_rpcs: Vec<RequestId>,
    /// One of those ran (the ledger has an execution for it).
    pub unseen_attempt_ran: bool,
    /// The client got a 410 for it.
    pub refused_410: bool,
    /// The client resumed a stream for it.
    pub resumed: bool,
    /// When a planned drop hit it, µs.
    pub dropped_us: Option<u64>,
    /// An execution's result was emitted before that drop.
    pub result_before_drop: bool,
    /// Its client switched transport and was refused (404) during it.
    pub reinit_after_switch: bool,
    /// Its client gave it up.
    pub gave_up: bool,
    /// Its failures (empty: ok or degraded).
    pub failures: Failures,
    /// Hazards it met (bit i for `HAZARDS[i]`).
    pub hazards: u8,
    /// Counted events of the handled execution missing, unannounced.
    pub silent: u64,
    /// Counted events of the handled execution missing, announced.
    pub announced: u64,
    /// Emitted events of any of its executions never received (handled
    /// operations only).
    pub orphaned: u64,
    /// Handled while an event of its first execution never arrived.
    pub truncated: bool,
    /// Later operations whose result was handled before this one's.
    pub order_pairs: u64,
}

impl OpFacts {
    fn new(client: u32, tag: Rc<str>, start_us: u64) -> OpFacts {
        OpFacts {
            client,
            tag,
            start_us,
            ..OpFacts::default()
        }
    }

    /// Black-box evidence that its owed events left the server's store: a
    /// 410 for it, or a hole in an execution's received chunks.
    pub fn evicted(&self) -> bool {
        self.refused_410 || self.execs.iter().any(|x| x.hole)
    }

    /// Whether a server restart fell within its lifetime (begun to
    /// outcome, or to the end of the run).
    pub fn restarted_during(&self, restarts_us: &[u64]) -> bool {
        restarts_us
            .iter()
            .any(|&r| self.start_us <= r && self.end_us.is_none_or(|e| r <= e))
    }

    /// Executions that committed an effect.
    pub fn effects(&self) -> u64 {
        self.execs.iter().filter(|x| x.committed).count() as u64
    }

    /// Degraded: not failed, but it missed announced events.
    pub fn degraded(&self) -> bool {
        self.failures.is_empty() && self.announced > 0
    }

    /// The handled execution, when the result named one of this
    /// operation's executions by its result chunk.
    fn handled_exec(&self) -> Option<usize> {
        let c = self.handled.as_ref()?.chunk.as_ref()?;
        let i = (c.execution as usize).checked_sub(1)?;
        let x = self.execs.get(i)?;
        (c.tag == self.tag && x.committed && x.result_index == Some(c.index)).then_some(i)
    }
}

/// Run-wide facts the causes and hazards read.
#[derive(Clone, Debug, Default)]
pub struct RunFacts {
    /// Server restarts, µs.
    pub restarts_us: Vec<u64>,
    /// Every client finished before the run ended.
    pub clients_finished: bool,
    /// (host, from µs, to µs) of each partition.
    pub partitions: Vec<(u32, u64, u64)>,
    /// (host, from µs, to µs) of each latency spike.
    pub spikes: Vec<(u32, u64, u64)>,
}

/// Per-client facts beyond operations.
#[derive(Clone, Debug, Default)]
pub struct ClientFacts {
    /// Initializations sent.
    pub inits: u64,
    /// When it switched transport, µs.
    pub switched_us: Option<u64>,
    /// 404s it got, µs.
    pub refused_404_us: Vec<u64>,
    /// Transport-switch latency samples, µs.
    pub switch_latency_us: Vec<u64>,
    /// Operations of it that never produced a record (not even an outcome).
    pub never_begun: u64,
    /// When its first operation begun after the switch began, µs.
    pub first_after_switch: Option<u64>,
}

/// The black-box judgement of a run's operations.
pub struct Ops {
    /// Every operation, in the order clients began them.
    pub ops: Vec<OpFacts>,
    /// Per client.
    pub clients: Vec<ClientFacts>,
    /// Run-wide facts.
    pub run: RunFacts,
}

/// Builds and judges every operation. `calls[c]` is client c's workload
/// size, `hosts[c]` its host.
pub fn judge(entries: &[Entry], calls: &[u32], hosts: &[u32], clients_finished: bool) -> Ops {
    let mut b = Builder {
        ops: Vec::new(),
        tags: Tags::new(calls),
        op_of: Vec::new(),
        sessions: Sessions::default(),
        clients: vec![ClientFacts::default(); calls.len()],
        run: RunFacts {
            clients_finished,
            ..RunFacts::default()
        },
        open_faults: HashMap::new(),
        pending_switch: vec![None; calls.len()],
        gaps_named: FxMap::default(),
        result_gaps: FxMap::default(),
    };
    b.op_of = vec![NO_OP; b.tags.len()];
    for e in entries {
        b.entry(e);
    }
    let end_us = entries.last().map_or(0, |e| e.t_us);
    let mut open: Vec<_> = std::mem::take(&mut b.open_faults).into_iter().collect();
    open.sort_unstable_by_key(|&(index, _)| index);
    for (_, (kind, host, from)) in open {
        b.close_fault(kind, host, from, end_us);
    }
    b.finish(calls, hosts);
    Ops {
        ops: b.ops,
        clients: b.clients,
        run: b.run,
    }
}

/// `Builder::op_of` of a tag with no operation.
const NO_OP: u32 = u32::MAX;

struct Builder {
    ops: Vec<OpFacts>,
    /// Tag → small integer.
    tags: Tags,
    /// Tag id → index in `ops` (`NO_OP`: none).
    op_of: Vec<u32>,
    /// Session id → small integer (for the gap budget).
    sessions: Sessions,
    clients: Vec<ClientFacts>,
    run: RunFacts,
    /// fault index → (kind, host, start µs), for timed faults still on.
    open_faults: HashMap<u32, (FaultKind, Option<u32>, u64)>,
    /// client → switch time not yet matched with a handled result.
    pending_switch: Vec<Option<u64>>,
    /// (client, session, stream) → event ids named by the gaps received on
    /// that stream so far (over all its connections and resumes).
    gaps_named: FxMap<(u32, u32, u64), u64>,
    /// (client, result chunk as (tag, execution, index)) → `gaps_named` of
    /// the stream it arrived on, when it arrived (the latest arrival), when
    /// not 0.
    result_gaps: FxMap<(u32, u32, u32, u32), u64>,
}

impl Builder {
    fn op(&mut self, tag: &str) -> Option<&mut OpFacts> {
        let t = self.tags.get(tag)?;
        match self.op_of.get(t as usize) {
            Some(&i) if i != NO_OP => Some(&mut self.ops[i as usize]),
            _ => None,
        }
    }

    fn op_or_new(&mut self, client: u32, tag: &Rc<str>, t_us: u64) -> &mut OpFacts {
        let t = self.tags.id(tag) as usize;
        if t >= self.op_of.len() {
            self.op_of.resize(t + 1, NO_OP);
        }
        if self.op_of[t] == NO_OP {
            self.op_of[t] = self.ops.len() as u32;
            self.ops.push(OpFacts::new(client, tag.clone(), t_us));
        }
        let i = self.op_of[t] as usize;
        &mut self.ops[i]
    }

    fn client(&mut self, c: u32) -> &mut ClientFacts {
        let c = c as usize;
        if c >= self.clients.len() {
            self.clients.resize(c + 1, ClientFacts::default());
            self.pending_switch.resize(c + 1, None);
        }
        &mut self.clients[c]
    }

    fn entry(&mut self, e: &Entry) {
        let (t, seq) = (e.t_us, e.seq);
        match &e.record {
            Rec::Client(r) => self.client_record(r, t, seq),
            Rec::Ledger(r) => self.ledger_record(r, t, seq),
            Rec::World(r) => match r {
                WorldRecord::FaultStarted { index, kind, host } => {
                    if *kind == FaultKind::Restart {
                        self.run.restarts_us.push(t);
                    } else {
                        self.open_faults.insert(*index, (*kind, *host, t));
                    }
                }
                WorldRecord::FaultEnded { index } => {
                    if let Some((kind, host, from)) = self.open_faults.remove(index) {
                        self.close_fault(kind, host, from, t);
                    }
                }
                WorldRecord::HealStarted => {}
            },
            Rec::Server(_) => {}
        }
    }

    fn close_fault(&mut self, kind: FaultKind, host: Option<u32>, from: u64, to: u64) {
        let Some(host) = host else { return };
        match kind {
            FaultKind::Partition => self.run.partitions.push((host, from, to)),
            FaultKind::Latency => self.run.spikes.push((host, from, to)),
            FaultKind::Drop | FaultKind::Restart | FaultKind::Switch => {}
        }
    }

    fn client_record(&mut self, r: &ClientRecord, t: u64, seq: u64) {
        match r {
            ClientRecord::OpStarted { client, tag } => {
                self.op_or_new(*client, tag, t).start_us = t;
            }
            ClientRecord::Sent {
                client,
                what,
                tag,
                keyed,
                ..
            } => self.sent(*client, *what, tag.as_ref(), *keyed, seq),
            ClientRecord::Status {
                client,
                tag,
                status,
                ..
            } => {
                if *status == 404 {
                    self.client(*client).refused_404_us.push(t);
                }
                if let (410, Some(tag)) = (status, tag) {
                    if let Some(op) = self.op(tag) {
                        op.refused_410 = true;
                    }
                }
            }
            ClientRecord::Gap {
                client,
                session,
                stream,
                named,
                ..
            } => {
                let s = self.sessions.id(session);
                let n = self.gaps_named.entry((*client, s, *stream)).or_default();
                *n = n.saturating_add(*named);
            }
            ClientRecord::Received {
                client,
                session,
                stream,
                chunk: Some(c),
                result,
                ..
            } => self.received(*client, session, *stream, c, *result),
            ClientRecord::Handled {
                client,
                tag,
                chunk,
                replayed,
                ..
            } => self.handled(*client, tag, chunk.as_ref(), *replayed, t, seq),
            ClientRecord::Interrupted { tag, fault_us, .. } => {
                if let Some(op) = self.op(tag) {
                    op.interrupted_us.get_or_insert(*fault_us);
                }
            }
            ClientRecord::Dropped { tag, .. } => {
                if let Some(op) = self.op(tag) {
                    op.dropped_us.get_or_insert(t);
                }
            }
            ClientRecord::NoResponse {
                tag,
                rpc_id,
                connected: true,
                ..
            } => {
                if let Some(op) = self.op(tag) {
                    op.unseen_rpcs.push(rpc_id.clone());
                }
            }
            ClientRecord::Switched { client, .. } => {
                self.client(*client).switched_us.get_or_insert(t);
                self.pending_switch[*client as usize] = Some(t);
            }
            ClientRecord::Outcome {
                client,
                tag,
                outcome,
                ..
            } => {
                let op = self.op_or_new(*client, tag, t);
                op.outcome = Some(*outcome);
                op.end_us = Some(t);
                op.gave_up = *outcome == Outcome::Abandoned;
            }
            _ => {}
        }
    }

    /// A request the client sent: an initialize, a call's attempt, a
    /// resume.
    fn sent(&mut self, client: u32, what: Sent, tag: Option<&Rc<str>>, keyed: bool, seq: u64) {
        match (what, tag) {
            (Sent::Initialize, _) => self.client(client).inits += 1,
            (Sent::Call, Some(tag)) => {
                if let Some(op) = self.op(tag) {
                    op.calls_sent += 1;
                    op.first_sent_seq.get_or_insert(seq);
                    if op.calls_sent > 1 && !keyed {
                        op.keyless_retry = true;
                    }
                }
            }
            (Sent::Resume, Some(tag)) => {
                if let Some(op) = self.op(tag) {
                    op.resumed = true;
                }
            }
            _ => {}
        }
    }

    /// A chunk the client received on `stream` of `session` (`result`: the
    /// result's own): the gaps named before a result, and the chunks each
    /// execution delivered.
    fn received(
        &mut self,
        client: u32,
        session: &SessionId,
        stream: u64,
        c: &ChunkRef,
        result: bool,
    ) {
        if result {
            let named = if self.gaps_named.is_empty() {
                0
            } else {
                self.sessions
                    .get(session)
                    .and_then(|s| self.gaps_named.get(&(client, s, stream)))
                    .copied()
                    .unwrap_or(0)
            };
            // Absent means 0: the latest arrival wins either way.
            if named > 0 {
                let t = self.tags.id(&c.tag);
                self.result_gaps
                    .insert((client, t, c.execution, c.index), named);
            } else if !self.result_gaps.is_empty() {
                if let Some(t) = self.tags.get(&c.tag) {
                    self.result_gaps.remove(&(client, t, c.execution, c.index));
                }
            }
        }
        if let Some(x) = self
            .op(&c.tag)
            .and_then(|op| op.execs.get_mut((c.execution as usize).wrapping_sub(1)))
        {
            let i = c.index as usize;
            if i >= 1 && i <= x.received.len() {
                x.received[i - 1] = true;
            }
        }
    }

    /// The client handled `tag`'s result (its first handling counts); a
    /// pending transport switch's latency ends here.
    fn handled(
        &mut self,
        client: u32,
        tag: &Rc<str>,
        chunk: Option<&ChunkRef>,
        replayed: bool,
        t: u64,
        seq: u64,
    ) {
        if let Some(s) = self
            .pending_switch
            .get_mut(client as usize)
            .and_then(Option::take)
        {
            let sample = t.saturating_sub(s);
            self.client(client).switch_latency_us.push(sample);
        }
        let gap_named = self.gap_budget(client, chunk);
        if let Some(op) = self.op(tag) {
            op.handled.get_or_insert(Handled {
                seq,
                t_us: t,
                chunk: chunk.cloned(),
                replayed,
                gap_named,
            });
        }
    }

    /// How many missing events of a handled result's execution count as
    /// announced by gaps, black box (client records only; event ids stay
    /// opaque, only counted): the event ids named by every `gap` the client
    /// received on the stream (same session, any of its connections or
    /// resumes) on which that result arrived, before it arrived. A missing
    /// counted event of the handled execution is announced up to that
    /// number; any excess stays silent. The budget is per operation, not
    /// shared: on a stream that carries several operations (a standalone
    /// stream in `session-stream` delivery) one gap may announce a loss for
    /// each; on a POST stream (one operation) it is exact up to the count.
    fn gap_budget(&self, client: u32, chunk: Option<&ChunkRef>) -> u64 {
        if self.result_gaps.is_empty() {
            return 0;
        }
        chunk
            .and_then(|c| {
                let t = self.tags.get(&c.tag)?;
                self.result_gaps.get(&(client, t, c.execution, c.index))
            })
            .copied()
            .unwrap_or(0)
    }

    fn ledger_record(&mut self, r: &LedgerRecord, t: u64, seq: u64) {
        match r {
            LedgerRecord::Execution {
                tag,
                n,
                rpc_id,
                deferred,
                ..
            } => {
                if let Some(op) = self.op(tag) {
                    debug_assert_eq!(*n as usize, op.execs.len() + 1);
                    op.execs.push(Exec {
                        rpc_id: rpc_id.clone(),
                        start_us: t,
                        committed: !deferred,
                        emitted: 0,
                        result_index: None,
                        result_us: None,
                        result_seq: None,
                        received: Vec::new(),
                        hole: false,
                    });
                }
            }
            LedgerRecord::Commit { tag, n } => {
                if let Some(x) = self
                    .op(tag)
                    .and_then(|op| op.execs.get_mut((*n as usize).wrapping_sub(1)))
                {
                    x.committed = true;
                }
            }
            LedgerRecord::Chunk {
                tag,
                n,
                index,
                last,
            } => {
                if let Some(x) = self
                    .op(tag)
                    .and_then(|op| op.execs.get_mut((*n as usize).wrapping_sub(1)))
                {
                    x.emitted += 1;
                    let i = *index as usize;
                    if x.received.len() < i {
                        x.received.resize(i, false);
                    }
                    if *last {
                        x.result_index = Some(*index);
                        x.result_us = Some(t);
                        x.result_seq = Some(seq);
                    }
                }
            }
        }
    }

    fn finish(&mut self, calls: &[u32], hosts: &[u32]) {
        // Operations with no record at all (a client that never began them
        // and recorded no outcome).
        let mut seen = vec![0u64; self.clients.len()];
        for op in &self.ops {
            seen[op.client as usize] += 1;
        }
        for (c, &n) in calls.iter().enumerate() {
            self.clients[c].never_begun = u64::from(n).saturating_sub(seen[c]);
        }
        for op in &self.ops {
            let c = &mut self.clients[op.client as usize];
            if let Some(s) = c.switched_us {
                if op.start_us >= s && c.first_after_switch.is_none_or(|f| op.start_us < f) {
                    c.first_after_switch = Some(op.start_us);
                }
            }
        }
        for op in &mut self.ops {
            let c = op.client as usize;
            outcome(op, &self.clients[c], hosts.get(c).copied(), &self.run);
        }
        order_violations(&mut self.ops, self.clients.len());
    }
}

/// Decides one operation's failures and event counts, and its hazards.
fn outcome(op: &mut OpFacts, client: &ClientFacts, host: Option<u32>, run: &RunFacts) {
    for x in &mut op.execs {
        let mut gap = false;
        for (i, r) in x.received.iter().enumerate() {
            if !r {
                gap = true;
            } else if gap && i > 0 {
                x.hole = true;
                break;
            }
        }
    }
    if op.effects() > 1 {
        op.failures.insert(Failure::Duplicated);
    }
    op.unseen_attempt_ran = op
        .unseen_rpcs
        .iter()
        .any(|r| op.execs.iter().any(|x| &x.rpc_id == r));
    op.result_before_drop = op
        .dropped_us
        .is_some_and(|d| op.execs.iter().any(|x| x.result_us.is_some_and(|r| r <= d)));
    let end = op.end_us.unwrap_or(u64::MAX);
    op.reinit_after_switch = client.switched_us.is_some_and(|s| {
        s <= end
            && client
                .refused_404_us
                .iter()
                .any(|&t| t >= s.max(op.start_us) && t <= end)
    });
    match (&op.handled, op.outcome) {
        (Some(h), _) => {
            let replayed = h.replayed;
            match op.handled_exec() {
                None => op.failures.insert(Failure::WrongResult),
                Some(i) => {
                    let x = &op.execs[i];
                    let missing = u64::from(x.emitted - x.received_count().min(x.emitted));
                    // A key-table replay announces all it missed; gaps
                    // announce up to the ids they named.
                    op.announced = if replayed {
                        missing
                    } else {
                        missing.min(h.gap_named)
                    };
                    op.silent = missing - op.announced;
                    if op.silent > 0 {
                        op.failures.insert(Failure::SilentLoss);
                    }
                }
            }
            // Executions that committed nothing owe nothing.
            let committed = op.execs.iter().filter(|x| x.committed);
            op.truncated = committed
                .clone()
                .next()
                .is_some_and(|x| x.received_count() < x.emitted);
            op.orphaned = committed
                .map(|x| u64::from(x.emitted.saturating_sub(x.received_count())))
                .sum();
        }
        (None, _) => op.failures.insert(Failure::Lost),
    }
    // Hazards.
    let overlaps = |w: &[(u32, u64, u64)]| {
        w.iter()
            .any(|&(h, from, to)| Some(h) == host && from <= end && to >= op.start_us)
    };
    // A switch in flight, or the first operation begun after it.
    let switched = client.switched_us.is_some_and(|s| {
        (s >= op.start_us && s <= end) || client.first_after_switch == Some(op.start_us)
    });
    // In `HAZARDS` order.
    let hz = [
        op.dropped_us.is_some(),
        overlaps(&run.partitions),
        overlaps(&run.spikes),
        op.restarted_during(&run.restarts_us),
        op.evicted(),
        switched,
    ];
    op.hazards = hz
        .iter()
        .enumerate()
        .fold(0, |acc, (i, &on)| acc | (u8::from(on) << i));
}

/// Order violations: pairs (A, B) of one client's operations
/// where A's result was produced before B was first sent, yet the client
/// handled B's result first. Counted on A (`order_pairs`), which fails as
/// out of order. Per client: sort by handling order and count, with a
/// Fenwick tree over B's send positions, the earlier-handled B sent after
/// A's result.
fn order_violations(ops: &mut [OpFacts], clients: usize) {
    let mut by_client: Vec<Vec<usize>> = vec![Vec::new(); clients];
    for (i, op) in ops.iter().enumerate() {
        if op.handled.is_some() && op.first_sent_seq.is_some() {
            by_client[op.client as usize].push(i);
        }
    }
    for list in by_client {
        if list.len() < 2 {
            continue;
        }
        let mut sends: Vec<u64> = list
            .iter()
            .map(|&i| ops[i].first_sent_seq.expect("filtered"))
            .collect();
        sends.sort_unstable();
        let mut order = list.clone();
        order.sort_by_key(|&i| ops[i].handled.as_ref().expect("filtered").seq);
        let mut tree = vec![0u64; sends.len() + 1];
        for (inserted, &a) in order.iter().enumerate() {
            // A's result: the earliest any execution produced one.
            if let Some(r) = ops[a].execs.iter().filter_map(|x| x.result_seq).min() {
                // Count inserted B with send > r: inserted − #(send <= r).
                let upto = sends.partition_point(|&s| s <= r);
                let mut le = 0;
                let mut k = upto;
                while k > 0 {
                    le += tree[k];
                    k &= k - 1;
                }
                let n = inserted as u64 - le;
                if n > 0 {
                    ops[a].order_pairs = n;
                    ops[a].failures.insert(Failure::OutOfOrder);
                }
            }
            let s = ops[a].first_sent_seq.expect("filtered");
            let mut k = sends.partition_point(|&x| x < s) + 1;
            while k < tree.len() {
                tree[k] += 1;
                k += k & k.wrapping_neg();
            }
        }
    }
}

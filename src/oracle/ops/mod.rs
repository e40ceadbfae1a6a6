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

pub use super::facts::{
    ClientFacts, Exec, Failure, Failures, Handled, Left, OpFacts, Ops, RunFacts, HAZARDS,
};
use super::intern::{FxMap, Sessions, Tags};
use crate::history::{
    ClientRecord, Entry, FaultKind, LedgerRecord, Outcome, Rec, Sent, SessionId, TaskEvent,
    WorldRecord,
};
use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use live::Live;
use std::collections::HashMap;
use std::rc::Rc;
use verdict::{order_violations, outcome};

mod live;
mod verdict;

/// Builds and judges every operation. `calls[c]` is client c's workload
/// size, `hosts[c]` its host.
pub fn judge(entries: &[Entry], calls: &[u32], hosts: &[u32], clients_finished: bool) -> Ops {
    let mut b = Builder::new(calls, clients_finished, false);
    for e in entries {
        b.entry(e);
    }
    b.close_open_faults(entries.last().map_or(0, |e| e.t_us));
    b.finish(calls, hosts);
    Ops {
        ops: b.ops,
        clients: b.clients,
        run: b.run,
    }
}

/// Where a partition's or latency spike's window is kept: (a partition,
/// its index in `RunFacts::partitions` or `spikes`).
type Window = (bool, usize);

/// `Builder::op_of` of a tag with no operation.
const NO_OP: u32 = u32::MAX;
/// `Builder::op_of` of a tag whose operation was judged and dropped.
const JUDGED: u32 = u32::MAX - 1;

/// Reads the black box's records into operations' facts, one entry at a
/// time: all of them kept for [`judge`], or each taken out and judged when
/// final ([`Builder::take`]).
pub(super) struct Builder {
    ops: Vec<OpFacts>,
    /// Tag → small integer.
    tags: Tags,
    /// Tag id → index in `ops` (`NO_OP`: none).
    op_of: Vec<u32>,
    /// Session id → small integer (for the gap budget).
    sessions: Sessions,
    clients: Vec<ClientFacts>,
    run: RunFacts,
    /// fault index → its window, for timed faults still on.
    open_faults: HashMap<u32, Window>,
    /// fault index → its span in `run.store_lagged`, for lag windows on.
    lag_windows: std::collections::BTreeMap<u32, usize>,
    /// Whether the shared store keeps its contents across restarts.
    store_durable: bool,
    /// client → switch time not yet matched with a handled result.
    pending_switch: Vec<Option<u64>>,
    /// (client, session, stream) → event ids named by the gaps received on
    /// that stream so far (over all its connections and resumes).
    gaps_named: FxMap<(u32, u32, u64), u64>,
    /// (client, session, stream) → the latest emission (trace position)
    /// among the events the client received on it.
    latest_received: FxMap<(u32, u32, u64), u64>,
    /// (client, result chunk as (tag, execution, index)) → `gaps_named` of
    /// the stream it arrived on, when it arrived (the latest arrival), when
    /// not 0.
    result_gaps: FxMap<(u32, u32, u32, u32), u64>,
    /// Operations begun, by client.
    began: Vec<u64>,
    /// Operations begun so far, over all clients.
    next_order: u64,
    /// `ops[i]`'s tag id and the order it began in (streaming: `ops` is
    /// reordered as operations leave).
    slot: Vec<(u32, u64)>,
    /// Per client, what judging one operation at a time needs (`None`:
    /// every operation is judged at the end).
    live: Option<Vec<Live>>,
}

impl Builder {
    /// A builder for a workload of `calls[c]` operations per client;
    /// `streaming`: operations are taken out as they become final.
    pub(super) fn new(calls: &[u32], clients_finished: bool, streaming: bool) -> Builder {
        let tags = Tags::new(calls);
        Builder {
            ops: Vec::new(),
            op_of: vec![NO_OP; tags.len()],
            tags,
            sessions: Sessions::default(),
            clients: vec![ClientFacts::default(); calls.len()],
            run: RunFacts {
                clients_finished,
                ..RunFacts::default()
            },
            open_faults: HashMap::new(),
            lag_windows: Default::default(),
            store_durable: true,
            pending_switch: vec![None; calls.len()],
            gaps_named: FxMap::default(),
            latest_received: FxMap::default(),
            result_gaps: FxMap::default(),
            began: vec![0; calls.len()],
            next_order: 0,
            slot: Vec::new(),
            live: streaming.then(|| vec![Live::default(); calls.len()]),
        }
    }

    fn op(&mut self, tag: &str) -> Option<&mut OpFacts> {
        let i = self.op_index(tag)?;
        Some(&mut self.ops[i])
    }

    /// Where the operation `tag` names is in `ops` (not begun, or judged
    /// already: `None`).
    fn op_index(&self, tag: &str) -> Option<usize> {
        let t = self.tags.get(tag)?;
        match self.op_of.get(t as usize) {
            Some(&i) if i != NO_OP && i != JUDGED => Some(i as usize),
            _ => None,
        }
    }

    /// The operation `tag` names, begun now if it was not (`None`: it was
    /// judged already, and a late record of it changes nothing).
    fn op_or_new(&mut self, client: u32, tag: &Rc<str>, t_us: u64) -> Option<&mut OpFacts> {
        let t = self.tags.id(tag);
        let k = t as usize;
        if k >= self.op_of.len() {
            self.op_of.resize(k + 1, NO_OP);
        }
        match self.op_of[k] {
            JUDGED => return None,
            NO_OP => {
                self.op_of[k] = self.ops.len() as u32;
                self.ops.push(OpFacts::new(client, tag.clone(), t_us));
                self.slot.push((t, self.next_order));
                self.next_order += 1;
                self.client(client);
                self.began[client as usize] += 1;
                self.begun(client, t, t_us);
            }
            _ => {}
        }
        let i = self.op_of[k] as usize;
        Some(&mut self.ops[i])
    }

    /// Streaming: operation `t` of `client` began at `t_us`; the first
    /// operation begun at or after its switch is known as it begins.
    fn begun(&mut self, client: u32, t: u32, t_us: u64) {
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let l = &mut live[client as usize];
        l.ops.push(t);
        l.last_start = Some(t_us);
        let c = &mut self.clients[client as usize];
        if c.switched_us.is_some_and(|s| t_us >= s) && c.first_after_switch.is_none() {
            c.first_after_switch = Some(t_us);
        }
    }

    fn client(&mut self, c: u32) -> &mut ClientFacts {
        let c = c as usize;
        if c >= self.clients.len() {
            self.clients.resize(c + 1, ClientFacts::default());
            self.pending_switch.resize(c + 1, None);
            self.began.resize(c + 1, 0);
            if let Some(live) = self.live.as_mut() {
                live.resize(c + 1, Live::default());
            }
        }
        &mut self.clients[c]
    }

    /// Takes the next entry.
    pub(super) fn entry(&mut self, e: &Entry) {
        let (t, seq) = (e.t_us, e.seq);
        match &e.record {
            Rec::Client(r) => self.client_record(r, t, seq),
            Rec::Ledger(r) => self.ledger_record(r, t, seq),
            Rec::World(r) => match r {
                WorldRecord::FaultStarted {
                    index,
                    kind,
                    host,
                    replica,
                } => {
                    if *kind == FaultKind::Restart {
                        self.run.restarts_us.push(t);
                    } else if let (FaultKind::ReplicaCrash | FaultKind::ReplicaRemove, Some(r)) =
                        (kind, replica)
                    {
                        self.run.crashes_us.push((*r, t));
                    } else if *kind == FaultKind::BalancerRestart {
                        self.run.balancer_restarts_us.push(t);
                    } else if *kind == FaultKind::StoreRestart {
                        if !self.store_durable {
                            self.run.store_lost_us.push(t);
                        }
                    } else if *kind == FaultKind::StoreLagWindow {
                        self.run.store_lagged.push((t, u64::MAX));
                        self.lag_windows
                            .insert(*index, self.run.store_lagged.len() - 1);
                    } else if let Some(at) = self.open_fault(*kind, *host, t) {
                        self.open_faults.insert(*index, at);
                    }
                }
                WorldRecord::FaultEnded { index } => {
                    if let Some(at) = self.open_faults.remove(index) {
                        self.close_fault(at, t);
                    }
                    if let Some(i) = self.lag_windows.remove(index) {
                        self.run.store_lagged[i].1 = t;
                    }
                }
                WorldRecord::HealStarted => self.run.heal_us = Some(t),
                WorldRecord::Deployed { shared_store, .. } => {
                    self.run.deployed = true;
                    if let Some(s) = shared_store {
                        self.run.shared_store = true;
                        self.store_durable = s.durable;
                        if s.lag_ms > 0 {
                            self.run.store_lagged.push((0, u64::MAX));
                        }
                    }
                }
                WorldRecord::ReplicaRestarted { replica } => {
                    self.run.crashes_us.push((*replica, t));
                }
                WorldRecord::PinExpired {
                    session: Some(s), ..
                } => {
                    let s = self.sessions.id(s);
                    self.run.pins_expired.push((t, s));
                }
                WorldRecord::PinExpired { session: None, .. } => {}
            },
            Rec::Server(_) => {}
        }
    }

    /// A partition or latency spike of a host began: its window, open
    /// (to the end of time) until it ends; where it is kept.
    fn open_fault(&mut self, kind: FaultKind, host: Option<u32>, from: u64) -> Option<Window> {
        let host = host?;
        let w = match kind {
            FaultKind::Partition => &mut self.run.partitions,
            FaultKind::Latency => &mut self.run.spikes,
            // Windows over a client host only.
            _ => return None,
        };
        w.push((host, from, u64::MAX));
        Some((kind == FaultKind::Partition, w.len() - 1))
    }

    fn close_fault(&mut self, (partition, i): Window, to: u64) {
        let w = if partition {
            &mut self.run.partitions
        } else {
            &mut self.run.spikes
        };
        w[i].2 = to;
    }

    /// The end of the trace at `end_us`: faults still on end there.
    fn close_open_faults(&mut self, end_us: u64) {
        self.run.end_us = end_us;
        let mut open: Vec<_> = std::mem::take(&mut self.open_faults).into_iter().collect();
        open.sort_unstable_by_key(|&(index, _)| index);
        for (_, at) in open {
            self.close_fault(at, end_us);
        }
    }

    fn client_record(&mut self, r: &ClientRecord, t: u64, seq: u64) {
        match r {
            ClientRecord::Session { client, session } => {
                self.client(*client).session_refused = false;
                if self.run.deployed {
                    let s = self.sessions.id(session);
                    self.client(*client).sessions.push((t, s));
                }
            }
            ClientRecord::OpStarted { client, tag } => {
                if let Some(op) = self.op_or_new(*client, tag, t) {
                    op.start_us = t;
                }
            }
            ClientRecord::Sent { .. } => self.sent(r, (t, seq)),
            ClientRecord::Status {
                client,
                tag,
                status,
                session,
                ..
            } => {
                if *status == 404 {
                    self.client(*client).refused_404_us.push(t);
                }
                if tag.is_none() && session.is_none() {
                    // An initialize's answer (no session yet).
                    self.client(*client).session_refused = *status == 503;
                }
                if let Some(op) = tag.as_ref().and_then(|tag| self.op(tag)) {
                    op.refused_410 |= *status == 410;
                    op.last_status = Some(*status);
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
            ClientRecord::Stale {
                tag: Some(tag),
                rpc_id,
                sent_us,
                ..
            } => {
                if let Some(op) = self.op(tag) {
                    op.stale_rpcs.push((rpc_id.clone(), *sent_us, t));
                }
            }
            ClientRecord::Task {
                tag, rpc_id, event, ..
            } => self.task(tag, rpc_id, *event),
            ClientRecord::InputRequired { tag, rpc_id, .. } => self.asked(tag, rpc_id),
            ClientRecord::Switched { client, .. } => self.switched(*client, t),
            ClientRecord::Paused { client, .. } => self.client(*client).paused_us.push(t),
            ClientRecord::KeyChanged { client, tag } => {
                if let Some(op) = self.op_or_new(*client, tag, t) {
                    op.key_changed = true;
                }
            }
            ClientRecord::Left { .. } | ClientRecord::CancelAccepted { .. } => self.left(r, t),
            ClientRecord::CursorDropped { client, tag } => {
                if let Some(op) = self.op_or_new(*client, tag, t) {
                    op.cursor_dropped = true;
                }
            }
            ClientRecord::Outcome {
                client,
                tag,
                outcome,
                ..
            } => {
                if let Some(op) = self.op_or_new(*client, tag, t) {
                    op.outcome = Some(*outcome);
                    op.end_us = Some(t);
                    op.gave_up = *outcome == Outcome::Abandoned;
                }
            }
            _ => {}
        }
    }

    /// `client` left the legacy transport at `t`.
    fn switched(&mut self, client: u32, t: u64) {
        let c = self.client(client);
        let first = c.switched_us.is_none();
        c.switched_us.get_or_insert(t);
        self.pending_switch[client as usize] = Some(t);
        // Streaming: an operation begun at this instant, before the
        // switch's record, is the first at or after it.
        if let (true, Some(live)) = (first, &self.live) {
            if live[client as usize].last_start == Some(t) {
                self.clients[client as usize].first_after_switch = Some(t);
            }
        }
    }

    /// What a client learnt about `tag`'s task.
    fn task(&mut self, tag: &Rc<str>, rpc_id: &RequestId, event: TaskEvent) {
        if let Some(op) = self.op(tag) {
            match event {
                TaskEvent::Created => op.tasks_created_by.push(rpc_id.clone()),
                TaskEvent::CancelAcked => op.task_cancel_acked = true,
                TaskEvent::Gone => op.task_gone = true,
                TaskEvent::Ended => {}
            }
        }
    }

    /// A call of `tag` (`rpc_id`) was answered with a question.
    fn asked(&mut self, tag: &Rc<str>, rpc_id: &RequestId) {
        if let Some(op) = self.op(tag) {
            op.input_asked_by.push(rpc_id.clone());
        }
    }

    /// When a call's POST or a resume of `tag` went out, and the resume's
    /// cursor (a reconnect loop's evidence).
    fn request(&mut self, what: Sent, tag: Option<&Rc<str>>, cursor: Option<&str>, t: u64) {
        if let (Some(op), Sent::Call | Sent::Resume) = (tag.and_then(|g| self.op(g)), what) {
            op.requests_us.push(t);
            if what == Sent::Resume {
                op.resume_cursors.push(cursor.map(Rc::from));
            }
        }
        if what == Sent::Resume {
            self.past_result(tag);
        }
    }

    /// A resume of `tag` goes out: whether the client's cursor on one of
    /// its streams is past a result of it that never arrived (it received
    /// there an event emitted later).
    fn past_result(&mut self, tag: Option<&Rc<str>>) {
        let Some(i) = tag.and_then(|g| self.op_index(g)) else {
            return;
        };
        let (latest, op) = (&self.latest_received, &mut self.ops[i]);
        let unreceived = op.execs.iter().filter_map(|x| {
            let i = x.result_index? as usize;
            (!x.received.get(i - 1).copied().unwrap_or(false)).then_some(x.result_seq?)
        });
        let Some(result) = unreceived.min() else {
            return;
        };
        let client = op.client;
        op.cursor_past_result |= op.streams.iter().any(|&(s, stream)| {
            latest
                .get(&(client, s, stream))
                .is_some_and(|&l| l > result)
        });
    }

    /// A request the client left when it gave its call up, and the
    /// server's acceptance of its cancellation.
    fn left(&mut self, r: &ClientRecord, t: u64) {
        match r {
            ClientRecord::Left {
                client,
                tag,
                rpc_id,
                cancelled,
            } => {
                if let Some(op) = self.op_or_new(*client, tag, t) {
                    op.left.push(Left {
                        rpc_id: rpc_id.clone(),
                        at_us: t,
                        cancelled: *cancelled,
                        accepted_us: None,
                    });
                }
            }
            ClientRecord::CancelAccepted {
                client,
                tag,
                rpc_id,
            } => {
                let op = self.op_or_new(*client, tag, t);
                let left = op.and_then(|op| {
                    op.left
                        .iter_mut()
                        .rfind(|l| l.rpc_id == *rpc_id && l.accepted_us.is_none())
                });
                if let Some(l) = left {
                    l.accepted_us = Some(t);
                }
            }
            _ => {}
        }
    }

    /// A request the client sent: an initialize, a call's attempt, a
    /// resume.
    fn sent(&mut self, r: &ClientRecord, (t, seq): (u64, u64)) {
        let ClientRecord::Sent {
            client,
            what,
            tag,
            keyed,
            cursor,
            ..
        } = r
        else {
            return;
        };
        let (client, what, tag, keyed) = (*client, *what, tag.as_ref(), *keyed);
        self.request(what, tag, cursor.as_deref(), t);
        match (what, tag) {
            (Sent::Initialize, _) => self.client(client).inits += 1,
            (Sent::Call, Some(tag)) => {
                if let Some(op) = self.op(tag) {
                    op.calls_sent += 1;
                    op.last_status = None;
                    op.keyed |= keyed;
                    op.first_sent_seq.get_or_insert(seq);
                    if op.calls_sent > 1 && !keyed {
                        op.keyless_retry = true;
                    }
                    if op.calls_sent > 1 && keyed {
                        op.keyed_reissues_us.push(t);
                    }
                }
            }
            (Sent::Resume, Some(tag)) => {
                if let Some(op) = self.op(tag) {
                    op.resumed = true;
                    op.resumes_us.push(t);
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
        let s = self.sessions.id(session);
        let Some(op) = self.op(&c.tag) else {
            return;
        };
        if !op.streams.contains(&(s, stream)) {
            op.streams.push((s, stream));
        }
        let Some(x) = op.execs.get_mut((c.execution as usize).wrapping_sub(1)) else {
            return;
        };
        let i = c.index as usize;
        if i >= 1 && i <= x.received.len() {
            x.received[i - 1] = true;
            let emitted = x.emitted_seq[i - 1];
            let latest = self.latest_received.entry((client, s, stream)).or_insert(0);
            *latest = (*latest).max(emitted);
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
        if let Some(s) = self.client(client).pending_move.take() {
            let sample = t.saturating_sub(s);
            self.client(client).switch_latency_us.push(sample);
        }
        let gap_named = self.gap_budget(client, chunk);
        let Some(op) = self.op(tag) else { return };
        if op.handled.is_some() {
            return;
        }
        op.handled = Some(Handled {
            seq,
            t_us: t,
            chunk: chunk.cloned(),
            replayed,
            gap_named,
        });
        let (c, sent) = (op.client as usize, op.first_sent_seq);
        if let (Some(live), Some(sent)) = (self.live.as_mut(), sent) {
            live[c].handled.push((seq, sent));
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
                replica,
                ..
            } => {
                if let Some(op) = self.op(tag) {
                    debug_assert_eq!(*n as usize, op.execs.len() + 1);
                    op.execs.push(Exec {
                        rpc_id: rpc_id.clone(),
                        start_us: t,
                        committed: !deferred,
                        committed_us: (!deferred).then_some(t),
                        emitted: 0,
                        result_index: None,
                        result_us: None,
                        result_seq: None,
                        received: Vec::new(),
                        emitted_at: Vec::new(),
                        emitted_seq: Vec::new(),
                        hole: false,
                        replica: *replica,
                    });
                    let (client, begun) = (op.client, op.start_us);
                    if let Some(r) = *replica {
                        let cf = self.client(client);
                        match cf.homes.last() {
                            Some(&(_, h)) if h == r => {}
                            moved => {
                                // The session moved replicas: a migration
                                // from the moving call's start to its result.
                                if moved.is_some() {
                                    cf.pending_move.get_or_insert(begun);
                                }
                                cf.homes.push((t, r));
                            }
                        }
                    }
                }
            }
            LedgerRecord::Commit { tag, n } => {
                if let Some(x) = self
                    .op(tag)
                    .and_then(|op| op.execs.get_mut((*n as usize).wrapping_sub(1)))
                {
                    x.committed = true;
                    x.committed_us = Some(t);
                }
            }
            // An occurrence of the event source: a delivery's, not an
            // operation's (judged with the deliveries).
            LedgerRecord::Occurred { .. } => {}
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
                        x.emitted_at.resize(i, false);
                        x.emitted_seq.resize(i, 0);
                    }
                    if let Some(j) = i.checked_sub(1) {
                        x.emitted_at[j] = true;
                        x.emitted_seq[j] = seq;
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

    /// Each client's operations with no record at all: its workload less
    /// the operations it began.
    fn count_never_begun(&mut self, calls: &[u32]) {
        for (c, &n) in calls.iter().enumerate() {
            self.clients[c].never_begun = u64::from(n).saturating_sub(self.began[c]);
        }
    }

    fn finish(&mut self, calls: &[u32], hosts: &[u32]) {
        // Operations with no record at all (a client that never began them
        // and recorded no outcome).
        self.count_never_begun(calls);
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

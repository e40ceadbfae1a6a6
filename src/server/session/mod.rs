//! A session's server-side state: its streams, the bounded event store, and
//! the Rule M bookkeeping ([`SessionGuard`]) that both variants keep (only
//! the guarded server asks it for verdicts).

pub(in crate::server) mod cancel;
pub(in crate::server) mod conn;
pub(in crate::server) mod gaps;
pub(in crate::server) mod handover;
pub(in crate::server) mod holds;
pub(in crate::server) mod life;
pub(in crate::server) mod polling;
pub(in crate::server) mod replica_hooks;
pub(in crate::server) mod reply;
pub(in crate::server) mod streams;
pub(in crate::server) mod table;
pub(in crate::server) mod writer;

pub(crate) use self::streams::{Sent, StreamRt, Streams};
use crate::guard::{EventId, SessionGuard, StreamIdx};
use crate::history::{ConnId, EventKind, History, Record, SessionId, StreamKind, Transport};
use crate::protocol::RequestId;
use crate::server::Shared;
use bytes::Bytes;
use serde_json::Value;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// One stored event: its stream and its data (one JSON-RPC message; empty
/// for a priming event). Frames are encoded per connection, because a
/// legacy connection numbers events with the legacy stream's own counter.
pub(crate) struct Stored {
    pub stream: StreamIdx,
    pub data: Bytes,
    /// It is a result (a response to a request).
    pub result: bool,
}

/// Bytes all event stores of a server hold together, and their bound
/// (`Exposure::store_bytes`).
pub(crate) struct StoreBudget {
    limit: usize,
    used: Cell<usize>,
}

impl StoreBudget {
    /// A budget of `limit` bytes, none used.
    pub fn new(limit: usize) -> Rc<Self> {
        Rc::new(StoreBudget {
            limit,
            used: Cell::new(0),
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.get()
    }

    fn over(&self) -> bool {
        self.used() > self.limit
    }
}

/// One execution of a request still running (a reused id can have two).
pub(crate) struct InFlight {
    /// The stream it was started on: its own progress goes there.
    pub stream: StreamIdx,
    pub cancelled: Rc<Cell<bool>>,
    /// A close of its stream does not cancel it (guarded, 2026-07-28: a
    /// keyed execution whose effect is taken runs on, its result kept
    /// under the key).
    pub outlives_close: bool,
}

/// One session.
pub(crate) struct Session {
    pub id: SessionId,
    /// The transport that issued the session (Rule T).
    pub issued: Transport,
    /// Negotiated at initialize (on `issued`).
    pub protocol_version: Option<String>,
    /// The client's capabilities, as negotiated.
    pub capabilities: Value,
    /// Resource URIs the client subscribed to.
    pub subscriptions: BTreeSet<String>,
    /// The least severe log level the client asked for (`logging/setLevel`,
    /// a rank in `mcp::LOG_LEVELS`): log messages below it are not sent.
    pub log_level: u8,
    /// The legacy HTTP+SSE stream, for sessions issued under it.
    pub legacy_stream: Option<StreamIdx>,
    /// A registered mapping already translated the legacy cursor: cursors
    /// from now on are in the streamable namespace.
    pub cursor_translated: bool,
    pub guard: SessionGuard,
    pub streams: Streams,
    /// The standalone GET stream, once opened.
    pub standalone: Option<StreamIdx>,
    /// The executions of each request id still running, oldest first
    /// (never an empty list).
    pub in_flight: BTreeMap<RequestId, Vec<InFlight>>,
    /// The POST stream each request opened.
    pub post_streams: BTreeMap<RequestId, StreamIdx>,
    /// The POST stream a request id's next result goes to: its latest
    /// POST's, until a result is produced under the id (the SDKs'
    /// request-to-stream map: a reused id re-routes, see `CrossWired`).
    pub routes: BTreeMap<RequestId, StreamIdx>,
    /// The progress token of the latest POST under each routed id: an
    /// earlier execution under the id whose token is the same (or none,
    /// like it) sends its progress to the routed stream too, as the SDKs
    /// do; one with another token keeps its progress on its own stream.
    pub route_tokens: BTreeMap<RequestId, Option<Value>>,
    /// Woken whenever replay backlog is written or abandoned.
    pub drained: Rc<Notify>,
    /// Woken whenever a writer writes or loses its connection, and when the
    /// session ends: a tool waiting for room in the store looks again.
    pub room: Rc<Notify>,
    /// When a request last named the session (idle expiry, exposed).
    pub last_active: Cell<Instant>,
    /// The bearer token that opened it, if any (sessions per principal).
    pub owner: Option<Rc<str>>,
    /// The peer address that opened it, when known (sessions without a
    /// token are counted per address).
    pub peer: Option<std::net::IpAddr>,
    first_event_id: EventId,
    next_event_id: EventId,
    /// Event ids the streams not released hold (their `ids`, together).
    live_events: usize,
    /// The bounded store: contiguous ids from `store_base`.
    store: VecDeque<Stored>,
    store_base: EventId,
    store_capacity: usize,
    /// Bytes of data in `store`.
    store_bytes: usize,
    /// The server-wide bound on stored bytes, if any.
    pub budget: Option<Rc<StoreBudget>>,
    /// The shared store every event also goes to (a replica on one).
    pub mirror: Option<crate::store::StoreClient>,
    /// What it knows of its shared Rule M record (a guarded replica on a
    /// shared store).
    pub sync: self::replica_hooks::GuardSync,
    /// What the session stands for: one the wire names, or one request's
    /// context.
    pub scope: Scope,
    /// How its wire dresses a tool's result before it is sent (the
    /// 2026-07-28 wire's `resultType`); none: as the tool made it.
    pub dress: Option<fn(&crate::protocol::Json) -> crate::protocol::Json>,
}

/// What a session stands for. The floors below the eras ask this, never
/// which wire the session came on: the era's own floor chooses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A session the wire names (`Mcp-Session-Id`, or the legacy
    /// transport's endpoint): its streams open with a priming event, carry
    /// event ids, and it lives until it ends or expires.
    Named,
    /// One request's context, which the wire never names (the 2026-07-28
    /// wire, `y2026/request.rs`): its one stream has no priming event and
    /// no event ids, a close of it cancels the request on every arm, and
    /// it is gone when the request is.
    Request,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.used.set(b.used.get() - self.store_bytes);
        }
        // A tool waiting for room must learn that nobody is owed anything.
        self.room.notify_waiters();
    }
}

impl Session {
    pub fn new(
        id: SessionId,
        issued: Transport,
        first_event_id: EventId,
        store_capacity: usize,
    ) -> Self {
        assert!(
            store_capacity > 0,
            "the event store holds at least one event"
        );
        Session {
            id,
            issued,
            protocol_version: None,
            capabilities: Value::Null,
            subscriptions: BTreeSet::new(),
            log_level: 0,
            legacy_stream: None,
            cursor_translated: false,
            guard: SessionGuard::new(),
            streams: Streams::default(),
            standalone: None,
            in_flight: BTreeMap::new(),
            post_streams: BTreeMap::new(),
            routes: BTreeMap::new(),
            route_tokens: BTreeMap::new(),
            drained: Rc::new(Notify::new()),
            room: Rc::new(Notify::new()),
            last_active: Cell::new(Instant::now()),
            owner: None,
            peer: None,
            first_event_id,
            next_event_id: first_event_id,
            live_events: 0,
            store: VecDeque::new(),
            store_base: first_event_id,
            store_capacity,
            store_bytes: 0,
            budget: None,
            mirror: None,
            sync: Default::default(),
            scope: Scope::Named,
            dress: None,
        }
    }

    /// Moves the ids this session will give by `events` (event ids) and
    /// to `streams` (the first stream index), so that no other replica
    /// giving the same session ids gives these. Before any stream opens.
    pub fn place_ids(&mut self, events: EventId, streams: StreamIdx) {
        debug_assert!(
            self.streams.len() == 0,
            "ids are placed before any stream opens"
        );
        self.first_event_id += events;
        self.next_event_id = self.first_event_id;
        self.store_base = self.first_event_id;
        self.guard.first_stream(streams);
    }

    /// Opens a stream on `conn`; streamable streams begin with a priming
    /// event, legacy streams with none (their first frame is `endpoint`).
    pub fn open_stream(
        &mut self,
        kind: StreamKind,
        rpc_id: Option<RequestId>,
        conn: ConnId,
        history: &History,
    ) -> StreamIdx {
        let priming = kind != StreamKind::Legacy && self.scope == Scope::Named;
        let s = if priming {
            self.guard.open_stream(self.next_event_id)
        } else {
            self.guard.open_unprimed()
        };
        self.streams.insert(
            s,
            StreamRt {
                kind,
                rpc: rpc_id.clone().filter(|_| kind == StreamKind::Post),
                ids: Vec::new(),
                conn: Some(conn),
                wake: Rc::new(Notify::new()),
                done_producing: false,
                results: Vec::new(),
                sent: Sent::default(),
                pauses: 0,
            },
        );
        history.record(Record::StreamOpened {
            session: self.id.clone(),
            stream: s,
            kind,
            rpc_id: rpc_id.clone(),
            conn,
        });
        if let (StreamKind::Post, Some(r)) = (kind, &rpc_id) {
            self.post_streams.insert(r.clone(), s);
        }
        if priming {
            let id = self.push_event(s, Bytes::new(), EventKind::Priming, rpc_id, None, history);
            self.guard.written(s, id);
        }
        s
    }

    /// Produces a data event for stream `s`.
    pub fn produce(
        &mut self,
        s: StreamIdx,
        kind: EventKind,
        message: &str,
        rpc_id: Option<RequestId>,
        tag: Option<Rc<str>>,
        history: &History,
    ) -> EventId {
        let data = Bytes::copy_from_slice(message.as_bytes());
        let id = self.push_event(s, data, kind, rpc_id, tag, history);
        self.guard.produced(s, id);
        self.streams[s].wake.notify_waiters();
        id
    }

    fn push_event(
        &mut self,
        s: StreamIdx,
        data: Bytes,
        kind: EventKind,
        rpc_id: Option<RequestId>,
        tag: Option<Rc<str>>,
        history: &History,
    ) -> EventId {
        let id = self.next_event_id;
        self.next_event_id += 1;
        self.live_events += 1;
        self.streams[s].ids.push(id);
        let result = kind == EventKind::Result;
        if result {
            self.streams[s].results.push(id);
        }
        self.store_bytes += data.len();
        if let Some(b) = &self.budget {
            b.used.set(b.used.get() + data.len());
        }
        if let Some(m) = &self.mirror {
            self::replica_hooks::mirror(m, &self.id, s, id, &data, result);
        }
        self.store.push_back(Stored {
            stream: s,
            data,
            result,
        });
        history.record(Record::Produced {
            session: self.id.clone(),
            stream: s,
            event: id,
            kind,
            rpc_id,
            tag,
        });
        let over_budget = |s: &Session| s.budget.as_ref().is_some_and(|b| b.over());
        while self.store.len() > self.store_capacity || (self.store.len() > 1 && over_budget(self))
        {
            self.evict_oldest(history);
        }
        id
    }

    /// How many of the oldest stored events storing one more event of
    /// `len` bytes would evict: past the store's capacity, and past the
    /// server-wide byte budget (never the new event itself).
    fn evictions_for(&self, len: usize) -> usize {
        let mut n = (self.store.len() + 1).saturating_sub(self.store_capacity);
        if let Some(b) = &self.budget {
            let mut over = (b.used() + len).saturating_sub(b.limit);
            let by_bytes = self
                .store
                .iter()
                .take_while(|e| {
                    let go = over > 0;
                    over = over.saturating_sub(e.data.len());
                    go
                })
                .count();
            n = n.max(by_bytes);
        }
        n.min(self.store.len())
    }

    /// Whether storing one more event of `len` bytes would evict an event a
    /// live connection has yet to write: then a tool waits (backpressure,
    /// as the SDKs' bounded channels give) instead of losing it. An event
    /// of a stream whose connection is gone (seen closed, or past its write
    /// deadline) does not hold a tool back: it is evicted oldest first. A
    /// stream paused by a polling close counts as live until its pause
    /// expires (`poll_retry_ms + poll_grace_ms` after its `retry:`): its
    /// client is on its way back, told when.
    pub fn would_evict_unsent(&self, len: usize) -> bool {
        let n = self.evictions_for(len);
        (self.store_base..)
            .zip(self.store.iter().take(n))
            .any(|(id, e)| {
                let rt = &self.streams[e.stream];
                let live = rt.conn.is_some() || self.guard.stream(e.stream).paused;
                live && rt.sent.owes(id)
            })
    }

    fn evict_oldest(&mut self, history: &History) {
        let e = self.store.pop_front().expect("store is not empty");
        self.store_bytes -= e.data.len();
        if let Some(b) = &self.budget {
            b.used.set(b.used.get() - e.data.len());
        }
        let id = self.store_base;
        self.store_base += 1;
        let owed = Some(id) > self.guard.stream(e.stream).delivered();
        // Only an owed result makes the stream lost (Rule M's 410): any
        // other owed event is announced by a gap on the resume.
        if owed && e.result {
            self.guard.evicted_owed(e.stream);
        }
        history.record(Record::Evicted {
            session: self.id.clone(),
            stream: e.stream,
            event: id,
            owed,
            result: e.result,
        });
        self.release_if_done(e.stream);
    }

    /// Releases stream `s`'s bookkeeping once nothing can
    /// need it: a POST stream whose response ended (or that retired), with
    /// no connection, nothing in flight or routed to it, Rule M done with
    /// it, and none of its events left in the store. A resume after
    /// completion replays from the store as before while any of its events
    /// is stored; once the stream is released, a cursor into it is an id
    /// this session issued on a stream it has forgotten
    /// ([`Session::released`]).
    pub fn release_if_done(&mut self, s: StreamIdx) {
        let Some(rt) = self.streams.get(s) else {
            return;
        };
        let stored = rt.ids.last().is_some_and(|&l| l >= self.store_base);
        if rt.kind != StreamKind::Post || rt.conn.is_some() || !rt.done_producing || stored {
            return;
        }
        let needed = self.routes.values().any(|&t| t == s)
            || self.in_flight.values().flatten().any(|r| r.stream == s);
        if needed || !self.guard.release(s) {
            return;
        }
        let rt = self.streams.remove(s).expect("looked up above");
        self.live_events -= rt.ids.len();
        if let Some(r) = rt.rpc {
            if self.post_streams.get(&r) == Some(&s) {
                self.post_streams.remove(&r);
            }
        }
    }

    /// Whether `id` is past every id this session issued.
    pub fn past_issued(&self, id: EventId) -> bool {
        id >= self.next_event_id
    }

    /// Whether `id` was issued in this session on a stream since released.
    pub fn released(&self, id: EventId) -> bool {
        (self.first_event_id..self.next_event_id).contains(&id) && self.stream_of(id).is_none()
    }

    /// The stored data of an event, if it was not evicted.
    pub fn data(&self, id: EventId) -> Option<&Bytes> {
        self.stored(id).map(|e| &e.data)
    }

    fn stored(&self, id: EventId) -> Option<&Stored> {
        let idx = id.checked_sub(self.store_base)?;
        self.store.get(usize::try_from(idx).ok()?)
    }

    /// The legacy stream's own number for one of its events (1-based).
    pub fn legacy_id(&self, s: StreamIdx, id: EventId) -> u64 {
        self.streams[s].ids.partition_point(|&e| e < id) as u64 + 1
    }

    /// The stream that carries the session's notifications: the legacy
    /// stream of a legacy-issued session, else the standalone stream.
    pub fn notification_stream(&self) -> Option<StreamIdx> {
        self.legacy_stream.or(self.standalone)
    }

    /// The oldest event id still stored (or the next id, when empty).
    pub fn oldest_stored(&self) -> EventId {
        self.store_base
    }

    /// Whether the session holds as much as it may (exposed: each stream
    /// not released and each of its events keeps a little state): at least
    /// `max_streams` such streams, or ten times as many events.
    pub fn full(&self, max_streams: Option<usize>) -> bool {
        max_streams
            .is_some_and(|m| self.streams.len() >= m || self.live_events >= m.saturating_mul(10))
    }

    /// The stream an issued event id belongs to (`None`: never issued, or
    /// its stream was released): the stored event's, else the stream whose
    /// ids hold it.
    pub fn stream_of(&self, id: EventId) -> Option<StreamIdx> {
        if let Some(e) = self.stored(id) {
            return Some(e.stream);
        }
        self.streams
            .iter()
            .find(|(_, rt)| rt.ids.binary_search(&id).is_ok())
            .map(|(s, _)| s)
    }

    /// Events of stream `s` after `cursor` (`None`: all of them) that are
    /// still stored, and whether any event of it after `cursor` was evicted.
    pub fn replayable_after(&self, s: StreamIdx, cursor: Option<EventId>) -> (u32, bool) {
        let ids = &self.streams[s].ids;
        let start = ids.partition_point(|&i| Some(i) <= cursor);
        let after = &ids[start..];
        let evicted = after.partition_point(|&i| i < self.store_base);
        let stored = u32::try_from(after.len() - evicted).expect("backlog fits u32");
        (stored, evicted > 0)
    }

    /// The evicted events of stream `s` after `cursor` (`None`: all of
    /// them), as inclusive ranges of consecutive event ids: what a gap
    /// event announces. Every id in a range is one of the stream's.
    pub fn missing_after(&self, s: StreamIdx, cursor: Option<EventId>) -> Vec<(EventId, EventId)> {
        let ids = &self.streams[s].ids;
        let start = ids.partition_point(|&i| Some(i) <= cursor);
        let mut out: Vec<(EventId, EventId)> = Vec::new();
        for &i in ids[start..].iter().take_while(|&&i| i < self.store_base) {
            match out.last_mut() {
                Some((_, last)) if *last + 1 == i => *last = i,
                _ => out.push((i, i)),
            }
        }
        out
    }

    /// Whether a result event of stream `s` after `cursor` was evicted:
    /// then a resume has nothing to complete the operation with.
    pub fn result_evicted_after(&self, s: StreamIdx, cursor: Option<EventId>) -> bool {
        self.streams[s]
            .results
            .iter()
            .any(|&r| Some(r) > cursor && r < self.store_base)
    }

    /// Whether the standalone stream is attached and not seen closed.
    pub fn standalone_attached(&self) -> Option<StreamIdx> {
        let s = self.standalone?;
        let st = self.guard.stream(s);
        (self.streams[s].conn.is_some() && st.connected && !st.dropped).then_some(s)
    }

    /// Every connection currently writing one of the session's streams.
    pub fn conns(&self) -> Vec<(StreamIdx, ConnId)> {
        self.streams
            .iter()
            .filter_map(|(i, s)| s.conn.map(|c| (i, c)))
            .collect()
    }
}

/// A tool's JSON-RPC id and dedup bookkeeping, as carried into the tool task.
pub(crate) struct ToolCall {
    pub rpc_id: RequestId,
    pub tool: String,
    pub progress_token: Option<Value>,
    pub dedup_key: Option<String>,
    /// Who the call runs for: the bearer token, else the session.
    pub principal: Rc<str>,
    /// How its result is dressed for the wire ([`Session::dress`]).
    pub dress: Option<fn(&crate::protocol::Json) -> crate::protocol::Json>,
}

/// An event id for a history record, whose fields have no "none": a
/// position before a stream's first event is logged as 0.
pub(in crate::server) fn logged_id(id: Option<EventId>) -> EventId {
    id.unwrap_or(0)
}

/// A legacy stream's connection ended: the session lives on for
/// `legacy_session_ttl_ms`, then expires unless a stream took it up again.
pub(in crate::server) fn schedule_expiry(shared: Rc<Shared>, sid: SessionId, s: StreamIdx) {
    let ttl = Duration::from_millis(shared.cfg.legacy_session_ttl_ms);
    tokio::task::spawn_local(async move {
        tokio::time::sleep(ttl).await;
        let mut st = shared.state.borrow_mut();
        let idle = st.sessions.get(&sid).is_some_and(|x| {
            x.streams[s].conn.is_none() && !x.cursor_translated && x.conns().is_empty()
        });
        if idle {
            st.sessions.remove(&sid);
            drop(st);
            shared
                .history
                .record(Record::SessionDeleted { session: sid });
        }
    });
}

#[cfg(test)]
mod tests;

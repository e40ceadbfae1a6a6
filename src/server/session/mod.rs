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
    /// A 2026-07-28 request's context ([`crate::server::y2026::request`]): one request,
    /// its one stream, no priming event and no event ids on the wire,
    /// gone when the request is.
    pub modern: bool,
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
            modern: false,
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
        let priming = kind != StreamKind::Legacy && !self.modern;
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
    /// It came on the 2026-07-28 wire: its result says `resultType`.
    pub modern: bool,
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
mod tests {
    use super::*;

    fn history() -> History {
        History::new(Rc::new(|| std::time::Duration::ZERO))
    }

    #[test]
    fn store_evicts_oldest_and_records_owed_events() {
        let h = history();
        let mut s = Session::new("s".into(), Transport::Streamable, 100, 3);
        let a = s.open_stream(StreamKind::Post, None, 1, &h);
        assert_eq!(s.stream_of(100), Some(a));
        for _ in 0..3 {
            s.produce(a, EventKind::Progress, "{}", None, None, &h);
        }
        // 4 events, capacity 3: the priming event (written) went, not owed.
        assert_eq!(s.oldest_stored(), 101);
        assert!(s.data(100).is_none());
        assert!(s.data(101).is_some());
        assert!(!s.guard.stream(a).lost);
        s.produce(a, EventKind::Result, "{}", None, None, &h);
        assert!(
            !s.guard.stream(a).lost,
            "event 101 was owed, but a gap announces a progress event: not lost"
        );
        assert_eq!(s.replayable_after(a, Some(100)), (3, true));
        assert_eq!(s.replayable_after(a, Some(101)), (3, false));
        assert_eq!(s.replayable_after(a, Some(104)), (0, false));
        assert_eq!(s.stream_of(99), None);
        assert_eq!(s.stream_of(105), None);
        let evicted: Vec<_> = h
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                crate::history::Rec::Server(Record::Evicted { event, owed, .. }) => {
                    Some((*event, *owed))
                }
                _ => None,
            })
            .collect();
        assert_eq!(evicted, vec![(100, false), (101, true)]);
    }
    #[test]
    fn a_shared_budget_evicts_the_storing_sessions_oldest_and_is_released_on_drop() {
        let h = history();
        // Room for 4 events of 10 bytes across all sessions, 100 per store.
        let budget = StoreBudget::new(40);
        let mut a = Session::new("a".into(), Transport::Streamable, 1, 100);
        a.budget = Some(budget.clone());
        let sa = a.open_stream(StreamKind::Post, None, 1, &h); // priming: 0 bytes
        for _ in 0..3 {
            a.produce(sa, EventKind::Progress, "0123456789", None, None, &h);
        }
        assert_eq!(budget.used(), 30);
        let mut b = Session::new("b".into(), Transport::Streamable, 1, 100);
        b.budget = Some(budget.clone());
        let sb = b.open_stream(StreamKind::Post, None, 2, &h);
        b.produce(sb, EventKind::Progress, "0123456789", None, None, &h);
        assert_eq!(budget.used(), 40, "at the limit, nothing evicted");
        b.produce(sb, EventKind::Progress, "0123456789", None, None, &h);
        // Over by 10: b gives up its own oldest (the priming event, 0
        // bytes, then its first progress event); a keeps all it stored.
        assert_eq!(budget.used(), 40);
        assert!(b.data(2).is_none());
        assert!(b.data(3).is_some());
        assert!(a.data(2).is_some() && a.data(4).is_some());
        drop(a);
        assert_eq!(budget.used(), 10, "a's 30 bytes released with it");
        // The newest event always stays, even alone over the budget.
        b.produce(sb, EventKind::Progress, &"x".repeat(100), None, None, &h);
        assert_eq!(budget.used(), 100);
        assert!(b.data(4).is_some());
    }

    #[test]
    fn a_full_store_holds_a_tool_back_only_for_events_a_live_connection_owes() {
        let h = history();
        let mut s = Session::new("s".into(), Transport::Streamable, 1, 3);
        let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1: priming
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 2
        assert!(!s.would_evict_unsent(2), "room for a third event");
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 3
        assert!(
            s.would_evict_unsent(2),
            "full, and the writer has not started: even the priming event is owed"
        );
        s.streams[a].sent.last = Some(1);
        assert!(!s.would_evict_unsent(2), "the oldest (1) is on the wire");
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 4 evicts 1
        assert!(s.would_evict_unsent(2), "2 is next to go and still owed");
        s.streams[a].conn = None;
        assert!(
            !s.would_evict_unsent(2),
            "a connection seen closed holds nothing back"
        );
        // An interleaved replay owes its backlog up to `replay_until` and
        // its live events after `live`.
        s.streams[a].conn = Some(2);
        s.streams[a].sent = Sent {
            last: Some(1),
            interleaved: Some((Some(4), Some(3))),
        };
        assert!(s.would_evict_unsent(2), "backlog event 2 is owed");
        let sent = Sent {
            last: Some(3),
            interleaved: Some((Some(4), Some(3))),
        };
        assert!(!sent.owes(2) && !sent.owes(4) && sent.owes(5));
        let sent = Sent {
            last: Some(1),
            interleaved: Some((Some(5), Some(3))),
        };
        assert!(sent.owes(2) && sent.owes(3) && !sent.owes(4) && sent.owes(6));
    }

    #[test]
    fn a_byte_budget_holds_a_tool_back_for_every_event_it_would_evict() {
        let h = history();
        let budget = StoreBudget::new(20);
        let mut s = Session::new("s".into(), Transport::Streamable, 1, 100);
        s.budget = Some(budget);
        let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1: 0 bytes
        s.produce(a, EventKind::Progress, "0123456789", None, None, &h); // 2
        s.produce(a, EventKind::Progress, "0123456789", None, None, &h); // 3
        s.streams[a].sent.last = Some(2);
        assert!(!s.would_evict_unsent(1), "1 and 2 make room, both written");
        assert!(
            s.would_evict_unsent(11),
            "11 bytes need 3 gone too, and it is owed"
        );
    }

    /// A POST stream whose response ended, as the writer leaves it.
    fn finish(s: &mut Session, a: StreamIdx, h: &History) {
        s.produce(a, EventKind::Result, "{}", None, None, h);
        s.streams[a].done_producing = true;
        s.streams[a].conn = None;
        s.guard.finished(a);
        s.release_if_done(a);
    }

    #[test]
    fn a_finished_stream_is_released_once_none_of_its_events_is_stored() {
        let h = history();
        let mut s = Session::new("s".into(), Transport::Streamable, 1, 3);
        let a = s.open_stream(StreamKind::Post, Some(RequestId::Num(7)), 1, &h); // 1
        finish(&mut s, a, &h); // 2
        assert!(s.streams.get(a).is_some(), "its events 1 and 2 are stored");
        assert_eq!(s.stream_of(1), Some(a));
        let b = s.open_stream(StreamKind::Post, Some(RequestId::Num(8)), 2, &h); // 3
        s.streams[b].sent.last = Some(3);
        s.produce(b, EventKind::Progress, "{}", None, None, &h); // 4 evicts 1
        assert!(s.streams.get(a).is_some(), "event 2 is still stored");
        assert!(!s.released(1), "its stream is still known");
        s.streams[b].sent.last = Some(4);
        s.produce(b, EventKind::Progress, "{}", None, None, &h); // 5 evicts 2
        assert!(s.streams.get(a).is_none(), "released");
        assert!(!s.post_streams.contains_key(&RequestId::Num(7)));
        assert_eq!(s.stream_of(2), None);
        assert!(s.released(2));
        assert!(!s.released(6), "never issued");
        assert!(s.streams.get(b).is_some(), "b is live");
        assert_eq!(s.stream_of(3), Some(b), "a live stream's id");
    }

    #[test]
    fn a_stream_in_flight_or_dropped_is_kept() {
        let h = history();
        let mut s = Session::new("s".into(), Transport::Streamable, 1, 2);
        let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1
        s.guard.request_started(a);
        s.streams[a].sent.last = Some(1);
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 2
                                                                 // Dropped before the result: Rule M still needs it.
        s.streams[a].conn = None;
        s.guard.close_seen(a);
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 3 evicts 1
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 4 evicts 2
        s.release_if_done(a);
        assert!(s.streams.get(a).is_some(), "dropped, in flight");
        let st = *s.guard.stream(a);
        assert!(st.dropped && st.in_flight == 1);
    }

    #[test]
    fn missing_ranges_name_exactly_the_streams_evicted_ids() {
        let h = history();
        let mut s = Session::new("s".into(), Transport::Streamable, 1, 4);
        let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1
        let b = s.open_stream(StreamKind::Post, None, 2, &h); // 2
        for _ in 0..3 {
            s.produce(a, EventKind::Progress, "{}", None, None, &h); // 3, 5, 7
            s.produce(b, EventKind::Progress, "{}", None, None, &h); // 4, 6, 8
        }
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 9
        s.produce(a, EventKind::Result, "{}", None, None, &h); // 10
                                                               // Stored: 7..=10. Stream a: 1, 3, 5, 7, 9, 10.
        assert_eq!(s.oldest_stored(), 7);
        assert_eq!(s.missing_after(a, Some(1)), vec![(3, 3), (5, 5)]);
        assert_eq!(s.missing_after(a, Some(3)), vec![(5, 5)]);
        assert_eq!(s.missing_after(a, Some(7)), vec![]);
        assert_eq!(s.missing_after(b, Some(2)), vec![(4, 4), (6, 6)]);
        assert!(!s.result_evicted_after(a, Some(1)), "10 is stored");
        assert!(!s.guard.stream(a).lost, "only progress was evicted");
        for _ in 0..4 {
            s.produce(b, EventKind::Progress, "{}", None, None, &h); // 11..=14
        }
        assert!(s.result_evicted_after(a, Some(9)));
        assert!(!s.result_evicted_after(a, Some(10)), "the client has it");
        assert!(s.guard.stream(a).lost, "an owed result was evicted");
        assert_eq!(
            s.missing_after(a, Some(1)),
            vec![(3, 3), (5, 5), (7, 7), (9, 10)]
        );
        assert_eq!(s.missing_after(b, Some(8)), vec![]);
    }
}

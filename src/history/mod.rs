//! History: the plain records that the server, the clients and the world
//! write, and the oracle reads (docs/causes.md). Records are primitive facts
//! (produced, written, close seen, cursor presented, decision with its
//! view): the oracle rebuilds everything else from them.
//!
//! Every record gets a trace sequence number (its position in the one
//! global order) and a timestamp from an injected clock: simulated time in
//! the simulator, real elapsed time on a real socket.

use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use serde::Serialize;
use std::cell::{Ref, RefCell};
use std::io::{self, Write};
use std::rc::Rc;
use std::time::Duration;

/// A session-scoped event id.
pub type EventId = u64;

/// A stream's index within its session.
pub type StreamIdx = u32;

/// A Rule M decision as logged (plain data: the oracle reads it without
/// importing the guard).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoggedDecision {
    /// `fresh`, `allow`, `queue` or `reject`.
    pub verdict: &'static str,
    /// The rejection reason (snake_case), for `reject`.
    pub reason: Option<&'static str>,
    /// The stream the decision is about.
    pub stream: Option<StreamIdx>,
    /// The resume point named in a 409.
    pub hint: Option<EventId>,
}

/// One dropped stream of a logged view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoggedStream {
    /// Stream index.
    pub stream: StreamIdx,
    /// Highest event id produced for it.
    pub last_produced: EventId,
    /// Highest event id written on its current connection.
    pub last_written: EventId,
    /// Delivered watermark.
    pub watermark: EventId,
    /// A cursor was presented since its connection began.
    pub cursor_presented: bool,
    /// Owed events were evicted.
    pub lost: bool,
    /// Requests still producing events for it.
    pub in_flight: u32,
}

/// The view a decision was made from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct LoggedView {
    /// Replay events not yet written, session-wide.
    pub replay_backlog: u64,
    /// POSTs queued behind a replay.
    pub queued: u32,
    /// The dropped streams considered, by index.
    pub dropped: Vec<LoggedStream>,
}

/// A session id as issued (`Mcp-Session-Id`).
pub type SessionId = Rc<str>;

/// The tag of client `client`'s operation `n` (0-based): clients begin
/// their operations in this order, so the oracle can name one that never
/// began.
pub fn op_tag(client: u32, n: u32) -> String {
    format!("c{client}-op{n}")
}

/// A server-side connection number, unique within one server incarnation.
pub type ConnId = u64;

/// The transport a request, a connection or a negotiation belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Streamable HTTP (`/mcp`).
    Streamable,
    /// Legacy HTTP+SSE (`/sse` + `/messages`).
    Legacy,
}

impl Record {
    /// [`Record::RequestReceived`] for a request on session `session`.
    pub fn request_received(
        session: &SessionId,
        conn: ConnId,
        rpc_id: &RequestId,
        method: &str,
        tag: Option<&str>,
        tool: Option<&str>,
        key: Option<&str>,
    ) -> Record {
        Record::RequestReceived(Box::new(RequestReceived {
            session: Some(session.clone()),
            conn,
            rpc_id: rpc_id.clone(),
            method: method.to_string(),
            tag: tag.map(str::to_string),
            tool: tool.map(str::to_string),
            key: key.map(str::to_string),
        }))
    }
}

/// What [`Record::RequestReceived`] says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestReceived {
    /// Session id (absent for initialize).
    pub session: Option<SessionId>,
    /// Connection it came on.
    pub conn: ConnId,
    /// JSON-RPC id.
    pub rpc_id: RequestId,
    /// Method.
    pub method: String,
    /// `ledger_append`/`ledger_read` tag: the logical operation.
    pub tag: Option<String>,
    /// Tool name, for tools/call.
    pub tool: Option<String>,
    /// Dedup token presented.
    pub key: Option<String>,
}

/// What kind of event was produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A stream's priming event (id, empty data): not counted.
    Priming,
    /// A progress notification of a tool call: counted.
    Progress,
    /// The result (or error) of a tool call: counted, final.
    Result,
    /// Any other server message (ping result, list result).
    Other,
    /// A subscription notification (`notifications/resources/updated`).
    Notification,
}

/// What kind of stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// A POST's SSE response.
    Post,
    /// The session's standalone GET stream.
    Standalone,
    /// A legacy HTTP+SSE stream (`GET /sse`).
    Legacy,
}

/// Why the server closed a connection itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerClose {
    /// A resume took the stream over: not a drop.
    TakenOver,
    /// The write deadline passed: a drop.
    WriteDeadline,
    /// Owed events were evicted under a live writer (guarded): a drop.
    Evicted,
    /// The session was deleted.
    SessionDeleted,
}

/// Why a resume got 200 and an empty stream (unguarded, keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EmptyResume {
    /// `Last-Event-ID` is not an event id (the SDKs answer so).
    MalformedCursor,
    /// The stream's result was produced already (`completed_resume =
    /// "empty"`, rmcp).
    Completed,
}

/// One record.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A server incarnation started (fresh in-memory state).
    ServerStarted {
        /// The arm: `guarded`, `unguarded`, `keys` or `cancel`.
        variant: &'static str,
        /// `post-stream` or `session-stream`: whether the standalone GET
        /// stream carries responses (and so takes part in Rule M). The
        /// effective delivery: `cancel` is post-stream whatever was asked.
        delivery: &'static str,
    },
    /// `initialize` created a session.
    SessionCreated {
        /// Session id.
        session: SessionId,
        /// The transport that issued it.
        transport: Transport,
    },
    /// `initialize` negotiated a protocol revision and capabilities.
    Negotiated {
        /// Session id.
        session: SessionId,
        /// The transport it was negotiated on.
        transport: Transport,
        /// Negotiated protocol revision.
        protocol_version: String,
        /// The client's capabilities (boxed: once per session).
        capabilities: Box<serde_json::Value>,
    },
    /// Rule T (guarded): a request on `arriving` for a session issued under
    /// another transport.
    TransportDecision {
        /// Session id.
        session: SessionId,
        /// The transport that issued the session.
        issued: Transport,
        /// The transport the request came on.
        arriving: Transport,
        /// `serve_mapped` or `reject`.
        verdict: &'static str,
    },
    /// A registered cross-transport mapping translated a cursor.
    MappingApplied {
        /// Session id.
        session: SessionId,
        /// The cursor as sent (the other transport's namespace).
        from: EventId,
        /// The event it names in this transport's namespace.
        to: EventId,
    },
    /// A session was deleted by the client.
    SessionDeleted {
        /// Session id.
        session: SessionId,
    },
    /// A request reached the server (before any decision). Boxed: one per
    /// request, and the largest record would size every other.
    RequestReceived(Box<RequestReceived>),
    /// A client presented a cursor for a stream (GET resume or cursor on POST).
    CursorPresented {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Last event id the client saw there.
        event: EventId,
        /// `;lost` on a POST.
        lost: bool,
    },
    /// A stream began (its priming event follows as `Produced`).
    StreamOpened {
        /// Session id.
        session: SessionId,
        /// Stream index within the session.
        stream: StreamIdx,
        /// POST or standalone.
        kind: StreamKind,
        /// The request whose POST carries it.
        rpc_id: Option<RequestId>,
        /// Connection writing it.
        conn: ConnId,
    },
    /// An event was stored for a stream.
    Produced {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Event id.
        event: EventId,
        /// Kind.
        kind: EventKind,
        /// The request it belongs to.
        rpc_id: Option<RequestId>,
        /// The operation tag of that request (shared by all its events).
        tag: Option<Rc<str>>,
    },
    /// An event was written on a connection.
    Written {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Event id.
        event: EventId,
        /// Connection.
        conn: ConnId,
        /// Written as part of a replay backlog.
        replay: bool,
        /// The connection's transport (legacy connections number events
        /// with the legacy stream's own counter).
        transport: Transport,
    },
    /// A replay's `replay-end` marker was written (guarded only).
    ReplayEnd {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Connection.
        conn: ConnId,
    },
    /// The server saw a stream's connection end before the stream finished.
    CloseSeen {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Connection.
        conn: ConnId,
        /// The last event written on it.
        last_written: EventId,
    },
    /// The server closed a connection itself.
    ServerClosed {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Connection.
        conn: ConnId,
        /// Why.
        why: ServerClose,
    },
    /// A stream's final event was written and its response ended.
    StreamFinished {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
    },
    /// A GET resumed a stream from a cursor.
    Resumed {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// The resume cursor (`Last-Event-ID`).
        cursor: EventId,
        /// Events to replay before live ones.
        backlog: u32,
        /// The new connection.
        conn: ConnId,
        /// Replay starts after this id (differs from `cursor` only when the
        /// unguarded server skips an evicted gap, or replays inclusively:
        /// then it is one below `cursor`).
        from: EventId,
    },
    /// An event left the bounded store.
    Evicted {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Event id.
        event: EventId,
        /// The client was still owed it (server's view).
        owed: bool,
        /// It was a result (only an owed result makes the stream lost).
        result: bool,
    },
    /// A guarded resume began with an `event: gap` naming the stream's
    /// owed events that were evicted (its result survived).
    GapReplayed {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// The resume's connection.
        conn: ConnId,
        /// Inclusive ranges of the missing event ids.
        missing: Vec<(EventId, EventId)>,
    },
    /// A Rule M decision, with the view it was made from.
    Decision {
        /// Session id.
        session: SessionId,
        /// The POST's JSON-RPC id.
        rpc_id: RequestId,
        /// The decision (boxed, as the view: one per guarded POST, and
        /// the largest fields of any record).
        decision: Box<LoggedDecision>,
        /// The guard's view at that moment.
        view: Box<LoggedView>,
        /// The POST's facts: idempotent tool.
        idempotent: bool,
        /// The POST's facts: honored dedup token.
        dedup_honored: bool,
    },
    /// A POST queued behind a replay (Rule M row 0) left the queue without
    /// a further decision: its connection closed while it waited.
    QueueLeft {
        /// Session id.
        session: SessionId,
        /// The POST's JSON-RPC id.
        rpc_id: RequestId,
    },
    /// An HTTP response was sent for a request.
    Responded {
        /// Session id.
        session: Option<SessionId>,
        /// JSON-RPC id, when the body carried one.
        rpc_id: Option<RequestId>,
        /// HTTP status.
        status: u16,
        /// Connection.
        conn: ConnId,
        /// The transport the request came on.
        transport: Transport,
        /// It was a JSON-RPC request (not a GET, a notification or a response).
        request: bool,
    },
    /// A resume or migration was answered 410 for a lost stream; Rule M
    /// ignores the stream from now on.
    LostReported {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
    },
    /// A tool began executing (after the ledger recorded it).
    ToolStarted {
        /// Session id.
        session: SessionId,
        /// The stream its events go to.
        stream: StreamIdx,
        /// JSON-RPC id.
        rpc_id: RequestId,
        /// Tool.
        tool: String,
        /// Operation tag.
        tag: Option<String>,
    },
    /// A tool stopped producing events.
    ToolEnded {
        /// Session id.
        session: SessionId,
        /// The stream its events went to.
        stream: StreamIdx,
        /// JSON-RPC id.
        rpc_id: RequestId,
        /// Cancelled before its result.
        cancelled: bool,
    },
    /// A close the server saw cancelled a request still executing
    /// (`cancel`): the tool stops at its next chunk; what it took stays.
    CancelledOnClose {
        /// Session id.
        session: SessionId,
        /// The stream whose connection closed.
        stream: StreamIdx,
        /// The connection.
        conn: ConnId,
        /// JSON-RPC id of the cancelled request.
        rpc_id: RequestId,
    },
    /// A POST reused the id of a request still in flight in its session
    /// (unguarded, keys, cancel): the tool runs again, and the id now maps
    /// to the new POST's stream, as the SDKs' request-to-stream maps do.
    /// The next result produced under the id goes on `to_stream`, which
    /// then ends; `from_stream` gets no result (its execution's progress
    /// still goes there); a later result under the id is `Discarded`.
    CrossWired {
        /// Session id.
        session: SessionId,
        /// The reused JSON-RPC id.
        rpc_id: RequestId,
        /// The stream the id mapped to until now.
        from_stream: StreamIdx,
        /// The new POST's stream, which the id maps to from now on.
        to_stream: StreamIdx,
    },
    /// An execution's event had no stream to go to, so it was neither
    /// stored nor sent: its progress after its own stream ended (another
    /// execution's result under the same id ended it), or its result after
    /// another execution's result took the id's stream (cross-wired).
    Discarded {
        /// Session id.
        session: SessionId,
        /// The execution's own stream.
        stream: StreamIdx,
        /// JSON-RPC id.
        rpc_id: RequestId,
        /// Progress or result.
        kind: EventKind,
        /// The operation tag.
        tag: Option<Rc<str>>,
    },
    /// A resume got 200 and an empty stream (unguarded, keys), which ends
    /// at once: nothing was replayed, no stream changed hands.
    ResumedEmpty {
        /// Session id.
        session: SessionId,
        /// The stream the cursor named, when it named one.
        stream: Option<StreamIdx>,
        /// The resume's connection.
        conn: ConnId,
        /// Why.
        why: EmptyResume,
    },
    /// A dedup token answered from the table (a completed key).
    DedupReplayed {
        /// Session id.
        session: SessionId,
        /// The retry's JSON-RPC id.
        rpc_id: RequestId,
        /// The key.
        key: String,
    },
}

/// What a client sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sent {
    /// `initialize`.
    Initialize,
    /// A tool call (a first attempt or a re-issue).
    Call,
    /// A GET with `Last-Event-ID`.
    Resume,
    /// A plain GET for the standalone stream.
    Open,
}

/// How an operation ended for its client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its result was handled.
    Done,
    /// The client gave up (attempts exhausted).
    Abandoned,
    /// Still unresolved when the run ended.
    Unresolved,
}

/// Client-side records (the other half of the history).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientRecord {
    /// The client holds a session.
    Session {
        /// Client index.
        client: u32,
        /// Session id.
        session: SessionId,
    },
    /// An operation (logical tool call) was begun.
    OpStarted {
        /// Client index.
        client: u32,
        /// Operation tag.
        tag: Rc<str>,
    },
    /// A request went out.
    Sent {
        /// Client index.
        client: u32,
        /// What.
        what: Sent,
        /// Operation, for calls and resumes on its behalf.
        tag: Option<Rc<str>>,
        /// JSON-RPC id, for POSTs.
        rpc_id: Option<RequestId>,
        /// `Last-Event-ID` sent (resume cursor or cursor list).
        cursor: Option<String>,
        /// An `Idempotency-Key` went with it.
        keyed: bool,
    },
    /// A response status other than 200/202.
    Status {
        /// Client index.
        client: u32,
        /// Operation concerned.
        tag: Option<Rc<str>>,
        /// Session the request named.
        session: Option<SessionId>,
        /// HTTP status.
        status: u16,
        /// `Last-Event-ID` hint of a 409.
        hint: Option<EventId>,
        /// First event id of the stream the refusal names, when it says.
        stream_first: Option<EventId>,
    },
    /// An SSE event with an id arrived.
    Received {
        /// Client index.
        client: u32,
        /// Session.
        session: SessionId,
        /// Event id.
        event: EventId,
        /// Operation it belongs to by its request id, when it is a call's
        /// event.
        tag: Option<Rc<str>>,
        /// The chunk its payload names (the ledger's identity), if any.
        chunk: Option<ChunkRef>,
        /// It was a result.
        result: bool,
        /// The transport it arrived on (the id's namespace).
        transport: Transport,
        /// The stream it arrived on (the stream's first event id).
        stream: u64,
    },
    /// An `event: gap` arrived: the server announced owed events of the
    /// stream that it lost (evicted) before it replays what survived.
    Gap {
        /// Client index.
        client: u32,
        /// Session.
        session: SessionId,
        /// The stream it arrived on (the stream's first event id).
        stream: u64,
        /// Inclusive ranges of the missing event ids, as announced.
        missing: Vec<(EventId, EventId)>,
        /// How many event ids the ranges name.
        named: u64,
    },
    /// The client handled an operation's result (first time only).
    Handled {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// The request id the result answered.
        rpc_id: RequestId,
        /// The chunk the result's payload names (which execution produced it).
        chunk: Option<ChunkRef>,
        /// The server marked it as a replay from its key table.
        replayed: bool,
    },
    /// An operation was interrupted (its stream broke before the result).
    Interrupted {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// When the fault began (the stream's last sign of life), µs.
        fault_us: u64,
    },
    /// The client negotiated a session (initialize result handled).
    Negotiated {
        /// Client index.
        client: u32,
        /// Session id.
        session: SessionId,
        /// The transport it negotiated on.
        transport: Transport,
        /// The revision it asked for and got.
        protocol_version: String,
    },
    /// A planned transport switch (network change) was applied.
    Switched {
        /// Client index.
        client: u32,
        /// From this transport.
        from: Transport,
        /// The last event id it saw on the old transport's stream.
        cursor: Option<EventId>,
    },
    /// A planned drop fault was applied by the client's connector.
    Dropped {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// Counted events received before the drop.
        after_event: u32,
    },
    /// A call's POST got no response head (no status, or no stream):
    /// whatever it started, the client never saw begin.
    NoResponse {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// The POST's request id.
        rpc_id: RequestId,
        /// The connection was established (so the request may have
        /// reached the server).
        connected: bool,
    },
    /// How an operation ended.
    Outcome {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// The outcome.
        outcome: Outcome,
        /// Attempts made.
        attempts: u32,
    },
    /// A drop or switch planned for this client that it did not apply, and
    /// why (written when the client ends its run).
    FaultNotApplied {
        /// Client index.
        client: u32,
        /// `drop` or `switch`.
        kind: &'static str,
        /// The drop's call, or the call after which the switch was planned.
        call: u32,
        /// For a drop: counted events it was to come after.
        after_event: Option<u32>,
        /// Why it was not applied.
        reason: String,
    },
}

/// World records: faults and phases.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorldRecord {
    /// A timed fault began.
    FaultStarted {
        /// Index in the plan.
        index: u32,
        /// Kind.
        kind: &'static str,
        /// The client host it acts on (partitions, latency).
        host: Option<u32>,
    },
    /// A timed fault ended (partition repaired, latency restored).
    FaultEnded {
        /// Index in the plan.
        index: u32,
    },
    /// Faults are off; the heal phase began.
    HealStarted,
}

/// Side-effect ledger records (outside the server host): what the oracle
/// judges any server by.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LedgerRecord {
    /// A tool execution began. With `effects = immediate` it took its
    /// effect now; with `effects = transactional` (`deferred`) it takes it
    /// only with a later [`LedgerRecord::Commit`], or never (killed,
    /// cancelled, or its key had committed already).
    Execution {
        /// Operation tag.
        tag: Rc<str>,
        /// The how-many-th execution of the tag (1 = first).
        n: u32,
        /// Who it ran for (bearer token, else session).
        principal: Rc<str>,
        /// The `Idempotency-Key` the request carried.
        key: Option<Rc<str>>,
        /// The request that ran it.
        rpc_id: RequestId,
        /// Its effect waits for a commit (`effects = transactional`).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        deferred: bool,
    },
    /// A deferred execution finished and committed its effect, together
    /// with its key (a key commits at most once per principal).
    Commit {
        /// Operation tag.
        tag: Rc<str>,
        /// Execution number.
        n: u32,
    },
    /// An execution emitted a chunk (its payload names `(tag, n, index)`).
    Chunk {
        /// Operation tag.
        tag: Rc<str>,
        /// Execution number.
        n: u32,
        /// 1-based chunk index.
        index: u32,
        /// The result (the execution's last chunk).
        last: bool,
    },
}

/// One history entry: sequence number, time, record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// Position in the global trace order.
    pub seq: u64,
    /// Time since the clock's origin, microseconds.
    pub t_us: u64,
    /// The record.
    #[serde(flatten)]
    pub record: Rec,
}

/// A record from the server, a client, or the world.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Rec {
    /// Written by the server.
    Server(Record),
    /// Written by a client.
    Client(ClientRecord),
    /// Written by the world.
    World(WorldRecord),
    /// Written by the side-effect ledger.
    Ledger(LedgerRecord),
}

impl From<Record> for Rec {
    fn from(r: Record) -> Self {
        Rec::Server(r)
    }
}

impl From<ClientRecord> for Rec {
    fn from(r: ClientRecord) -> Self {
        Rec::Client(r)
    }
}

impl From<LedgerRecord> for Rec {
    fn from(r: LedgerRecord) -> Self {
        Rec::Ledger(r)
    }
}

impl From<WorldRecord> for Rec {
    fn from(r: WorldRecord) -> Self {
        Rec::World(r)
    }
}

/// The time source for records.
pub type Clock = Rc<dyn Fn() -> Duration>;

struct Inner {
    entries: Vec<Entry>,
    clock: Clock,
    /// Whether records are kept (off: a server on a real socket, where
    /// nothing reads them and they would only grow).
    keep: bool,
}

/// A shared, append-only history. Cloning shares it.
#[derive(Clone)]
pub struct History {
    inner: Rc<RefCell<Inner>>,
}

impl History {
    /// A history stamped by `clock`.
    pub fn new(clock: Clock) -> Self {
        History {
            inner: Rc::new(RefCell::new(Inner {
                entries: Vec::new(),
                clock,
                keep: true,
            })),
        }
    }

    /// A history that keeps nothing (`mcp-chaos serve`: no oracle reads it,
    /// and a long-running server must not grow with its traffic); its clock
    /// is tokio's, as [`History::tokio_clock`]'s.
    pub fn off() -> Self {
        let h = Self::tokio_clock();
        h.inner.borrow_mut().keep = false;
        h
    }

    /// A history stamped with tokio's clock, from now (simulated time under
    /// a paused runtime, real time otherwise).
    pub fn tokio_clock() -> Self {
        let origin = tokio::time::Instant::now();
        Self::new(Rc::new(move || origin.elapsed()))
    }

    /// Appends a record.
    pub fn record(&self, record: impl Into<Rec>) {
        let mut inner = self.inner.borrow_mut();
        if !inner.keep {
            return;
        }
        let t_us = u64::try_from((inner.clock)().as_micros()).unwrap_or(u64::MAX);
        let seq = inner.entries.len() as u64;
        inner.entries.push(Entry {
            seq,
            t_us,
            record: record.into(),
        });
    }

    /// The clock's reading now, µs.
    pub fn now_us(&self) -> u64 {
        let inner = self.inner.borrow();
        u64::try_from((inner.clock)().as_micros()).unwrap_or(u64::MAX)
    }

    /// Server records only, with their sequence numbers.
    pub fn server_records(&self) -> Vec<(u64, Record)> {
        self.entries()
            .iter()
            .filter_map(|e| match &e.record {
                Rec::Server(r) => Some((e.seq, r.clone())),
                _ => None,
            })
            .collect()
    }

    /// All entries so far.
    pub fn entries(&self) -> Ref<'_, [Entry]> {
        Ref::map(self.inner.borrow(), |i| i.entries.as_slice())
    }

    /// Number of entries so far.
    pub fn len(&self) -> usize {
        self.inner.borrow().entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the history as JSON lines, one entry each.
    pub fn write_jsonl(&self, mut w: impl Write) -> io::Result<()> {
        for e in self.entries().iter() {
            serde_json::to_writer(&mut w, e)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// The trace's fingerprint: SHA-256 over every entry in order, each in
/// MessagePack with struct fields by position (no field names, no text
/// formatting of numbers, no escaping). Same records, same bytes, same
/// digest; computed on every run, so it must cost little next to the run.
/// It is not the digest of the JSONL file `--trace` writes.
pub fn trace_sha256(entries: &[Entry]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut buf = Vec::with_capacity(256);
    for e in entries {
        buf.clear();
        rmp_serde::encode::write(&mut buf, &(e.seq, e.t_us, &e.record)).expect("records encode");
        hasher.update(&buf);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// The history holds tens of millions of entries at scale: a new
    /// variant with large inline fields grows every one of them. Box what
    /// is rare and large (as `RequestReceived`, `Decision`).
    #[test]
    fn an_entry_stays_small() {
        assert!(
            std::mem::size_of::<Entry>() <= 112,
            "Entry is {} bytes",
            std::mem::size_of::<Entry>()
        );
    }
}

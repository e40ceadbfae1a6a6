//! The server's records: what it received, produced, wrote, saw close,
//! decided (with the view it decided from) and answered. Plain data: the
//! oracle reads them without importing the server or the guard.

use super::{ConnId, EventId, SessionId, StreamIdx, Transport};
use crate::protocol::RequestId;
pub use crate::store::WordKind;
use serde::{Deserialize, Serialize};
use std::rc::Rc;

/// Where a tool call's response events go (a server setting the clients
/// read too; the server logs the effective one when it starts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// Each POST gets its own SSE stream.
    PostStream,
    /// A POST gets 202 and its response goes on the session's GET stream
    /// when one is attached and not seen closed (the seed's server).
    SessionStream,
}

impl Delivery {
    /// `post-stream` or `session-stream`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::PostStream => "post-stream",
            Delivery::SessionStream => "session-stream",
        }
    }
}

/// A Rule M verdict as logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedVerdict {
    /// Not a migration: served.
    Fresh,
    /// A legal migration: served.
    Allow,
    /// Held behind a replay backlog.
    Queue,
    /// Refused (409, or 410 for a lost stream).
    Reject,
}

/// Why a logged decision refused (the rule's row).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedReason {
    /// Row 0: a replay backlog is pending.
    ReplayInProgress,
    /// Row 2: a dropped stream's watermark is below its last event.
    NotDrained,
    /// Row 3: a request still produces events for a dropped stream.
    InFlight,
    /// Row 4: non-idempotent, without an honored key.
    NonIdempotent,
    /// A dropped stream's owed result was evicted.
    StreamLost,
}

impl LoggedVerdict {
    /// Its name in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggedVerdict::Fresh => "fresh",
            LoggedVerdict::Allow => "allow",
            LoggedVerdict::Queue => "queue",
            LoggedVerdict::Reject => "reject",
        }
    }
}

impl LoggedReason {
    /// Its name in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggedReason::ReplayInProgress => "replay_in_progress",
            LoggedReason::NotDrained => "not_drained",
            LoggedReason::InFlight => "in_flight",
            LoggedReason::NonIdempotent => "non_idempotent",
            LoggedReason::StreamLost => "stream_lost",
        }
    }
}

/// A Rule T verdict as logged (a plain serve is not logged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoggedTransport {
    /// Served through the registered cross-transport mapping.
    ServeMapped,
    /// Refused: 404, re-initialize on this transport.
    Reject,
}

/// A Rule M decision as logged (plain data: the oracle reads it without
/// importing the guard).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoggedDecision {
    /// The verdict.
    pub verdict: LoggedVerdict,
    /// The rejection reason, for a rejection.
    pub reason: Option<LoggedReason>,
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
    /// `Last-Event-ID` is past every id the session issued (unguarded and
    /// keys, as every SDK's server answers: the client believes it caught
    /// up).
    PastEnd,
    /// The shared store this replica reads lacks the cursor (restarted
    /// without keeping its contents, or lagging behind it).
    Cold,
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
        delivery: Delivery,
        /// The replica it is, in a deployment (a replica's restart ends
        /// only that replica's connections and executions).
        #[serde(skip_serializing_if = "Option::is_none")]
        replica: Option<u32>,
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
        verdict: LoggedTransport,
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
    /// The server closed a stream's connection on purpose after `retry:`
    /// (a polling close): the stream is paused, not dropped.
    StreamPaused {
        /// Session id.
        session: SessionId,
        /// Stream.
        stream: StreamIdx,
        /// Connection.
        conn: ConnId,
        /// The `retry:` it sent, ms.
        retry_ms: u64,
    },
    /// A paused stream's wait ran out with no resume: it is dropped.
    PauseExpired {
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
        /// The deciding replica, when it is one of several on a shared
        /// store: its guard's view holds the streams it opened.
        #[serde(skip_serializing_if = "Option::is_none")]
        replica: Option<u32>,
    },
    /// A POST queued behind a replay (Rule M row 0) left the queue without
    /// a further decision: its connection closed while it waited.
    QueueLeft {
        /// Session id.
        session: SessionId,
        /// The POST's JSON-RPC id.
        rpc_id: RequestId,
    },
    /// The server closed a connection that had served nothing for
    /// `server_idle_ms` since its last response.
    IdleClosed {
        /// Connection.
        conn: ConnId,
    },
    /// A webhook delivery was given up (the Events extension): its
    /// attempts ran out, or the receiver answered 410 or 413.
    DeliveryAbandoned {
        /// The subscription's receiver URL.
        url: Rc<str>,
        /// The occurrence's `eventId`.
        event_id: Rc<str>,
    },
    /// A push stream told its reader of a loss (`active` with
    /// `truncated: true`): the positions after `after`, up to `upto`,
    /// are gone from the retention.
    TruncationSent {
        /// The `events/stream` request's id.
        stream: RequestId,
        /// The position the stream stood at.
        after: u64,
        /// Where it resumed.
        upto: u64,
    },
    /// A webhook subscription was created (not refreshed): from now on
    /// what the source produces is owed to its receiver.
    Subscribed {
        /// The subscription's receiver URL.
        url: Rc<str>,
    },
    /// A webhook subscription lapsed: it was not refreshed before its TTL
    /// ran out, and its deliveries stopped.
    SubscriptionLapsed {
        /// The subscription's receiver URL.
        url: Rc<str>,
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
        /// The replica that gave the 410, when it is one of several on a
        /// shared store (Rule M's view of a stream changes only at the
        /// replica that opened it: another replica's report reaches it
        /// through the store, and it records a `StoreWord` then).
        #[serde(skip_serializing_if = "Option::is_none")]
        replica: Option<u32>,
    },
    /// A replica applied to a stream it opened what the client said about
    /// it at another replica, loaded from the shared store.
    StoreWord {
        /// Session id.
        session: SessionId,
        /// Stream (one this replica opened).
        stream: StreamIdx,
        /// The event the client named.
        event: EventId,
        /// What it said (`reported`: another replica answered the stream's
        /// loss with 410).
        kind: WordKind,
        /// The replica applying it.
        replica: u32,
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
    /// A task (the 2026-07-28 tasks extension) changed status: created
    /// (`working`, with the request that created it), waiting for input,
    /// or ended.
    TaskChanged {
        /// The task id.
        task: Rc<str>,
        /// The request that created it, on creation.
        rpc_id: Option<RequestId>,
        /// Its status now, as the wire names it.
        status: &'static str,
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
    /// A resume found nothing to give: 200 and an empty stream that ends
    /// at once (unguarded, keys), or, for a cursor a shared store lacks
    /// (`Cold`), 410 on the guarded arm. Nothing was replayed, no stream
    /// changed hands.
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
    /// A replica on a shared store loaded a session another replica (or
    /// an earlier incarnation) opened, for a request naming it.
    SessionAdopted {
        /// Session id.
        session: SessionId,
        /// The replica that opened it.
        from: u32,
    },
    /// A resume of a stream this replica does not hold, served from the
    /// shared store: its events after the cursor, then the ones the store
    /// receives until the stream's result (each `Written` as usual).
    ResumedElsewhere {
        /// Session id.
        session: SessionId,
        /// The stream, when the store held an event after the cursor.
        stream: Option<StreamIdx>,
        /// The resume cursor (`Last-Event-ID`).
        cursor: EventId,
        /// Events the store held after it.
        backlog: u32,
        /// The new connection.
        conn: ConnId,
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

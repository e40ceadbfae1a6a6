//! The virtual clients' records: what each sent, the statuses and events
//! it got, the faults it applied or could not, and each operation's
//! outcome. The oracle's outcomes and causes read these (with the ledger's
//! and the world's), never the server's.

use super::{EventId, FaultKind, OpId, SessionId, Transport};
use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use serde::Serialize;
use std::rc::Rc;

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
    /// `tasks/get`: a poll of the operation's task.
    TaskGet,
    /// `tasks/cancel` of the operation's task.
    TaskCancel,
}

/// What a client learnt about its operation's task (the 2026-07-28 tasks
/// extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskEvent {
    /// A call's answer was a `CreateTaskResult` naming the task.
    Created,
    /// A poll was told the task is unknown (expired, or never held there):
    /// its result is out of reach, and the call is re-issued.
    Gone,
    /// Its `tasks/cancel` was acknowledged; the call is re-issued.
    CancelAcked,
    /// A poll found it failed or cancelled; the call is re-issued.
    Ended,
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
    /// Something about an operation's task ([`TaskEvent`]).
    Task {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// The task.
        task: Rc<str>,
        /// The request whose answer said it (the creating call's, for
        /// `Created`).
        rpc_id: RequestId,
        /// What.
        event: TaskEvent,
    },
    /// A call of the operation was answered with an input-required
    /// result (2026-07-28): the client retries it with its answers.
    InputRequired {
        /// Client index.
        client: u32,
        /// Operation.
        tag: Rc<str>,
        /// The request the question answered.
        rpc_id: RequestId,
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
    /// A stream ended cleanly after the server's `retry:` advice (a
    /// polling close): the client resumes it in exactly `retry_ms`.
    Paused {
        /// Client index.
        client: u32,
        /// The stream (its first event id, as the client numbers them).
        stream: u64,
        /// The advised wait, ms.
        retry_ms: u64,
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
    /// An exchange went out on a kept-alive connection an earlier
    /// exchange gave back, not on a new one.
    Reused {
        /// Client index.
        client: u32,
        /// Operation, for calls and resumes on its behalf.
        tag: Option<Rc<str>>,
        /// JSON-RPC id, for a call's POST.
        rpc_id: Option<RequestId>,
    },
    /// An exchange on a reused connection got no response head (its
    /// read timeout passed, or the connection ended first). Whether the
    /// connection was dead before the request (a close the client never
    /// saw, a partition it was sent into) or a fault hit the exchange
    /// itself is the oracle's to tell, from the world's faults. Written
    /// before the client's reaction to the failure.
    Stale {
        /// Client index.
        client: u32,
        /// Operation, for calls and resumes on its behalf.
        tag: Option<Rc<str>>,
        /// JSON-RPC id, for a call's POST.
        rpc_id: Option<RequestId>,
        /// When the request went out, µs.
        sent_us: u64,
    },
    /// A re-sent call carries an `Idempotency-Key` other than its earlier
    /// attempts' (a field client's `key-per-attempt`), recorded before it.
    KeyChanged {
        /// Client index.
        client: u32,
        /// Operation tag.
        tag: Rc<str>,
    },
    /// A resumed stream of the operation broke before any event with an
    /// id, and the client reconnected without `Last-Event-ID` (a field
    /// client's `no-cursor-on-second-resume`): nothing resumes it again.
    CursorDropped {
        /// Client index.
        client: u32,
        /// Operation tag.
        tag: Rc<str>,
    },
    /// Its events reader got its first answer: the occurrences produced
    /// from now on are owed to it (the Events extension).
    EventsStarted {
        /// Client index.
        client: u32,
    },
    /// Its events reader handed an occurrence to the application (once
    /// per `eventId`: it keeps those it applied).
    EventApplied {
        /// Client index.
        client: u32,
        /// The occurrence's `eventId`.
        event_id: Rc<str>,
        /// The delivery's `webhook-id` (a webhook receiver's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        webhook_id: Option<Rc<str>>,
    },
    /// Its webhook receiver listens at `url` (the URL it subscribes with):
    /// the server's records about that URL are this reader's.
    ReceiverListening {
        /// Client index.
        client: u32,
        /// The receiver's URL.
        url: Rc<str>,
        /// What it deduplicates on: `none`, `webhook-id` or `event-id`.
        dedup: Rc<str>,
    },
    /// Its events reader was told `truncated` (or a `gap`): occurrences
    /// were lost, those in `lost` when the reader knows which, else those
    /// between the last it applied and the next it applies.
    EventsTruncated {
        /// Client index.
        client: u32,
        /// (after, upto): the positions after `after` up to `upto`, both
        /// as cursors name them: the cursor the reader held, and where
        /// the server resumed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lost: Option<(u64, u64)>,
    },
    /// Its events reader's final poll was answered: what was produced
    /// before `sent_us` (when it went out) was owed to it by then.
    EventsDrained {
        /// Client index.
        client: u32,
        /// When the final poll went out, µs since the run began.
        sent_us: u64,
    },
    /// The client gave a call up while its latest request may still run.
    /// On the 2025-11-25 wire it POSTs
    /// `notifications/cancelled` naming the request (`cancelled`), unless
    /// it is a field client's `cancel-never-sent`.
    Left {
        /// Client index.
        client: u32,
        /// Operation tag.
        tag: Rc<str>,
        /// The request it left.
        rpc_id: RequestId,
        /// A `notifications/cancelled` went out for it.
        cancelled: bool,
    },
    /// The server accepted (202) the `notifications/cancelled` of a
    /// request the client left.
    CancelAccepted {
        /// Client index.
        client: u32,
        /// Operation tag.
        tag: Rc<str>,
        /// The request the cancellation named.
        rpc_id: RequestId,
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
        /// [`FaultKind::Drop`] or [`FaultKind::Switch`].
        kind: FaultKind,
        /// The drop's call, or the call after which the switch was planned.
        call: u32,
        /// For a drop: counted events it was to come after.
        after_event: Option<u32>,
        /// Why it was not applied.
        reason: String,
    },
}

impl ClientRecord {
    /// The workload operation the record is about, read from its tag
    /// ([`OpId::of_tag`]); `None` when it names none.
    pub fn op(&self) -> Option<OpId> {
        let tag = match self {
            ClientRecord::OpStarted { tag, .. }
            | ClientRecord::Handled { tag, .. }
            | ClientRecord::Interrupted { tag, .. }
            | ClientRecord::Dropped { tag, .. }
            | ClientRecord::NoResponse { tag, .. }
            | ClientRecord::Task { tag, .. }
            | ClientRecord::InputRequired { tag, .. }
            | ClientRecord::KeyChanged { tag, .. }
            | ClientRecord::CursorDropped { tag, .. }
            | ClientRecord::Left { tag, .. }
            | ClientRecord::CancelAccepted { tag, .. }
            | ClientRecord::Outcome { tag, .. } => Some(tag),
            ClientRecord::Sent { tag, .. }
            | ClientRecord::Reused { tag, .. }
            | ClientRecord::Stale { tag, .. }
            | ClientRecord::Status { tag, .. }
            | ClientRecord::Received { tag, .. } => tag.as_ref(),
            ClientRecord::Session { .. }
            | ClientRecord::Gap { .. }
            | ClientRecord::Paused { .. }
            | ClientRecord::Negotiated { .. }
            | ClientRecord::Switched { .. }
            | ClientRecord::EventsStarted { .. }
            | ClientRecord::EventApplied { .. }
            | ClientRecord::EventsTruncated { .. }
            | ClientRecord::EventsDrained { .. }
            | ClientRecord::ReceiverListening { .. }
            | ClientRecord::FaultNotApplied { .. } => None,
        }?;
        OpId::of_tag(tag)
    }
}

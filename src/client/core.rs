//! The client's decisions, sans-IO: what a virtual client does with each
//! answer, as a pure function of the request, the answer and a few facts
//! of its state ([`react`]), like the guard's `check`. The actor
//! ([`super::actor`]) builds the [`View`], asks, and performs the
//! [`Action`]s in order: it owns the connections, streams and timers.
//!
//! Here too the plain data the rest of the client stands on: a client's
//! [`ClientSpec`], its slots' ids, and what a behaviour decides
//! ([`OnBreak`], [`AfterInit`]). This module imports nothing of the client.

use crate::history::Delivery;
use crate::scenario::ClientGroup;
use std::collections::BTreeMap;

/// An exchange in flight: one HTTP request and its answer.
pub(super) type SlotId = u32;

/// Everything one client needs to run.
#[derive(Clone, Debug)]
pub struct ClientSpec {
    /// Global client index.
    pub index: u32,
    /// Workload, behaviour, timeouts.
    pub group: ClientGroup,
    /// The server's delivery mode (known from the deployment).
    pub delivery: Delivery,
    /// Planned drops: call index → counted events before the drop.
    pub drops: BTreeMap<u32, u32>,
    /// Drops placed at a boundary the client sees itself: call index →
    /// [`At::ResponseHead`] or [`At::Result`] (the world tells it of the
    /// others, [`super::Tap`]).
    pub placed_drops: BTreeMap<u32, crate::fault::At>,
    /// Calls whose planned drop closes with RST, not FIN.
    pub resets: std::collections::BTreeSet<u32>,
    /// Delay before the first call, ms.
    pub start_delay_ms: u64,
    /// transport-switch: the call after which the network changes.
    pub switch_after: Option<u32>,
    /// The revision of the wire it speaks.
    pub era: crate::settings::Era,
}

/// How a behaviour answers a stream that ended or broke before its
/// operation's result (the one decision the behaviours differ on most).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OnBreak {
    /// A new POST of the call after the backoff (new request id, same tag).
    Repost,
    /// Resume the stream after the backoff; with `move_on`, the next call
    /// goes out as soon as the resume is accepted.
    Resume { move_on: bool },
    /// The broken stream is the network change: switch transports now.
    Switch,
}

/// What a behaviour adds once a session is negotiated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct AfterInit {
    /// (Re-)subscribe to the clock resource.
    pub(super) subscribe: bool,
    /// Open the standalone stream its notifications ride.
    pub(super) open: bool,
}

/// What a request was, as the reaction table tells requests apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Request {
    /// `initialize` on streamable HTTP.
    Initialize,
    /// A `tools/call` POST.
    Call,
    /// A GET with `Last-Event-ID`: resuming a stream.
    Resume,
    /// The standalone GET on `/mcp`.
    Open,
    /// `GET /sse`: the legacy stream (the session is born with it).
    LegacyOpen,
    /// A POST to the legacy `/messages` endpoint (its answer rides the stream).
    LegacyPost,
    /// A streamable `resources/subscribe` (JSON answer).
    Subscribe,
    /// `notifications/cancelled` for a request the client left.
    Cancel,
}

#[cfg(test)]
impl Request {
    /// Every request the client makes (the table test covers each).
    pub(super) const ALL: [Request; 8] = [
        Request::Initialize,
        Request::Call,
        Request::Resume,
        Request::Open,
        Request::LegacyOpen,
        Request::LegacyPost,
        Request::Subscribe,
        Request::Cancel,
    ];
}

/// What came back to a request, as far as the decisions need it (the
/// values themselves — the hint, the message — stay with the actor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// SSE response headers; `session`: they name one.
    Stream { status: u16, session: bool },
    /// A JSON (or empty) response: `session`, it names one; `result`, its
    /// body is a JSON-RPC result; `hint`, it carries a `Last-Event-ID`.
    Json {
        status: u16,
        session: bool,
        result: bool,
        hint: bool,
    },
    /// The stream ended: `clean`ly, or broken (dropped, or silent past the
    /// read timeout while it owed events).
    Ended { clean: bool },
    /// No answer: the connection failed, or was lost or timed out before
    /// the headers (`connected`: after it was established).
    Unanswered { connected: bool },
    /// An `event: gap`; `readable`: its data names the missing ranges.
    Gap { readable: bool },
}

/// The facts of the client's state a reaction depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct View {
    /// The client has a session.
    pub(super) session: bool,
    /// It speaks the legacy HTTP+SSE transport now.
    pub(super) legacy: bool,
    /// A call's operation is still active (not done, not abandoned).
    pub(super) op_active: bool,
    /// The session's standalone stream is known.
    pub(super) standalone: bool,
    /// An event id has named the exchange's stream (a resume's from the start).
    pub(super) named: bool,
    /// The exchange brought no message yet (priming events and markers aside).
    pub(super) brought_nothing: bool,
    /// A resume still has operations to resume for.
    pub(super) waiting: bool,
    /// A transport switch waits on a resume.
    pub(super) switch_pending: bool,
    /// The exchange is a call's POST carrying an `Idempotency-Key`.
    pub(super) keyed: bool,
    /// The exchange's stream carried `retry:` advice.
    pub(super) advised: bool,
    /// The client resumes a quietly failed resume again, without end
    /// (rmcp's reconnect policy).
    pub(super) reconnect_forever: bool,
}

/// What the actor does, in the order given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// The exchange's response headers arrived.
    Answered,
    /// The exchange was active just now (its last activity, for a fault's time).
    Touch,
    /// Record the answer's status (`Status`): with the 409's hint, with
    /// the stream the answer names.
    RecordStatus { hint: bool, stream_first: bool },
    /// Record the gap the server announced (`Gap`).
    RecordGap,
    /// The initialize result is here (JSON): the session is the client's.
    Initialized,
    /// The initialize result follows on this stream, for the session its
    /// headers named.
    AwaitInitResult,
    /// Deliver the JSON result to the call's operation (or hold it behind a resume).
    DeliverJson,
    /// The call's operation ends abandoned.
    Abandon,
    /// The call's response rides the standalone stream.
    RideStandalone,
    /// A Rule M 409 with a hint: resume the stream it names.
    ResumeNamed,
    /// The stream a 410 names is finished.
    FinishNamed,
    /// POST the call again after its backoff (an attempt).
    RetryPost,
    /// Forget the call's stream, then [`Action::RetryPost`].
    Reissue,
    /// Record that the call's POST got no response (`NoResponse`, and
    /// `Interrupted` the first time): the request may have run.
    NoResponse,
    /// The exchange no longer carries its stream.
    Detach,
    /// A hold on the exchange's stream ends.
    EndHold,
    /// The resume failed for good: re-issue what waits on the stream.
    ResumeRefused,
    /// The resume's headers: the stream is back (names, hold, held-up
    /// calls, a switch or a next call waiting on it).
    ResumeAccepted,
    /// Resume the stream again after the backoff.
    RetryResume,
    /// The stream ended or broke: detach it (finished, if it ended cleanly
    /// and nothing waits on it) and interrupt every operation waiting on
    /// it (each as its behaviour says: [`OnBreak`]).
    Interrupt { clean: bool },
    /// The session is gone (404): a new one, every unresolved operation re-issued.
    Reinit,
    /// Start over on the current transport, whatever the session state.
    ReinitNow,
    /// `initialize` again after the backoff, or give up past the bound.
    RetryInit,
    /// The standalone GET again after the backoff.
    RetryOpen,
    /// `resources/subscribe` again after the backoff.
    RetrySubscribe,
    /// The server closed the stream after `retry:` (polling): resume it
    /// in exactly the advised wait, not an attempt.
    PollResume,
    /// The resume failed quietly: the same resume again after the policy's
    /// fixed wait, not an attempt (rmcp's reconnect policy).
    Reconnect,
    /// The network change: leave the legacy transport.
    Switch,
    /// The server accepted (202) a cancellation: on the record.
    CancelAccepted,
}

use Action as A;

/// What the client does when `answer` comes back to `request`, given
/// `view`: the reaction table, row by row in `core/table.rs`.
pub(super) fn react(view: &View, request: Request, answer: Answer) -> Vec<Action> {
    // A cancellation is sent and forgotten: only its acceptance is noted.
    if request == Request::Cancel {
        return match answer {
            Answer::Json { status: 202, .. } => vec![A::CancelAccepted],
            _ => Vec::new(),
        };
    }
    match answer {
        Answer::Stream { status, session } => on_stream(request, status, session),
        Answer::Json {
            status,
            session,
            result,
            hint,
        } => on_json(view, request, status, session, result, hint),
        Answer::Ended { clean } => on_ended(view, request, clean),
        Answer::Unanswered { .. } => on_no_answer(view, request),
        Answer::Gap { readable } => {
            if view.named && view.session && readable {
                vec![A::Touch, A::RecordGap]
            } else {
                vec![A::Touch]
            }
        }
    }
}

/// SSE headers: an initialize's result and a resume's replay follow.
fn on_stream(request: Request, status: u16, session: bool) -> Vec<Action> {
    match (request, status) {
        (Request::Initialize, 200) if session => vec![A::Answered, A::AwaitInitResult],
        (Request::Resume, 200) => vec![A::Answered, A::ResumeAccepted],
        _ => vec![A::Answered],
    }
}

/// A JSON (or empty) answer.
fn on_json(
    view: &View,
    request: Request,
    status: u16,
    session: bool,
    result: bool,
    hint: bool,
) -> Vec<Action> {
    let status_only = A::RecordStatus {
        hint: false,
        stream_first: false,
    };
    match request {
        // A legacy stream answered without SSE: it failed to open.
        Request::LegacyOpen => vec![A::RetryInit],
        Request::LegacyPost => match status {
            202 => vec![],
            404 => vec![status_only, A::Reinit],
            _ => vec![status_only],
        },
        Request::Subscribe if status == 404 => vec![A::Reinit],
        Request::Subscribe | Request::Cancel => vec![],
        Request::Initialize if status == 200 && session => vec![A::Initialized],
        // A server that holds all the sessions it may (or drains) says
        // 503: on the record, so a call it keeps from ever starting has
        // its cause.
        Request::Initialize if status == 503 => vec![status_only, A::RetryInit],
        Request::Initialize => vec![A::RetryInit],
        Request::Call if !view.op_active => vec![],
        Request::Call => on_call(view, status, result, hint),
        Request::Resume => {
            // 410 (evicted), 405 (a server that does not resume), or any
            // refusal: re-issue by POST. 404: the session is gone.
            let then = if status == 404 {
                A::Reinit
            } else {
                A::ResumeRefused
            };
            vec![status_only, A::Detach, A::EndHold, then]
        }
        Request::Open if status == 404 => vec![A::Reinit],
        Request::Open => vec![A::RetryOpen],
    }
}

/// A JSON (or empty) answer to an active call's POST.
fn on_call(view: &View, status: u16, result: bool, hint: bool) -> Vec<Action> {
    let status_only = A::RecordStatus {
        hint: false,
        stream_first: false,
    };
    match status {
        200 if result => vec![A::DeliverJson],
        202 if view.standalone => vec![A::RideStandalone],
        202 => vec![],
        409 => {
            let named = A::RecordStatus {
                hint: true,
                stream_first: true,
            };
            vec![named, if hint { A::ResumeNamed } else { A::RetryPost }]
        }
        404 => vec![status_only, A::Reinit],
        410 => {
            let named = A::RecordStatus {
                hint: false,
                stream_first: true,
            };
            vec![named, A::FinishNamed, A::Reissue]
        }
        503 => vec![status_only, A::RetryPost],
        // A gateway's failure (the replica broke off, or did not answer in
        // time): the call may have run. Under a key, sending it again is
        // safe; without one the client gives up, as the SDKs do.
        502 | 504 if view.keyed => vec![status_only, A::RetryPost],
        _ => vec![status_only, A::Abandon],
    }
}

/// The stream ended (cleanly, or broken).
fn on_ended(view: &View, request: Request, clean: bool) -> Vec<Action> {
    // A resume that ends cleanly with nothing while operations wait on its
    // stream failed (as real SDKs answer a resume of a stream they do not
    // have: 200 and a stream that ends with no events, or only a priming
    // event).
    if request == Request::Resume && clean && view.brought_nothing && view.waiting {
        let then = if view.reconnect_forever {
            A::Reconnect
        } else {
            A::ResumeRefused
        };
        return vec![A::Detach, A::EndHold, then];
    }
    // Ended by the server after `retry:`: not a failure, a polling close.
    // Come back as told (a replay's hold stays on: the resume continues it).
    let polled = match request {
        Request::Call => view.op_active,
        Request::Resume => view.waiting,
        Request::Open => true,
        _ => false,
    };
    if clean && view.named && view.advised && polled {
        return vec![A::Detach, A::PollResume];
    }
    let mut then = Vec::new();
    if request == Request::LegacyOpen && view.legacy && view.session {
        // The legacy stream is gone: that is the network change.
        then.push(A::Switch);
    }
    if !view.named {
        // Ended before any event: a failed exchange.
        then.extend(on_no_answer(view, request));
        return then;
    }
    if clean {
        // The replay is over (the unguarded server sends no marker).
        then.push(A::EndHold);
    }
    then.push(A::Interrupt { clean });
    then
}

/// No answer (or a stream that ended before any event).
fn on_no_answer(view: &View, request: Request) -> Vec<Action> {
    match request {
        Request::LegacyOpen if view.session => vec![A::Switch],
        Request::LegacyOpen | Request::Initialize => vec![A::RetryInit],
        // A lost legacy message (initialize, subscribe): start over.
        Request::LegacyPost => vec![A::ReinitNow],
        Request::Subscribe => vec![A::RetrySubscribe],
        Request::Cancel => vec![],
        // The request may have run; its stream never began for us.
        Request::Call if view.op_active => vec![A::NoResponse, A::RetryPost],
        Request::Call => vec![A::RetryPost],
        // Again, for what it resumes for (each try an attempt), or for a
        // transport switch waiting on it.
        Request::Resume if view.waiting || view.switch_pending => {
            vec![A::Detach, A::RetryResume]
        }
        Request::Resume => vec![A::Detach],
        Request::Open => vec![A::RetryOpen],
    }
}

#[cfg(test)]
mod table;
#[cfg(test)]
mod tests;

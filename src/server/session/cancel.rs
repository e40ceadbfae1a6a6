//! The `cancel` arm's two mechanisms (the 2026-07-28 remedy on today's
//! wire): a resume is refused with 405, so a client re-issues with a new
//! id; and a close the server sees (EOF, a write error, the write
//! deadline) cancels the request whose response stream it was. The tool
//! stops at its next chunk; the effect it took already (the ledger's
//! execution, chunks emitted) stays. A close the server never sees (a
//! partition leaves the connection half-open) cancels nothing: there the
//! arm behaves like `unguarded`.
//!
//! Legacy transport: every response of a legacy session rides its one
//! `GET /sse` stream, so a seen close of that stream cancels every legacy
//! request of the session still executing (they have no other stream to
//! answer on, and no resume brings them back).

use super::reply::Reply;
use super::{Scope, Session};
use crate::guard::StreamIdx;
use crate::history::{ConnId, Record, SessionId, StreamKind};
use crate::protocol::jsonrpc::{self, RequestId};
use crate::protocol::Json;
use crate::server::http::respond;
use crate::server::{CancelNotifications, OnClose, Shared};
use http::{header, HeaderValue, StatusCode};

/// A resume (GET with `Last-Event-ID`): 405 with a JSON-RPC error body.
/// A plain GET (the standalone notification stream) stays allowed.
pub(in crate::server) fn refuse_resume() -> Reply {
    let mut r = respond::error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        jsonrpc::TRANSPORT_ERROR,
        "this server does not resume streams: re-issue the request with a new id",
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    Reply::new(r)
}

/// Stream `s`'s connection `conn` closed and the server saw it: cancel the
/// requests still executing whose responses it carried. A no-op for arms
/// that do not cancel on close on the 2025 wire; on the 2026-07-28 wire
/// every arm does, except for a guarded keyed execution whose effect is
/// taken (`InFlight::outlives_close`): it runs to its result, which its key
/// keeps for the re-issue.
pub(in crate::server) fn on_close_seen(
    shared: &Shared,
    sid: &SessionId,
    sess: &Session,
    s: StreamIdx,
    conn: ConnId,
) {
    // Every arm cancels a request's context on close (the 2026-07-28
    // transport says a close MUST be treated as cancellation).
    if !shared.variant.cancels_on_close() && sess.scope != Scope::Request {
        return;
    }
    // A server whose close stops nothing (`on_close = "run_on"`): the
    // execution runs to its end.
    if shared.cfg.close_mode() == OnClose::RunOn {
        return;
    }
    let kind = sess.streams[s].kind;
    for (rid, runs) in &sess.in_flight {
        // The executions started on this stream (a reused id's other
        // execution runs on its own POST's stream). Under post-stream
        // delivery (forced for this arm) the requests without a POST stream
        // of their own are the legacy ones. A standalone stream carries
        // notifications only.
        let mine = |f: &&super::InFlight| match kind {
            StreamKind::Post => f.stream == s,
            StreamKind::Legacy => !sess.post_streams.contains_key(rid),
            StreamKind::Standalone => false,
        };
        let mut newly = false;
        for f in runs.iter().filter(mine).filter(|f| !f.outlives_close) {
            newly |= !f.cancelled.replace(true);
        }
        if !newly {
            continue;
        }
        shared.history.record(Record::CancelledOnClose {
            session: sid.clone(),
            stream: s,
            conn,
            rpc_id: rid.clone(),
        });
    }
}

/// `notifications/cancelled` (every arm): marks the named request of the
/// session cancelled; its tool stops at its next chunk. A server that
/// drops them (`cancel_notifications = "dropped"`) does nothing.
pub(in crate::server) fn on_cancelled(shared: &Shared, sid: &SessionId, params: Option<&Json>) {
    if shared.cfg.cancel_mode() == CancelNotifications::Dropped {
        return;
    }
    let Some(rid) = params
        .and_then(|p| p.get("requestId"))
        .map(|r| r.to_json().to_value())
    else {
        return;
    };
    let Ok(rid) = serde_json::from_value::<RequestId>(rid) else {
        return;
    };
    let st = shared.state.borrow();
    // Every execution under the id (a reused id can have two).
    if let Some(runs) = st.sessions.get(sid).and_then(|s| s.in_flight.get(&rid)) {
        for f in runs {
            f.cancelled.set(true);
        }
    }
}

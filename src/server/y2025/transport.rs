//! Rule T at the server (guarded): which transport may serve a session.

// Refusals travel as ready-made responses (`Result<_, Response<_>>`): they
// are the cold path, and boxing each would only add noise.
#![allow(clippy::result_large_err)]

use crate::guard::{check_transport, TransportVerdict};
use crate::history::{LoggedTransport, Record, SessionId, Transport};
use crate::protocol::jsonrpc::{self, ErrorObject, RequestId};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::error_with;
use crate::server::Shared;
use http::{Response, StatusCode};
use serde_json::json;

/// With `release_moved_legacy`: a legacy session refused over streamable
/// HTTP whose client has moved on (no connection of it open, nothing of it
/// running) is ended now, so that it no longer holds a session slot.
fn release_moved_legacy(shared: &Shared, sid: &SessionId, issued: Transport, arriving: Transport) {
    if !shared.cfg.release_moved_legacy
        || (issued, arriving) != (Transport::Legacy, Transport::Streamable)
    {
        return;
    }
    let idle = shared
        .state
        .borrow()
        .sessions
        .get(sid)
        .is_some_and(|s| s.conns().is_empty() && s.in_flight.is_empty());
    if idle {
        crate::server::session::life::end_session(shared, sid);
    }
}

/// Rule T (guarded): a request on `arriving` for a session issued under
/// another transport is served only through a registered mapping; else 404.
/// `Ok(mapped)` when it may be served. The unguarded server serves it.
pub(in crate::server) fn transport_gate(
    shared: &Shared,
    sid: &SessionId,
    arriving: Transport,
    id: Option<&RequestId>,
) -> Result<bool, Response<ServerBody>> {
    let issued = match shared.state.borrow().sessions.get(sid) {
        Some(s) => s.issued,
        None => return Ok(false),
    };
    if !shared.guarded() {
        return Ok(false);
    }
    let rule = |t: Transport| match t {
        Transport::Streamable => crate::guard::Transport::Streamable,
        Transport::Legacy => crate::guard::Transport::Legacy,
    };
    let verdict = check_transport(
        rule(issued),
        rule(arriving),
        shared.cfg.cross_transport_mapping,
    );
    let name = match verdict {
        TransportVerdict::Serve => return Ok(false),
        TransportVerdict::ServeMapped => LoggedTransport::ServeMapped,
        TransportVerdict::Reject => LoggedTransport::Reject,
    };
    shared.history.record(Record::TransportDecision {
        session: sid.clone(),
        issued,
        arriving,
        verdict: name,
    });
    if verdict == TransportVerdict::Reject {
        release_moved_legacy(shared, sid, issued, arriving);
    }
    match verdict {
        TransportVerdict::ServeMapped => Ok(true),
        _ => Err(error_with(
            StatusCode::NOT_FOUND,
            id.cloned(),
            ErrorObject::new(
                jsonrpc::SESSION_ERROR,
                format!(
                    "session was issued under the {} transport and no cross-transport mapping is registered: re-initialize on this transport",
                    match issued {
                        Transport::Streamable => "streamable HTTP",
                        Transport::Legacy => "legacy HTTP+SSE",
                    }
                ),
                Some(json!({"reason": "transport_mismatch", "issued": issued, "arriving": arriving})),
            ),
        )),
    }
}

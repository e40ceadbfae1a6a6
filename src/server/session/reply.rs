//! Request intake and replies shared by both transports: a response with
//! what the trace says about it ([`Reply`]), JSON and JSON-RPC error
//! bodies, header reading, the session a request names, and reading one
//! JSON-RPC message from a POST body.

// Refusals travel as ready-made responses (`Result<_, Response<_>>`): they
// are the cold path, and boxing each would only add noise.
#![allow(clippy::result_large_err)]

use super::holds::SseSlot;
use crate::history::{SessionId, Transport};
use crate::protocol::headers;
use crate::protocol::jsonrpc::{self, Message, RequestId};
use crate::protocol::mcp;
use crate::server::http::body::ServerBody;
use crate::server::http::principal::bearer;
use crate::server::http::respond::{error, error_with};
use crate::server::Shared;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use std::rc::Rc;

/// A response plus what the trace should say about it.
pub(in crate::server) struct Reply {
    pub resp: Response<ServerBody>,
    pub session: Option<SessionId>,
    pub rpc_id: Option<RequestId>,
    pub transport: Transport,
    /// The open-stream slot an SSE response holds ([`super::holds`]).
    pub slot: Option<SseSlot>,
}

impl Reply {
    pub fn new(resp: Response<ServerBody>) -> Self {
        Reply {
            resp,
            session: None,
            rpc_id: None,
            transport: Transport::Streamable,
            slot: None,
        }
    }

    /// The reply holds `slot` for as long as its body lives.
    pub fn holding(mut self, slot: Option<SseSlot>) -> Self {
        self.slot = slot.or(self.slot);
        self
    }

    pub fn about(mut self, session: Option<&SessionId>, rpc_id: Option<&RequestId>) -> Self {
        self.session = self.session.or_else(|| session.cloned());
        self.rpc_id = self.rpc_id.or_else(|| rpc_id.cloned());
        self
    }
}

/// Whether `Accept` admits `wanted`: the most specific media range that
/// matches it (`type/subtype`, then `type/*`, then `*/*`) decides, and a
/// range with `q=0` refuses.
pub(in crate::server) fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    headers::accepts(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok()),
        wanted,
    )
}

pub(in crate::server) fn header_str<'a>(
    headers: &'a HeaderMap,
    name: &str,
) -> Result<Option<&'a str>, Response<ServerBody>> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).map_err(|_| {
            error(
                StatusCode::BAD_REQUEST,
                None,
                jsonrpc::TRANSPORT_ERROR,
                &format!("header {name} is not visible ASCII"),
            )
        }),
    }
}

/// Checks `MCP-Protocol-Version` when present.
pub(in crate::server) fn check_version(headers: &HeaderMap) -> Result<(), Response<ServerBody>> {
    match header_str(headers, headers::MCP_PROTOCOL_VERSION)? {
        Some(v) if !mcp::SUPPORTED_VERSIONS.contains(&v) => Err(error(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::TRANSPORT_ERROR,
            &format!(
                "unsupported MCP-Protocol-Version {v:?}: supported are {}",
                mcp::SUPPORTED_VERSIONS.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

/// Finds the session named by `Mcp-Session-Id`: 400 when missing, 404
/// when unknown or terminated, or named with another bearer token than
/// the one that opened it ([`super::holds::may_name`]).
pub(in crate::server) fn session_of(
    shared: &Shared,
    headers: &HeaderMap,
    id: Option<&RequestId>,
) -> Result<SessionId, Response<ServerBody>> {
    let Some(sid) = header_str(headers, headers::MCP_SESSION_ID)? else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            id.cloned(),
            jsonrpc::TRANSPORT_ERROR,
            "missing Mcp-Session-Id header: send the id from the initialize response",
        ));
    };
    let st = shared.state.borrow();
    match st.sessions.get_key_value(sid) {
        Some((k, s)) if super::holds::may_name(shared, s, headers) => {
            s.last_active.set(tokio::time::Instant::now());
            Ok(k.clone())
        }
        _ => Err(error(
            StatusCode::NOT_FOUND,
            id.cloned(),
            jsonrpc::SESSION_ERROR,
            "unknown or terminated session: start a new session with initialize",
        )),
    }
}

/// Reads one JSON-RPC message from a POST: content type, Accept (streamable
/// only), size bound, JSON-RPC shape, then the 2025 version header; each
/// refusal as its status.
pub(in crate::server) async fn read_message(
    shared: &Shared,
    h: &HeaderMap,
    body: Incoming,
    need_accept: bool,
) -> Result<Message, Reply> {
    let msg = read_body(shared, h, body, need_accept).await?;
    if let Err(r) = check_version(h) {
        return Err(Reply::new(r).about(None, msg.id()));
    }
    Ok(msg)
}

/// [`read_message`] without the version header's check (the 2026 path
/// checks it against the body's `_meta`).
pub(in crate::server) async fn read_body(
    shared: &Shared,
    h: &HeaderMap,
    body: Incoming,
    need_accept: bool,
) -> Result<Message, Reply> {
    let refuse =
        |status, m: &str| Err(Reply::new(error(status, None, jsonrpc::TRANSPORT_ERROR, m)));
    let ct_ok = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    if !ct_ok {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    if need_accept && (!accepts(h, "application/json") || !accepts(h, "text/event-stream")) {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must list application/json and text/event-stream",
        );
    }
    let max = shared.cfg.max_body_bytes;
    let too_large = format!("body larger than {max} bytes");
    let declared = h
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, &too_large);
    }
    let collect = Limited::new(body, max).collect();
    let collected = match shared.exposure.body_timeout {
        None => collect.await,
        Some(t) => match tokio::time::timeout(t, collect).await {
            Ok(c) => c,
            Err(_) => {
                let mut r = error(
                    StatusCode::REQUEST_TIMEOUT,
                    None,
                    jsonrpc::TRANSPORT_ERROR,
                    &format!("request body not received within {} ms", t.as_millis()),
                );
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(Reply::new(r));
            }
        },
    };
    let bytes = match collected {
        Ok(c) => c.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, &too_large)
        }
        Err(_) => return refuse(StatusCode::BAD_REQUEST, "request body ended early"),
    };
    let msg = Message::decode(&bytes)
        .map_err(|e| Reply::new(error_with(StatusCode::BAD_REQUEST, None, e.to_error())))?;
    if let Some(max) = shared.exposure.max_request_id_bytes {
        if msg.id().is_some_and(|id| id_len(id) > max) {
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("request id longer than {max} bytes: use a shorter id"),
            );
        }
    }
    if let Some(max) = shared.exposure.max_params_bytes {
        let params = match &msg {
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                params.as_ref()
            }
            _ => None,
        };
        if params.is_some_and(|p| p.text().len() > max) {
            return Err(Reply::new(error(
                StatusCode::BAD_REQUEST,
                msg.id().cloned().filter(|id| {
                    shared
                        .exposure
                        .max_request_id_bytes
                        .is_none_or(|m| id_len(id) <= m)
                }),
                jsonrpc::INVALID_PARAMS,
                &format!("params longer than {max} bytes"),
            )));
        }
    }
    Ok(msg)
}

/// Whether a new session may open: 503 when the server holds
/// `max_sessions`, 429 when the request's bearer token holds
/// `max_sessions_per_principal`, or, without a token, when its peer
/// address holds `max_anonymous_sessions_per_peer` (exposed). `Ok` carries
/// the token, the session's owner.
pub(in crate::server) fn admit_session(
    shared: &Shared,
    h: &HeaderMap,
    peer: Option<std::net::IpAddr>,
    id: Option<&RequestId>,
) -> Result<Option<Rc<str>>, Response<ServerBody>> {
    let st = shared.state.borrow();
    if st.sessions.len() >= shared.cfg.max_sessions {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            id.cloned(),
            jsonrpc::TRANSPORT_ERROR,
            "session limit reached: retry later",
        ));
    }
    let owner = bearer(h);
    if let (Some(max), Some(who)) = (shared.exposure.max_sessions_per_principal, &owner) {
        let held = st
            .sessions
            .values()
            .filter(|s| s.owner.as_ref() == Some(who))
            .count();
        if held >= max {
            return Err(error(
                StatusCode::TOO_MANY_REQUESTS,
                id.cloned(),
                jsonrpc::TRANSPORT_ERROR,
                &format!(
                    "this bearer token holds {held} sessions, the most allowed: DELETE one first"
                ),
            ));
        }
    }
    if owner.is_none() {
        super::holds::admit_anonymous(shared, &st.sessions, peer, id)?;
    }
    Ok(owner)
}

/// A request id's length as it travels (a string's bytes, a number's
/// digits).
fn id_len(id: &RequestId) -> usize {
    match id {
        RequestId::Num(n) => n.to_string().len(),
        RequestId::Str(s) => s.len(),
    }
}

/// 503 when the session is full ([`super::Session::full`]).
pub(in crate::server) fn session_full(
    shared: &Shared,
    sid: &SessionId,
    id: Option<&RequestId>,
) -> Result<(), Response<ServerBody>> {
    let max = shared.exposure.max_streams_per_session;
    if shared
        .state
        .borrow()
        .sessions
        .get(sid)
        .is_some_and(|s| s.full(max))
    {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            id.cloned(),
            jsonrpc::TRANSPORT_ERROR,
            "this session holds all the streams and events it may: DELETE it and initialize a new one",
        ));
    }
    Ok(())
}

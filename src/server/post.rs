//! POST on `/mcp`: initialize, requests and notifications, the key
//! table's two looks around Rule M ([`super::rule_m`]), and where a tool
//! call's response goes.

use super::dedup::{self, KeyState, Lookup};
use super::reply::{
    accepted, admit_session, error, error_with, header_str, json_response, read_message,
    session_full, session_of, Reply,
};
use super::session::ToolCall;
use super::tools::{self, Invocation};
use super::transport::transport_gate;
use super::writer::{sse_response, Plan};
use super::{Delivery, Shared};
use crate::guard::PostFacts;
use crate::history::{ConnId, Record, SessionId, StreamKind, Transport};
use crate::protocol::jsonrpc::{self, Message, RequestId};
use crate::protocol::mcp::{self, CallToolParams, InitializeParams};
use crate::protocol::{headers, Json};
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::rc::Rc;

pub(super) async fn post(shared: &Rc<Shared>, req: Request<Incoming>, conn: ConnId) -> Reply {
    let (parts, body) = req.into_parts();
    let h = &parts.headers;
    let msg = match read_message(shared, h, body, true).await {
        Ok(m) => m,
        Err(r) => return r,
    };
    if let Message::Request { id, method, params } = &msg {
        if method == mcp::INITIALIZE {
            let peer = super::holds::peer_of(&parts.extensions);
            return initialize(shared, h, peer, id, params.as_ref());
        }
    }
    let sid = match session_of(shared, h, msg.id()) {
        Ok(s) => s,
        Err(r) => return Reply::new(r).about(None, msg.id()),
    };
    if let Err(r) = transport_gate(shared, &sid, Transport::Streamable, msg.id()) {
        return Reply::new(r).about(Some(&sid), msg.id());
    }
    let reply = match msg {
        Message::Request { id, method, params } => request(
            shared,
            &parts.headers,
            &sid,
            id.clone(),
            &method,
            params,
            conn,
        )
        .await
        .about(Some(&sid), Some(&id)),
        Message::Notification { method, params } => {
            if method == mcp::CANCELLED {
                super::cancel::on_cancelled(shared, &sid, params.as_ref());
            }
            Reply::new(accepted()).about(Some(&sid), None)
        }
        // A response to a request the server sent (a fixture tool's
        // sampling or elicitation); the ledger tools send none.
        msg @ (Message::Result { .. } | Message::Error { .. }) => {
            super::fixtures::answer(shared, &sid, msg);
            Reply::new(accepted()).about(Some(&sid), None)
        }
    };
    resumable_header(shared, &sid, reply)
}

/// Guarded POST responses carry `Mcp-Stream-Resumable: true` while the
/// session has a dropped stream.
fn resumable_header(shared: &Shared, sid: &SessionId, mut reply: Reply) -> Reply {
    if shared.guarded() {
        let st = shared.state.borrow();
        if st.sessions.get(sid).is_some_and(|s| s.guard.has_dropped()) {
            reply.resp.headers_mut().insert(
                headers::MCP_STREAM_RESUMABLE,
                HeaderValue::from_static("true"),
            );
        }
    }
    reply
}

fn initialize(
    shared: &Rc<Shared>,
    h: &HeaderMap,
    peer: Option<std::net::IpAddr>,
    id: &RequestId,
    params: Option<&Json>,
) -> Reply {
    let p: InitializeParams = match params.map(Json::parse_as_value) {
        Some(Ok(p)) => p,
        _ => {
            return Reply::new(error(
                StatusCode::OK,
                Some(id.clone()),
                jsonrpc::INVALID_PARAMS,
                "initialize needs protocolVersion",
            ))
            .about(None, Some(id))
        }
    };
    // Answer with the requested revision when supported, else our latest.
    let version = if mcp::SUPPORTED_VERSIONS.contains(&p.protocol_version.as_str()) {
        p.protocol_version.clone()
    } else {
        mcp::LATEST_VERSION.to_string()
    };
    let owner = match admit_session(shared, h, peer, Some(id)) {
        Ok(o) => o,
        Err(r) => return Reply::new(r).about(None, Some(id)),
    };
    let sid = shared.new_session_id();
    let mut session = shared.new_session(sid.clone(), Transport::Streamable);
    session.owner = owner;
    session.peer = peer;
    session.protocol_version = Some(version.clone());
    session.capabilities = p.capabilities.clone();
    shared
        .state
        .borrow_mut()
        .sessions
        .insert(sid.clone(), session);
    shared.history.record(Record::SessionCreated {
        session: sid.clone(),
        transport: Transport::Streamable,
    });
    shared.history.record(Record::Negotiated {
        session: sid.clone(),
        transport: Transport::Streamable,
        protocol_version: version.clone(),
        capabilities: Box::new(p.capabilities.clone()),
    });
    let body = Message::Result {
        id: id.clone(),
        result: super::fixtures::initialize_result(shared, &version),
    };
    let mut r = json_response(StatusCode::OK, &body);
    r.headers_mut().insert(
        headers::MCP_SESSION_ID,
        HeaderValue::from_str(&sid).expect("hex is a valid header"),
    );
    Reply::new(r).about(Some(&sid), Some(id))
}

async fn request(
    shared: &Rc<Shared>,
    h: &HeaderMap,
    sid: &SessionId,
    id: RequestId,
    method: &str,
    params: Option<Json>,
    conn: ConnId,
) -> Reply {
    // What is being asked, and is it idempotent?
    let mut call: Option<(CallToolParams, Invocation)> = None;
    // The open-stream slot of the call's POST stream, taken before anything
    // else is (a refused call leaves no key behind).
    let mut slot = None;
    if let Some(answer) = super::fixtures::request(shared, method, params.as_ref()) {
        return Reply::new(match answer {
            Ok(result) => json_response(StatusCode::OK, &Message::Result { id, result }),
            Err(e) => error_with(StatusCode::OK, Some(id), e),
        });
    }
    match method {
        mcp::TOOLS_CALL => {
            let p: CallToolParams = match params.as_ref().map(Json::parse_as_value) {
                Some(Ok(p)) => p,
                _ => {
                    return Reply::new(error(
                        StatusCode::OK,
                        Some(id),
                        jsonrpc::INVALID_PARAMS,
                        "tools/call needs name and arguments",
                    ))
                }
            };
            match tools::validate(shared, &p.name, &p.arguments) {
                Ok(inv) => call = Some((p, inv)),
                Err(e) => return Reply::new(error_with(StatusCode::OK, Some(id), e)),
            }
            if let Err(r) = session_full(shared, sid, Some(&id)) {
                return Reply::new(r);
            }
            match call_stream_slot(shared, sid, &id) {
                Ok(s) => slot = s,
                Err(r) => return Reply::new(r),
            }
        }
        mcp::PING | mcp::TOOLS_LIST => {}
        mcp::RESOURCES_LIST | mcp::RESOURCES_READ | mcp::RESOURCES_UNSUBSCRIBE => {
            return match super::legacy::resources(shared, sid, method, params.as_ref()) {
                Ok(result) => Reply::new(json_response(
                    StatusCode::OK,
                    &Message::Result { id, result },
                )),
                Err(e) => Reply::new(error_with(StatusCode::OK, Some(id), e)),
            };
        }
        mcp::LOGGING_SET_LEVEL => {
            let Some(level) = params
                .as_ref()
                .and_then(|p| p.get("level"))
                .and_then(|l| l.as_str())
                .and_then(|l| mcp::log_level(&l))
            else {
                return Reply::new(error(
                    StatusCode::OK,
                    Some(id),
                    jsonrpc::INVALID_PARAMS,
                    &format!(
                        "logging/setLevel needs a level: one of {}",
                        mcp::LOG_LEVELS.join(", ")
                    ),
                ));
            };
            if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                sess.log_level = level;
            }
        }
        mcp::RESOURCES_SUBSCRIBE => {
            let Some(uri) = params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(|u| u.as_str())
            else {
                return Reply::new(error(
                    StatusCode::OK,
                    Some(id),
                    jsonrpc::INVALID_PARAMS,
                    "resources/subscribe needs a uri",
                ));
            };
            if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                sess.subscriptions.insert(uri.to_string());
            }
        }
        other => {
            return Reply::new(error(
                StatusCode::OK,
                Some(id),
                jsonrpc::METHOD_NOT_FOUND,
                &format!(
                "method {other:?} not found: this server offers ping, tools/list, tools/call, resources/list, resources/read, resources/subscribe, resources/unsubscribe and logging/setLevel{}",
                super::fixtures::methods_offered(shared)
            ),
            ))
        }
    }
    // An arm that ignores keys ignores the header entirely (a non-ASCII
    // one included).
    let key = if shared.variant.honors_keys() {
        match header_str(h, headers::IDEMPOTENCY_KEY) {
            Ok(k) => k.map(str::to_string),
            Err(r) => return Reply::new(r),
        }
    } else {
        None
    };
    let who = dedup::principal(h, sid);
    shared.history.record(Record::request_received(
        sid,
        conn,
        &id,
        method,
        call.as_ref().and_then(|(_, inv)| inv.tag()),
        call.as_ref().map(|(p, _)| p.name.as_str()),
        key.as_deref(),
    ));
    // A request id still in flight in the session: the guarded arm refuses
    // it; the others run it again, as the SDKs do, and the id's result is
    // cross-wired to the new POST's stream (`tools::start`). The keys arm
    // looks its key up first, as for any POST.
    if shared.variant.refuses_reused_ids()
        && shared
            .state
            .borrow()
            .sessions
            .get(sid)
            .is_some_and(|s| s.in_flight.contains_key(&id))
    {
        return Reply::new(error(
            StatusCode::CONFLICT,
            Some(id),
            jsonrpc::CONFLICT,
            "request id already in flight in this session: use a new id",
        ));
    }
    let idempotent = call.as_ref().is_none_or(|(_, inv)| inv.idempotent());
    // Built only when a key will be looked up.
    let call_value = call
        .as_ref()
        .filter(|_| key.is_some())
        .map(|(p, _)| json!({"name": p.name, "arguments": p.arguments}));
    let keyed = key.as_deref().zip(call_value.as_ref());
    if shared.guarded() {
        if let Err(r) = super::rule_m::present_cursors(shared, h, sid) {
            return Reply::new(r);
        }
    }
    // The key table, first look: 422 before anything else; a known key
    // is an honored token for Rule M.
    let dedup_honored = match keyed.map(|(k, cv)| dedup::key_lookup(shared, &who, k, cv)) {
        Some(Lookup::OtherArguments) => return Reply::new(dedup::key_reused(id)),
        Some(Lookup::Known(_)) => true,
        Some(Lookup::Unknown) | None => false,
    };
    if shared.guarded() {
        let facts = PostFacts {
            idempotent,
            dedup_honored,
        };
        if let Err(r) = super::rule_m::rule_m(shared, sid, &id, facts).await {
            return Reply::new(r);
        }
    }
    // The key table, second look (Rule M may have waited): in flight, done,
    // or a new execution under the key.
    if let Some((k, cv)) = keyed {
        match dedup::key_lookup(shared, &who, k, cv) {
            Lookup::Known(KeyState::InFlight) => return Reply::new(dedup::key_in_flight(id)),
            Lookup::Known(KeyState::Done(result)) => {
                let result = dedup::replayed_result(shared, sid, &id, k, result);
                return Reply::new(json_response(
                    StatusCode::OK,
                    &Message::Result { id, result },
                ));
            }
            Lookup::OtherArguments => return Reply::new(dedup::key_reused(id)),
            Lookup::Unknown => shared.state.borrow_mut().dedup.begin(&who, k, cv.clone()),
        }
    }
    if !shared.state.borrow().sessions.contains_key(sid) {
        return Reply::new(error(
            StatusCode::NOT_FOUND,
            Some(id),
            jsonrpc::SESSION_ERROR,
            "session terminated while the request waited",
        ));
    }
    let result = match method {
        mcp::PING | mcp::RESOURCES_SUBSCRIBE | mcp::LOGGING_SET_LEVEL => json!({}).into(),
        mcp::TOOLS_LIST => super::fixtures::tools_list(shared),
        _ => {
            let (p, inv) = call.expect("tools/call validated above");
            return start_call(shared, sid, id, p, inv, key, who, conn).holding(slot);
        }
    };
    Reply::new(json_response(
        StatusCode::OK,
        &Message::Result { id, result },
    ))
}

/// The slot a call's POST stream takes ([`super::holds::stream_slot`]):
/// none when its events will go on the attached standalone stream.
#[allow(clippy::result_large_err)] // a refusal, the cold path (as in `reply`)
fn call_stream_slot(
    shared: &Shared,
    sid: &SessionId,
    id: &RequestId,
) -> Result<Option<super::holds::SseSlot>, http::Response<super::ServerBody>> {
    let st = shared.state.borrow();
    let Some(sess) = st.sessions.get(sid) else {
        return Ok(None);
    };
    if shared.cfg.delivery == Delivery::SessionStream && sess.standalone_attached().is_some() {
        return Ok(None);
    }
    super::holds::stream_slot(shared, sess, false, Some(id))
}

#[allow(clippy::too_many_arguments)]
fn start_call(
    shared: &Rc<Shared>,
    sid: &SessionId,
    id: RequestId,
    p: CallToolParams,
    inv: Invocation,
    dedup_key: Option<String>,
    principal: Rc<str>,
    conn: ConnId,
) -> Reply {
    let call = ToolCall {
        rpc_id: id.clone(),
        tool: p.name.clone(),
        progress_token: p.progress_token().cloned(),
        dedup_key,
        principal,
    };
    let mut st = shared.state.borrow_mut();
    let sess = st.sessions.get_mut(sid).expect("checked by the caller");
    if shared.cfg.delivery == Delivery::SessionStream {
        if let Some(s) = sess.standalone_attached() {
            drop(st);
            tools::start(shared.clone(), sid.clone(), s, call, inv);
            return Reply::new(accepted());
        }
    }
    let s = sess.open_stream(StreamKind::Post, Some(id), conn, &shared.history);
    drop(st);
    tools::start(shared.clone(), sid.clone(), s, call, inv);
    Reply::new(sse_response(shared, sid, s, conn, Plan::live()))
}

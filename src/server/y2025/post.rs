//! POST on `/mcp`: initialize, requests and notifications, the key
//! table's two looks around Rule M ([`super::rule_m`]), and where a tool
//! call's response goes.

use super::transport::transport_gate;
use crate::guard::PostFacts;
use crate::history::{ConnId, Record, SessionId, Transport};
use crate::protocol::jsonrpc::{self, Message, RequestId};
use crate::protocol::mcp::{self, CallToolParams, InitializeParams};
use crate::protocol::{headers, Json};
use crate::server::calls::start::{call_stream_slot, key_look, start_call, Asked};
use crate::server::calls::tools::{self, Invocation};
use crate::server::dedup::{self, Lookup};
use crate::server::http::principal;
use crate::server::http::respond::{accepted, error, error_with, json_response};
use crate::server::session::reply::{admit_session, header_str, session_full, session_of, Reply};
use crate::server::Shared;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::json;
use std::rc::Rc;

/// A POST on `/mcp` of the 2025-11-25 wire: its message read, and found
/// not to be a 2026-07-28 one (`routes::post_by_body`).
pub(in crate::server) async fn post(
    shared: &Rc<Shared>,
    parts: Parts,
    msg: Message,
    conn: ConnId,
) -> Reply {
    let h = &parts.headers;
    if let Message::Request { id, method, params } = &msg {
        if method == mcp::INITIALIZE {
            let peer = principal::peer_of(&parts.extensions);
            let reply = initialize(shared, h, peer, id, params.as_ref());
            if let Some(sid) = reply.session.clone() {
                if let Err(r) = crate::server::replica::stored::publish(shared, &sid).await {
                    return Reply::new(r).about(None, Some(id));
                }
            }
            return reply;
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
                crate::server::session::cancel::on_cancelled(shared, &sid, params.as_ref());
            }
            Reply::new(accepted()).about(Some(&sid), None)
        }
        // A response to a request the server sent (a fixture tool's
        // sampling or elicitation); the ledger tools send none.
        msg @ (Message::Result { .. } | Message::Error { .. }) => {
            crate::server::calls::fixtures::answer(shared, &sid, msg);
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
        result: crate::server::calls::fixtures::initialize_result(shared, &version),
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
    if let Some(answer) = crate::server::calls::fixtures::request(shared, method, params.as_ref()) {
        return Reply::new(match answer {
            Ok(result) => json_response(StatusCode::OK, &Message::Result { id, result }),
            Err(e) => error_with(StatusCode::OK, Some(id), e),
        });
    }
    let (call, slot) = match intake(shared, sid, &id, method, params.as_ref()) {
        Ok(c) => c,
        Err(r) => return r,
    };
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
    let who = principal::principal(h, sid);
    shared.history.record(Record::request_received(
        sid,
        conn,
        &id,
        method,
        call.as_ref().and_then(|(_, inv)| inv.tag()),
        call.as_ref().map(|(p, _)| p.name.as_str()),
        key.as_deref(),
    ));
    let asked = Asked {
        sid,
        id,
        conn,
        call,
        key,
        who,
    };
    if let Err(r) = admit(shared, h, &asked).await {
        return r;
    }
    if !shared.state.borrow().sessions.contains_key(sid) {
        return Reply::new(error(
            StatusCode::NOT_FOUND,
            Some(asked.id),
            jsonrpc::SESSION_ERROR,
            "session terminated while the request waited",
        ));
    }
    let result = match method {
        mcp::PING | mcp::RESOURCES_SUBSCRIBE | mcp::LOGGING_SET_LEVEL => json!({}).into(),
        mcp::TOOLS_LIST => crate::server::calls::fixtures::tools_list(shared),
        _ => return start_call(shared, asked).holding(slot),
    };
    Reply::new(json_response(
        StatusCode::OK,
        &Message::Result {
            id: asked.id,
            result,
        },
    ))
}

/// What is being asked: a validated tools/call with the slot its POST
/// stream takes (taken before anything else is, so a refused call leaves
/// no key behind), or nothing more for the other methods, whose settings
/// it applies. `Err`: the request is answered here (refused, or a
/// resources request answered at once).
#[allow(clippy::type_complexity)] // a call and its slot, read at once by the caller
#[allow(clippy::result_large_err)] // an answer given here, the cold path (as in `reply`)
fn intake(
    shared: &Rc<Shared>,
    sid: &SessionId,
    id: &RequestId,
    method: &str,
    params: Option<&Json>,
) -> Result<
    (
        Option<(CallToolParams, Invocation)>,
        Option<crate::server::session::holds::SseSlot>,
    ),
    Reply,
> {
    let refuse = |code, message: &str| {
        Err(Reply::new(error(
            StatusCode::OK,
            Some(id.clone()),
            code,
            message,
        )))
    };
    match method {
        mcp::TOOLS_CALL => {
            let p: CallToolParams = match params.map(Json::parse_as_value) {
                Some(Ok(p)) => p,
                _ => return refuse(jsonrpc::INVALID_PARAMS, "tools/call needs name and arguments"),
            };
            let inv = match tools::validate(shared, &p.name, &p.arguments) {
                Ok(inv) => inv,
                Err(e) => {
                    return Err(Reply::new(error_with(StatusCode::OK, Some(id.clone()), e)))
                }
            };
            if let Err(r) = session_full(shared, sid, Some(id)) {
                return Err(Reply::new(r));
            }
            match call_stream_slot(shared, sid, id) {
                Ok(slot) => Ok((Some((p, inv)), slot)),
                Err(r) => Err(Reply::new(r)),
            }
        }
        mcp::PING | mcp::TOOLS_LIST => Ok((None, None)),
        mcp::RESOURCES_LIST | mcp::RESOURCES_READ | mcp::RESOURCES_UNSUBSCRIBE => {
            Err(match super::legacy::resources(shared, sid, method, params) {
                Ok(result) => Reply::new(json_response(
                    StatusCode::OK,
                    &Message::Result {
                        id: id.clone(),
                        result,
                    },
                )),
                Err(e) => Reply::new(error_with(StatusCode::OK, Some(id.clone()), e)),
            })
        }
        mcp::LOGGING_SET_LEVEL => {
            let Some(level) = params
                .and_then(|p| p.get("level"))
                .and_then(|l| l.as_str())
                .and_then(|l| mcp::log_level(&l))
            else {
                return refuse(
                    jsonrpc::INVALID_PARAMS,
                    &format!(
                        "logging/setLevel needs a level: one of {}",
                        mcp::LOG_LEVELS.join(", ")
                    ),
                );
            };
            if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                sess.log_level = level;
            }
            Ok((None, None))
        }
        mcp::RESOURCES_SUBSCRIBE => {
            let Some(uri) = params.and_then(|p| p.get("uri")).and_then(|u| u.as_str()) else {
                return refuse(jsonrpc::INVALID_PARAMS, "resources/subscribe needs a uri");
            };
            if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                sess.subscriptions.insert(uri.to_string());
            }
            Ok((None, None))
        }
        other => refuse(
            jsonrpc::METHOD_NOT_FOUND,
            &format!(
                "method {other:?} not found: this server offers ping, tools/list, tools/call, resources/list, resources/read, resources/subscribe, resources/unsubscribe and logging/setLevel{}",
                crate::server::calls::fixtures::methods_offered(shared)
            ),
        ),
    }
}

/// The looks a request passes before it runs: a reused in-flight id, the
/// cursors it presents and Rule M (guarded), and the key table's two looks
/// around Rule M. `Err`: the answer it gets instead (a refusal, or a
/// completed key's stored result).
async fn admit(shared: &Rc<Shared>, h: &HeaderMap, asked: &Asked<'_>) -> Result<(), Reply> {
    let (sid, id, who) = (asked.sid, &asked.id, &asked.who);
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
            .is_some_and(|s| s.in_flight.contains_key(id))
    {
        return Err(Reply::new(error(
            StatusCode::CONFLICT,
            Some(id.clone()),
            jsonrpc::CONFLICT,
            "request id already in flight in this session: use a new id",
        )));
    }
    let idempotent = asked.call.as_ref().is_none_or(|(_, inv)| inv.idempotent());
    // Built only when a key will be looked up.
    let call_value = asked
        .call
        .as_ref()
        .filter(|_| asked.key.is_some())
        .map(|(p, _)| json!({"name": p.name, "arguments": p.arguments}));
    let keyed = asked.key.as_deref().zip(call_value.as_ref());
    if let Some((k, _)) = keyed {
        if let Err(r) = crate::server::replica::stored::load_key(shared, who, k).await {
            return Err(Reply::new(r));
        }
    }
    if shared.guarded() {
        if let Err(r) = super::rule_m::present_cursors(shared, h, sid) {
            return Err(Reply::new(r));
        }
    }
    // The key table, first look: 422 before anything else; a known key
    // is an honored token for Rule M.
    let dedup_honored = match keyed.map(|(k, cv)| dedup::key_lookup(shared, who, k, cv)) {
        Some(Lookup::OtherArguments) => return Err(Reply::new(dedup::key_reused(id.clone()))),
        Some(Lookup::Known(_)) => true,
        Some(Lookup::Unknown) | None => false,
    };
    if shared.guarded() {
        let facts = PostFacts {
            idempotent,
            dedup_honored,
        };
        if let Err(r) = super::rule_m::rule_m(shared, sid, id, facts).await {
            return Err(Reply::new(r));
        }
    }
    // The key table, second look (Rule M may have waited).
    if let Some((k, cv)) = keyed {
        key_look(shared, sid, id, who, k, cv).await?;
    }
    Ok(())
}

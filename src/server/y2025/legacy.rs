//! The legacy HTTP+SSE transport (2024-11-05) beside streamable HTTP, on
//! the same session store, as dual-transport servers have it: `GET /sse`
//! opens a session and its stream, whose first event is `endpoint`
//! (`/messages?sessionId=…`); the client POSTs every message there (202) and
//! every server message arrives on the stream as a `message` event numbered
//! by the legacy stream's own counter. A legacy session outlives its stream
//! for `legacy_session_ttl_ms`. Also here: the clock resource that changes
//! over simulated time and notifies its subscribers.

use super::transport;
use crate::guard::StreamIdx;
use crate::history::{ConnId, EventKind, Record, SessionId, StreamKind, Transport};
use crate::protocol::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::protocol::mcp::{self, CallToolParams, InitializeParams};
use crate::protocol::{headers, sse, Json};
use crate::server::calls::tools;
use crate::server::dedup::{self, KeyState, Lookup};
use crate::server::http::principal;
use crate::server::http::respond;
use crate::server::session::cancel;
use crate::server::session::reply::{self, Reply};
use crate::server::session::writer::{self, Plan};
use crate::server::session::ToolCall;
use crate::server::Shared;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::rc::Rc;
use std::time::Duration;

fn reply(r: http::Response<crate::server::ServerBody>) -> Reply {
    let mut r = Reply::new(r);
    r.transport = Transport::Legacy;
    r
}

/// `GET /sse`: a new legacy session and its stream.
pub(in crate::server) fn open(shared: &Rc<Shared>, req: Request<Incoming>, conn: ConnId) -> Reply {
    if !reply::accepts(req.headers(), "text/event-stream") {
        return reply(respond::error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::TRANSPORT_ERROR,
            "Accept must list text/event-stream",
        ));
    }
    let peer = principal::peer_of(req.extensions());
    let owner = match reply::admit_session(shared, req.headers(), peer, None) {
        Ok(o) => o,
        Err(r) => return reply(r),
    };
    let sid = shared.new_session_id();
    let mut session = shared.new_session(sid.clone(), Transport::Legacy);
    session.owner = owner;
    session.peer = peer;
    // Its stream is one its holder has open (the session's first).
    let slot = match crate::server::session::holds::stream_slot(shared, &session, false, None) {
        Ok(s) => s,
        Err(r) => return reply(r),
    };
    shared.history.record(Record::SessionCreated {
        session: sid.clone(),
        transport: Transport::Legacy,
    });
    let s = session.open_stream(StreamKind::Legacy, None, conn, &shared.history);
    session.legacy_stream = Some(s);
    shared
        .state
        .borrow_mut()
        .sessions
        .insert(sid.clone(), session);
    let endpoint = sse::encode(
        None,
        Some("endpoint"),
        &format!("/messages?sessionId={sid}"),
        None,
    );
    let plan = Plan {
        after: None,
        replay_until: None,
        replay: false,
        interleave: false,
        transport: Transport::Legacy,
        preamble: Some(endpoint),
    };
    reply(writer::sse_response(shared, &sid, s, conn, plan))
        .about(Some(&sid), None)
        .holding(slot)
}

/// `POST /messages?sessionId=…`: every client message; 202, the answer
/// goes on the legacy stream.
pub(in crate::server) async fn post(
    shared: &Rc<Shared>,
    req: Request<Incoming>,
    conn: ConnId,
) -> Reply {
    let (parts, body) = req.into_parts();
    let Some(sid) = parts
        .uri
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("sessionId=")))
        .map(str::to_string)
    else {
        return reply(respond::error(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::TRANSPORT_ERROR,
            "missing sessionId query parameter: POST to the URI of the endpoint event",
        ));
    };
    let msg = match reply::read_message(shared, &parts.headers, body, false).await {
        Ok(m) => m,
        Err(mut r) => {
            r.transport = Transport::Legacy;
            return r;
        }
    };
    let known = shared
        .state
        .borrow()
        .sessions
        .get_key_value(sid.as_str())
        .filter(|(_, s)| crate::server::session::holds::may_name(shared, s, &parts.headers))
        .map(|(k, s)| {
            s.last_active.set(tokio::time::Instant::now());
            k.clone()
        });
    let Some(sid) = known else {
        return reply(respond::error(
            StatusCode::NOT_FOUND,
            msg.id().cloned(),
            jsonrpc::SESSION_ERROR,
            "unknown or expired session: open a new one with GET /sse",
        ))
        .about(None, msg.id());
    };
    if let Err(r) = transport::transport_gate(shared, &sid, Transport::Legacy, msg.id()) {
        return reply(r).about(Some(&sid), msg.id());
    }
    let id = msg.id().cloned();
    match msg {
        Message::Request { id, method, params } => {
            let who = principal::principal(&parts.headers, &sid);
            // Keys as on /mcp: only an arm that honors them reads the header.
            let key = if shared.variant.honors_keys() {
                match reply::header_str(&parts.headers, headers::IDEMPOTENCY_KEY) {
                    Ok(k) => k.map(str::to_string),
                    Err(r) => return reply(r).about(Some(&sid), Some(&id)),
                }
            } else {
                None
            };
            let by = Poster { who, key, conn };
            if let Err(r) = request(shared, &sid, id.clone(), &method, params, by) {
                return reply(r).about(Some(&sid), Some(&id));
            }
        }
        Message::Notification { method, params } if method == mcp::CANCELLED => {
            cancel::on_cancelled(shared, &sid, params.as_ref());
        }
        _ => {}
    }
    reply(respond::accepted()).about(Some(&sid), id.as_ref())
}

/// Answers one legacy request on the legacy stream; `Err` is a refusal of
/// the POST itself (the key table's 409 and 422), a cold path as in
/// `reply`.
#[allow(clippy::result_large_err)]
fn request(
    shared: &Rc<Shared>,
    sid: &SessionId,
    id: RequestId,
    method: &str,
    params: Option<Json>,
    by: Poster,
) -> Result<(), http::Response<crate::server::ServerBody>> {
    let Some(s) = shared
        .state
        .borrow()
        .sessions
        .get(sid)
        .and_then(|x| x.legacy_stream)
    else {
        return Ok(()); // a streamable session served here (unguarded): nowhere to answer
    };
    let at = Answering { shared, sid, s, id };
    let answer = |result| at.answer(result);
    let bad = |m: &str| Err(ErrorObject::new(jsonrpc::INVALID_PARAMS, m, None));
    match method {
        mcp::INITIALIZE => match params.map(|p| p.parse_as_value::<InitializeParams>()) {
            Some(Ok(p)) => {
                let version = if mcp::SUPPORTED_VERSIONS.contains(&p.protocol_version.as_str()) {
                    p.protocol_version.clone()
                } else {
                    mcp::LEGACY_VERSION.to_string()
                };
                if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                    sess.protocol_version = Some(version.clone());
                    sess.capabilities = p.capabilities.clone();
                }
                shared.history.record(Record::Negotiated {
                    session: sid.clone(),
                    transport: Transport::Legacy,
                    protocol_version: version.clone(),
                    capabilities: Box::new(p.capabilities),
                });
                answer(Ok(mcp::initialize_result(&version)));
            }
            _ => answer(bad("initialize needs protocolVersion")),
        },
        mcp::PING => answer(Ok(json!({}).into())),
        mcp::RESOURCES_LIST | mcp::RESOURCES_READ | mcp::RESOURCES_UNSUBSCRIBE => {
            answer(resources(shared, sid, method, params.as_ref()))
        }
        mcp::LOGGING_SET_LEVEL => match params
            .as_ref()
            .and_then(|p| p.get("level"))
            .and_then(|l| l.as_str())
            .and_then(|l| mcp::log_level(&l))
        {
            Some(level) => {
                if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                    sess.log_level = level;
                }
                answer(Ok(json!({}).into()));
            }
            None => answer(bad("logging/setLevel needs a level: debug, info, notice, warning, error, critical, alert or emergency")),
        },
        mcp::TOOLS_LIST => answer(Ok(mcp::tools_list_result().into())),
        mcp::RESOURCES_SUBSCRIBE => match params
            .as_ref()
            .and_then(|p| p.get("uri"))
            .and_then(|u| u.as_str())
        {
            Some(uri) => {
                if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                    sess.subscriptions.insert(uri.to_string());
                }
                answer(Ok(json!({}).into()));
            }
            None => answer(bad("resources/subscribe needs a uri")),
        },
        mcp::TOOLS_CALL => return at.tools_call(params, by),
        other => answer(Err(ErrorObject::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("method {other:?} not found"),
            None,
        ))),
    }
    Ok(())
}

/// Who a legacy POST acts for and what it presents: its principal, its
/// `Idempotency-Key` (read only on an arm that honors keys), the
/// connection it came on.
struct Poster {
    who: Rc<str>,
    key: Option<String>,
    conn: ConnId,
}

/// Where one legacy request is answered: on its session's legacy stream
/// `s`, under its id.
struct Answering<'a> {
    shared: &'a Rc<Shared>,
    sid: &'a SessionId,
    s: StreamIdx,
    id: RequestId,
}

impl Answering<'_> {
    /// Puts the answer (a result or an error) on the legacy stream.
    fn answer(&self, result: Result<Json, ErrorObject>) {
        let (shared, sid, s, id) = (self.shared, self.sid, self.s, &self.id);
        let msg = match result {
            Ok(result) => Message::Result {
                id: id.clone(),
                result,
            },
            Err(error) => Message::Error {
                id: Some(id.clone()),
                error,
            },
        };
        if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
            sess.produce(
                s,
                EventKind::Other,
                &msg.encode(),
                Some(id.clone()),
                None,
                &shared.history,
            );
        }
    }

    /// A `tools/call`: validated, the key table's look, then the tool runs
    /// with its events on the legacy stream. `Err`: the POST's own refusal
    /// (503 session full, the key table's 409 and 422).
    #[allow(clippy::result_large_err)]
    fn tools_call(
        &self,
        params: Option<Json>,
        by: Poster,
    ) -> Result<(), http::Response<crate::server::ServerBody>> {
        let (shared, sid, s, id) = (self.shared, self.sid, self.s, self.id.clone());
        let Poster {
            who: principal,
            key,
            conn,
        } = by;
        let method = mcp::TOOLS_CALL;
        let answer = |result| self.answer(result);
        let bad = |m: &str| Err(ErrorObject::new(jsonrpc::INVALID_PARAMS, m, None));
        let p = match params.map(|p| p.parse_as_value::<CallToolParams>()) {
            Some(Ok(p)) => p,
            _ => {
                answer(bad("tools/call needs name and arguments"));
                return Ok(());
            }
        };
        let inv = match tools::validate(shared, &p.name, &p.arguments) {
            Ok(inv) => inv,
            Err(e) => {
                answer(Err(e));
                return Ok(());
            }
        };
        reply::session_full(shared, sid, Some(&id))?;
        shared.history.record(Record::request_received(
            sid,
            conn,
            &id,
            method,
            inv.tag(),
            Some(&p.name),
            key.as_deref(),
        ));
        if let Some(k) = &key {
            let cv = json!({"name": p.name, "arguments": p.arguments});
            match dedup::key_lookup(shared, &principal, k, &cv) {
                Lookup::OtherArguments => return Err(dedup::key_reused(id)),
                Lookup::Known(KeyState::InFlight) => return Err(dedup::key_in_flight(id)),
                Lookup::Known(KeyState::Done(result)) => {
                    // The stored result, under the retry's id, rides the
                    // stream as every legacy answer does.
                    let result = dedup::replayed_result(shared, sid, &id, k, result);
                    let msg = Message::Result {
                        id: id.clone(),
                        result,
                    };
                    if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                        sess.produce(
                            s,
                            EventKind::Result,
                            &msg.encode(),
                            Some(id.clone()),
                            inv.tag().map(Rc::from),
                            &shared.history,
                        );
                    }
                    return Ok(());
                }
                Lookup::Unknown => shared.state.borrow_mut().dedup.begin(&principal, k, cv),
            }
        }
        let call = ToolCall {
            rpc_id: id.clone(),
            tool: p.name.clone(),
            progress_token: p.progress_token().cloned(),
            dedup_key: key,
            principal,
            dress: None,
        };
        tools::start(shared.clone(), sid.clone(), s, call, inv);
        Ok(())
    }
}

/// `resources/list`, `resources/read` and `resources/unsubscribe` for
/// session `sid`: the one resource is the clock.
pub(in crate::server) fn resources(
    shared: &Shared,
    sid: &SessionId,
    method: &str,
    params: Option<&Json>,
) -> Result<Json, ErrorObject> {
    let uri = params.and_then(|p| p.get("uri")).and_then(|u| u.as_str());
    let need_uri = || {
        ErrorObject::new(
            jsonrpc::INVALID_PARAMS,
            format!("{method} needs a uri: the server has {}", mcp::CLOCK_URI),
            None,
        )
    };
    match method {
        mcp::RESOURCES_LIST => Ok(mcp::resources_list_result()),
        mcp::RESOURCES_READ => match uri {
            Some(u) if u == mcp::CLOCK_URI => {
                Ok(mcp::clock_read_result(shared.state.borrow().clock))
            }
            _ => Err(need_uri()),
        },
        _ => match uri {
            Some(u) => {
                if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                    sess.subscriptions.remove(u.as_ref());
                }
                Ok(json!({}).into())
            }
            None => Err(need_uri()),
        },
    }
}

/// The clock resource changes every `resource_interval_ms`; each session
/// subscribed to it gets `notifications/resources/updated` on its
/// notification stream (the legacy stream, or the standalone GET stream).
pub(in crate::server) async fn tick_resources(shared: Rc<Shared>) {
    let every = Duration::from_millis(shared.cfg.resource_interval_ms);
    loop {
        tokio::time::sleep(every).await;
        let version = {
            let mut st = shared.state.borrow_mut();
            st.clock += 1;
            st.clock
        };
        let msg = Message::Notification {
            method: mcp::RESOURCES_UPDATED.into(),
            params: Some(mcp::resource_updated_params(version)),
        }
        .encode();
        let mut st = shared.state.borrow_mut();
        st.sessions.for_each_mut(|sess| {
            if !sess.subscriptions.contains(mcp::CLOCK_URI) {
                return;
            }
            if let Some(s) = sess.notification_stream() {
                sess.produce(
                    s,
                    EventKind::Notification,
                    &msg,
                    None,
                    None,
                    &shared.history,
                );
            }
        });
    }
}

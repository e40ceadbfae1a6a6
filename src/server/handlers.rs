//! HTTP handlers: POST, GET and DELETE on `/mcp`, with every
//! refusal as an HTTP status and a JSON-RPC error body.

// Refusals travel as ready-made responses (`Result<_, Response<_>>`): they
// are the cold path, and boxing each would only add noise.
#![allow(clippy::result_large_err)]

use super::body::ServerBody;
use super::dedup::{KeyState, Lookup};
use super::session::{Session, ToolCall};
use super::tools::{self, Invocation};
use super::writer::{self, Plan};
use super::{Delivery, Shared};
use crate::guard::{
    check_transport, Decision, EventId, Limits, PostFacts, Reason, StreamIdx, TransportVerdict,
    Verdict,
};
use crate::history::{
    ConnId, LoggedDecision, LoggedStream, LoggedView, Record, ServerClose, SessionId, StreamKind,
    Transport,
};
use crate::protocol::headers::{self, CursorList};
use crate::protocol::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::protocol::mcp::{self, CallToolParams, InitializeParams};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

/// A response plus what the trace should say about it.
pub(super) struct Reply {
    pub resp: Response<ServerBody>,
    pub session: Option<SessionId>,
    pub rpc_id: Option<RequestId>,
    pub transport: Transport,
}

impl Reply {
    pub fn new(resp: Response<ServerBody>) -> Self {
        Reply {
            resp,
            session: None,
            rpc_id: None,
            transport: Transport::Streamable,
        }
    }

    pub fn about(mut self, session: Option<&SessionId>, rpc_id: Option<&RequestId>) -> Self {
        self.session = self.session.or_else(|| session.cloned());
        self.rpc_id = self.rpc_id.or_else(|| rpc_id.cloned());
        self
    }
}

/// Entry point for one HTTP request on connection `conn`.
pub(crate) async fn handle(
    shared: Rc<Shared>,
    req: Request<Incoming>,
    conn: ConnId,
) -> Response<ServerBody> {
    let reply = match (req.uri().path(), req.method()) {
        ("/mcp", &Method::POST) => post(&shared, req, conn).await,
        ("/mcp", &Method::GET) => get(&shared, req, conn),
        ("/mcp", &Method::DELETE) => delete(&shared, req),
        ("/sse", &Method::GET) => super::legacy::open(&shared, req, conn),
        ("/messages", &Method::POST) => super::legacy::post(&shared, req, conn).await,
        ("/mcp", _) => {
            let mut r = error(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                jsonrpc::TRANSPORT_ERROR,
                "method not allowed on /mcp: use POST, GET or DELETE",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            Reply::new(r)
        }
        (path, _) => Reply::new(error(
            StatusCode::NOT_FOUND,
            None,
            jsonrpc::TRANSPORT_ERROR,
            &format!("no endpoint at {path:?}: the MCP endpoint is /mcp"),
        )),
    };
    shared.history.record(Record::Responded {
        request: reply.rpc_id.is_some(),
        session: reply.session,
        rpc_id: reply.rpc_id,
        status: reply.resp.status().as_u16(),
        conn,
        transport: reply.transport,
    });
    reply.resp
}

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response<ServerBody> {
    let mut r = Response::new(ServerBody::Full(Some(Bytes::from(body.to_string()))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(super) fn error_with(
    status: StatusCode,
    id: Option<RequestId>,
    err: ErrorObject,
) -> Response<ServerBody> {
    json_response(status, &Message::Error { id, error: err }.to_value())
}

pub(super) fn error(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: &str,
) -> Response<ServerBody> {
    error_with(status, id, ErrorObject::new(code, message, None))
}

pub(super) fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    let (ty, _) = wanted.split_once('/').expect("a media type");
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .map(|m| m.split(';').next().unwrap_or("").trim())
                .any(|m| m == wanted || m == "*/*" || m.strip_suffix("/*") == Some(ty))
        })
}

pub(super) fn header_str<'a>(
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
pub(super) fn check_version(headers: &HeaderMap) -> Result<(), Response<ServerBody>> {
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
/// when unknown or terminated.
fn session_of(
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
        Some((k, _)) => Ok(k.clone()),
        None => Err(error(
            StatusCode::NOT_FOUND,
            id.cloned(),
            jsonrpc::SESSION_ERROR,
            "unknown or terminated session: start a new session with initialize",
        )),
    }
}

/// Reads one JSON-RPC message from a POST: content type, Accept (streamable
/// only), size bound, JSON-RPC shape; each refusal as its status.
pub(super) async fn read_message(
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
    let bytes = match Limited::new(body, max).collect().await {
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
    if let Err(r) = check_version(h) {
        return Err(Reply::new(r).about(None, msg.id()));
    }
    Ok(msg)
}

async fn post(shared: &Rc<Shared>, req: Request<Incoming>, conn: ConnId) -> Reply {
    let (parts, body) = req.into_parts();
    let h = &parts.headers;
    let msg = match read_message(shared, h, body, true).await {
        Ok(m) => m,
        Err(r) => return r,
    };
    if let Message::Request { id, method, params } = &msg {
        if method == mcp::INITIALIZE {
            return initialize(shared, id, params.as_ref());
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
                cancel(shared, &sid, params.as_ref());
            }
            Reply::new(accepted()).about(Some(&sid), None)
        }
        Message::Result { .. } | Message::Error { .. } => {
            Reply::new(accepted()).about(Some(&sid), None)
        }
    };
    resumable_header(shared, &sid, reply)
}

pub(super) fn accepted() -> Response<ServerBody> {
    let mut r = Response::new(ServerBody::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
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

fn initialize(shared: &Rc<Shared>, id: &RequestId, params: Option<&Value>) -> Reply {
    let p: InitializeParams = match params.cloned().map(serde_json::from_value) {
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
    if shared.state.borrow().sessions.len() >= shared.cfg.max_sessions {
        return Reply::new(error(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(id.clone()),
            jsonrpc::TRANSPORT_ERROR,
            "session limit reached: retry later",
        ))
        .about(None, Some(id));
    }
    let sid = shared.new_session_id();
    let mut session = Session::new(
        sid.clone(),
        Transport::Streamable,
        shared.cfg.first_event_id,
        shared.cfg.store_capacity,
    );
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
        capabilities: p.capabilities.clone(),
    });
    let body = Message::Result {
        id: id.clone(),
        result: mcp::initialize_result(&version),
    };
    let mut r = json_response(StatusCode::OK, &body.to_value());
    r.headers_mut().insert(
        headers::MCP_SESSION_ID,
        HeaderValue::from_str(&sid).expect("hex is a valid header"),
    );
    Reply::new(r).about(Some(&sid), Some(id))
}

pub(super) fn cancel(shared: &Shared, sid: &SessionId, params: Option<&Value>) {
    let Some(rid) = params.and_then(|p| p.get("requestId")).cloned() else {
        return;
    };
    let Ok(rid) = serde_json::from_value::<RequestId>(rid) else {
        return;
    };
    let st = shared.state.borrow();
    if let Some(f) = st.sessions.get(sid).and_then(|s| s.in_flight.get(&rid)) {
        f.cancelled.set(true);
    }
}

async fn request(
    shared: &Rc<Shared>,
    h: &HeaderMap,
    sid: &SessionId,
    id: RequestId,
    method: &str,
    params: Option<Value>,
    conn: ConnId,
) -> Reply {
    // What is being asked, and is it idempotent?
    let mut call: Option<(CallToolParams, Invocation)> = None;
    match method {
        mcp::TOOLS_CALL => {
            let p: CallToolParams = match params.clone().map(serde_json::from_value) {
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
        }
        mcp::PING | mcp::TOOLS_LIST => {}
        mcp::RESOURCES_SUBSCRIBE => {
            let Some(uri) = params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
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
                "method {other:?} not found: this server offers ping, tools/list and tools/call"
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
    let who = principal(h, sid);
    shared.history.record(Record::RequestReceived {
        session: Some(sid.clone()),
        conn,
        rpc_id: id.clone(),
        method: method.to_string(),
        tag: call
            .as_ref()
            .and_then(|(_, inv)| inv.tag().map(str::to_string)),
        tool: call.as_ref().map(|(p, _)| p.name.clone()),
        key: key.clone(),
    });
    if shared
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
    let call_value = call
        .as_ref()
        .map(|(p, _)| json!({"name": p.name, "arguments": p.arguments}));
    let keyed = key.as_deref().zip(call_value.as_ref());
    if shared.guarded() {
        if let Err(r) = present_cursors(shared, h, sid) {
            return Reply::new(r);
        }
    }
    // The key table, first look: 422 before anything else; a known key
    // is an honored token for Rule M.
    let dedup_honored = match keyed.map(|(k, cv)| key_lookup(shared, &who, k, cv)) {
        Some(Lookup::OtherArguments) => return Reply::new(key_reused(id)),
        Some(Lookup::Known(_)) => true,
        Some(Lookup::Unknown) | None => false,
    };
    if shared.guarded() {
        let facts = PostFacts {
            idempotent,
            dedup_honored,
        };
        if let Err(r) = rule_m(shared, sid, &id, facts).await {
            return Reply::new(r);
        }
    }
    // The key table, second look (Rule M may have waited): in flight, done,
    // or a new execution under the key.
    if let Some((k, cv)) = keyed {
        match key_lookup(shared, &who, k, cv) {
            Lookup::Known(KeyState::InFlight) => return Reply::new(key_in_flight(id)),
            Lookup::Known(KeyState::Done(result)) => {
                let result = replayed_result(shared, sid, &id, k, result);
                return Reply::new(json_response(
                    StatusCode::OK,
                    &Message::Result { id, result }.to_value(),
                ));
            }
            Lookup::OtherArguments => return Reply::new(key_reused(id)),
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
        mcp::PING | mcp::RESOURCES_SUBSCRIBE => json!({}),
        mcp::TOOLS_LIST => mcp::tools_list_result(),
        _ => {
            let (p, inv) = call.expect("tools/call validated above");
            return start_call(shared, sid, id, p, inv, key, who, conn);
        }
    };
    Reply::new(json_response(
        StatusCode::OK,
        &Message::Result { id, result }.to_value(),
    ))
}

/// What the key table says about `who`'s `key` presented with `call`.
pub(super) fn key_lookup(shared: &Shared, who: &Rc<str>, key: &str, call: &Value) -> Lookup {
    shared.state.borrow().dedup.lookup(who, key, call)
}

/// 422: the key was used with other arguments.
pub(super) fn key_reused(id: RequestId) -> Response<ServerBody> {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        Some(id),
        jsonrpc::KEY_REUSED,
        "Idempotency-Key reused with other arguments: use a new key for a new operation",
    )
}

/// 409 without a resume hint: the key's execution is still running.
pub(super) fn key_in_flight(id: RequestId) -> Response<ServerBody> {
    error(
        StatusCode::CONFLICT,
        Some(id),
        jsonrpc::CONFLICT,
        "an execution under this Idempotency-Key is in flight: wait for its result",
    )
}

/// A completed key's stored result for the retry `id`, marked as a replay:
/// the client knows it missed this execution's progress (an announced
/// loss, not a silent one).
pub(super) fn replayed_result(
    shared: &Shared,
    sid: &SessionId,
    id: &RequestId,
    key: &str,
    mut result: Value,
) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.insert("_meta".into(), json!({ mcp::REPLAYED: true }));
    }
    shared.history.record(Record::DedupReplayed {
        session: sid.clone(),
        rpc_id: id.clone(),
        key: key.to_string(),
    });
    result
}

/// Applies a guarded POST's cursor list (`Last-Event-ID: 142;lost, 163`)
/// and its lost-request list (`Mcp-Lost-Requests: ["op#1"]`: POSTs whose
/// stream the client never saw begin, so it has no cursor to name them; each
/// counts as a `;lost` cursor at the stream's priming event).
fn present_cursors(
    shared: &Shared,
    h: &HeaderMap,
    sid: &SessionId,
) -> Result<(), Response<ServerBody>> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, None, jsonrpc::TRANSPORT_ERROR, &m);
    let list = match header_str(h, headers::LAST_EVENT_ID)? {
        Some(v) => CursorList::parse(v).map_err(|e| bad(e.to_string()))?.0,
        None => Vec::new(),
    };
    let lost_requests: Vec<RequestId> = match header_str(h, headers::MCP_LOST_REQUESTS)? {
        Some(v) => serde_json::from_str(v).map_err(|_| {
            bad(format!(
                "{} must be a JSON array of request ids, got {v:?}",
                headers::MCP_LOST_REQUESTS
            ))
        })?,
        None => Vec::new(),
    };
    let mut st = shared.state.borrow_mut();
    let Some(sess) = st.sessions.get_mut(sid) else {
        return Ok(());
    };
    // Ids the session never issued name no stream: ignore them.
    let named = list
        .iter()
        .filter_map(|c| Some((sess.stream_of(c.event_id)?, c.event_id, c.lost)));
    let unseen = lost_requests.iter().filter_map(|r| {
        let s = *sess.post_streams.get(r)?;
        Some((s, *sess.streams[s as usize].ids.first()?, true))
    });
    let entries: Vec<_> = named.chain(unseen).collect();
    for (s, event, lost) in entries {
        shared.history.record(Record::CursorPresented {
            session: sid.clone(),
            stream: s,
            event,
            lost,
        });
        sess.guard.cursor(s, event, lost);
    }
    Ok(())
}

/// Rule M for one POST, queueing behind a replay as row 0 says.
async fn rule_m(
    shared: &Rc<Shared>,
    sid: &SessionId,
    id: &RequestId,
    facts: PostFacts,
) -> Result<(), Response<ServerBody>> {
    let limits = Limits {
        queue_capacity: shared.cfg.queue_capacity,
    };
    let wait_until = tokio::time::Instant::now() + Duration::from_millis(shared.cfg.queue_wait_ms);
    loop {
        let decision = decide(shared, sid, id, facts, |g| g.check(facts, limits))?;
        match decision.verdict {
            Verdict::Fresh | Verdict::Allow => return Ok(()),
            Verdict::Reject(reason) => {
                let first = stream_first(shared, sid, decision.stream);
                return Err(rejection(id, reason, &decision, first));
            }
            Verdict::Queue => {}
        }
        // Held while queued: a POST whose connection closes meanwhile (its
        // future dropped) gives the slot back.
        let slot = QueueSlot {
            shared: shared.clone(),
            sid: sid.clone(),
            id: id.clone(),
            left: false,
        };
        let drained = match shared.state.borrow().sessions.get(sid) {
            Some(s) => s.drained.clone(),
            None => {
                return Err(error(
                    StatusCode::NOT_FOUND,
                    Some(id.clone()),
                    jsonrpc::SESSION_ERROR,
                    "session terminated",
                ))
            }
        };
        let timed_out = loop {
            let mut n = pin!(drained.notified());
            n.as_mut().enable();
            let backlog = shared
                .state
                .borrow()
                .sessions
                .get(sid)
                .map(|s| s.guard.replay_backlog());
            if backlog.unwrap_or(0) == 0 {
                break false;
            }
            if tokio::time::timeout_at(wait_until, n).await.is_err() {
                break true;
            }
        };
        slot.leave();
        if timed_out {
            let reject = |_: &crate::guard::SessionGuard| Decision {
                verdict: Verdict::Reject(Reason::ReplayInProgress),
                stream: None,
                hint: None,
            };
            let d = decide(shared, sid, id, facts, reject)?;
            return Err(rejection(id, Reason::ReplayInProgress, &d, None));
        }
    }
}

/// A POST's place in a session's Rule M queue, while it waits. Dropped
/// without being left normally (the connection closed and hyper dropped the
/// request's future), it gives the place back and says so in the trace.
struct QueueSlot {
    shared: Rc<Shared>,
    sid: SessionId,
    id: RequestId,
    left: bool,
}

impl QueueSlot {
    /// The POST leaves the queue to be decided afresh (or rejected).
    fn leave(mut self) {
        self.left = true;
        if let Some(s) = self.shared.state.borrow_mut().sessions.get_mut(&self.sid) {
            s.guard.dequeued();
        }
    }
}

impl Drop for QueueSlot {
    fn drop(&mut self) {
        if self.left {
            return;
        }
        // Never inside one of our borrows (none is held across an await);
        // `try_` only so that a teardown cannot turn into a double panic.
        let Ok(mut st) = self.shared.state.try_borrow_mut() else {
            return;
        };
        let Some(sess) = st.sessions.get_mut(&self.sid) else {
            return;
        };
        sess.guard.dequeued();
        drop(st);
        self.shared.history.record(Record::QueueLeft {
            session: self.sid.clone(),
            rpc_id: self.id.clone(),
        });
    }
}

fn logged_decision(d: &Decision) -> LoggedDecision {
    let (verdict, reason) = match d.verdict {
        Verdict::Fresh => ("fresh", None),
        Verdict::Allow => ("allow", None),
        Verdict::Queue => ("queue", None),
        Verdict::Reject(r) => ("reject", Some(r.as_str())),
    };
    LoggedDecision {
        verdict,
        reason,
        stream: d.stream,
        hint: d.hint,
    }
}

fn logged_view(v: &crate::guard::View) -> LoggedView {
    LoggedView {
        replay_backlog: v.replay_backlog,
        queued: v.queued,
        dropped: v
            .dropped
            .iter()
            .map(|(s, st)| LoggedStream {
                stream: *s,
                last_produced: logged_id(st.last_produced),
                last_written: logged_id(st.last_written),
                watermark: logged_id(st.watermark),
                cursor_presented: st.cursor_presented,
                lost: st.lost,
                in_flight: st.in_flight,
            })
            .collect(),
    }
}

/// Makes, commits and logs one decision with the view it was made from.
fn decide(
    shared: &Shared,
    sid: &SessionId,
    id: &RequestId,
    facts: PostFacts,
    f: impl FnOnce(&crate::guard::SessionGuard) -> Decision,
) -> Result<Decision, Response<ServerBody>> {
    let mut st = shared.state.borrow_mut();
    let Some(sess) = st.sessions.get_mut(sid) else {
        return Err(error(
            StatusCode::NOT_FOUND,
            Some(id.clone()),
            jsonrpc::SESSION_ERROR,
            "session terminated",
        ));
    };
    let view = logged_view(&sess.guard.view());
    let decision = f(&sess.guard);
    sess.guard.apply(&decision);
    shared.history.record(Record::Decision {
        session: sid.clone(),
        rpc_id: id.clone(),
        decision: logged_decision(&decision),
        view,
        idempotent: facts.idempotent,
        dedup_honored: facts.dedup_honored,
    });
    if let (Verdict::Reject(Reason::StreamLost), Some(s)) = (decision.verdict, decision.stream) {
        shared.history.record(Record::LostReported {
            session: sid.clone(),
            stream: s,
        });
    }
    Ok(decision)
}

/// The first event id (priming) of a stream: how clients name it.
fn stream_first(shared: &Shared, sid: &SessionId, s: Option<StreamIdx>) -> Option<u64> {
    let st = shared.state.borrow();
    let sess = st.sessions.get(sid)?;
    sess.streams.get(s? as usize)?.ids.first().copied()
}

/// A Rule M rejection: 409 naming the owed stream's resume point, or 410
/// for a lost stream.
fn rejection(
    id: &RequestId,
    reason: Reason,
    d: &Decision,
    stream_first: Option<u64>,
) -> Response<ServerBody> {
    let (status, code, what) = match reason {
        Reason::StreamLost => (
            StatusCode::GONE,
            jsonrpc::GONE,
            "events owed on a dropped stream were evicted; re-issue the operation",
        ),
        Reason::ReplayInProgress => (
            StatusCode::CONFLICT,
            jsonrpc::CONFLICT,
            "a replay is in progress on this session; retry after it",
        ),
        _ => (
            StatusCode::CONFLICT,
            jsonrpc::CONFLICT,
            "a dropped stream must be resumed first: GET with Last-Event-ID",
        ),
    };
    let data = json!({
        "reason": reason.as_str(),
        "stream": d.stream,
        "streamFirstEventId": stream_first,
        "lastEventId": d.hint,
    });
    let mut r = error_with(
        status,
        Some(id.clone()),
        ErrorObject::new(
            code,
            format!("rejected ({}): {what}", reason.as_str()),
            Some(data),
        ),
    );
    if let Some(hint) = d.hint.filter(|_| status == StatusCode::CONFLICT) {
        r.headers_mut()
            .insert(headers::LAST_EVENT_ID, HeaderValue::from(hint));
    }
    r
}

/// Who a request acts for (keys per principal): its
/// `Authorization: Bearer` token when it has one, else its session.
pub(super) fn principal(h: &HeaderMap, sid: &SessionId) -> Rc<str> {
    h.get(::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| Rc::from(t.trim()))
        .unwrap_or_else(|| sid.clone())
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

pub(super) fn sse_response(
    shared: &Rc<Shared>,
    sid: &SessionId,
    s: StreamIdx,
    conn: ConnId,
    plan: Plan,
) -> Response<ServerBody> {
    let (tx, body) = ServerBody::sse();
    writer::spawn(shared.clone(), sid.clone(), s, conn, tx, plan);
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn get(shared: &Rc<Shared>, req: Request<Incoming>, conn: ConnId) -> Reply {
    let h = req.headers();
    if !accepts(h, "text/event-stream") {
        return Reply::new(error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::TRANSPORT_ERROR,
            "Accept must list text/event-stream",
        ));
    }
    if let Err(r) = check_version(h) {
        return Reply::new(r);
    }
    let sid = match session_of(shared, h, None) {
        Ok(s) => s,
        Err(r) => return Reply::new(r),
    };
    if shared.variant.cancels_on_close() && h.contains_key(headers::LAST_EVENT_ID) {
        return super::cancel::refuse_resume().about(Some(&sid), None);
    }
    let mapped = match transport_gate(shared, &sid, Transport::Streamable, None) {
        Ok(m) => m,
        Err(r) => return Reply::new(r).about(Some(&sid), None),
    };
    let cursor = match header_str(h, headers::LAST_EVENT_ID) {
        Ok(None) => None,
        Ok(Some(v)) => match CursorList::parse_single(v) {
            Ok(c) => Some(c),
            Err(e) => {
                return Reply::new(error(
                    StatusCode::BAD_REQUEST,
                    None,
                    jsonrpc::TRANSPORT_ERROR,
                    &e.to_string(),
                ))
                .about(Some(&sid), None)
            }
        },
        Err(r) => return Reply::new(r),
    };
    let reply = match cursor {
        None => open_standalone(shared, &sid, conn),
        Some(c) => resume(shared, &sid, c, conn, mapped),
    };
    reply.about(Some(&sid), None)
}

/// A plain GET: opens the session's standalone stream (409 when one is
/// attached already).
fn open_standalone(shared: &Rc<Shared>, sid: &SessionId, conn: ConnId) -> Reply {
    let mut st = shared.state.borrow_mut();
    let sess = st.sessions.get_mut(sid).expect("session_of found it");
    if sess.standalone_attached().is_some() {
        return Reply::new(error(
            StatusCode::CONFLICT,
            None,
            jsonrpc::CONFLICT,
            "a standalone stream is already open for this session: resume with Last-Event-ID instead",
        ));
    }
    let s = sess.open_stream(StreamKind::Standalone, None, conn, &shared.history);
    if shared.cfg.delivery == Delivery::PostStream {
        // Responses ride their POSTs: this stream carries notifications
        // only, and its end is never a migration's cause.
        sess.guard.notifications_only(s);
    }
    sess.standalone = Some(s);
    drop(st);
    Reply::new(sse_response(shared, sid, s, conn, Plan::live()))
}

/// A GET with `Last-Event-ID`: replays that id's stream after it, taking
/// the stream over, then continues live. A legacy cursor on a session with a
/// registered mapping is translated (and the response says so); the
/// unguarded server reads any cursor as a streamable id, as the observed
/// dual-transport server did. Past evicted events, the guarded server first
/// sends a `gap` event naming them (410 only when the result itself is
/// gone); the other arms replay from the oldest event left, silently.
fn resume(shared: &Rc<Shared>, sid: &SessionId, cursor: u64, conn: ConnId, mapped: bool) -> Reply {
    let mut st = shared.state.borrow_mut();
    let sess = st.sessions.get_mut(sid).expect("session_of found it");
    let translate = mapped && sess.issued == Transport::Legacy && !sess.cursor_translated;
    let target = if translate {
        sess.legacy_stream.map(|l| {
            let ids = &sess.streams[l as usize].ids;
            // Legacy ids number the stream's events from 1: 0 saw none
            // (`None`: from before its first event).
            let to = match cursor {
                0 => None,
                n => ids.get(n as usize - 1).or(ids.last()).copied(),
            };
            (l, to)
        })
    } else {
        match sess.stream_of(cursor) {
            Some(s) => Some((s, Some(cursor))),
            // Not an id of this session: the unguarded server replays
            // every event with a larger id (on the notification stream).
            None if !shared.guarded() => sess.notification_stream().map(|s| (s, Some(cursor))),
            None => None,
        }
    };
    let Some((s, at)) = target else {
        return Reply::new(error(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::TRANSPORT_ERROR,
            &format!("Last-Event-ID {cursor} was never issued in this session"),
        ));
    };
    if translate {
        sess.cursor_translated = true;
        shared.history.record(Record::MappingApplied {
            session: sid.clone(),
            from: cursor,
            to: logged_id(at),
        });
    }
    let (_, gap) = sess.replayable_after(s, at);
    let mut from = at;
    let mut preamble = None;
    if shared.guarded() {
        // The guarded server announces what it lost (a `gap` event) and
        // replays what survived; only a lost result leaves nothing to
        // resume: 410, and the client re-issues.
        if sess.result_evicted_after(s, at) {
            sess.guard.report_lost(s);
            shared.history.record(Record::LostReported {
                session: sid.clone(),
                stream: s,
            });
            return Reply::new(error_with(
                StatusCode::GONE,
                None,
                ErrorObject::new(
                    jsonrpc::GONE,
                    "the result after Last-Event-ID was evicted: re-issue the operation",
                    Some(json!({
                        "stream": s,
                        "streamFirstEventId": sess.streams[s as usize].ids.first(),
                        "lastEventId": at,
                        "oldestRetained": sess.oldest_stored(),
                    })),
                ),
            ));
        }
        if gap {
            let missing = sess.missing_after(s, at);
            preamble = Some(super::replay::gap_frame(&missing));
            shared.history.record(Record::GapReplayed {
                session: sid.clone(),
                stream: s,
                conn,
                missing,
            });
            from = at.max(sess.oldest_stored().checked_sub(1));
        }
    } else if gap || sess.guard.stream(s).lost {
        // As real SDKs do: replay from the oldest event still stored,
        // silently.
        from = at.max(sess.oldest_stored().checked_sub(1));
    }
    if let Some(old) = sess.streams[s as usize].conn.take() {
        shared.history.record(Record::ServerClosed {
            session: sid.clone(),
            stream: s,
            conn: old,
            why: ServerClose::TakenOver,
        });
        sess.guard.taken_over(s);
        if let Some(h) = st.conns.remove(&old) {
            h.abort();
        }
    }
    let sess = st.sessions.get_mut(sid).expect("still there");
    let (backlog, _) = sess.replayable_after(s, from);
    let first = sess.streams[s as usize].ids.first().copied();
    let replay_until = sess.streams[s as usize]
        .ids
        .last()
        .copied()
        .or(at)
        .max(from);
    sess.guard.resumed(s, at, backlog);
    sess.streams[s as usize].conn = Some(conn);
    sess.streams[s as usize].wake.notify_waiters();
    shared.history.record(Record::Resumed {
        session: sid.clone(),
        stream: s,
        cursor: logged_id(at),
        backlog,
        conn,
        from: logged_id(from),
    });
    drop(st);
    let mut resp = sse_response(
        shared,
        sid,
        s,
        conn,
        Plan {
            after: from,
            replay_until,
            replay: true,
            transport: Transport::Streamable,
            preamble,
        },
    );
    if translate {
        resp.headers_mut().insert(
            headers::MCP_CURSOR_MAPPING,
            HeaderValue::from_static("legacy"),
        );
        if let Some(first) = first {
            resp.headers_mut()
                .insert(headers::MCP_STREAM_FIRST_EVENT_ID, HeaderValue::from(first));
        }
    }
    Reply::new(resp)
}

/// An event id for a history record, whose fields have no "none": a
/// position before a stream's first event is logged as 0.
pub(super) fn logged_id(id: Option<EventId>) -> EventId {
    id.unwrap_or(0)
}

/// Rule T (guarded): a request on `arriving` for a session issued under
/// another transport is served only through a registered mapping; else 404.
/// `Ok(mapped)` when it may be served. The unguarded server serves it.
pub(super) fn transport_gate(
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
        TransportVerdict::ServeMapped => "serve_mapped",
        TransportVerdict::Reject => "reject",
    };
    shared.history.record(Record::TransportDecision {
        session: sid.clone(),
        issued,
        arriving,
        verdict: name,
    });
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

fn delete(shared: &Rc<Shared>, req: Request<Incoming>) -> Reply {
    let sid = match session_of(shared, req.headers(), None) {
        Ok(s) => s,
        Err(r) => return Reply::new(r),
    };
    let sess = shared
        .state
        .borrow_mut()
        .sessions
        .remove(&sid)
        .expect("session_of found it");
    for (s, c) in sess.conns() {
        shared.history.record(Record::ServerClosed {
            session: sid.clone(),
            stream: s,
            conn: c,
            why: ServerClose::SessionDeleted,
        });
        shared.close_conn(c);
    }
    for f in sess.in_flight.values() {
        f.cancelled.set(true);
    }
    shared.history.record(Record::SessionDeleted {
        session: sid.clone(),
    });
    let mut r = Response::new(ServerBody::empty());
    *r.status_mut() = StatusCode::OK;
    Reply::new(r).about(Some(&sid), None)
}

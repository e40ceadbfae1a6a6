//! The 2026-07-28 wire (`Wire::Y2026`, or `Wire::Both` per request): no
//! sessions, no `initialize`, no GET stream, no resumption. Every POST is
//! self-contained: its `_meta` names the protocol version, and the
//! `Mcp-Method` / `Mcp-Name` headers must say what its body says. A tool
//! call runs in a context of its own (a session the wire never names,
//! [`crate::server::session::Session::modern`]) whose one stream is the response;
//! the context goes when the request does ([`release`]).
//!
//! A close of that stream cancels the request (`crate::server::session::cancel`), on every
//! arm; the client re-issues it with a new id. What an arm adds:
//! `keys` honours `Idempotency-Key` per bearer token (a request without a
//! token has no keys); `guarded` refuses a keyless call to a tool that is
//! not idempotent, lets a keyed execution whose effect is taken run to its
//! result when its stream closes (the key keeps the result), and lets a
//! re-issue whose key is still executing join it: its stream stays open
//! (keep-alive comments) until the result is there.

use super::join::{join, Joining};
use super::modern_stream;
use crate::history::{ConnId, SessionId, Transport};
use crate::protocol::events as ev;
use crate::protocol::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::protocol::mcp::{self, CallToolParams};
use crate::protocol::webhook as wh;
use crate::protocol::y2026::{self as wire};
use crate::protocol::{headers, sse, Json};
use crate::server::calls::start::{self, Asked};
use crate::server::dedup::{self, KeyState, Keyed, Lookup};
use crate::server::http::body::ServerBody;
use crate::server::http::principal::{self, Origin};
use crate::server::http::respond::{accepted, error, error_with, event_stream, json_response};
use crate::server::session::life::release;
use crate::server::session::reply::{header_str, read_body, Reply};
use crate::server::session::Scope;
use crate::server::Shared;
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::rc::Rc;

/// Whether a request whose headers are `h` takes the 2026 path before its
/// body is read: always on a 2026-only server; on a dual-era one, when its
/// version header names this revision or no 2025 one (the 2026 path's
/// refusal lists what it speaks).
pub(in crate::server) fn by_headers(shared: &Shared, h: &HeaderMap) -> bool {
    by_version(shared, h, |v| !mcp::SUPPORTED_VERSIONS.contains(&v))
}

/// Whether a request that is not a POST is the 2026 wire's, which has
/// none (405): on the 2026 server every one; on a dual-era one, one whose
/// `MCP-Protocol-Version` names a 2026 revision.
pub(in crate::server) fn names_2026(shared: &Shared, h: &HeaderMap) -> bool {
    by_version(shared, h, |v| wire::SUPPORTED.contains(&v))
}

/// The 2026 path's by the server's wire: never on a 2025-only server,
/// always on a 2026-only one; on a dual-era one, when the request's
/// `MCP-Protocol-Version` satisfies `is_2026`.
fn by_version(shared: &Shared, h: &HeaderMap, is_2026: impl Fn(&str) -> bool) -> bool {
    match shared.cfg.wire {
        crate::server::Wire::Y2025 => false,
        crate::server::Wire::Y2026 => true,
        crate::server::Wire::Both => h
            .get(headers::MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_2026),
    }
}

/// On a dual-era server, whether a message read on the 2025 path is a
/// 2026 one after all: `server/discover`, or `_meta` naming this revision.
pub(in crate::server) fn by_body(shared: &Shared, h: &HeaderMap, msg: &Message) -> bool {
    if shared.cfg.wire != crate::server::Wire::Both || h.contains_key(headers::MCP_SESSION_ID) {
        return false;
    }
    match msg {
        Message::Request { method, params, .. } | Message::Notification { method, params } => {
            method == wire::SERVER_DISCOVER
                || wire::meta_version(params.as_ref())
                    .is_some_and(|v| wire::SUPPORTED.contains(&v.as_str()))
        }
        _ => false,
    }
}

/// A POST on the 2026 path: the body read, then [`answer`].
pub(in crate::server) async fn post(
    shared: &Rc<Shared>,
    req: Request<Incoming>,
    conn: ConnId,
) -> Reply {
    let (parts, body) = req.into_parts();
    match read_body(shared, &parts.headers, body, true).await {
        Ok(msg) => answer(shared, &parts, msg, conn).await,
        Err(r) => r,
    }
}

/// GET and DELETE have no meaning on this wire: 405.
pub(in crate::server) fn not_allowed(method: &http::Method) -> Reply {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        jsonrpc::TRANSPORT_ERROR,
        &format!(
            "{method} is not used on the {} wire: every request is a POST of its own (no sessions, no resumption)",
            wire::VERSION
        ),
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    Reply::new(r)
}

/// Answers one message of the 2026 path.
pub(in crate::server) async fn answer(
    shared: &Rc<Shared>,
    parts: &Parts,
    msg: Message,
    conn: ConnId,
) -> Reply {
    let h = &parts.headers;
    let (id, method, params) = match msg {
        Message::Request { id, method, params } => (id, method, params),
        Message::Notification { method, params } => {
            return match check(h, &method, params.as_ref()) {
                Ok(()) => Reply::new(accepted()),
                Err(e) => Reply::new(error_with(StatusCode::BAD_REQUEST, None, e)),
            };
        }
        Message::Result { .. } | Message::Error { .. } => {
            return Reply::new(error(
                StatusCode::BAD_REQUEST,
                None,
                jsonrpc::INVALID_REQUEST,
                "a client sends no responses on the 2026-07-28 wire: the server asks for input with an input-required result",
            ))
        }
    };
    if let Err(e) = check(h, &method, params.as_ref()) {
        return Reply::new(error_with(StatusCode::BAD_REQUEST, Some(id.clone()), e))
            .about(None, Some(&id));
    }
    let done = |result: Result<Json, ErrorObject>| match result {
        Ok(r) => Reply::new(json_response(
            StatusCode::OK,
            &Message::Result {
                id: id.clone(),
                result: wire::finish(&method, &r),
            },
        )),
        Err(e) => Reply::new(error_with(StatusCode::OK, Some(id.clone()), e)),
    };
    let reply = match method.as_str() {
        wire::SERVER_DISCOVER => done(Ok(discover(shared))),
        mcp::TOOLS_LIST => done(Ok(tools_list(shared))),
        mcp::TOOLS_CALL => {
            let from = Origin::of(conn, &parts.extensions);
            call(shared, h, id.clone(), params, from).await
        }
        wire::SUBSCRIPTIONS_LISTEN => listen(&id),
        ev::LIST if super::events::offered(shared) => done(Ok(super::events::list(shared))),
        ev::POLL if super::events::offered(shared) => {
            done(super::events::poll(shared, params.as_ref()))
        }
        ev::STREAM if super::events::offered(shared) => {
            Reply::new(super::events::stream(shared, &id, params.as_ref()))
        }
        wh::SUBSCRIBE if super::events::offered(shared) => {
            match super::webhooks::subscribe(shared, h, &id, params.as_ref()) {
                super::webhooks::Answer::Done(r) => done(r),
                super::webhooks::Answer::Refused(r) => Reply::new(r),
            }
        }
        wh::UNSUBSCRIBE if super::events::offered(shared) => {
            done(super::webhooks::unsubscribe(shared, h, params.as_ref()))
        }
        wire::TASKS_GET | wire::TASKS_UPDATE | wire::TASKS_CANCEL => {
            let from = Origin::of(conn, &parts.extensions);
            super::tasks::request(shared, h, from, &id, &method, params.as_ref())
        }
        "prompts/get"
            if shared.exposure.fixtures.offered()
                && params.as_ref().and_then(|p| p.get("name")).and_then(|n| n.as_str()).as_deref()
                    == Some(crate::server::calls::fixtures::input_required::PROMPT) =>
        {
            let v = params.as_ref().map_or(serde_json::Value::Null, Json::to_value);
            fixture_result(
                crate::server::calls::fixtures::input_required::prompt(&v, crate::server::calls::fixtures::state_key(shared)),
                &id,
            )
        }
        m => match crate::server::calls::fixtures::request(shared, m, params.as_ref()) {
            Some(result) => done(result),
            None if m == mcp::RESOURCES_LIST => done(Ok(mcp::resources_list_result())),
            None => Reply::new(error(
                StatusCode::NOT_FOUND,
                Some(id.clone()),
                jsonrpc::METHOD_NOT_FOUND,
                &format!(
                    "method {m:?} not found: on the {} wire this server offers server/discover, tools/list, tools/call, resources/list and subscriptions/listen{}",
                    wire::VERSION,
                    crate::server::calls::fixtures::methods_offered(shared)
                ),
            )),
        },
    };
    reply.about(None, Some(&id))
}

/// The request's `_meta` and headers, checked as the transport asks, in
/// this order: the version header present (-32020); `_meta` naming a
/// version and the client's capabilities (-32602); the header equal to
/// `_meta`'s version (-32020); that version spoken here (-32022);
/// `Mcp-Method` and, for the methods that name something, `Mcp-Name`
/// present and equal to the body (-32020; a value's surrounding
/// whitespace is not part of it, its case is).
fn check(h: &HeaderMap, method: &str, params: Option<&Json>) -> Result<(), ErrorObject> {
    let mismatch = |m: String| ErrorObject::new(wire::HEADER_MISMATCH, m, None);
    let header = |name: &str| -> Result<Option<String>, ErrorObject> {
        match header_str(h, name) {
            Ok(v) => match v.map(|v| wire::decode_header(v.trim())) {
                Some(None) => Err(mismatch(format!("header {name} is not valid base64 UTF-8"))),
                Some(Some(v)) => Ok(Some(v)),
                None => Ok(None),
            },
            Err(_) => Err(mismatch(format!("header {name} is not visible ASCII"))),
        }
    };
    let Some(header_version) = header(headers::MCP_PROTOCOL_VERSION)? else {
        return Err(mismatch("missing MCP-Protocol-Version header".into()));
    };
    let meta = params.and_then(|p| p.get("_meta"));
    let has_caps = meta.is_some_and(|m| m.get(wire::META_CAPABILITIES).is_some());
    let version = match wire::meta_version(params) {
        Some(v) if has_caps => v,
        _ => {
            return Err(ErrorObject::new(
                jsonrpc::INVALID_PARAMS,
                format!(
                    "params._meta must carry {:?} and {:?} on the {} wire",
                    wire::META_VERSION,
                    wire::META_CAPABILITIES,
                    wire::VERSION
                ),
                None,
            ))
        }
    };
    if header_version != version {
        return Err(mismatch(format!(
            "MCP-Protocol-Version {header_version:?} does not match params._meta's {version:?}"
        )));
    }
    if !wire::SUPPORTED.contains(&version.as_str()) {
        return Err(wire::unsupported_version(&version));
    }
    match header(wire::MCP_METHOD)? {
        Some(m) if m == method => {}
        Some(m) => {
            return Err(mismatch(format!(
                "Mcp-Method {m:?} does not match the body's method {method:?}"
            )))
        }
        None => return Err(mismatch("missing Mcp-Method header".into())),
    }
    if let Some(name) = wire::name_of(method, params) {
        match header(wire::MCP_NAME)? {
            Some(n) if n == name => {}
            Some(n) => {
                return Err(mismatch(format!(
                    "Mcp-Name {n:?} does not match the body's {name:?}"
                )))
            }
            None => return Err(mismatch(format!("missing Mcp-Name header ({name:?})"))),
        }
    }
    Ok(())
}

/// `server/discover`: what `initialize` answered, less what this wire
/// removed (`logging/setLevel`, `resources/subscribe`).
fn discover(shared: &Shared) -> Json {
    let mut caps = json!({
        "tools": {"listChanged": false},
        "resources": {"listChanged": false},
        "extensions": {wire::TASKS_EXTENSION: {}},
    });
    if shared.exposure.fixtures.offered() {
        caps["prompts"] = json!({"listChanged": false});
    }
    if super::events::offered(shared) {
        caps["extensions"][ev::EXTENSION] = json!({});
    }
    wire::discover_result(caps, "mcp-chaos")
}

/// `tools/list`: the ledger tools, `ledger_read` first (a tool a caller
/// may try with no arguments), then the stateless fixtures when offered.
/// `ledger_append` may run as a task (for a client that declares the
/// extension), `ledger_read` never does.
fn tools_list(shared: &Shared) -> Json {
    let mut v = mcp::tools_list_result();
    if let Some(tools) = v["tools"].as_array_mut() {
        tools.sort_by_key(|t| t["name"] != mcp::LEDGER_READ);
        for t in tools.iter_mut() {
            let support = if t["name"] == mcp::LEDGER_APPEND {
                "optional"
            } else {
                "forbidden"
            };
            t["execution"] = json!({"taskSupport": support});
        }
        if shared.exposure.fixtures.offered() {
            tools.extend(crate::server::calls::fixtures::stateless::tools());
            tools.extend(crate::server::calls::fixtures::input_required::tools());
            tools.extend(super::task_fixtures::tools());
        }
    }
    v.into()
}

/// An input-required fixture's answer, as JSON: its result (complete or
/// input-required), or its JSON-RPC error (HTTP 200; a missing
/// capability, 400).
fn fixture_result(r: Result<Json, ErrorObject>, id: &RequestId) -> Reply {
    Reply::new(match r {
        Ok(result) => json_response(
            StatusCode::OK,
            &Message::Result {
                id: id.clone(),
                result,
            },
        ),
        Err(e) if e.code == wire::MISSING_CAPABILITY => {
            error_with(StatusCode::BAD_REQUEST, Some(id.clone()), e)
        }
        Err(e) => error_with(StatusCode::OK, Some(id.clone()), e),
    })
}

/// A stateless fixture's answer: 400 for a refusal, else its messages as
/// one SSE body.
fn fixture_answer(
    answer: crate::server::calls::fixtures::stateless::Answer,
    id: &RequestId,
) -> Reply {
    use crate::server::calls::fixtures::stateless::Answer;
    match answer {
        Answer::Refused(e) => Reply::new(error_with(StatusCode::BAD_REQUEST, Some(id.clone()), e)),
        Answer::Stream(msgs) => {
            let mut body = Vec::new();
            for m in msgs {
                body.extend_from_slice(&sse::encode(None, Some("message"), &m.encode(), None));
            }
            let body = ServerBody::Full(Some(bytes::Bytes::from(body)));
            Reply::new(modern_stream(event_stream(body)))
        }
    }
}

/// `subscriptions/listen`: acknowledged with nothing honoured (this server
/// changes no list and no resource the 2026 path serves), then held open
/// until the client closes it.
fn listen(id: &RequestId) -> Reply {
    let (tx, body) = ServerBody::sse();
    let ack = Message::Notification {
        method: wire::SUBSCRIPTIONS_ACKNOWLEDGED.into(),
        params: Some(Json::from_value(&json!({
            "notifications": {},
            "_meta": {wire::META_SUBSCRIPTION: id},
        }))),
    };
    tokio::task::spawn_local(async move {
        if tx
            .send(sse::encode(None, Some("message"), &ack.encode(), None))
            .await
            .is_err()
        {
            return;
        }
        tx.closed().await;
    });
    Reply::new(modern_stream(event_stream(body)))
}

/// `tools/call`: validated, its key looked up (arms that honour keys, a
/// request with a bearer token), then run in a context of its own.
async fn call(
    shared: &Rc<Shared>,
    h: &HeaderMap,
    id: RequestId,
    params: Option<Json>,
    from: Origin,
) -> Reply {
    let conn = from.conn;
    let bad = |e: ErrorObject| Reply::new(error_with(StatusCode::OK, Some(id.clone()), e));
    let p: CallToolParams = match params.as_ref().map(Json::parse_as_value) {
        Some(Ok(p)) => p,
        _ => {
            return bad(ErrorObject::new(
                jsonrpc::INVALID_PARAMS,
                "tools/call needs name and arguments",
                None,
            ))
        }
    };
    let creator = super::tasks::Creator::new(principal::bearer(h), from, id.clone());
    if let Some(r) = fixture_call(shared, &p.name, &creator, params.as_ref()).await {
        return r;
    }
    let inv = match crate::server::calls::tools::validate(shared, &p.name, &p.arguments) {
        Ok(inv) => inv,
        Err(e) => return bad(e),
    };
    let token = principal::bearer(h);
    let key = match (shared.variant.honors_keys(), &token) {
        (true, Some(_)) => match header_str(h, headers::IDEMPOTENCY_KEY) {
            Ok(k) => k.map(str::to_string),
            Err(r) => return Reply::new(r),
        },
        _ => None,
    };
    if shared.guarded() && key.is_none() && !inv.idempotent() {
        return key_required(id, &p.name, token.is_none());
    }
    let as_task = wire::declares_tasks(params.as_ref());
    let sid = open_context(shared, token.clone());
    let who = token.clone().unwrap_or_else(|| sid.clone());
    shared
        .history
        .record(crate::history::Record::request_received(
            &sid,
            conn,
            &id,
            mcp::TOOLS_CALL,
            inv.tag(),
            Some(p.name.as_str()),
            key.as_deref(),
        ));
    let inv = match input_round(
        shared,
        &id,
        params.as_ref(),
        inv,
        &p,
        Keyed::new(&who, key.as_deref()),
    ) {
        Ok(inv) => inv,
        Err(r) => {
            release(shared, &sid);
            return r;
        }
    };
    let task = TaskAsk::of(as_task, &inv, &creator);
    if let Some(r) = task_answer(shared, task, Keyed::new(&who, key.as_deref())) {
        release(shared, &sid);
        return r;
    }
    if let Some(k) = &key {
        let cv = json!({"name": p.name, "arguments": p.arguments});
        if let Err(r) = crate::server::replica::stored::load_key(shared, &who, k).await {
            release(shared, &sid);
            return Reply::new(r);
        }
        if let Lookup::Known(KeyState::InFlight) = dedup::key_lookup(shared, &who, k, &cv) {
            if shared.guarded() {
                let asked = Joining {
                    sid,
                    id,
                    conn,
                    call: (p, inv),
                    who,
                    key: k.clone(),
                    cv,
                };
                return join(shared.clone(), asked);
            }
        }
        if let Err(r) = start::key_look(shared, &sid, &id, &who, k, &cv).await {
            release(shared, &sid);
            return r;
        }
    }
    if let (true, crate::server::calls::tools::Invocation::Append(a)) = (as_task, &inv) {
        let reply = start_task(shared, a.clone(), creator, (who, key));
        release(shared, &sid);
        return reply;
    }
    let slot = match start::call_stream_slot(shared, &sid, &id) {
        Ok(slot) => slot,
        Err(r) => {
            release(shared, &sid);
            return Reply::new(r);
        }
    };
    let asked = Asked {
        sid: &sid,
        id,
        conn,
        call: Some((p, inv)),
        key,
        who,
    };
    let mut reply = start::start_call(shared, asked).holding(slot);
    reply.resp = modern_stream(reply.resp);
    reply.about(Some(&sid), None)
}

/// How a call asks for a task: declared as one (`as_task`, the client
/// declares the extension), and whether it would create one (`makes_task`:
/// a ledger call asked as a task), by `creator`.
struct TaskAsk<'a> {
    as_task: bool,
    makes_task: bool,
    creator: &'a super::tasks::Creator,
}

impl<'a> TaskAsk<'a> {
    /// A call `inv` declared as a task or not: only a ledger call makes one.
    fn of(
        as_task: bool,
        inv: &crate::server::calls::tools::Invocation,
        creator: &'a super::tasks::Creator,
    ) -> Self {
        let makes_task =
            as_task && matches!(inv, crate::server::calls::tools::Invocation::Append(_));
        TaskAsk {
            as_task,
            makes_task,
            creator,
        }
    }
}

/// A call asked as a task, answered before anything runs: the task a
/// re-sent creation's key created, or, when it would create one, the
/// table's refusal (429).
fn task_answer(shared: &Shared, ask: TaskAsk<'_>, by: Keyed<'_>) -> Option<Reply> {
    if let (true, Some(k)) = (ask.as_task, by.key) {
        if let Some(t) = super::tasks::by_key(shared, &(by.who.clone(), k.into())) {
            return Some(super::tasks::created_reply(shared, &ask.creator.rpc_id, &t));
        }
    }
    ask.makes_task
        .then(|| super::tasks::refusal(shared, ask.creator))
        .flatten()
}

/// A call of `ledger_append` with `asks_input`: one round of it (the
/// question, the execution a verified answer continues, a run from the
/// start, or guarded's refusal of a state it cannot verify); any other
/// call as it is.
// A refusal travels as a ready-made reply, the cold path (as in transport.rs).
#[allow(clippy::result_large_err)]
fn input_round(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Json>,
    inv: crate::server::calls::tools::Invocation,
    p: &CallToolParams,
    by: Keyed<'_>,
) -> Result<crate::server::calls::tools::Invocation, Reply> {
    let a = match &inv {
        crate::server::calls::tools::Invocation::Append(a) if a.asks_input => a.clone(),
        _ => return Ok(inv),
    };
    let v = params.map_or(serde_json::Value::Null, Json::to_value);
    let cv = json!({"name": p.name, "arguments": p.arguments});
    match super::mrtr::round(shared, id, &v, &a, by, &cv) {
        super::mrtr::Round::Answer(q) => Err(super::mrtr::answer(id, q)),
        super::mrtr::Round::Resume(n) => Ok(crate::server::calls::tools::Invocation::Resumed(a, n)),
        super::mrtr::Round::Run => Ok(inv),
        super::mrtr::Round::Refuse(why) => Err(bad_state(id.clone(), &why)),
    }
}

/// Guarded: a retry whose `requestState` cannot be verified, refused
/// (400, -32602 naming the state).
fn bad_state(id: RequestId, why: &str) -> Reply {
    Reply::new(error(
        StatusCode::BAD_REQUEST,
        Some(id),
        jsonrpc::INVALID_PARAMS,
        why,
    ))
}

/// Guarded: a keyless call to a tool that is not idempotent is refused.
fn key_required(id: RequestId, tool: &str, tokenless: bool) -> Reply {
    Reply::new(error(
        StatusCode::BAD_REQUEST,
        Some(id),
        jsonrpc::INVALID_REQUEST,
        &format!(
            "{tool} is not idempotent: send an Idempotency-Key header{}, so that a re-issue after a broken stream does not run it twice",
            if tokenless { " and a bearer token (keys are per token)" } else { "" }
        ),
    ))
}

/// `ledger_append` as a task: its execution recorded, the task written
/// beside the ledger, then the `CreateTaskResult`.
fn start_task(
    shared: &Rc<Shared>,
    a: mcp::LedgerAppendArgs,
    creator: super::tasks::Creator,
    (who, key): (Rc<str>, Option<String>),
) -> Reply {
    let id = creator.rpc_id.clone();
    let deferred = shared.cfg.effects == crate::server::Effects::Transactional;
    let execution = shared
        .ledger
        .execute(&a.tag, &who, key.as_deref(), &id, deferred);
    let creator = super::tasks::Creator {
        key: key.clone().map(|k| (who.clone(), k)),
        ..creator
    };
    let t = super::tasks::spawn(shared, creator, move |ctx| {
        super::tasks::run_append(ctx, a, who, key, execution)
    });
    super::tasks::created_reply(shared, &id, &t)
}

/// A call of one of the conformance fixtures' tools (`--fixtures
/// conformance`): stateless, input-required or task fixtures; `None` for
/// any other tool.
async fn fixture_call(
    shared: &Rc<Shared>,
    name: &str,
    creator: &super::tasks::Creator,
    params: Option<&Json>,
) -> Option<Reply> {
    let id = &creator.rpc_id;
    if !shared.exposure.fixtures.offered() {
        return None;
    }
    if let Some(a) = crate::server::calls::fixtures::stateless::call(name, id, params) {
        return Some(fixture_answer(a, id));
    }
    let v = params.map_or(serde_json::Value::Null, Json::to_value);
    let key = crate::server::calls::fixtures::state_key(shared);
    if let Some(r) = crate::server::calls::fixtures::input_required::call(name, &v, key) {
        return Some(fixture_result(r, id));
    }
    if super::task_fixtures::makes_task(name, &v) {
        if let Some(r) = super::tasks::refusal(shared, creator) {
            return Some(r);
        }
    }
    let r = super::task_fixtures::call(shared, name, &v, creator).await?;
    Some(fixture_result(r, id))
}

/// A context for one request: a session the wire never names, with no
/// priming event, no event ids and no mirror on a shared store.
fn open_context(shared: &Shared, owner: Option<Rc<str>>) -> SessionId {
    let sid = shared.new_session_id();
    let mut sess = shared.new_session(sid.clone(), Transport::Streamable);
    sess.scope = Scope::Request;
    sess.dress = Some(wire::complete);
    sess.mirror = None;
    sess.owner = owner;
    sess.protocol_version = Some(wire::VERSION.into());
    shared.state.borrow_mut().sessions.insert(sid.clone(), sess);
    sid
}

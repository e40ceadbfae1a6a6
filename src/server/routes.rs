//! Routing: the edge checks ([`crate::server::http::edges`]), then every HTTP request to
//! its handler (`/mcp` POST, GET and DELETE; the legacy `/sse` and
//! `/messages`), and the one `Responded` record per request. DELETE ends a
//! session here.

use crate::history::{ConnId, Record, SessionId, Transport};
use crate::protocol::y2026 as wire;
use crate::protocol::{headers, jsonrpc};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::error;
use crate::server::session::holds::SseSlot;
use crate::server::session::reply::{read_message, session_of, Reply};
use crate::server::y2025::transport::transport_gate;
use crate::server::Shared;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::Instant;

/// Entry point for one HTTP request on connection `conn`: the response,
/// and the open-stream slot an SSE response holds while its body lives.
pub(crate) async fn handle(
    shared: Rc<Shared>,
    req: Request<Incoming>,
    conn: ConnId,
) -> (Response<ServerBody>, Option<SseSlot>) {
    let refused = shared
        .exposure
        .refuse_edges(req.version(), req.uri(), req.headers());
    let twice = refused
        .is_none()
        .then(|| duplicated(&shared, req.headers()))
        .flatten();
    // On a shared store, a session this replica lacks is loaded first.
    let loaded = match (&refused, &twice) {
        (None, None) => crate::server::replica::stored::adopt(&shared, req.headers()).await,
        _ => Ok(()),
    };
    let reply = match (req.uri().path(), req.method()) {
        _ if twice.is_some() => twice.expect("matched"),
        _ if loaded.is_err() => Reply::new(loaded.expect_err("matched")),
        _ if refused.is_some() => {
            let why = refused.expect("matched");
            let mut r = error(why.status, None, jsonrpc::TRANSPORT_ERROR, why.message);
            if why.close {
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Reply::new(r)
        }
        ("/mcp", &Method::POST)
            if crate::server::y2026::request::by_headers(&shared, req.headers()) =>
        {
            crate::server::y2026::request::post(&shared, req, conn).await
        }
        ("/mcp", m) if crate::server::y2026::request::names_2026(&shared, req.headers()) => {
            crate::server::y2026::request::not_allowed(m)
        }
        ("/mcp", &Method::POST) => post_by_body(&shared, req, conn).await,
        ("/mcp", &Method::GET) => crate::server::y2025::get::get(&shared, req, conn).await,
        ("/mcp", &Method::DELETE) => delete(&shared, req),
        ("/sse", &Method::GET) => crate::server::y2025::legacy::open(&shared, req, conn),
        ("/messages", &Method::POST) => {
            crate::server::y2025::legacy::post(&shared, req, conn).await
        }
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
    (reply.resp, reply.slot)
}

/// A POST on `/mcp` whose headers name no era: its message says which
/// wire answers it. The one place, with the headers' check above, that
/// knows there are two.
async fn post_by_body(shared: &Rc<Shared>, req: Request<Incoming>, conn: ConnId) -> Reply {
    let (parts, body) = req.into_parts();
    let msg = match read_message(shared, &parts.headers, body, true).await {
        Ok(m) => m,
        Err(r) => return r,
    };
    if crate::server::y2026::request::by_body(shared, &parts.headers, &msg) {
        return crate::server::y2026::request::answer(shared, &parts, msg, conn).await;
    }
    crate::server::y2025::post::post(shared, parts, msg, conn).await
}
/// The headers the protocol defines as one value: a gateway that reads
/// another of two values than the server does authorizes another request
/// than the one that runs.
const SINGLE_VALUED: [&str; 6] = [
    wire::MCP_METHOD,
    wire::MCP_NAME,
    headers::MCP_PROTOCOL_VERSION,
    headers::MCP_SESSION_ID,
    headers::LAST_EVENT_ID,
    headers::IDEMPOTENCY_KEY,
];

/// 400 naming the first single-valued header sent more than once
/// (-32020 on the 2026-07-28 path, as its other header errors), whatever
/// the order of the values.
fn duplicated(shared: &Shared, h: &http::HeaderMap) -> Option<Reply> {
    let name = SINGLE_VALUED
        .iter()
        .find(|n| h.get_all(**n).iter().nth(1).is_some())?;
    let code = match crate::server::y2026::request::by_headers(shared, h) {
        true => wire::HEADER_MISMATCH,
        false => jsonrpc::TRANSPORT_ERROR,
    };
    let n = h.get_all(*name).iter().count();
    Some(Reply::new(error(
        StatusCode::BAD_REQUEST,
        None,
        code,
        &format!("header {name} is sent {n} times and carries one value: send it once"),
    )))
}

fn delete(shared: &Rc<Shared>, req: Request<Incoming>) -> Reply {
    let sid = match session_of(shared, req.headers(), None) {
        Ok(s) => s,
        Err(r) => return Reply::new(r),
    };
    // Rule T applies to DELETE as to POST and GET: a legacy session is not
    // this transport's to end (guarded).
    if let Err(r) = transport_gate(shared, &sid, Transport::Streamable, None) {
        return Reply::new(r).about(Some(&sid), None);
    }
    crate::server::session::life::end_session(shared, &sid);
    crate::server::replica::stored::forget(shared, &sid);
    let mut r = Response::new(ServerBody::empty());
    *r.status_mut() = StatusCode::OK;
    Reply::new(r).about(Some(&sid), None)
}

/// Exposed: ends every session idle past its bound (no request naming it,
/// no connection attached; [`crate::server::session::holds::idle_limit`]), and every task
/// past its time to live, checking `every` so often.
pub(super) async fn expire_idle_sessions(shared: Rc<Shared>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let now = Instant::now();
        let idle_ones: Vec<SessionId> = shared
            .state
            .borrow()
            .sessions
            .iter()
            .filter(|(_, s)| {
                crate::server::session::holds::idle_limit(&shared, s)
                    .is_some_and(|idle| now.duration_since(s.last_active.get()) >= idle)
                    && s.conns().is_empty()
            })
            .map(|(k, _)| k.clone())
            .collect();
        for sid in idle_ones {
            crate::server::session::life::end_session(&shared, &sid);
        }
        // Expired tasks go too, read or not: memory returns to its start.
        let us = shared.history.now_us();
        shared.ledger.tasks().expire(us);
    }
}

//! Routing: every HTTP request to its handler (`/mcp` POST, GET and
//! DELETE; the legacy `/sse` and `/messages`), and the one `Responded`
//! record per request. DELETE ends a session here.

use super::body::ServerBody;
use super::reply::{error, session_of, Reply};
use super::Shared;
use crate::history::{ConnId, Record, ServerClose};
use crate::protocol::jsonrpc;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use std::rc::Rc;

/// Entry point for one HTTP request on connection `conn`.
pub(crate) async fn handle(
    shared: Rc<Shared>,
    req: Request<Incoming>,
    conn: ConnId,
) -> Response<ServerBody> {
    let reply = match (req.uri().path(), req.method()) {
        ("/mcp", &Method::POST) => super::post::post(&shared, req, conn).await,
        ("/mcp", &Method::GET) => super::get::get(&shared, req, conn),
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
    for f in sess.in_flight.values().flatten() {
        f.cancelled.set(true);
    }
    shared.history.record(Record::SessionDeleted {
        session: sid.clone(),
    });
    let mut r = Response::new(ServerBody::empty());
    *r.status_mut() = StatusCode::OK;
    Reply::new(r).about(Some(&sid), None)
}

//! Ready-made responses every handler builds on: a JSON body, a JSON-RPC
//! error with its HTTP status, an empty 202. They stand below everything
//! else in `server/` (reply, holds, dedup all answer with them), so they
//! import nothing of it but the body type.

use super::body::ServerBody;
use crate::protocol::jsonrpc::{ErrorObject, Message, RequestId};
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};

/// `body` as `application/json` with `status`.
pub(in crate::server) fn json_response(status: StatusCode, body: &Message) -> Response<ServerBody> {
    let mut r = Response::new(ServerBody::Full(Some(Bytes::from(body.encode()))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A JSON-RPC error object as the body of a `status` response.
pub(in crate::server) fn error_with(
    status: StatusCode,
    id: Option<RequestId>,
    err: ErrorObject,
) -> Response<ServerBody> {
    json_response(status, &Message::Error { id, error: err })
}

/// A JSON-RPC error with `code` and `message` as the body of a `status`
/// response.
pub(in crate::server) fn error(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: &str,
) -> Response<ServerBody> {
    error_with(status, id, ErrorObject::new(code, message, None))
}

/// 202 with no body: a notification or response POST taken.
pub(in crate::server) fn accepted() -> Response<ServerBody> {
    let mut r = Response::new(ServerBody::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

/// An SSE response says `X-Accel-Buffering: no` (`no_buffering`, on by
/// default as on most SDKs' servers): a buffering proxy that honours it
/// streams the response.
pub(in crate::server) fn say_no_buffering<B>(r: &mut Response<B>) {
    let sse = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if sse {
        r.headers_mut()
            .insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
}

/// 200 `text/event-stream` over `body` (an SSE stream, or an empty body:
/// a stream that ends at once), not to be cached.
pub(in crate::server) fn event_stream(body: ServerBody) -> Response<ServerBody> {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

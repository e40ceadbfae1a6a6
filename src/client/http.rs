//! One MCP HTTP exchange over any connected byte stream: send a request,
//! then read a JSON body or an SSE stream event by event. Each exchange
//! owns its connection (after part of an SSE body has been read, an
//! HTTP/1.1 connection cannot be reused), so dropping an exchange is
//! exactly a client-side connection drop.

use crate::protocol::headers;
use crate::protocol::jsonrpc::Message;
use crate::protocol::sse::{SseDecoder, SseError, SseEvent};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::collections::VecDeque;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::AbortHandle;

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The HTTP layer failed (connect, reset, closed early).
    #[error("http: {0}")]
    Http(#[from] hyper::Error),
    /// The SSE stream was malformed.
    #[error("sse: {0}")]
    Sse(#[from] SseError),
    /// A JSON body did not decode.
    #[error("body is not JSON-RPC: {0}")]
    Body(String),
}

/// What to send.
#[derive(Clone, Debug)]
pub struct Outgoing {
    /// HTTP method.
    pub method: Method,
    /// Path (`/mcp`).
    pub path: String,
    /// Headers beyond the defaults.
    pub headers: HeaderMap,
    /// Body (POST only).
    pub body: Option<Bytes>,
}

impl Outgoing {
    /// A POST of one JSON-RPC message to `/mcp`, with the MCP Accept and
    /// Content-Type headers and the session header when given.
    pub fn post(session: Option<&str>, msg: &Message) -> Self {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let mut o = Outgoing {
            method: Method::POST,
            path: "/mcp".into(),
            headers: h,
            body: Some(Bytes::from(msg.encode())),
        };
        if let Some(s) = session {
            o = o.header(headers::MCP_SESSION_ID, s);
        }
        o
    }

    /// A GET on `/mcp`: the standalone stream, or a resume from `last_event_id`.
    pub fn get(session: &str, last_event_id: Option<u64>) -> Self {
        Outgoing::resume(session, last_event_id.map(|i| i.to_string()).as_deref())
    }

    /// A GET on `/mcp` from an event id as the server wrote it (opaque:
    /// any server's), or the standalone stream.
    pub fn resume(session: &str, last_event_id: Option<&str>) -> Self {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let mut o = Outgoing {
            method: Method::GET,
            path: "/mcp".into(),
            headers: h,
            body: None,
        }
        .header(headers::MCP_SESSION_ID, session);
        // An id no header can carry (a control character) is not sent.
        if let Some(v) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            o.headers.insert(headers::LAST_EVENT_ID, v);
        }
        o
    }

    /// Adds or replaces a header. Panics on a value that is not a valid
    /// header value (callers pass ids and numbers).
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.insert(
            name,
            HeaderValue::from_str(value).expect("a valid header value"),
        );
        self
    }
}

/// A response whose body is being read.
pub struct Exchange {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    body: Incoming,
    sse: Option<SseDecoder>,
    pending: VecDeque<SseEvent>,
    conn: AbortHandle,
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.conn.abort();
    }
}

/// Aborts a connection task when dropped, unless disarmed.
struct ConnCloser(Option<AbortHandle>);

impl ConnCloser {
    fn disarm(mut self) -> AbortHandle {
        self.0.take().expect("armed once")
    }
}

impl Drop for ConnCloser {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

/// Sends `out` on the connected stream `io`. The connection task runs on
/// the current `LocalSet`; dropping the returned exchange closes it.
pub async fn send<I>(io: I, out: Outgoing) -> Result<Exchange, Error>
where
    I: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
    let task = tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    // Until the exchange owns it, dropping this future (a timeout, an
    // aborted reader) must close the connection too, or its socket leaks.
    let abort = ConnCloser(Some(task.abort_handle()));
    let mut req = Request::builder()
        .method(out.method)
        .uri(out.path)
        .header(header::HOST, "mcp-chaos")
        .body(Full::new(out.body.unwrap_or_default()))
        .expect("a well-formed request");
    req.headers_mut().extend(out.headers);
    let resp = sender.send_request(req).await?;
    let (parts, body) = resp.into_parts();
    let is_sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    Ok(Exchange {
        status: parts.status,
        headers: parts.headers,
        body,
        sse: is_sse.then(SseDecoder::new),
        pending: VecDeque::new(),
        conn: abort.disarm(),
    })
}

impl Exchange {
    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.sse.is_some()
    }

    /// A response header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Reads a whole non-SSE body as one JSON-RPC message (`None` if empty).
    pub async fn json(mut self) -> Result<Option<Message>, Error> {
        let bytes = (&mut self.body).collect().await?.to_bytes();
        if bytes.is_empty() {
            return Ok(None);
        }
        match Message::decode(&bytes) {
            Ok(m) => Ok(Some(m)),
            // An error status with a body that is not JSON-RPC (plain text
            // from an SDK or a proxy): the status is the answer.
            Err(_) if self.status.is_client_error() || self.status.is_server_error() => Ok(None),
            Err(e) => Err(Error::Body(e.to_string())),
        }
    }

    /// The next SSE event; `None` when the stream ended cleanly.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, Error> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            let Some(dec) = self.sse.as_mut() else {
                return Ok(None);
            };
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        let mut out = Vec::new();
                        dec.feed(&data, &mut out)?;
                        self.pending.extend(out);
                    }
                }
            }
        }
    }
}

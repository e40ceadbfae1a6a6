//! One MCP HTTP exchange over any connected byte stream: send a request,
//! then read a JSON body or an SSE stream event by event. Each exchange
//! owns its connection while it runs (after part of an SSE body has been
//! read, an HTTP/1.1 connection cannot be reused), so dropping an
//! exchange is exactly a client-side connection drop. An exchange whose
//! body was read to its end gives its connection back ([`Conn`]), for
//! the next request of a client that keeps connections alive.

use crate::protocol::headers;
use crate::protocol::jsonrpc::Message;
use crate::protocol::sse::{SseDecoder, SseError, SseEvent};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
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
    /// The response passed one of the exchange's [`Limits`].
    #[error("{0}")]
    Limit(Limit),
    /// The connection was opened for one request, which it carried.
    #[error("the connection carries no more requests")]
    Spent,
}

/// Bounds on what exchanges read from a server they do not trust (the
/// probe's). The simulator's clients read with none
/// ([`Limits::default`]), so nothing here changes their behaviour or
/// their traces.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Most bytes of a response head, status line included; also the
    /// connection's read buffer (hyper's minimum of 8192 applies), so an
    /// unfinished head cannot grow past it either.
    pub head_bytes: Option<usize>,
    /// Most bytes of one response body: a JSON body or a whole SSE stream.
    pub body_bytes: Option<u64>,
    /// Most bytes of one SSE line, and of one event's data.
    pub event_bytes: Option<usize>,
    /// Most SSE events of one response.
    pub events: Option<u64>,
    /// What every exchange sharing it may still read, in all.
    pub budget: Option<Rc<Budget>>,
}

/// A bound an exchange reached, with its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// [`Limits::head_bytes`] (or hyper's 100 header fields).
    Head(usize),
    /// [`Limits::body_bytes`].
    Body(u64),
    /// [`Limits::event_bytes`], on one line.
    Line(usize),
    /// [`Limits::event_bytes`], on one event.
    Event(usize),
    /// [`Limits::events`].
    Events(u64),
    /// The [`Budget`]'s total.
    Total(u64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Head(n) => write!(f, "a response head longer than {n} bytes or 100 fields"),
            Limit::Body(n) => write!(f, "a response body longer than {n} bytes"),
            Limit::Line(n) => write!(f, "an SSE line longer than {n} bytes"),
            Limit::Event(n) => write!(f, "an SSE event longer than {n} bytes"),
            Limit::Events(n) => write!(f, "a response of more than {n} SSE events"),
            Limit::Total(n) => write!(f, "more than {n} bytes in all"),
        }
    }
}

/// Bytes left to read across exchanges, and the first limit any of them
/// reached (single-threaded: the exchanges of one `LocalSet`).
#[derive(Debug)]
pub struct Budget {
    total: u64,
    left: Cell<u64>,
    hit: Cell<Option<Limit>>,
}

impl Budget {
    /// A budget of `total` bytes.
    pub fn new(total: u64) -> Rc<Budget> {
        Rc::new(Budget {
            total,
            left: Cell::new(total),
            hit: Cell::new(None),
        })
    }

    /// The first limit an exchange sharing this budget reached.
    pub fn hit(&self) -> Option<Limit> {
        self.hit.get()
    }

    fn record(&self, l: Limit) {
        if self.hit.get().is_none() {
            self.hit.set(Some(l));
        }
    }

    fn spend(&self, n: u64) -> Result<(), Limit> {
        match self.left.get().checked_sub(n) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.left.set(0);
                Err(Limit::Total(self.total))
            }
        }
    }
}

impl Limits {
    /// `l` as the exchange's error, recorded in the budget.
    fn reached(&self, l: Limit) -> Error {
        if let Some(b) = &self.budget {
            b.record(l);
        }
        Error::Limit(l)
    }

    /// Counts `n` more body bytes of a response that has read `read`.
    fn count(&self, read: &mut u64, n: usize) -> Result<(), Error> {
        *read += n as u64;
        if let Some(max) = self.body_bytes.filter(|&m| *read > m) {
            return Err(self.reached(Limit::Body(max)));
        }
        match &self.budget {
            Some(b) => b.spend(n as u64).map_err(|l| self.reached(l)),
            None => Ok(()),
        }
    }
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
    /// Its connection; `None` once given back ([`Exchange::into_conn`]).
    conn: Option<Conn>,
    limits: Limits,
    /// Body bytes and SSE events read so far.
    read: u64,
    events: u64,
}

impl Drop for Exchange {
    // The connection closes before the body is dropped, as it always has
    // (the order in which the two wake hyper's tasks is in every trace).
    fn drop(&mut self) {
        if let Some(c) = &self.conn {
            c.task.abort();
        }
    }
}

/// One client connection (hyper's `http1` client): the sender its
/// requests go out on, one after another, and the task that drives it.
/// Dropping it closes the connection.
pub struct Conn {
    /// `None` once the exchange on it said it would send no more: hyper
    /// then closes the connection when the response ends.
    sender: Option<SendRequest<Full<Bytes>>>,
    task: AbortHandle,
    /// An exchange gave it back: it has carried a request already.
    reused: bool,
    /// Set, its close is abortive (RST): the connector's handle on it.
    closer: Option<Closer>,
}

/// A connection's switch from a clean close (FIN) to an abortive one
/// (RST), where its connector offers one ([`super::Connector::closer`]).
pub type Closer = std::rc::Rc<std::cell::Cell<bool>>;

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Conn {
    /// Gives the connection its connector's close switch.
    pub fn set_closer(&mut self, closer: Option<Closer>) {
        self.closer = closer;
    }

    /// Its close switch, if its connector gave one.
    pub fn closer(&self) -> Option<Closer> {
        self.closer.clone()
    }

    /// Whether the connection ended (the peer closed it, or it failed):
    /// what a pool notices before it reuses one.
    pub fn is_closed(&self) -> bool {
        self.sender.as_ref().is_none_or(SendRequest::is_closed)
    }
}

/// Opens an HTTP/1.1 client connection on the connected stream `io`,
/// its task on the current `LocalSet`.
pub async fn handshake<I>(io: I, limits: &Limits) -> Result<Conn, Error>
where
    I: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let mut builder = hyper::client::conn::http1::Builder::new();
    if let Some(n) = limits.head_bytes {
        builder.max_header_size(n).max_buf_size(n.max(8192));
    }
    let (sender, conn) = builder.handshake(hyper_util::rt::TokioIo::new(io)).await?;
    let task = tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(Conn {
        sender: Some(sender),
        task: task.abort_handle(),
        reused: false,
        closer: None,
    })
}

/// Sends `out` on the connected stream `io`. The connection task runs on
/// the current `LocalSet`; dropping the returned exchange closes it.
pub async fn send<I>(io: I, out: Outgoing) -> Result<Exchange, Error>
where
    I: AsyncRead + AsyncWrite + Unpin + 'static,
{
    send_bounded(io, out, Limits::default()).await
}

/// [`send`], reading the response within `limits`.
pub async fn send_bounded<I>(io: I, out: Outgoing, limits: Limits) -> Result<Exchange, Error>
where
    I: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let conn = handshake(io, &limits).await?;
    send_on(conn, out, limits, false).await
}

/// Sends `out` on `conn` (a new connection, or one an earlier exchange
/// gave back). Dropping this future or the returned exchange closes it.
/// Unless `keep`, the connection carries no other request: hyper closes
/// it once the response has been read.
pub async fn send_on(
    mut conn: Conn,
    out: Outgoing,
    limits: Limits,
    keep: bool,
) -> Result<Exchange, Error> {
    let mut req = Request::builder()
        .method(out.method)
        .uri(out.path)
        .header(header::HOST, "mcp-chaos")
        .body(Full::new(out.body.unwrap_or_default()))
        .expect("a well-formed request");
    req.headers_mut().extend(out.headers);
    // A reused connection may still be finishing its last response (a
    // new one takes its first request buffered, without waiting).
    let Some(sender) = conn.sender.as_mut() else {
        return Err(Error::Spent);
    };
    if conn.reused {
        sender.ready().await?;
    }
    let resp = match sender.send_request(req).await {
        Err(e) if e.is_parse_too_large() => {
            return Err(match limits.head_bytes {
                Some(n) => limits.reached(Limit::Head(n)),
                None => e.into(),
            })
        }
        r => r?,
    };
    let (parts, body) = resp.into_parts();
    if let Some(b) = &limits.budget {
        b.spend(head_len(&parts)).map_err(|l| limits.reached(l))?;
    }
    let is_sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !keep {
        conn.sender = None;
    }
    Ok(Exchange {
        status: parts.status,
        headers: parts.headers,
        body,
        sse: is_sse.then(|| match limits.event_bytes {
            Some(n) => SseDecoder::with_max_line(n),
            None => SseDecoder::new(),
        }),
        pending: VecDeque::new(),
        conn: Some(conn),
        limits,
        read: 0,
        events: 0,
    })
}

/// A response head's size as it came on the wire (status line, fields,
/// line ends), for the byte budget.
fn head_len(parts: &http::response::Parts) -> u64 {
    let fields: usize = parts
        .headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum();
    (fields + "HTTP/1.1 200 OK\r\n\r\n".len()) as u64
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

    /// The next data frame of the body, counted against the limits;
    /// `None` at its end.
    async fn data(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        self.limits.count(&mut self.read, data.len())?;
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    /// Reads a whole non-SSE body as one JSON-RPC message (`None` if empty).
    pub async fn json(self) -> Result<Option<Message>, Error> {
        self.json_and_conn().await.map(|(m, _)| m)
    }

    /// [`Exchange::json`], and the connection once the body was read to
    /// its end (for the next request).
    pub async fn json_and_conn(mut self) -> Result<(Option<Message>, Option<Conn>), Error> {
        let mut bytes = bytes::BytesMut::new();
        while let Some(data) = self.data().await? {
            bytes.extend_from_slice(&data);
        }
        if bytes.is_empty() {
            return Ok((None, self.into_conn()));
        }
        match Message::decode(&bytes) {
            Ok(m) => Ok((Some(m), self.into_conn())),
            // An error status with a body that is not JSON-RPC (plain text
            // from an SDK or a proxy): the status is the answer.
            Err(_) if self.status.is_client_error() || self.status.is_server_error() => {
                Ok((None, self.into_conn()))
            }
            Err(e) => Err(Error::Body(e.to_string())),
        }
    }

    /// The connection, given back for another request: only call once
    /// the body has been read to its end (`next_event` returned `None`).
    pub fn into_conn(mut self) -> Option<Conn> {
        let mut conn = self.conn.take().filter(|c| c.sender.is_some())?;
        conn.reused = true;
        Some(conn)
    }

    /// The next SSE event; `None` when the stream ended cleanly.
    /// Comment lines (keep-alives) read so far on this stream.
    pub fn comments(&self) -> u64 {
        self.sse.as_ref().map_or(0, SseDecoder::comments)
    }

    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, Error> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                self.events += 1;
                if let Some(max) = self.limits.events.filter(|&m| self.events > m) {
                    return Err(self.limits.reached(Limit::Events(max)));
                }
                return Ok(Some(e));
            }
            if self.sse.is_none() {
                return Ok(None);
            }
            let Some(data) = self.data().await? else {
                return Ok(None);
            };
            let dec = self.sse.as_mut().expect("an SSE body");
            let mut out = Vec::new();
            match (dec.feed(&data, &mut out), self.limits.event_bytes) {
                (Err(SseError::LineTooLong(_)), Some(n)) => {
                    return Err(self.limits.reached(Limit::Line(n)))
                }
                (r, _) => r?,
            }
            if let Some(n) = self.limits.event_bytes {
                if dec.buffered() > n || out.iter().any(|e| e.data.len() > n) {
                    return Err(self.limits.reached(Limit::Event(n)));
                }
            }
            self.pending.extend(out);
        }
    }
}

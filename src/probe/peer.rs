//! The probe's side of the wire: one live MCP server over real TCP, in
//! real time, bounded in requests and time. Each request has a connection
//! of its own (as the simulator's clients do), so dropping a [`Reply`] is
//! exactly a client losing its connection.

use crate::client::http::{self as wire, Exchange, Limit, Limits, Outgoing};
use crate::protocol::headers;
use crate::protocol::json::Json;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use crate::protocol::y2026;
use ::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

pub use super::target::Target;
use super::target::{resolve, Refused};

/// Why a request got no HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The TCP connect failed (refused, unreachable).
    Connect(String),
    /// The server closed or reset before a response head, or sent no HTTP.
    Http(String),
    /// No answer within `--request-timeout-ms`.
    Timeout,
    /// The probe's request or time budget is spent.
    Budget,
    /// The probe stopped: a limit on what it reads was reached, or a URL
    /// was refused as remote. The line names the bound and its flag.
    Stopped(String),
    /// The server answered, but not as the step needs.
    Answer(String),
    /// The server answered with a redirect, which the probe never follows.
    Redirected(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "connect failed: {e}"),
            Failure::Http(e) => write!(f, "no HTTP response: {e}"),
            Failure::Timeout => write!(f, "no answer within --request-timeout-ms"),
            Failure::Budget => write!(f, "the probe's request or time budget is spent"),
            Failure::Stopped(line) => write!(f, "not tried, the probe stopped: {line}"),
            Failure::Answer(e) | Failure::Redirected(e) => f.write_str(e),
        }
    }
}

/// One event as the probe received it: an SSE event, or a JSON body.
#[derive(Clone, Debug)]
pub struct Got {
    /// Its `id:` field (SSE only).
    pub id: Option<String>,
    /// Its `event:` type (`message` for JSON bodies).
    pub event: String,
    /// Its data (a JSON body's text).
    pub data: String,
    /// The JSON-RPC message in its data, if any.
    pub msg: Option<Message>,
    /// Its `retry:` advice, ms (SSE only).
    pub retry_ms: Option<u64>,
    /// When it arrived.
    pub at: Instant,
}

impl Got {
    /// The ledger chunk this event's payload names.
    pub fn chunk(&self) -> Option<mcp::ChunkRef> {
        self.msg.as_ref().and_then(mcp::chunk_of)
    }

    /// Whether it is the response (result or error) to request `id`.
    pub fn answers(&self, id: &RequestId) -> bool {
        match &self.msg {
            Some(Message::Result { id: r, .. }) => r == id,
            Some(Message::Error { id: Some(r), .. }) => r == id,
            _ => false,
        }
    }

    /// Whether it is a response to any request.
    pub fn is_response(&self) -> bool {
        matches!(
            self.msg,
            Some(Message::Result { .. }) | Some(Message::Error { .. })
        )
    }
}

/// How reading a response body stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The wanted event arrived.
    Found,
    /// The body ended cleanly.
    Ended,
    /// The deadline passed first.
    TimedOut,
    /// The connection failed mid-body.
    Broken(String),
}

/// A response: status, headers, and a body read event by event.
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    body: Body,
    /// Every event read so far, in arrival order.
    pub seen: Vec<Got>,
}

enum Body {
    Sse(Exchange),
    Json(Option<Exchange>),
}

impl Reply {
    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        matches!(self.body, Body::Sse(_))
    }

    /// A response header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Reads events until `stop` accepts one, the body ends, or `deadline`.
    pub async fn read_until(&mut self, deadline: Instant, stop: impl Fn(&Got) -> bool) -> End {
        loop {
            let next = tokio::time::timeout_at(deadline, self.next()).await;
            match next {
                Err(_) => return End::TimedOut,
                Ok(Err(e)) => return End::Broken(e),
                Ok(Ok(None)) => return End::Ended,
                Ok(Ok(Some(g))) => {
                    let hit = stop(&g);
                    self.seen.push(g);
                    if hit {
                        return End::Found;
                    }
                }
            }
        }
    }

    /// Reads the response to `id` (or to the end, or the deadline).
    pub async fn read_response(&mut self, id: &RequestId, deadline: Instant) -> End {
        self.read_until(deadline, |g| g.answers(id)).await
    }

    async fn next(&mut self) -> Result<Option<Got>, String> {
        match &mut self.body {
            Body::Sse(ex) => match ex.next_event().await {
                Ok(Some(e)) => Ok(Some(Got {
                    msg: Message::decode(e.data.as_bytes()).ok(),
                    data: e.data,
                    id: e.id,
                    event: e.event,
                    retry_ms: e.retry_ms,
                    at: Instant::now(),
                })),
                Ok(None) => Ok(None),
                Err(e) => Err(e.to_string()),
            },
            Body::Json(ex) => match ex.take() {
                None => Ok(None),
                Some(ex) => match ex.json().await {
                    Ok(Some(m)) => Ok(Some(Got {
                        id: None,
                        event: "message".into(),
                        data: m.encode(),
                        msg: Some(m),
                        retry_ms: None,
                        at: Instant::now(),
                    })),
                    Ok(None) => Ok(None),
                    Err(e) => Err(e.to_string()),
                },
            },
        }
    }

    /// The last event id seen on this stream.
    pub fn last_id(&self) -> Option<&str> {
        self.seen.iter().rev().find_map(|g| g.id.as_deref())
    }

    /// The response to `id` among the events read, if any.
    pub fn response(&self, id: &RequestId) -> Option<&Got> {
        self.seen.iter().find(|g| g.answers(id))
    }

    /// A one-line account: status and what arrived.
    pub fn describe(&self) -> String {
        let kind = if self.is_sse() { "SSE" } else { "body" };
        let error = self.seen.iter().find_map(|g| match &g.msg {
            Some(Message::Error { error, .. }) => {
                Some(format!(", error {} {:?}", error.code, clip(&error.message)))
            }
            _ => None,
        });
        // A redirect is an answer like any other: the probe follows none.
        let redirect = if self.status.is_redirection() {
            format!(
                ", a redirect to {}, not followed",
                clip(self.header("location").unwrap_or("nowhere"))
            )
        } else {
            String::new()
        };
        format!(
            "{} ({kind}, {} event{}{}{redirect})",
            self.status.as_u16(),
            self.seen.len(),
            if self.seen.len() == 1 { "" } else { "s" },
            error.unwrap_or_default()
        )
    }
}

/// At most 80 characters of a server's message, for evidence lines.
pub fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// A live session: its id (absent on a stateless server) and version.
/// On the 2026-07-28 wire there is no session: `modern` holds the
/// capabilities every request's `_meta` declares.
#[derive(Clone, Debug)]
pub struct Session {
    /// `Mcp-Session-Id`, when the server issued one.
    pub id: Option<String>,
    /// The negotiated protocol version.
    pub version: String,
    /// The 2026-07-28 wire: the client capabilities each request declares.
    pub modern: Option<serde_json::Value>,
}

/// What the probe may spend on a server.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// One response or result.
    pub request_timeout: Duration,
    /// Most requests sent.
    pub max_requests: u32,
    /// The whole probe's end.
    pub deadline: Instant,
    /// What one response may carry, and the bytes of all of them (its
    /// budget is the probe's).
    pub limits: Limits,
    /// Connect to addresses beyond this machine.
    pub allow_remote: bool,
}

/// The probe's handle on the server: target, extra headers, bounds.
pub struct Peer {
    target: Target,
    extra: HeaderMap,
    bounds: Bounds,
    requests_left: Cell<u32>,
    nonce: String,
    next_id: Cell<u64>,
    spent: Cell<bool>,
    refused: RefCell<Option<String>>,
    /// It speaks the 2026-07-28 wire (`probe --era 2026-07-28`).
    modern: bool,
}

impl Peer {
    /// A peer for `target`, sending `extra` headers on every request,
    /// within `bounds`.
    pub fn new(target: Target, extra: HeaderMap, bounds: Bounds) -> Peer {
        // Tags and request ids must not collide with an earlier probe of
        // the same long-lived server: a nonce from the OS, never printed.
        let nonce = format!("{:08x}", rand::random::<u32>());
        Peer {
            target,
            extra,
            requests_left: Cell::new(bounds.max_requests),
            bounds,
            nonce,
            next_id: Cell::new(1),
            spent: Cell::new(false),
            refused: RefCell::new(None),
            modern: false,
        }
    }

    /// The same peer speaking the 2026-07-28 wire: `server/discover`
    /// stands for `initialize`, every request carries `_meta` and the
    /// method and name headers. With no session to tie its requests
    /// together, it names itself with a bearer token of its own (unless
    /// `--header` gave an `Authorization`): servers scope keys and ledger
    /// reads to a caller.
    pub fn speaking_2026(mut self) -> Peer {
        if !self.extra.contains_key(header::AUTHORIZATION) {
            let token = format!("Bearer mcp-chaos-probe-{}", self.nonce);
            if let Ok(v) = HeaderValue::from_str(&token) {
                self.extra.insert(header::AUTHORIZATION, v);
            }
        }
        Peer {
            modern: true,
            ..self
        }
    }

    /// Why the probe stopped, if it did: the first limit a response
    /// reached, or a URL refused as remote; one line naming the flag that
    /// allows more. Once stopped, the peer sends nothing more.
    pub fn stopped(&self) -> Option<String> {
        let limit = self.bounds.limits.budget.as_ref().and_then(|b| b.hit());
        limit
            .map(limit_line)
            .or_else(|| self.refused.borrow().clone())
    }

    /// Whether the whole probe's time is up.
    pub fn out_of_time(&self) -> bool {
        Instant::now() >= self.bounds.deadline
    }

    /// The server's URL.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Whether a request was refused for the budget (or the time) spent:
    /// some hazard was then not fully tried.
    pub fn spent(&self) -> bool {
        self.spent.get()
    }

    /// Takes one request from the budget.
    fn take(&self) -> Result<(), Failure> {
        if let Some(line) = self.stopped() {
            return Err(Failure::Stopped(line));
        }
        let left = self.requests_left.get();
        if left == 0 || self.out_of_time() {
            self.spent.set(true);
            return Err(Failure::Budget);
        }
        self.requests_left.set(left - 1);
        Ok(())
    }

    /// A deadline `d` from now, never past the probe's own.
    pub fn within(&self, d: Duration) -> Instant {
        (Instant::now() + d).min(self.bounds.deadline)
    }

    /// A request id no earlier probe of this server used.
    pub fn fresh_id(&self) -> RequestId {
        let n = self.next_id.get();
        self.next_id.set(n + 1);
        RequestId::Str(format!("probe-{}-{n}", self.nonce))
    }

    /// An operation tag for hazard `name`, unique to this probe.
    pub fn tag(&self, name: &str) -> String {
        format!("probe-{}-{name}", self.nonce)
    }

    /// Sends one request on a new connection and returns once its response
    /// head arrived. Adds `Host` and the `--header`s; `target` (default:
    /// the probe's) chooses the path.
    pub async fn send(&self, out: Outgoing, target: Option<&Target>) -> Result<Reply, Failure> {
        let target = target.unwrap_or(&self.target);
        let out = self.prepare(out, target)?;
        let until = self.within(self.bounds.request_timeout);
        let exchange = async {
            let io = self.connect(target).await?;
            wire::send_bounded(io, out, self.bounds.limits.clone())
                .await
                .map_err(|e| match e {
                    wire::Error::Limit(l) => Failure::Stopped(limit_line(l)),
                    e => Failure::Http(e.to_string()),
                })
        };
        let ex = match tokio::time::timeout_at(until, exchange).await {
            Err(_) if until >= self.bounds.deadline => {
                self.spent.set(true);
                return Err(Failure::Budget);
            }
            Err(_) => return Err(Failure::Timeout),
            Ok(r) => r?,
        };
        Ok(Reply {
            status: ex.status,
            headers: ex.headers.clone(),
            body: if ex.is_sse() {
                Body::Sse(ex)
            } else {
                Body::Json(Some(ex))
            },
            seen: Vec::new(),
        })
    }

    /// A POST of `msg` in `session`, with an `Idempotency-Key` when given.
    pub async fn post(
        &self,
        session: &Session,
        msg: &Message,
        key: Option<&str>,
    ) -> Result<Reply, Failure> {
        self.send(posting(session, msg, key), None).await
    }

    /// Sends a POST of `msg` and closes the connection `hold` after the
    /// request is written, never reading a byte of the response: a client
    /// that lost its connection before any answer (for tools that answer
    /// faster than the probe could drop a stream). The connection stays
    /// open for `hold` so that the server takes the call up: a server that
    /// drops a call whose connection closed before it began would never
    /// run it, and a retry could then prove nothing (on a loaded machine a
    /// close right after the write often beat the server to the request).
    pub async fn fire(
        &self,
        session: &Session,
        msg: &Message,
        key: Option<&str>,
        hold: Duration,
    ) -> Result<(), Failure> {
        use tokio::io::AsyncWriteExt;
        let out = self.prepare(posting(session, msg, key), &self.target)?;
        let body = out.body.unwrap_or_default();
        let mut head = format!(
            "POST {} HTTP/1.1\r\ncontent-length: {}\r\n",
            out.path,
            body.len()
        )
        .into_bytes();
        for (name, value) in &out.headers {
            head.extend_from_slice(name.as_str().as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value.as_bytes());
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head.extend_from_slice(&body);
        let until = self.within(self.bounds.request_timeout);
        let write = async {
            let mut tcp = self.connect(&self.target).await?;
            tcp.write_all(&head)
                .await
                .map_err(|e| Failure::Http(e.to_string()))?;
            tcp.flush()
                .await
                .map_err(|e| Failure::Http(e.to_string()))?;
            Ok(tcp)
        };
        let tcp = tokio::time::timeout_at(until, write)
            .await
            .map_err(|_| Failure::Timeout)??;
        tokio::time::sleep(hold).await;
        drop(tcp);
        Ok(())
    }

    /// A GET on the endpoint: the standalone stream, or a resume from
    /// `last_event_id` (sent as given, even when no event id looks so).
    pub async fn get(
        &self,
        session: &Session,
        last_event_id: Option<&str>,
    ) -> Result<Reply, Failure> {
        let mut out = bare(Method::GET, Some(session));
        out.headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(l) = last_event_id {
            set(&mut out.headers, headers::LAST_EVENT_ID, l);
        }
        self.send(out, None).await
    }

    /// A plain GET of another path (the legacy transport's SSE endpoint).
    pub async fn get_at(&self, target: &Target) -> Result<Reply, Failure> {
        let mut out = bare(Method::GET, None);
        out.headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        self.send(out, Some(target)).await
    }

    /// Takes a request from the budget and gives it what every request of
    /// the probe carries: `target`'s path, `Host`, the `--header`s.
    fn prepare(&self, mut out: Outgoing, target: &Target) -> Result<Outgoing, Failure> {
        self.take()?;
        out.path = target.path.clone();
        out.headers.insert(
            header::HOST,
            HeaderValue::from_str(&target.authority()).map_err(|e| Failure::Http(e.to_string()))?,
        );
        for (name, value) in &self.extra {
            out.headers.insert(name.clone(), value.clone());
        }
        Ok(out)
    }

    /// A new connection to `target`, after [`resolve`]'s check; a remote
    /// address stops the probe.
    async fn connect(&self, target: &Target) -> Result<tokio::net::TcpStream, Failure> {
        let addrs = match resolve(target, self.bounds.allow_remote).await {
            Ok(a) => a,
            Err(Refused::Unresolved(e)) => return Err(Failure::Connect(e)),
            Err(Refused::Remote(line)) => {
                self.refused.borrow_mut().get_or_insert(line.clone());
                return Err(Failure::Stopped(line));
            }
        };
        let tcp = tokio::net::TcpStream::connect(&addrs[..])
            .await
            .map_err(|e| Failure::Connect(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        Ok(tcp)
    }

    /// Reads the response to `id` within the request timeout; a time-out
    /// is the failure it is (the request's, or the whole probe's).
    async fn answer(&self, reply: &mut Reply, id: &RequestId) -> Result<(), Failure> {
        let until = self.within(self.bounds.request_timeout);
        match reply.read_response(id, until).await {
            End::TimedOut if until >= self.bounds.deadline => {
                self.spent.set(true);
                Err(Failure::Budget)
            }
            End::TimedOut => Err(Failure::Timeout),
            _ => Ok(()),
        }
    }

    /// `initialize`, then `notifications/initialized`: a new session (on
    /// the 2026-07-28 wire, `server/discover`).
    pub async fn initialize(&self) -> Result<Session, Failure> {
        if self.modern {
            return self.discover().await;
        }
        let id = self.fresh_id();
        let out = Outgoing::post(None, &initialize_request(&id, mcp::LATEST_VERSION));
        let mut reply = self.send(out, None).await?;
        if !reply.status.is_success() {
            let _ = self.answer(&mut reply, &id).await;
            let answered = format!("initialize answered {}", reply.describe());
            return Err(if reply.status.is_redirection() {
                Failure::Redirected(answered)
            } else {
                Failure::Answer(answered)
            });
        }
        self.answer(&mut reply, &id).await?;
        let version = match reply.response(&id).and_then(|g| g.msg.as_ref()) {
            Some(Message::Result { result, .. }) => result
                .get("protocolVersion")
                .and_then(|v| v.as_str().map(|s| s.into_owned()))
                .unwrap_or_else(|| mcp::LATEST_VERSION.into()),
            Some(Message::Error { error, .. }) => {
                return Err(Failure::Answer(format!(
                    "initialize failed: {} {}",
                    error.code,
                    clip(&error.message)
                )))
            }
            _ => {
                return Err(Failure::Answer(format!(
                    "initialize got no result: {}",
                    reply.describe()
                )))
            }
        };
        let session = Session {
            id: reply.header(headers::MCP_SESSION_ID).map(str::to_string),
            version,
            modern: None,
        };
        drop(reply);
        let done = Message::Notification {
            method: mcp::INITIALIZED.into(),
            params: None,
        };
        let ack = self.post(&session, &done, None).await?;
        if !ack.status.is_success() {
            return Err(Failure::Answer(format!(
                "notifications/initialized answered {}",
                ack.describe()
            )));
        }
        Ok(session)
    }

    /// `server/discover` (2026-07-28): the server speaks that wire, or
    /// the probe cannot go on.
    async fn discover(&self) -> Result<Session, Failure> {
        let session = Session {
            id: None,
            version: y2026::VERSION.into(),
            modern: Some(json!({})),
        };
        let id = self.fresh_id();
        let req = Message::Request {
            id: id.clone(),
            method: y2026::SERVER_DISCOVER.into(),
            params: None,
        };
        let mut reply = self.post(&session, &req, None).await?;
        self.answer(&mut reply, &id).await?;
        match reply.response(&id).and_then(|g| g.msg.as_ref()) {
            Some(Message::Result { result, .. })
                if result.get("supportedVersions").is_some_and(|v| {
                    v.elements()
                        .any(|e| e.as_str().as_deref() == Some(y2026::VERSION))
                }) =>
            {
                Ok(session)
            }
            _ => Err(Failure::Answer(format!(
                "server/discover did not name {} among its versions: {}",
                y2026::VERSION,
                reply.describe()
            ))),
        }
    }

    /// The names of the tools the server lists (first page only).
    pub async fn tool_names(&self, session: &Session) -> Result<Vec<String>, Failure> {
        let id = self.fresh_id();
        let req = Message::Request {
            id: id.clone(),
            method: mcp::TOOLS_LIST.into(),
            params: None,
        };
        let mut reply = self.post(session, &req, None).await?;
        self.answer(&mut reply, &id).await?;
        match reply.response(&id).and_then(|g| g.msg.as_ref()) {
            Some(Message::Result { result, .. }) => Ok(result
                .get("tools")
                .map(|t| {
                    t.elements()
                        .filter_map(|tool| tool.get("name").and_then(|n| n.as_str()))
                        .map(|n| n.into_owned())
                        .collect()
                })
                .unwrap_or_default()),
            _ => Err(Failure::Answer(format!(
                "tools/list answered {}",
                reply.describe()
            ))),
        }
    }

    /// Ends a session (DELETE); errors are ignored: the server may not
    /// allow it, and the probe is done with the session either way.
    pub async fn end(&self, session: &Session) {
        if session.id.is_some() {
            let _ = self.send(bare(Method::DELETE, Some(session)), None).await;
        }
    }
}

/// A request without a body, naming `session` (its id, when it has one,
/// and its version); path and `Host` come in [`Peer::send`].
fn bare(method: Method, session: Option<&Session>) -> Outgoing {
    let mut out = Outgoing {
        method,
        path: String::new(),
        headers: HeaderMap::new(),
        body: None,
    };
    if let Some(s) = session {
        if let Some(id) = &s.id {
            set(&mut out.headers, headers::MCP_SESSION_ID, id);
        }
        set(&mut out.headers, headers::MCP_PROTOCOL_VERSION, &s.version);
    }
    out
}

/// The line a reached limit stops the probe with: what the server sent
/// and the flag that allows more.
fn limit_line(l: Limit) -> String {
    let flag = match l {
        Limit::Head(_) => "--max-header-bytes",
        Limit::Body(_) => "--max-body-bytes",
        Limit::Line(_) | Limit::Event(_) => "--max-event-bytes",
        Limit::Events(_) => "--max-events",
        Limit::Total(_) => "--max-total-bytes",
    };
    format!("the server sent {l}: raise {flag} to read more from it")
}

/// `initialize` as request `id`, for protocol revision `version`.
pub fn initialize_request(id: &RequestId, version: &str) -> Message {
    Message::Request {
        id: id.clone(),
        method: mcp::INITIALIZE.into(),
        params: Some(mcp::initialize_params(
            version,
            json!({}),
            "mcp-chaos-probe",
        )),
    }
}

/// The POST of `msg` in `session`: version header, and the key if any;
/// on the 2026-07-28 wire `_meta` and the method and name headers too.
fn posting(session: &Session, msg: &Message, key: Option<&str>) -> Outgoing {
    let mut msg = msg.clone();
    let mut named = None;
    if let (Some(caps), Message::Request { method, params, .. }) = (&session.modern, &mut msg) {
        let meta = y2026::request_meta(caps.clone(), "mcp-chaos-probe");
        *params = Some(y2026::with_meta(params.as_ref(), meta));
        named = Some((method.clone(), y2026::name_of(method, params.as_ref())));
    }
    let mut out = Outgoing::post(session.id.as_deref(), &msg);
    if let Some((method, name)) = named {
        set(&mut out.headers, y2026::MCP_METHOD, &method);
        if let Some(n) = name {
            set(&mut out.headers, y2026::MCP_NAME, &y2026::encode_header(&n));
        }
    }
    set(
        &mut out.headers,
        headers::MCP_PROTOCOL_VERSION,
        &session.version,
    );
    if let Some(k) = key {
        set(&mut out.headers, headers::IDEMPOTENCY_KEY, k);
    }
    out
}

/// A `tools/call` request of `tool` with `arguments`, its progress on
/// token `id`.
pub fn call(id: &RequestId, tool: &str, arguments: serde_json::Value) -> Message {
    Message::Request {
        id: id.clone(),
        method: mcp::TOOLS_CALL.into(),
        params: Some(Json::from(json!({
            "name": tool,
            "arguments": arguments,
            "_meta": {"progressToken": id},
        }))),
    }
}

fn set(h: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(HeaderName::from_static(name), v);
    }
}

/// Reads one `--header 'Name: value'`.
pub fn parse_header(s: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = s.split_once(':').ok_or_else(|| {
        format!("--header {s:?} needs NAME: VALUE, e.g. 'Authorization: Bearer abc'")
    })?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("--header {s:?}: {:?} is not a header name", name.trim()))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|_| format!("--header {s:?}: the value has characters no header can carry"))?;
    Ok((name, value))
}

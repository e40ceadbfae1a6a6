//! The probe's side of the wire: one live MCP server over real TCP, in
//! real time, bounded in requests and time. Each request has a connection
//! of its own (as the simulator's clients do), so dropping a [`Reply`] is
//! exactly a client losing its connection.

use crate::client::http::{self as wire, Exchange, Outgoing};
use crate::protocol::headers;
use crate::protocol::json::Json;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use ::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::json;
use std::cell::Cell;
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// Where the server is: `http://HOST:PORT/PATH`.
#[derive(Clone, Debug)]
pub struct Target {
    /// Host name or address, as given.
    pub host: String,
    /// TCP port (80 when the URL names none).
    pub port: u16,
    /// Request path (`/mcp`), with its query if any.
    pub path: String,
}

impl Target {
    /// Reads `--url`. Only plain `http://` URLs: the probe speaks no TLS.
    pub fn parse(url: &str) -> Result<Target, String> {
        let uri: ::http::Uri = url
            .parse()
            .map_err(|e| format!("--url {url:?} is not a URL ({e}): give http://HOST:PORT/mcp"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                    "--url {url:?}: the probe speaks plain HTTP; point it at the server's own port, not its TLS front"
                ))
            }
            _ => return Err(format!("--url {url:?} needs http://, e.g. http://127.0.0.1:8080/mcp")),
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("--url {url:?} names no host: give http://HOST:PORT/mcp"))?;
        // A port the URL writes but no TCP port can be (99999) is an
        // error, not port 80.
        let authority = uri.authority().map_or("", |a| a.as_str());
        let after_host = authority.rsplit_once(']').map_or(authority, |(_, p)| p);
        let port = match after_host.rsplit_once(':') {
            None => 80,
            Some((_, p)) => p.parse::<u16>().map_err(|_| {
                format!(
                    "--url {url:?}: port {p:?} is not a TCP port (0 to 65535): give http://HOST:PORT/mcp"
                )
            })?,
        };
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .filter(|p| p != "/" || url.ends_with('/'))
            .unwrap_or_else(|| "/".into());
        Ok(Target {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            path,
        })
    }

    /// `HOST:PORT` as the `Host` header carries it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The same server, another path (the legacy transport's `/sse`).
    pub fn with_path(&self, path: &str) -> Target {
        Target {
            path: path.to_string(),
            ..self.clone()
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

/// Why a request got no HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The TCP connect failed (refused, unreachable).
    Connect(String),
    /// The server closed or reset before a response head, or sent no HTTP.
    Http(String),
    /// No response head within the request timeout.
    Timeout,
    /// The probe's request or time budget is spent.
    Budget,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "connect failed: {e}"),
            Failure::Http(e) => write!(f, "no HTTP response: {e}"),
            Failure::Timeout => write!(f, "no response head within the request timeout"),
            Failure::Budget => write!(f, "the probe's request or time budget is spent"),
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
        format!(
            "{} ({kind}, {} event{}{})",
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
#[derive(Clone, Debug)]
pub struct Session {
    /// `Mcp-Session-Id`, when the server issued one.
    pub id: Option<String>,
    /// The negotiated protocol version.
    pub version: String,
}

/// The probe's handle on the server: target, extra headers, bounds.
pub struct Peer {
    target: Target,
    extra: HeaderMap,
    request_timeout: Duration,
    requests_left: Cell<u32>,
    deadline: Instant,
    nonce: String,
    next_id: Cell<u64>,
    spent: Cell<bool>,
}

impl Peer {
    /// A peer for `target`, sending `extra` headers on every request, at
    /// most `max_requests` requests before `deadline`.
    pub fn new(
        target: Target,
        extra: HeaderMap,
        request_timeout: Duration,
        max_requests: u32,
        deadline: Instant,
    ) -> Peer {
        // Tags and request ids must not collide with an earlier probe of
        // the same long-lived server: a nonce from the OS, never printed.
        let nonce = format!("{:08x}", rand::random::<u32>());
        Peer {
            target,
            extra,
            request_timeout,
            requests_left: Cell::new(max_requests),
            deadline,
            nonce,
            next_id: Cell::new(1),
            spent: Cell::new(false),
        }
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
        let left = self.requests_left.get();
        if left == 0 || Instant::now() >= self.deadline {
            self.spent.set(true);
            return Err(Failure::Budget);
        }
        self.requests_left.set(left - 1);
        Ok(())
    }

    /// A deadline `d` from now, never past the probe's own.
    pub fn within(&self, d: Duration) -> Instant {
        (Instant::now() + d).min(self.deadline)
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
        let until = self.within(self.request_timeout);
        let exchange = async {
            wire::send(connect(target).await?, out)
                .await
                .map_err(|e| Failure::Http(e.to_string()))
        };
        let ex = match tokio::time::timeout_at(until, exchange).await {
            Err(_) if until >= self.deadline => {
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

    /// Sends a POST of `msg` and closes the connection as soon as the
    /// request is written, before any response: a client that lost its
    /// connection right after sending (for tools that answer faster than
    /// the probe could drop a stream).
    pub async fn fire(
        &self,
        session: &Session,
        msg: &Message,
        key: Option<&str>,
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
        let until = self.within(self.request_timeout);
        let write = async {
            let mut tcp = connect(&self.target).await?;
            tcp.write_all(&head)
                .await
                .map_err(|e| Failure::Http(e.to_string()))?;
            tcp.flush().await.map_err(|e| Failure::Http(e.to_string()))
        };
        tokio::time::timeout_at(until, write)
            .await
            .map_err(|_| Failure::Timeout)?
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

    /// `initialize`, then `notifications/initialized`: a new session.
    pub async fn initialize(&self) -> Result<Session, String> {
        let id = self.fresh_id();
        let out = Outgoing::post(None, &initialize_request(&id, mcp::LATEST_VERSION));
        let mut reply = self.send(out, None).await.map_err(|e| e.to_string())?;
        if !reply.status.is_success() {
            let _ = reply
                .read_response(&id, self.within(self.request_timeout))
                .await;
            return Err(format!("initialize answered {}", reply.describe()));
        }
        let end = reply
            .read_response(&id, self.within(self.request_timeout))
            .await;
        let version = match reply.response(&id).and_then(|g| g.msg.as_ref()) {
            Some(Message::Result { result, .. }) => result
                .get("protocolVersion")
                .and_then(|v| v.as_str().map(|s| s.into_owned()))
                .unwrap_or_else(|| mcp::LATEST_VERSION.into()),
            Some(Message::Error { error, .. }) => {
                return Err(format!(
                    "initialize failed: {} {}",
                    error.code,
                    clip(&error.message)
                ))
            }
            _ => return Err(format!("initialize got no result ({end:?})")),
        };
        let session = Session {
            id: reply.header(headers::MCP_SESSION_ID).map(str::to_string),
            version,
        };
        drop(reply);
        let done = Message::Notification {
            method: mcp::INITIALIZED.into(),
            params: None,
        };
        let ack = self
            .post(&session, &done, None)
            .await
            .map_err(|e| e.to_string())?;
        if !ack.status.is_success() {
            return Err(format!(
                "notifications/initialized answered {}",
                ack.status.as_u16()
            ));
        }
        Ok(session)
    }

    /// The names of the tools the server lists (first page only).
    pub async fn tool_names(&self, session: &Session) -> Result<Vec<String>, String> {
        let id = self.fresh_id();
        let req = Message::Request {
            id: id.clone(),
            method: mcp::TOOLS_LIST.into(),
            params: None,
        };
        let mut reply = self
            .post(session, &req, None)
            .await
            .map_err(|e| e.to_string())?;
        reply
            .read_response(&id, self.within(self.request_timeout))
            .await;
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
            _ => Err(format!("tools/list answered {}", reply.describe())),
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

/// A new connection to `target`.
async fn connect(target: &Target) -> Result<tokio::net::TcpStream, Failure> {
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| Failure::Connect(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
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

/// The POST of `msg` in `session`: version header, and the key if any.
fn posting(session: &Session, msg: &Message, key: Option<&str>) -> Outgoing {
    let mut out = Outgoing::post(session.id.as_deref(), msg);
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

//! Your own server under test: a small MCP streamable-HTTP server written
//! the way a user (or an SDK) would write one, with hyper 1 and nothing of
//! the built-in `mcp_chaos::server`, run through two scenarios by the
//! public API (`run::run_with`) and judged black-box like any other.
//!
//! What a server author implements to be judged:
//! 1. [`SystemUnderTest`]: `serve` is given a [`Host`] per incarnation (at
//!    the start and after every restart) with the listener to accept on,
//!    a seed, and the side-effect ledger; it serves until the listener
//!    fails. Everything runs on the host's `LocalSet` (`spawn_local`).
//! 2. The ledger contract: a tool records `ledger.execute(..)` when it
//!    starts and `ledger.chunk(..)` for every chunk it emits, and each
//!    chunk's payload names its [`ChunkRef`] on the wire (a progress
//!    notification's `message`, the result text's `chunk` field), so the
//!    oracle matches what clients received to what the tool emitted.
//! 3. Determinism: session ids (and any other choice that reaches output)
//!    come from `host.seed`; time is tokio's (simulated), never the wall
//!    clock; no `HashMap` iteration on output paths.
//!
//! This server is deliberately *unguarded*, like a typical SDK: a retried
//! POST runs the tool again, and a resume (GET with `Last-Event-ID`) is
//! refused with 405, so the clients re-issue by POST.

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use mcp_chaos::hosts::sut::{Host, SystemUnderTest};
use mcp_chaos::ledger::{ChunkRef, Ledger, Principal};
use mcp_chaos::protocol::jsonrpc::RequestId;
use mcp_chaos::server::Listener;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// The user's server, as the world runs it.
pub struct OwnServer;

impl SystemUnderTest for OwnServer {
    fn name(&self) -> &str {
        "own"
    }

    /// No guard records to audit.
    fn audited(&self) -> bool {
        false
    }

    /// Not built in: judged from client records and the ledger alone.
    fn built_in(&self) -> bool {
        false
    }

    fn serve<L: Listener + 'static>(
        &self,
        host: Host<L>,
    ) -> impl Future<Output = io::Result<()>> + 'static {
        // One incarnation's state: a restart starts afresh (sessions are
        // lost; the ledger is not).
        let state = Rc::new(State {
            ledger: host.ledger,
            seed: host.seed,
            sessions: RefCell::default(),
            next_session: Cell::new(0),
            next_event: Cell::new(0),
        });
        let mut listener = host.listener;
        async move {
            loop {
                let io = listener.accept().await?;
                let state = state.clone();
                tokio::task::spawn_local(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(&state, req).await) }
                    });
                    // An error here is the peer going away.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
                        .await;
                });
            }
        }
    }
}

struct State {
    ledger: Ledger,
    seed: u64,
    /// Live sessions (a `BTreeSet`: ordered, should anything iterate it).
    sessions: RefCell<BTreeSet<String>>,
    next_session: Cell<u64>,
    /// SSE event ids: unique across this incarnation's streams.
    next_event: Cell<u64>,
}

impl State {
    /// A session id drawn from the host's seed, never from a random source.
    fn new_session(&self) -> String {
        let n = self.next_session.get() + 1;
        self.next_session.set(n);
        let id = format!("own-{:016x}", splitmix64(self.seed ^ n));
        self.sessions.borrow_mut().insert(id.clone());
        id
    }

    fn event(&self, data: &str) -> Bytes {
        let id = self.next_event.get() + 1;
        self.next_event.set(id);
        Bytes::from(format!("id: {id}\ndata: {data}\n\n"))
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

type Reply = Response<Either<Full<Bytes>, SseBody>>;

/// An SSE body fed by a channel: the stream ends when the sender drops.
struct SseBody(mpsc::UnboundedReceiver<Bytes>);

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

fn reply(status: StatusCode, body: Option<Value>) -> Reply {
    let mut r = Response::builder().status(status);
    if body.is_some() {
        r = r.header(header::CONTENT_TYPE, "application/json");
    }
    let bytes = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    r.body(Either::Left(Full::new(bytes)))
        .unwrap_or_else(|_| Response::new(Either::Left(Full::default())))
}

/// An HTTP error with a JSON-RPC error body: bad input never panics.
fn error(status: StatusCode, id: &Value, code: i64, message: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    reply(status, Some(body))
}

fn sse(rx: mpsc::UnboundedReceiver<Bytes>) -> Reply {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Either::Right(SseBody(rx)))
        .unwrap_or_else(|_| Response::new(Either::Left(Full::default())))
}

async fn handle(state: &Rc<State>, req: Request<Incoming>) -> Reply {
    let null = Value::Null;
    if req.uri().path() != "/mcp" {
        return error(StatusCode::NOT_FOUND, &null, -32600, "only /mcp is served");
    }
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let session = header("mcp-session-id");
    let known = session
        .as_ref()
        .is_some_and(|s| state.sessions.borrow().contains(s));
    match *req.method() {
        Method::GET if !known => error(StatusCode::NOT_FOUND, &null, -32001, "no such session"),
        // No resumption: a GET with Last-Event-ID is refused; the client
        // re-issues its call by POST (a retry this server runs again).
        Method::GET if header("last-event-id").is_some() => error(
            StatusCode::METHOD_NOT_ALLOWED,
            &null,
            -32600,
            "this server does not resume streams",
        ),
        // The session's notification stream: a priming event, then silence.
        Method::GET => {
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(state.event(""));
            // Kept open while the client holds it.
            tokio::task::spawn_local(async move { tx.closed().await });
            sse(rx)
        }
        Method::POST => {
            // Who the effects run for: the bearer token, else the session.
            let principal: Principal = header("authorization")
                .and_then(|a| a.strip_prefix("Bearer ").map(str::to_string))
                .or(session.clone())
                .unwrap_or_default()
                .into();
            let key = header("idempotency-key");
            let Ok(body) = Limited::new(req.into_body(), 64 * 1024).collect().await else {
                return error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &null,
                    -32600,
                    "body too large",
                );
            };
            let Ok(msg) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
                return error(StatusCode::BAD_REQUEST, &null, -32700, "parse error");
            };
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
            if method == "initialize" {
                let sid = state.new_session();
                let version = msg["params"]["protocolVersion"]
                    .as_str()
                    .unwrap_or("2025-06-18");
                let result = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "own-server", "version": "0.1.0"},
                }});
                let mut r = reply(StatusCode::OK, Some(result));
                if let Ok(v) = sid.parse() {
                    r.headers_mut().insert("mcp-session-id", v);
                }
                return r;
            }
            if !known {
                return error(StatusCode::NOT_FOUND, &id, -32001, "no such session");
            }
            if id.is_null() {
                // A notification (notifications/initialized, …) or a response.
                return reply(StatusCode::ACCEPTED, None);
            }
            match method {
                "tools/call" => tools_call(state, &msg, principal, key.as_deref()),
                "ping" => reply(
                    StatusCode::OK,
                    Some(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
                ),
                _ => error(StatusCode::OK, &id, -32601, "method not found"),
            }
        }
        _ => error(
            StatusCode::METHOD_NOT_ALLOWED,
            &null,
            -32600,
            "use POST or GET",
        ),
    }
}

/// `tools/call`: `ledger_append` streams its chunks over SSE; `ledger_read`
/// answers with JSON.
fn tools_call(state: &Rc<State>, msg: &Value, who: Principal, key: Option<&str>) -> Reply {
    let id = msg["id"].clone();
    let Ok(rpc_id) = serde_json::from_value::<RequestId>(id.clone()) else {
        return error(StatusCode::BAD_REQUEST, &id, -32600, "bad request id");
    };
    let params = &msg["params"];
    let args = &params["arguments"];
    match params["name"].as_str() {
        Some("ledger_append") => {
            let (Some(tag), chunks, interval) = (
                args["tag"].as_str().map(str::to_string),
                args["chunks"].as_u64().unwrap_or(1),
                args["chunk_interval_ms"].as_u64().unwrap_or(0),
            ) else {
                return error(StatusCode::BAD_REQUEST, &id, -32602, "tag is required");
            };
            if !(1..=1000).contains(&chunks) || interval > 60_000 {
                return error(
                    StatusCode::BAD_REQUEST,
                    &id,
                    -32602,
                    "chunks or interval out of range",
                );
            }
            let chunks = chunks as u32;
            let token = params["_meta"]["progressToken"].clone();
            let (tx, rx) = mpsc::unbounded_channel();
            // The priming event: an id, no data.
            let _ = tx.send(state.event(""));
            // The effect: recorded when the tool starts.
            let execution = state.ledger.execute(&tag, &who, key, &rpc_id, false);
            let state = state.clone();
            // The tool runs on its own task: a dropped connection does not
            // stop it (its events are then lost with the connection).
            tokio::task::spawn_local(async move {
                for k in 1..=chunks {
                    tokio::time::sleep(Duration::from_millis(interval)).await;
                    let chunk = ChunkRef {
                        tag: tag.as_str().into(),
                        execution,
                        index: k,
                    };
                    state.ledger.chunk(&tag, execution, k, chunks);
                    // Each payload names its chunk (`ledger:<execution>:<index>:<tag>`).
                    let data = if k < chunks {
                        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                            "progressToken": token, "progress": k, "total": chunks,
                            "message": chunk.encode(),
                        }})
                    } else {
                        let text = json!({
                            "tag": tag,
                            "executions": state.ledger.executions(&tag),
                            "chunk": chunk.encode(),
                        });
                        json!({"jsonrpc": "2.0", "id": id, "result": {
                            "content": [{"type": "text", "text": text.to_string()}],
                            "isError": false,
                        }})
                    };
                    let _ = tx.send(state.event(&data.to_string()));
                }
            });
            sse(rx)
        }
        Some("ledger_read") => {
            let all = state.ledger.snapshot_for(&who);
            let text = json!({"executions": all}).to_string();
            let result = json!({"content": [{"type": "text", "text": text}], "isError": false});
            reply(
                StatusCode::OK,
                Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            )
        }
        _ => error(StatusCode::BAD_REQUEST, &id, -32602, "unknown tool"),
    }
}

#[cfg(test)]
mod tests {
    use super::OwnServer;
    use mcp_chaos::run::{self, Options, RunReport};
    use mcp_chaos::scenario::Scenario;
    use std::path::PathBuf;

    fn own(name: &str, seed: u64) -> RunReport {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("sims")
            .join(name);
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        // An oracle defect (a failure no cause explains) is an error here.
        let (report, _) = run::run_with(&s, seed, &OwnServer, &Options::default())
            .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
        let m = &report.metrics;
        assert_eq!(report.server, "own");
        assert!(m.operations > 0, "{name}: no operations");
        assert_eq!(
            m.ops_ok + m.ops_degraded + m.ops_failed,
            m.operations,
            "{name}: every operation is judged: {m:?}"
        );
        report
    }

    #[test]
    fn own_server_runs_retry_by_post_twice_and_the_oracle_says_why() {
        let r = own("seed-000-retry-by-post.toml", 0);
        let m = &r.metrics;
        assert!(m.ops_duplicated >= 1, "the retried tool ran again: {m:?}");
        assert!(
            m.failures_by_cause
                .get("retry_without_key")
                .copied()
                .unwrap_or(0)
                >= 1,
            "cause retry_without_key: {m:?}"
        );
        assert!(
            r.operations
                .iter()
                .any(|v| v.cause.as_deref() == Some("retry_without_key")),
            "{:?}",
            r.operations
        );
        let again = own("seed-000-retry-by-post.toml", 0);
        assert_eq!(r.trace_sha256, again.trace_sha256, "deterministic");
        eprintln!("seed-000-retry-by-post own seed 0: {m:?}");
    }

    #[test]
    fn own_server_runs_flaky_mobile_deterministically() {
        let r = own("flaky-mobile.toml", 0);
        let again = own("flaky-mobile.toml", 0);
        assert_eq!(r.trace_sha256, again.trace_sha256, "deterministic");
        assert_eq!(r.metrics, again.metrics);
        eprintln!("flaky-mobile own seed 0: {:?}", r.metrics);
    }
}

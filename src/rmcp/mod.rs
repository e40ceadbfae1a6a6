//! The official Rust SDK's server as two arms: `rmcp` (its
//! `StreamableHttpService` with `LocalSessionManager` and the built-in
//! per-stream cache) and `rmcp-es` (the same with an event store,
//! [`store`]). They serve the ledger tools ([`tools`]) and are judged
//! black-box, from the clients' records and the ledger alone. Each session
//! has its own `LocalSessionManager` ([`sessions`]), so what is kept for a
//! session (its event logs, its wire ids, under `serve` its ledger effects)
//! goes when rmcp closes it.
//!
//! What keeps them deterministic inside the simulation:
//! - session ids: rmcp draws UUID v4s and has no hook; a layer here rewrites
//!   `Mcp-Session-Id` both ways, so clients only ever see ids drawn from the
//!   incarnation's seed (rmcp's own never reach the wire);
//! - the SSE keep-alive, which rmcp times on the wall clock, is off;
//! - hyper's `Date` header (wall clock) is off;
//! - rmcp's completed-request cache TTL (wall clock) applies only to
//!   requests the client cancelled;
//! - its tasks' ids, TTL and times ([`tasks`]).
//!
//! rmcp has no legacy HTTP+SSE transport: legacy clients are not
//! applicable to these arms ([`SystemUnderTest::legacy_transport`]).

mod sessions;
mod store;
mod tasks;
mod tools;

use crate::base::seed;
use crate::hosts::sut::{Arm, Host, SystemUnderTest};
use crate::protocol::headers::MCP_SESSION_ID;
use crate::server::{Listener, ServerConfig};
use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use rmcp::transport::streamable_http_server::session::local::SessionConfig;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use tools::{Bridge, LedgerTools, WireSession};

/// The host name clients put in `Host` (rmcp checks it).
const HOST: &str = "mcp-chaos";

/// An rmcp arm.
#[derive(Clone, Debug)]
pub struct Rmcp {
    /// With an event store (`rmcp-es`) instead of the built-in cache.
    pub event_store: bool,
    /// Events the store keeps per stream; most chunks per call (from the
    /// scenario's `[server]` table: `store_capacity`, `max_chunks`).
    pub cfg: ServerConfig,
    /// How it faces its clients: inside the simulator (seeded ids, no
    /// checks) or on a real socket under `serve` (ids from the OS CSPRNG,
    /// the edge checks of the built-in arms: `Origin` and `Host`
    /// allow-lists, one `Host`, only `chunked`; accept errors survived).
    /// rmcp's own limits and Host check are as shipped (its allow-list
    /// gains `--allow-host`'s names, so ours decides).
    pub exposure: crate::server::Exposure,
}

impl SystemUnderTest for Rmcp {
    fn name(&self) -> &str {
        if self.event_store {
            Arm::RmcpEs.as_str()
        } else {
            Arm::Rmcp.as_str()
        }
    }

    fn audited(&self) -> bool {
        false
    }

    fn built_in(&self) -> bool {
        false
    }

    /// `rmcp` runs rmcp's stateless path; `rmcp-es` (its event store,
    /// which resumes streams) has nothing to add on a wire without
    /// resumption.
    fn speaks_2026(&self) -> bool {
        !self.event_store
    }

    fn legacy_transport(&self) -> bool {
        false
    }

    fn serve<L: Listener + 'static>(
        &self,
        host: Host<L>,
    ) -> impl Future<Output = io::Result<()>> + 'static {
        // Everything below belongs to this incarnation: a restart loses
        // rmcp's sessions, its cache and the store, not the ledger.
        if let Some(b) = self.exposure.ledger_bytes {
            host.ledger.bound_bytes(b.total, b.per_principal);
        }
        let (bridge, ledger_task) = Bridge::new(host.ledger);
        let ids = Arc::new(Mutex::new(SessionIds::new(
            host.seed,
            self.exposure.session_ids,
        )));
        let mut config = SessionConfig::default();
        // Under `serve`, a session nobody used for `--session-idle-secs`
        // ends as on the built-in arms (rmcp's worker quits past its
        // `keep_alive`, whatever streams are open); the simulator keeps
        // rmcp's default.
        if let Some(idle) = self.exposure.session_idle {
            config.keep_alive = Some(idle);
        }
        let store = self
            .event_store
            .then(|| store::Registry::new(self.cfg.store_capacity, self.exposure.store_bytes));
        let on_close: sessions::OnClose = {
            let (ids, bridge) = (ids.clone(), bridge.clone());
            Box::new(move |inner| {
                if let Some(wire) = ids.lock().expect("not poisoned").forget(inner) {
                    bridge.session_ended(&wire);
                }
            })
        };
        let sessions = sessions::Sessions::new(config, store, on_close);
        let max_chunks = self.cfg.max_chunks;
        let tasks = Arc::new(tasks::Tasks::new(
            self.exposure.session_ids,
            (host.seed, host.replica.as_ref().map(|r| r.index)),
            (self.cfg.task_ttl_ms, self.cfg.task_poll_ms),
            host.history.now_us(),
        ));
        let service = StreamableHttpService::new(
            move || {
                Ok(LedgerTools {
                    bridge: bridge.clone(),
                    max_chunks,
                    tasks: tasks.clone(),
                })
            },
            Arc::new(sessions),
            StreamableHttpServerConfig::default()
                .with_allowed_hosts(
                    [HOST, "localhost", "127.0.0.1", "::1"]
                        .into_iter()
                        .map(String::from)
                        .chain(self.exposure.allowed_hosts.iter().flatten().cloned()),
                )
                .with_sse_keep_alive(None),
        );
        let mut listener = host.listener;
        let exposure = Arc::new(self.exposure.clone());
        async move {
            // Spawned on the incarnation's own runtime, when it first runs.
            tokio::task::spawn_local(ledger_task);
            let mut failing = false;
            loop {
                // On a real socket an accept error (out of descriptors) is
                // waited out, as the built-in server does; in the simulator
                // it is how a restart ends the incarnation.
                let io = match listener.accept().await {
                    Ok(io) => io,
                    Err(e) if exposure.max_connections.is_some() => {
                        if !failing {
                            eprintln!("mcp-chaos: accepting a connection failed ({e}); retrying");
                        }
                        failing = true;
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                failing = false;
                let (service, ids, exposure) = (service.clone(), ids.clone(), exposure.clone());
                tokio::task::spawn_local(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let (service, ids, exposure) =
                            (service.clone(), ids.clone(), exposure.clone());
                        async move {
                            Ok::<_, Infallible>(exchange(&service, &ids, &exposure, req).await)
                        }
                    });
                    // An error here is the peer going away.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .auto_date_header(false)
                        .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
                        .await;
                });
            }
        }
    }
}

type Service = StreamableHttpService<LedgerTools, sessions::Sessions>;

/// One request through rmcp, with session ids rewritten both ways.
async fn exchange(
    service: &Service,
    ids: &Mutex<SessionIds>,
    exposure: &crate::server::Exposure,
    mut req: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if let Some(why) = exposure.refuse_edges(req.version(), req.uri(), req.headers()) {
        use crate::protocol::jsonrpc::{ErrorObject, Message, TRANSPORT_ERROR};
        let body = Message::Error {
            id: None,
            error: ErrorObject::new(TRANSPORT_ERROR, why.message, None),
        }
        .encode();
        use http_body_util::BodyExt;
        let mut resp = Response::new(http_body_util::Full::new(Bytes::from(body)).boxed());
        *resp.status_mut() = why.status;
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if why.close {
            resp.headers_mut()
                .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        }
        return resp;
    }
    if let Some(wire) = session_of(req.headers()) {
        // An id rmcp never issued (another incarnation's, or made up) goes
        // through as it came: rmcp answers it as unknown.
        if let Some(inner) = ids.lock().expect("not poisoned").inner_of(&wire) {
            req.headers_mut().insert(
                MCP_SESSION_ID,
                HeaderValue::from_str(inner).expect("rmcp's ids are header-safe"),
            );
        }
        req.extensions_mut().insert(WireSession(wire));
    }
    let mut resp = service.handle(req).await;
    if let Some(inner) = session_of(resp.headers()) {
        let wire = ids.lock().expect("not poisoned").wire_of(&inner);
        resp.headers_mut().insert(
            MCP_SESSION_ID,
            HeaderValue::from_str(&wire).expect("ours are hex"),
        );
    }
    resp
}

/// The session a message's headers name.
fn session_of(h: &http::HeaderMap) -> Option<String> {
    h.get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// rmcp's session ids and the ones clients see: drawn from the seed in the
/// order rmcp issues them, or from the OS CSPRNG (`serve`).
struct SessionIds {
    seed: u64,
    source: crate::server::SessionIds,
    issued: u64,
    to_wire: BTreeMap<String, String>,
    to_inner: BTreeMap<String, String>,
}

impl SessionIds {
    fn new(seed: u64, source: crate::server::SessionIds) -> Self {
        SessionIds {
            seed,
            source,
            issued: 0,
            to_wire: BTreeMap::new(),
            to_inner: BTreeMap::new(),
        }
    }

    /// A session rmcp closed: both its ids go; the wire one comes back.
    fn forget(&mut self, inner: &str) -> Option<String> {
        let wire = self.to_wire.remove(inner)?;
        self.to_inner.remove(&wire);
        Some(wire)
    }

    fn inner_of(&self, wire: &str) -> Option<&str> {
        self.to_inner.get(wire).map(String::as_str)
    }

    fn wire_of(&mut self, inner: &str) -> String {
        if let Some(w) = self.to_wire.get(inner) {
            return w.clone();
        }
        self.issued += 1;
        let wire = match self.source {
            crate::server::SessionIds::Seeded => format!(
                "rmcp-{:016x}",
                seed::child(self.seed, &format!("session/{}", self.issued))
            ),
            crate::server::SessionIds::Os => {
                use rand::TryRngCore;
                let mut bytes = [0u8; 16];
                // An OS without a working random source cannot serve safely.
                rand::rngs::OsRng
                    .try_fill_bytes(&mut bytes)
                    .expect("the operating system's random source works");
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("rmcp-{hex}")
            }
        };
        self.to_wire.insert(inner.to_string(), wire.clone());
        self.to_inner.insert(wire.clone(), inner.to_string());
        wire
    }
}

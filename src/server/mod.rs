//! The MCP streamable-HTTP server, on hyper 1.x over any
//! listener: turmoil's in the simulator, tokio's on a real socket.
//!
//! Four arms behind one switch ([`Variant`]): *unguarded* behaves as
//! today's SDKs (a retried POST runs the tool again; a POST during a replay
//! is served at once and its events interleave with the replay; a POST
//! reusing an in-flight request id runs again and the id's next result goes
//! on the latest POST's stream, `Record::CrossWired`; a malformed
//! `Last-Event-ID` gets 200 and an empty stream; rmcp's resume quirks are
//! the `replay` and `completed_resume` settings); *guarded*
//! sends every POST through Rule M ([`crate::guard`]), honors dedup tokens
//! and cursors on POST, ends every replay with `replay-end`, and answers a
//! resume from an evicted position with 410; *keys* is unguarded plus the
//! key table alone; *cancel* is unguarded with the 2026-07-28 remedy on
//! today's wire: responses ride their POSTs whatever the scenario says, a
//! resume (GET with `Last-Event-ID`) gets 405, and a close the server sees
//! cancels the request whose stream it was ([`cancel`]). Whichever arm
//! honors `Idempotency-Key` does so on both transports, per principal
//! (bearer token, else session).
//!
//! Everything runs on one thread (a `LocalSet`): state is `Rc<RefCell<_>>`,
//! and no borrow is ever held across an `.await`.

mod calls;
mod dedup;
mod http;
mod replica;
mod routes;
mod session;
mod y2025;
mod y2026;

pub use crate::settings::{
    CancelNotifications, CompletedResume, Delivery, Effects, Era, EventsSender, OnClose, Replay,
    Sdk, ServerConfig, Truncation, Wire,
};
pub use calls::fixtures::Fixtures;
pub use http::body::ServerBody;
pub use http::edges::{parse_host, EdgeRefusal, HOST_REFUSED};
pub use http::exposure::{parse_origin, Exposure, SessionIds, ORIGIN_REFUSED};
pub use replica::stored::StoreLink;
pub use y2026::webhooks::{Dialing, Egress, EgressIo};

/// The longest pause between chunks a `ledger_append` call may ask for, ms
/// (longer ones are refused with invalid params).
pub const MAX_CHUNK_INTERVAL_MS: u64 = 3_600_000;

use crate::history::{ConnId, History, Record, SessionId, Transport};
use crate::ledger::Ledger;
use dedup::DedupTable;
use rand::{RngCore, SeedableRng, TryRngCore};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::AbortHandle;

/// Which built-in server (an *arm* of the comparison): each differs from
/// its baseline in one mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Enforces Rule M and Rule T; honors `Idempotency-Key`.
    Guarded,
    /// Spec-permissive, as today's SDKs behave: no guard, keys ignored; a
    /// reused in-flight request id runs again, cross-wired; a malformed
    /// `Last-Event-ID` gets an empty stream.
    Unguarded,
    /// `unguarded` plus one mechanism: it honors `Idempotency-Key` per
    /// principal. No Rule M, no Rule T.
    Keys,
    /// `unguarded` with the 2026-07-28 remedy on today's wire: sessions
    /// stay, a resume gets 405, a close the server sees cancels its request
    /// (an effect already taken stays), delivery is post-stream. Keys
    /// ignored; no Rule M, no Rule T, no `replay-end`.
    Cancel,
}

impl Variant {
    /// The two the seed cases compare, guarded first.
    pub const BOTH: [Variant; 2] = [Variant::Guarded, Variant::Unguarded];

    /// Every built-in arm, in report order.
    pub const ALL: [Variant; 4] = [
        Variant::Guarded,
        Variant::Unguarded,
        Variant::Keys,
        Variant::Cancel,
    ];

    /// The arm's name (`--server`, JSON, `[expect.<arm>]`).
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Guarded => "guarded",
            Variant::Unguarded => "unguarded",
            Variant::Keys => "keys",
            Variant::Cancel => "cancel",
        }
    }

    /// Whether it enforces Rule M and Rule T.
    pub fn guards(self) -> bool {
        self == Variant::Guarded
    }

    /// Whether it honors `Idempotency-Key`.
    pub fn honors_keys(self) -> bool {
        matches!(self, Variant::Guarded | Variant::Keys)
    }

    /// Whether a close the server sees cancels the request whose response
    /// stream it was, and a resume is refused with 405 (`cancel`).
    pub fn cancels_on_close(self) -> bool {
        self == Variant::Cancel
    }

    /// The delivery this arm uses when the scenario asks for `asked`:
    /// `cancel` always answers on the POST's own stream.
    pub fn delivery(self, asked: Delivery) -> Delivery {
        if self.cancels_on_close() {
            Delivery::PostStream
        } else {
            asked
        }
    }

    /// Whether the SDK baseline's resume quirks (`replay`,
    /// `completed_resume`, `sdk`) apply: on `unguarded` and `keys`. The
    /// guarded arm's resume is Rule M's (exclusive, complete replay, ended
    /// by `replay-end`); `cancel` refuses every resume.
    pub fn sdk_resume_quirks(self) -> bool {
        matches!(self, Variant::Unguarded | Variant::Keys)
    }

    /// Whether a POST reusing the id of a request still in flight in its
    /// session is refused (409, guarded); the other arms run it, and the
    /// two streams cross-wire as the SDKs' do (`Record::CrossWired`).
    pub fn refuses_reused_ids(self) -> bool {
        self.guards()
    }
}

impl std::str::FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Variant::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown server {s:?}: use one of {}",
                    Variant::ALL.map(Variant::as_str).join(", ")
                )
            })
    }
}

/// How tools pace their chunks.
#[derive(Clone, Debug, Default)]
pub enum Pacing {
    /// Sleep `chunk_interval_ms` (simulated time in the simulator).
    #[default]
    Timer,
    /// Each chunk waits for one permit: tests release chunks one by one so
    /// that no wall-clock race decides them.
    Gate(Arc<Semaphore>),
}

/// Which session ids a server may issue (a replica behind a hash
/// balancer: those the ring maps to itself).
pub type Mints = Rc<dyn Fn(&str) -> bool>;

/// A server's place in a deployment: which replica it is, and the session
/// ids it may issue.
#[derive(Clone)]
pub struct Replica {
    /// Its index (0-based).
    pub index: u32,
    /// The session ids it may issue (behind a hash balancer: those the
    /// ring maps to it); `None`: any. Only the built-in arms honour it:
    /// the SDK's server issues its own ids, as shipped.
    pub mints: Option<Mints>,
    /// Which incarnation of the replica this is (0 first).
    pub incarnation: u32,
    /// The shared store, under `store = "shared"`; `None`: the replica
    /// keeps everything in its own memory.
    pub store: Option<StoreLink>,
}

impl Replica {
    /// The first connection id of this replica's records: far enough
    /// from every other replica's that no two share one.
    pub fn conn_base(&self) -> ConnId {
        ConnId::from(self.index) << crate::history::REPLICA_CONN_SHIFT
    }
}

/// Mutable server state.
pub(crate) struct State {
    pub sessions: session::table::SessionTable,
    /// The clock resource's version (`resources/read`).
    pub clock: u64,
    pub rng: ChaCha20Rng,
    pub dedup: DedupTable,
    pub next_conn: ConnId,
    /// Live connection tasks, so the server can close one itself, with
    /// the number of requests each is serving (0: idle).
    pub conns: BTreeMap<ConnId, (AbortHandle, Rc<session::conn::Activity>)>,
    /// The tasks this incarnation is running (the tasks extension), by id.
    pub task_runs: BTreeMap<Rc<str>, Rc<y2026::tasks::TaskRun>>,
}

/// What every handler shares.
pub(crate) struct Shared {
    pub variant: Variant,
    pub cfg: ServerConfig,
    pub history: History,
    pub ledger: Ledger,
    pub pacing: Pacing,
    pub exposure: Exposure,
    /// Bytes all event stores hold, bounded (`Exposure::store_bytes`).
    pub store_budget: Option<Rc<session::StoreBudget>>,
    /// SSE responses open now, per session and per principal (counted
    /// only under the `Exposure` caps).
    pub open_streams: Rc<session::holds::OpenStreams>,
    /// Requests fixture tools sent to clients, awaiting their answers
    /// (empty unless `serve --fixtures`).
    pub asks: calls::fixtures::Asks,
    /// Which session ids this server may issue (a replica behind a hash
    /// balancer issues only ids the ring maps to itself); `None`: any.
    pub mints: Option<Mints>,
    /// The shared store, when the replica is on one.
    pub store: Option<replica::stored::OnStore>,
    /// How webhook deliveries reach receivers (none: the server offers no
    /// webhook delivery).
    pub egress: std::cell::OnceCell<Egress>,
    /// Webhook subscriptions (the Events extension).
    pub(in crate::server) subscriptions: y2026::webhooks::Subscriptions,
    pub state: RefCell<State>,
}

impl Shared {
    pub fn guarded(&self) -> bool {
        self.variant == Variant::Guarded
    }

    /// A new session issued under `issued`, with the server's store
    /// settings and what the exposure bounds.
    pub fn new_session(&self, sid: SessionId, issued: Transport) -> session::Session {
        let mut s = session::Session::new(
            sid,
            issued,
            self.cfg.first_event_id,
            self.cfg.store_capacity,
        );
        s.budget = self.store_budget.clone();
        if let Some(on) = &self.store {
            s.place_ids(on.event_base, on.stream_base);
            s.mirror = Some(on.client.clone());
        }
        s
    }

    /// Closes a connection from the server side (drops its socket).
    pub fn close_conn(&self, conn: ConnId) {
        if let Some((h, _)) = self.state.borrow_mut().conns.remove(&conn) {
            h.abort();
        }
    }

    /// A fresh 128-bit session id, hex: from the seeded generator, or from
    /// the operating system's CSPRNG ([`SessionIds`]).
    pub fn new_session_id(&self) -> SessionId {
        loop {
            let sid = self.draw_session_id();
            if self.mints.as_ref().is_none_or(|owns| owns(&sid)) {
                return sid;
            }
        }
    }

    fn draw_session_id(&self) -> SessionId {
        let mut bytes = [0u8; 16];
        match self.exposure.session_ids {
            SessionIds::Seeded => self.state.borrow_mut().rng.fill_bytes(&mut bytes),
            // An OS without a working random source cannot serve safely.
            SessionIds::Os => rand::rngs::OsRng
                .try_fill_bytes(&mut bytes)
                .expect("the operating system's random source works"),
        }
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        hex.into()
    }
}

/// Anything that accepts connections: tokio's listener on a real socket,
/// turmoil's in the simulator.
pub trait Listener {
    /// The connection type.
    type Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static;
    /// Waits for the next connection.
    fn accept(&mut self) -> impl Future<Output = io::Result<Self::Io>>;

    /// Waits for the next connection, with its peer's address when the
    /// listener knows it (the default: it does not). An exposed server
    /// counts sessions opened without a token per address.
    fn accept_from(&mut self) -> impl Future<Output = io::Result<(Self::Io, Option<IpAddr>)>> {
        async { Ok((self.accept().await?, None)) }
    }
}

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&mut self) -> io::Result<Self::Io> {
        Ok(self.accept_from().await?.0)
    }

    async fn accept_from(&mut self) -> io::Result<(Self::Io, Option<IpAddr>)> {
        let (s, peer) = tokio::net::TcpListener::accept(self).await?;
        s.set_nodelay(true)?;
        Ok((s, Some(peer.ip())))
    }
}

/// One server incarnation. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Server {
    shared: Rc<Shared>,
}

impl Server {
    /// A server of `variant` with `cfg`, recording to `history` and
    /// executing tools against `ledger` (which outlives the server), as the
    /// simulator runs it ([`Exposure::simulated`]).
    pub fn new(
        variant: Variant,
        cfg: ServerConfig,
        history: History,
        ledger: Ledger,
        pacing: Pacing,
    ) -> Self {
        Self::exposed(variant, cfg, history, ledger, pacing, Exposure::simulated())
    }

    /// [`Server::new`] with the settings of a server on a real socket
    /// (`mcp-chaos serve`: [`Exposure::served`]).
    pub fn exposed(
        variant: Variant,
        cfg: ServerConfig,
        history: History,
        ledger: Ledger,
        pacing: Pacing,
        exposure: Exposure,
    ) -> Self {
        Self::build(variant, cfg, history, ledger, (pacing, exposure), None)
    }

    /// A server of `variant` as replica `replica` of a deployment, as the
    /// simulator runs it: its start record names the replica, its
    /// connection ids start at [`Replica::conn_base`] (no two replicas'
    /// records share one), and it issues only the session ids
    /// [`Replica::mints`] accepts (drawn again until one is).
    pub fn replica(
        variant: Variant,
        cfg: ServerConfig,
        history: History,
        ledger: Ledger,
        pacing: Pacing,
        replica: Replica,
    ) -> Self {
        let how = (pacing, Exposure::simulated());
        Self::build(variant, cfg, history, ledger, how, Some(replica))
    }

    fn build(
        variant: Variant,
        cfg: ServerConfig,
        history: History,
        ledger: Ledger,
        (pacing, exposure): (Pacing, Exposure),
        replica: Option<Replica>,
    ) -> Self {
        let mut cfg = cfg;
        if let Some(b) = exposure.ledger_bytes {
            ledger.bound_bytes(b.total, b.per_principal);
            // The budget bounds the key table: every entry costs at least
            // the overhead, so the count never binds before the bytes do
            // (a count shared by every principal would let one flush
            // another's keys).
            cfg.dedup_capacity = cfg
                .dedup_capacity
                .max(b.total / crate::ledger::ENTRY_OVERHEAD);
        }
        if let Some(b) = exposure.task_bounds {
            ledger.tasks().bound(b);
        }
        if let Some(k) = exposure.state_key {
            ledger.set_state_key(k);
        }
        cfg.delivery = variant.delivery(cfg.delivery);
        // The effective resume quirks, resolved once: none on the arms they
        // do not apply to.
        let quirks = variant.sdk_resume_quirks();
        cfg.replay = Some(if quirks {
            cfg.replay_mode()
        } else {
            Replay::Exclusive
        });
        cfg.completed_resume = Some(if quirks {
            cfg.completed_resume_mode()
        } else {
            CompletedResume::Replay
        });
        history.record(Record::ServerStarted {
            variant: variant.as_str(),
            delivery: cfg.delivery,
            replica: replica.as_ref().map(|r| r.index),
        });
        let rng = ChaCha20Rng::seed_from_u64(cfg.session_seed);
        // Durable keys live beside the ledger, which outlives incarnations;
        // this incarnation's in-flight keys start empty either way.
        let dedup = if cfg.durable_dedup {
            DedupTable::durable(cfg.dedup_capacity, ledger.clone())
        } else {
            DedupTable::new(cfg.dedup_capacity)
        }
        .charged_to(&ledger);
        let server = Server {
            shared: Rc::new(Shared {
                variant,
                cfg,
                history,
                ledger,
                pacing,
                store_budget: exposure.store_bytes.map(session::StoreBudget::new),
                open_streams: Rc::default(),
                asks: calls::fixtures::Asks::default(),
                mints: replica.as_ref().and_then(|r| r.mints.clone()),
                store: replica.as_ref().and_then(replica::stored::OnStore::of),
                egress: std::cell::OnceCell::new(),
                subscriptions: Default::default(),
                exposure,
                state: RefCell::new(State {
                    sessions: session::table::SessionTable::default(),
                    clock: 0,
                    rng,
                    dedup,
                    next_conn: replica.as_ref().map_or(0, Replica::conn_base),
                    conns: BTreeMap::new(),
                    task_runs: BTreeMap::new(),
                }),
            }),
        };
        y2026::tasks::on_start(&server.shared);
        server
    }

    /// Delivers webhook subscriptions' occurrences through `egress` (the
    /// Events extension offers `events/subscribe` from now on).
    pub fn deliver_through(self, egress: Egress) -> Self {
        let _ = self.shared.egress.set(egress);
        self
    }

    /// The variant.
    pub fn variant(&self) -> Variant {
        self.shared.variant
    }

    /// Accepts connections forever, serving each on its own local task.
    /// Must run inside a `LocalSet`. In the simulator it returns only on an
    /// accept error; exposed ([`Exposure::max_connections`] set), an accept
    /// error (out of file descriptors, say) closes the oldest idle
    /// connection, waits a moment and accepts again: it never returns.
    pub async fn serve<L: Listener>(self, mut listener: L) -> io::Result<()> {
        if self.shared.cfg.resource_interval_ms > 0 {
            tokio::task::spawn_local(y2025::legacy::tick_resources(self.shared.clone()));
        }
        if let Some(every) = session::holds::expiry_period(&self.shared) {
            tokio::task::spawn_local(routes::expire_idle_sessions(self.shared.clone(), every));
        }
        if self.shared.egress.get().is_some()
            && self.shared.cfg.events_sender == EventsSender::Durable
        {
            tokio::task::spawn_local(y2026::webhooks::keep(self.shared.clone()));
        }
        if replica::shared_guard::on(&self.shared) {
            tokio::task::spawn_local(replica::shared_guard::publish(self.shared.clone()));
        }
        let mut failing = false;
        loop {
            let (io, peer) = match listener.accept_from().await {
                Ok(accepted) => accepted,
                Err(e) if self.shared.exposure.max_connections.is_some() => {
                    if !failing {
                        eprintln!("mcp-chaos: accepting a connection failed ({e}); closing idle connections and retrying");
                    }
                    failing = true;
                    session::conn::close_oldest_idle(&self.shared);
                    tokio::time::sleep(session::conn::ACCEPT_BACKOFF).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            failing = false;
            if let Some(cap) = self.shared.exposure.max_connections {
                if self.shared.state.borrow().conns.len() >= cap {
                    if !session::conn::close_oldest_idle(&self.shared) {
                        session::conn::refuse(io);
                        continue;
                    }
                    // Let the closed connection's task go (and its socket
                    // with it) before this one takes a descriptor.
                    tokio::task::yield_now().await;
                }
            }
            self.serve_connection_from(io, peer);
        }
    }

    /// Serves one accepted connection on a local task.
    pub fn serve_connection<I>(&self, io: I)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
    {
        self.serve_connection_from(io, None);
    }

    /// [`Server::serve_connection`] for a connection from `peer`.
    pub fn serve_connection_from<I>(&self, io: I, peer: Option<IpAddr>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
    {
        let shared = self.shared.clone();
        let conn = {
            let mut st = shared.state.borrow_mut();
            st.next_conn += 1;
            st.next_conn
        };
        let busy = Rc::new(session::conn::Activity::default());
        let task_shared = shared.clone();
        let task_busy = busy.clone();
        let idle_busy = busy.clone();
        let handle = tokio::task::spawn_local(async move {
            let svc_shared = task_shared.clone();
            let service = hyper::service::service_fn(move |mut req: ::http::Request<_>| {
                let s = svc_shared.clone();
                let busy = session::conn::Busy::enter(&task_busy);
                req.extensions_mut().insert(http::principal::Peer(peer));
                async move {
                    let no_buffering = s.cfg.buffering_header();
                    let logged = s.exposure.log.then(|| request_line(&req));
                    let (mut resp, slot) = routes::handle(s, req, conn).await;
                    if let Some(line) = logged {
                        // A closed stderr loses the line, never the request.
                        use std::io::Write;
                        let _ = writeln!(
                            std::io::stderr(),
                            "serve: conn {conn} {line} -> {}",
                            response_line(&resp)
                        );
                    }
                    if no_buffering {
                        http::respond::say_no_buffering(&mut resp);
                    }
                    Ok::<_, std::convert::Infallible>(
                        resp.map(|b| session::conn::Tracked::new(b, busy, slot)),
                    )
                }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .max_buf_size(16 * 1024);
            if let Some(t) = task_shared.exposure.header_timeout {
                builder.header_read_timeout(t);
            }
            // Errors here are the peer going away; the writers observe
            // that through their channels and record it.
            let served = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
            let idle = std::time::Duration::from_millis(task_shared.cfg.server_idle_ms);
            tokio::select! {
                biased;
                _ = served => {}
                _ = session::conn::idle_for(&idle_busy, idle) => {
                    task_shared.history.record(Record::IdleClosed { conn });
                }
            }
            task_shared.state.borrow_mut().conns.remove(&conn);
        });
        shared
            .state
            .borrow_mut()
            .conns
            .insert(conn, (handle.abort_handle(), busy));
    }
}

/// A request as `serve --log` names it: method, path, session.
fn request_line<B>(req: &::http::Request<B>) -> String {
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    format!("{} {} session {session}", req.method(), req.uri().path())
}

/// A response as `serve --log` names it: status, content type.
fn response_line<B>(resp: &::http::Response<B>) -> String {
    let kind = resp
        .headers()
        .get(::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    format!("{} {kind}", resp.status().as_u16())
}

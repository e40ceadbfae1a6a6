//! The balancer: an HTTP/1.1 proxy in front of the replicas, the only
//! address the clients know in a deployment (`[deployment]`). It reads
//! what a real one reads (the `Mcp-Session-Id` header, the bearer token)
//! and nothing of the replicas' insides: the session a replica issued is
//! learnt from the response head of `initialize`, as a gateway learns it.
//!
//! Each request is forwarded on a connection of its own to the replica the
//! policy picks, and the replica's response streams back as it comes (SSE
//! included). A client that goes away closes the forward (the replica sees
//! the close, as it would without the balancer); a replica that goes away
//! mid-body breaks the client's response.
//!
//! Generic over [`Listener`] and [`Connector`] like the server and the
//! clients; it runs on a host's `LocalSet` and keeps its state in one
//! `RefCell`, never borrowed across an `.await`.

use crate::base::seed;
use crate::client::Connector;
use crate::history::{History, WorldRecord};
use crate::hosts::intermediary::{self, ConnGuard, Relay};
use crate::protocol::headers::{AUTHORIZATION, LAST_EVENT_ID, MCP_SESSION_ID};
use crate::protocol::jsonrpc::{ErrorObject, Message, INTERNAL_ERROR, SESSION_ERROR};
use crate::scenario::{
    BalancerKind, DeploymentSpec, Intermediary, OnDeadUpstream, PinKey, ResumeRouting, StoreKind,
};
use crate::server::Listener;
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::io;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::Instant;

/// Points each replica takes on the hash ring.
const RING_POINTS: u64 = 64;

/// A consistent-hash ring over the replicas: a session id belongs to the
/// replica owning the first point at or after its hash (wrapping).
#[derive(Clone, Debug)]
pub struct Ring {
    points: BTreeMap<u64, u32>,
}

impl Ring {
    /// The ring over replicas `0..replicas`.
    pub fn new(replicas: u32) -> Ring {
        Ring::over(0..replicas)
    }

    /// The ring over the replicas `members`: a replica's points do not
    /// depend on the others, so a member leaving moves only its own
    /// sessions, and one joining takes only the sessions it now owns.
    pub fn over(members: impl IntoIterator<Item = u32>) -> Ring {
        let mut points = BTreeMap::new();
        for r in members {
            let base = seed::fnv1a(format!("replica{r}").as_bytes());
            for v in 0..RING_POINTS {
                points.insert(seed::splitmix64(base ^ v), r);
            }
        }
        Ring { points }
    }

    /// The replica that owns `session`.
    pub fn owner(&self, session: &str) -> u32 {
        let h = seed::splitmix64(seed::fnv1a(session.as_bytes()));
        let first = self
            .points
            .range(h..)
            .next()
            .or_else(|| self.points.iter().next());
        first.map_or(0, |(_, r)| *r)
    }
}

/// What the deployment's orchestrator tells the balancer (the world sets
/// it, as service discovery and a readiness probe would): the replicas in
/// the deployment, and those draining, which take no new session but keep
/// serving the ones they hold.
#[derive(Debug, Default)]
pub struct Membership {
    /// Replicas in the deployment (added ones join, removed ones leave).
    pub members: BTreeSet<u32>,
    /// Replicas taking no new sessions.
    pub draining: BTreeSet<u32>,
    /// The hash ring over `members`, kept with them.
    ring: Option<Rc<Ring>>,
}

impl Membership {
    /// The first `replicas` replicas, none draining.
    pub fn of(replicas: u32) -> Membership {
        Membership {
            members: (0..replicas).collect(),
            ..Membership::default()
        }
    }

    /// The hash ring over the members now.
    pub fn ring(&mut self) -> Rc<Ring> {
        let members = &self.members;
        self.ring
            .get_or_insert_with(|| Rc::new(Ring::over(members.iter().copied())))
            .clone()
    }

    /// Replica `r` joins.
    pub fn join(&mut self, r: u32) {
        self.members.insert(r);
        self.ring = None;
    }

    /// Replica `r` leaves.
    pub fn leave(&mut self, r: u32) {
        self.members.remove(&r);
        self.ring = None;
    }
}

/// The orchestrator's handle on the balancer's membership.
pub type Control = Rc<RefCell<Membership>>;

/// A sticky pin: which replica, and when it was made.
#[derive(Clone, Copy, Debug)]
struct Pinned {
    replica: u32,
    made: Instant,
}

/// What the balancer keeps (lost when its host restarts).
#[derive(Default)]
struct State {
    /// The next replica of the round-robin turn.
    turn: u32,
    /// Sticky pins by key (a session id or a token).
    pins: BTreeMap<Rc<str>, Pinned>,
    /// Replicas a forward failed to reach, out of the turn until then.
    down: BTreeMap<u32, Instant>,
}

/// How long a replica a forward could not reach stays out of the
/// round-robin turn (a passive health check).
const DOWN_FOR: Duration = Duration::from_millis(1_000);

/// How long a connect to a replica may take (a proxy's connect timeout):
/// a replica that does not accept in time (down, or hung) counts as
/// unreachable, as one that refuses does.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1_000);

/// How often a forward pinned to an unreachable replica tries it again
/// before its timeout.
const RECONNECT_EVERY: Duration = Duration::from_millis(100);

struct Shared<C> {
    upstreams: Vec<C>,
    spec: DeploymentSpec,
    /// What it does to the traffic it relays (`[intermediary]`).
    intermediary: Intermediary,
    control: Control,
    history: History,
    state: RefCell<State>,
}

/// The balancer over `upstreams` (replica `i` is `upstreams[i]`).
pub struct Balancer<C> {
    shared: Rc<Shared<C>>,
}

impl<C: Connector> Balancer<C> {
    /// A balancer as `spec` describes it, doing what `intermediary` says
    /// to the traffic it relays, with fresh state (no pins), the
    /// orchestrator's `control` and the run's `history` (a pin that
    /// expired under a request is recorded).
    pub fn new(
        (spec, intermediary): (&DeploymentSpec, &Intermediary),
        upstreams: Vec<C>,
        control: Control,
        history: History,
    ) -> Balancer<C> {
        Balancer {
            shared: Rc::new(Shared {
                upstreams,
                spec: spec.clone(),
                intermediary: intermediary.clone(),
                control,
                history,
                state: RefCell::new(State::default()),
            }),
        }
    }

    /// Accepts client connections until the listener fails, serving each
    /// on its own local task.
    pub async fn serve<L: Listener>(self, mut listener: L) -> io::Result<()> {
        loop {
            let io = listener.accept().await?;
            let shared = self.shared.clone();
            tokio::task::spawn_local(async move {
                let service = hyper::service::service_fn(move |req| {
                    let s = shared.clone();
                    async move { Ok::<_, Infallible>(forward(&s, req).await) }
                });
                // Errors are the client or a replica going away.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(io), service)
                    .await;
            });
        }
    }
}

/// What a request names: its session and its token.
fn keys(h: &HeaderMap) -> (Option<Rc<str>>, Option<Rc<str>>) {
    let text = |name: &str| h.get(name).and_then(|v| v.to_str().ok());
    let session = text(MCP_SESSION_ID).map(Rc::from);
    let token = text(AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| Rc::from(t.trim()));
    (session, token)
}

/// Where a request goes: a replica, and whether it is tied to it (a live
/// pin, or the ring's owner of its session) or just took the next turn.
#[derive(Clone, Copy, Debug)]
struct Route {
    replica: u32,
    tied: bool,
}

impl<C> Shared<C> {
    /// The next replica in turn that is not out of it (not a member,
    /// down or draining; the next member, when all are).
    fn next_turn(&self) -> u32 {
        let n = self.upstreams.len() as u32;
        let m = self.control.borrow();
        let mut st = self.state.borrow_mut();
        let now = Instant::now();
        let turn = st.turn;
        let ring = (0..n).map(|i| (turn + i) % n);
        let open =
            |r: &u32| !m.draining.contains(r) && st.down.get(r).is_none_or(|until| *until <= now);
        let members = ring.filter(|r| m.members.contains(r));
        let r = members
            .clone()
            .find(open)
            .or_else(|| members.clone().next())
            .unwrap_or(turn);
        st.turn = (r + 1) % n;
        r
    }

    /// The live pin under `key`, dropping an expired one.
    fn pinned(&self, key: &Rc<str>) -> Option<u32> {
        let mut st = self.state.borrow_mut();
        let pin = *st.pins.get(key)?;
        let ttl = self.spec.affinity_ttl_ms;
        if ttl > 0 && pin.made.elapsed() >= Duration::from_millis(ttl) {
            st.pins.remove(key);
            return None;
        }
        Some(pin.replica)
    }

    /// A sticky request's pin, recording one that expired under it (the
    /// request then goes wherever the turn sends it).
    fn pin_of(&self, key: &Rc<str>, session: &Option<Rc<str>>) -> Option<u32> {
        let had = self.state.borrow().pins.get(key).map(|p| p.replica);
        let live = self.pinned(key);
        if let (Some(replica), None) = (had, live) {
            self.history.record(WorldRecord::PinExpired {
                replica,
                session: session.clone(),
            });
        }
        live
    }

    fn pin(&self, key: Rc<str>, replica: u32) {
        self.state.borrow_mut().pins.insert(
            key,
            Pinned {
                replica,
                made: Instant::now(),
            },
        );
    }

    fn unpin(&self, key: &Rc<str>) {
        self.state.borrow_mut().pins.remove(key);
    }

    fn mark_down(&self, replica: u32) {
        let until = Instant::now() + DOWN_FOR;
        self.state.borrow_mut().down.insert(replica, until);
    }

    /// The sticky key of a request, as `pin_key` says.
    fn pin_key(&self, session: &Option<Rc<str>>, token: &Option<Rc<str>>) -> Option<Rc<str>> {
        match self.spec.pin_key {
            PinKey::Session => session.clone(),
            PinKey::Client => token.clone(),
        }
    }

    /// Where a request goes.
    fn route(&self, session: &Option<Rc<str>>, token: &Option<Rc<str>>) -> Route {
        let tied = |replica| Route {
            replica,
            tied: true,
        };
        let turn = || Route {
            replica: self.next_turn(),
            tied: false,
        };
        match self.spec.balancer {
            BalancerKind::None => tied(0),
            BalancerKind::RoundRobin => turn(),
            BalancerKind::Hash => session.as_ref().map_or_else(turn, |s| {
                let ring = self.control.borrow_mut().ring();
                tied(ring.owner(s))
            }),
            BalancerKind::Sticky => self
                .pin_key(session, token)
                .and_then(|k| self.pin_of(&k, session))
                .map_or_else(turn, tied),
        }
    }

    /// Under `resume = "pin-owner"` on a shared store, a resume (GET with
    /// `Last-Event-ID`) goes to the replica that gave the event, while it
    /// is a member and not known down; otherwise as any request (and the
    /// replica it reaches serves it from the store). Not tied: an owner
    /// that refuses the connection hands the resume to the next in turn.
    fn resume_owner(&self, parts: &http::request::Parts) -> Option<Route> {
        if self.spec.store != StoreKind::Shared
            || self.spec.resume != ResumeRouting::PinOwner
            || parts.method != http::Method::GET
        {
            return None;
        }
        let id = parts.headers.get(LAST_EVENT_ID)?.to_str().ok()?;
        let owner = crate::store::replica_of_event(id.trim().parse().ok()?)?;
        let live = self.control.borrow().members.contains(&owner)
            && self
                .state
                .borrow()
                .down
                .get(&owner)
                .is_none_or(|until| *until <= Instant::now());
        live.then_some(Route {
            replica: owner,
            tied: false,
        })
    }

    /// On the 2026-07-28 wire a task's requests (`tasks/get`, `update`,
    /// `cancel`) name the task in `Mcp-Name`, and the task id names the
    /// replica that runs it: they go there, tied to it (a down replica's
    /// tasks wait, or go elsewhere under `on_dead_upstream = "repin"`).
    fn task_owner(&self, parts: &http::request::Parts) -> Option<Route> {
        let h = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let method = h(crate::protocol::y2026::MCP_METHOD)?;
        if !method.starts_with("tasks/") {
            return None;
        }
        let owner = crate::store::replica_of_task(h(crate::protocol::y2026::MCP_NAME)?.trim())?;
        self.control
            .borrow()
            .members
            .contains(&owner)
            .then_some(Route {
                replica: owner,
                tied: true,
            })
    }

    /// After a forward answered: a sticky balancer pins the session the
    /// replica issued (from its response head), or the client's token.
    fn learn(&self, replica: u32, issued: Option<Rc<str>>, token: &Option<Rc<str>>) {
        if self.spec.balancer != BalancerKind::Sticky {
            return;
        }
        let key = match self.spec.pin_key {
            PinKey::Session => issued,
            PinKey::Client => token.clone(),
        };
        if let Some(k) = key {
            if self.pinned(&k) != Some(replica) {
                self.pin(k, replica);
            }
        }
    }
}

/// Why a forward failed.
enum Failed {
    /// No connection to the replica (refused, reset): nothing was sent,
    /// so another try is safe.
    Connect,
    /// The exchange broke after the request went out: it may have run,
    /// so it is not sent again.
    Exchange,
}

/// Forwards one request and gives back the response to stream to the
/// client: the replica's, or the balancer's own error. A request not tied
/// to a replica goes to the next one in turn that takes the connection;
/// one tied to its replica keeps trying it until `forward_timeout_ms`,
/// then gets 404 (`on_dead_upstream = "wait"`: the pin stays) or goes to
/// the next replica in turn (`"repin"`: the pin is dropped).
async fn forward<C: Connector>(s: &Shared<C>, req: Request<Incoming>) -> Response<Relay> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|c| c.to_bytes()) else {
        return refusal(StatusCode::BAD_REQUEST, "the request body broke off");
    };
    let (session, token) = keys(&parts.headers);
    let mut route = s
        .resume_owner(&parts)
        .or_else(|| s.task_owner(&parts))
        .unwrap_or_else(|| s.route(&session, &token));
    let timeout = Duration::from_millis(s.spec.forward_timeout_ms);
    let mut deadline = Instant::now() + timeout;
    let mut refused = 0;
    let i = &s.intermediary;
    // A POST sent again once, as a proxy with `retry_post` does.
    let mut retries = u32::from(i.retry_post && parts.method == http::Method::POST);
    loop {
        let upstream = &s.upstreams[route.replica as usize];
        // The head waits no longer than the proxy's idle limit.
        let head_by = match i.idle_timeout_ms {
            0 => deadline,
            ms => deadline.min(Instant::now() + Duration::from_millis(ms)),
        };
        match tokio::time::timeout_at(head_by, send(upstream, &parts, &body)).await {
            Ok(Ok((resp, conn))) => {
                let issued = resp
                    .headers()
                    .get(MCP_SESSION_ID)
                    .and_then(|v| v.to_str().ok())
                    .map(Rc::<str>::from);
                s.learn(route.replica, issued.filter(|_| session.is_none()), &token);
                if intermediary::buffers(i, &resp) {
                    return intermediary::buffered(i, resp, conn)
                        .await
                        .unwrap_or_else(|(status, why)| refusal(status, why));
                }
                let sse = intermediary::is_sse(&resp);
                return resp.map(|body| Relay::upstream(body, conn, i, sse));
            }
            Ok(Err(Failed::Exchange)) | Err(_) if retries > 0 => {
                retries -= 1;
                continue;
            }
            Err(_) if Instant::now() < deadline => {
                return refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the upstream did not begin its response within the idle limit",
                );
            }
            Ok(Err(Failed::Exchange)) => {
                return refusal(
                    StatusCode::BAD_GATEWAY,
                    &format!("replica {} broke off the exchange", route.replica),
                );
            }
            Ok(Err(Failed::Connect)) => {
                s.mark_down(route.replica);
                if route.tied {
                    let wait = RECONNECT_EVERY.min(deadline - Instant::now());
                    tokio::time::sleep(wait).await;
                    if Instant::now() < deadline {
                        continue;
                    }
                } else {
                    refused += 1;
                    if refused >= s.upstreams.len() {
                        return refusal(StatusCode::BAD_GATEWAY, "no replica took the connection");
                    }
                    route = s.route(&None, &None);
                    continue;
                }
            }
            Err(_) => s.mark_down(route.replica),
        }
        // The deadline passed.
        let key = s.pin_key(&session, &token);
        match (route.tied, s.spec.on_dead_upstream) {
            (true, OnDeadUpstream::Wait) => {
                return refusal(
                    StatusCode::NOT_FOUND,
                    "session not found: its replica did not answer",
                );
            }
            (true, OnDeadUpstream::Repin) => {
                if let Some(k) = &key {
                    s.unpin(k);
                }
                route = Route {
                    replica: s.next_turn(),
                    tied: false,
                };
                deadline = Instant::now() + timeout;
            }
            (false, _) => {
                return refusal(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!("replica {} did not answer in time", route.replica),
                );
            }
        }
    }
}

/// Sends the request to one replica on a connection of its own; the
/// connection lives as long as the guard returned with the response.
async fn send<C: Connector>(
    upstream: &C,
    parts: &http::request::Parts,
    body: &Bytes,
) -> Result<(Response<Incoming>, ConnGuard), Failed> {
    let io = tokio::time::timeout(CONNECT_TIMEOUT, upstream.connect())
        .await
        .map_err(|_| Failed::Connect)?
        .map_err(|_| Failed::Connect)?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
            .await
            .map_err(|_| Failed::Connect)?;
    let task = tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    let guard = ConnGuard(task.abort_handle());
    let mut req = Request::new(Full::new(body.clone()));
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.headers_mut() = parts.headers.clone();
    let resp = sender
        .send_request(req)
        .await
        .map_err(|_| Failed::Exchange)?;
    Ok((resp, guard))
}

/// The balancer's own answer: `status` with a JSON-RPC error body.
fn refusal(status: StatusCode, message: &str) -> Response<Relay> {
    let code = if status == StatusCode::NOT_FOUND {
        SESSION_ERROR
    } else {
        INTERNAL_ERROR
    };
    let body = Message::Error {
        id: None,
        error: ErrorObject::new(code, message, None),
    }
    .encode();
    let mut r = Response::new(Relay::Local(Some(Bytes::from(body))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ring spreads ids over every replica, and each id has one owner
    /// that does not depend on the order ids are asked about.
    #[test]
    fn the_ring_spreads_sessions_over_every_replica() {
        let ring = Ring::new(3);
        let mut per = [0u32; 3];
        for i in 0..3000 {
            per[ring.owner(&format!("{i:032x}")) as usize] += 1;
        }
        for (r, n) in per.iter().enumerate() {
            assert!((500..1500).contains(n), "replica {r} owns {n} of 3000");
        }
        assert_eq!(ring.owner("abc"), Ring::new(3).owner("abc"));
    }
}

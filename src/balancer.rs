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

use crate::client::Connector;
use crate::protocol::headers::{AUTHORIZATION, MCP_SESSION_ID};
use crate::protocol::jsonrpc::{ErrorObject, Message, INTERNAL_ERROR, SESSION_ERROR};
use crate::scenario::{BalancerKind, DeploymentSpec, OnDeadUpstream, PinKey};
use crate::seed;
use crate::server::Listener;
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::task::AbortHandle;
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
        let mut points = BTreeMap::new();
        for r in 0..replicas {
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
}

struct Shared<C> {
    upstreams: Vec<C>,
    spec: DeploymentSpec,
    ring: Ring,
    state: RefCell<State>,
}

/// The balancer over `upstreams` (replica `i` is `upstreams[i]`).
pub struct Balancer<C> {
    shared: Rc<Shared<C>>,
}

impl<C: Connector> Balancer<C> {
    /// A balancer as `spec` describes it, with fresh state.
    pub fn new(spec: &DeploymentSpec, upstreams: Vec<C>) -> Balancer<C> {
        Balancer {
            shared: Rc::new(Shared {
                ring: Ring::new(upstreams.len() as u32),
                upstreams,
                spec: spec.clone(),
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

impl<C> Shared<C> {
    /// The next replica in turn.
    fn next_turn(&self) -> u32 {
        let mut st = self.state.borrow_mut();
        let r = st.turn;
        st.turn = (r + 1) % self.upstreams.len() as u32;
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

    /// The sticky key of a request, as `pin_key` says.
    fn pin_key(&self, session: &Option<Rc<str>>, token: &Option<Rc<str>>) -> Option<Rc<str>> {
        match self.spec.pin_key {
            PinKey::Session => session.clone(),
            PinKey::Client => token.clone(),
        }
    }

    /// The replica a request goes to, pinning a client key on first
    /// sight.
    fn route(&self, session: &Option<Rc<str>>, token: &Option<Rc<str>>) -> u32 {
        match self.spec.balancer {
            BalancerKind::None => 0,
            BalancerKind::RoundRobin => self.next_turn(),
            BalancerKind::Hash => match session {
                Some(s) => self.ring.owner(s),
                None => self.next_turn(),
            },
            BalancerKind::Sticky => match self.pin_key(session, token) {
                Some(k) => self.pinned(&k).unwrap_or_else(|| {
                    let r = self.next_turn();
                    // A session is pinned once its replica issued it (from
                    // the response head); a client key, at first sight.
                    if self.spec.pin_key == PinKey::Client {
                        self.pin(k, r);
                    }
                    r
                }),
                None => self.next_turn(),
            },
        }
    }
}

/// Forwards one request and gives back the response to stream to the
/// client: the replica's, or the balancer's own error.
async fn forward<C: Connector>(s: &Shared<C>, req: Request<Incoming>) -> Response<Relay> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|c| c.to_bytes()) else {
        return refusal(StatusCode::BAD_REQUEST, "the request body broke off");
    };
    let (session, token) = keys(&parts.headers);
    let replica = s.route(&session, &token);
    let timeout = Duration::from_millis(s.spec.forward_timeout_ms);
    let sent = tokio::time::timeout(timeout, send(&s.upstreams[replica as usize], &parts, &body));
    match sent.await {
        Ok(Ok((resp, conn))) => {
            let issued = resp
                .headers()
                .get(MCP_SESSION_ID)
                .and_then(|v| v.to_str().ok())
                .map(Rc::<str>::from);
            if let (BalancerKind::Sticky, PinKey::Session, Some(sid), None) =
                (s.spec.balancer, s.spec.pin_key, issued, &session)
            {
                s.pin(sid, replica);
            }
            resp.map(|body| Relay::Upstream { body, _conn: conn })
        }
        Ok(Err(_)) => refusal(
            StatusCode::BAD_GATEWAY,
            &format!("the balancer could not reach replica {replica}"),
        ),
        Err(_) => {
            let sticky = s.spec.balancer == BalancerKind::Sticky;
            match (sticky, s.spec.on_dead_upstream, s.pin_key(&session, &token)) {
                (true, OnDeadUpstream::Wait, Some(_)) => refusal(
                    StatusCode::NOT_FOUND,
                    "session not found: the pinned replica did not answer",
                ),
                (true, OnDeadUpstream::Repin, Some(k)) => {
                    s.unpin(&k);
                    refusal(
                        StatusCode::GATEWAY_TIMEOUT,
                        &format!("replica {replica} did not answer; the pin is dropped"),
                    )
                }
                _ => refusal(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!("replica {replica} did not answer in time"),
                ),
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
) -> Result<(Response<Incoming>, ConnGuard), Box<dyn std::error::Error>> {
    let io = upstream.connect().await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
    let task = tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    let guard = ConnGuard(task.abort_handle());
    let mut req = Request::new(Full::new(body.clone()));
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = parts.uri.clone();
    *req.headers_mut() = parts.headers.clone();
    let resp = sender.send_request(req).await?;
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

/// Closes a forward's connection to its replica when dropped.
struct ConnGuard(AbortHandle);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response body as the balancer relays it.
enum Relay {
    /// A replica's body, streamed as it comes; dropping it closes the
    /// connection to the replica.
    Upstream {
        /// The body.
        body: Incoming,
        /// Its connection.
        _conn: ConnGuard,
    },
    /// The balancer's own body.
    Local(Option<Bytes>),
}

impl Body for Relay {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            Relay::Upstream { body, .. } => Pin::new(body).poll_frame(cx),
            Relay::Local(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Relay::Upstream { body, .. } => body.is_end_stream(),
            Relay::Local(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Relay::Upstream { body, .. } => body.size_hint(),
            Relay::Local(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Relay::Local(None) => SizeHint::with_exact(0),
        }
    }
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

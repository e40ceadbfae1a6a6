//! A client's webhook reader (the Events extension, docs/events.md): a
//! receiver on the client's own host takes the server's deliveries, and
//! beside it the client subscribes (`events/subscribe`), refreshes the
//! subscription before it lapses from the watermark the deliveries
//! carried, and unsubscribes when the run stops it. The receiver verifies
//! each delivery's signature, deduplicates as `[clients.receiver]` says,
//! answers 503 when drawn busy, and hands each delivery it takes to the
//! application, writing what the oracle needs.

use super::events::{request, Started};
use crate::base::clock::WallClock;
use crate::client::http::{self, Limits};
use crate::client::reader::Connector;
use crate::history::{ClientRecord, History};
use crate::protocol::events::{self as ev, Cursor, Occurrence};
use crate::protocol::jsonrpc::Message;
use crate::protocol::webhook::{self as wh, Envelope, SubscribeResult};
use crate::scenario::{Dedup, ReceiverSpec};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::Instant;

/// Largest delivery body a receiver reads (the draft's SHOULD for
/// senders: 256 KiB).
const MAX_BODY: usize = 256 * 1024;

/// Accepts the connections of a receiver's listener.
pub trait Accept: 'static {
    /// The connection type.
    type Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static;
    /// Waits for the next connection.
    fn accept(&mut self) -> impl Future<Output = io::Result<Self::Io>>;
}

/// A receiver's power, as a `receiver_restart` fault works it: down (a
/// connection to it is closed unanswered) or up, and how often it
/// restarted (each restart forgets the ids it took).
#[derive(Debug, Default)]
pub struct Power {
    down: Cell<bool>,
    restarts: Cell<u32>,
    /// Its client's refreshes are lost on the way to the server now.
    pub refresh_lost: Cell<bool>,
}

impl Power {
    /// It restarts now: down until [`Power::up`] if `down`, else back at
    /// once; either way without the ids it took.
    pub fn restart(&self, down: bool) {
        self.restarts.set(self.restarts.get() + 1);
        self.down.set(down);
    }

    /// It is back up.
    pub fn up(&self) {
        self.down.set(false);
    }
}

/// One webhook reader's settings.
#[derive(Clone, Debug)]
pub struct WebhookSpec {
    /// The client it reads for.
    pub client: u32,
    /// The receiver's URL, as the server is told it.
    pub url: String,
    /// The receiver and its subscription.
    pub receiver: ReceiverSpec,
    /// Signing key bytes (the secret is `whsec_` and their base64).
    pub key: Vec<u8>,
    /// Draws the receiver's busy answers.
    pub seed: u64,
    /// When it unsubscribes, since the run's start.
    pub stop: Duration,
    /// The run's end, since its start.
    pub end: Duration,
    /// Longest wait for an answer.
    pub read_timeout: Duration,
    /// Pause after a failed request.
    pub backoff: Duration,
    /// Its host's wall clock: the time it checks signatures with.
    pub wall: WallClock,
    /// Its receiver's power (restarts the world works).
    pub power: Rc<Power>,
}

/// What the receiver keeps.
struct Receiver {
    client: u32,
    spec: ReceiverSpec,
    key: Vec<u8>,
    rng: ChaCha8Rng,
    /// Ids taken, with when (µs), for deduplication.
    seen: BTreeMap<String, u64>,
    /// The newest watermark delivered.
    cursor: Option<u64>,
    /// Its restarts seen: one more on its power forgets `seen`.
    restarts: u32,
    power: Rc<Power>,
    wall: WallClock,
    history: History,
}

/// Runs one webhook reader to the end of the run. Must run inside a
/// `LocalSet`.
pub async fn run<C: Connector, A: Accept>(spec: WebhookSpec, c: C, listener: A, history: History) {
    let origin = Instant::now() - Duration::from_micros(history.now_us());
    let now = || Duration::from_micros(history.now_us());
    history.record(ClientRecord::ReceiverListening {
        client: spec.client,
        url: spec.url.as_str().into(),
        dedup: spec.receiver.dedup.as_str().into(),
    });
    let recv = Rc::new(RefCell::new(Receiver {
        client: spec.client,
        spec: spec.receiver.clone(),
        key: spec.key.clone(),
        rng: ChaCha8Rng::seed_from_u64(spec.seed),
        seen: BTreeMap::new(),
        cursor: None,
        restarts: 0,
        power: spec.power.clone(),
        wall: spec.wall.clone(),
        history: history.clone(),
    }));
    let serving = tokio::task::spawn_local(receive(listener, recv.clone()));
    let mut started = Started::new(spec.client, history.clone());
    let mut next_id = 0u64;
    while now() < spec.stop {
        let cursor = recv.borrow().cursor;
        next_id += 1;
        // A refresh lost on the way (the `refresh_lost` fault): the server
        // never sees it; the client waits out its read timeout.
        let answer = match spec.power.refresh_lost.get() {
            true => {
                tokio::time::sleep(spec.read_timeout).await;
                None
            }
            false => subscribe(&spec, &c, next_id, cursor).await,
        };
        let wait = match answer {
            Some(r) => {
                started.begin();
                if r.truncated {
                    let held = cursor.map(|seq| Cursor { seq }.encode(ev::CLOCK_TICK));
                    started.truncated(held.as_deref(), Some(&r.cursor));
                }
                recv.borrow_mut().moved_to(&r.cursor);
                Duration::from_millis(spec.receiver.refresh_ms)
            }
            None => spec.backoff,
        };
        let until = (now() + wait).min(spec.stop);
        tokio::time::sleep_until(origin + until).await;
    }
    // Stopped: what was produced by now is owed; then unsubscribe.
    history.record(ClientRecord::EventsDrained {
        client: spec.client,
        sent_us: history.now_us(),
    });
    while now() < spec.end {
        next_id += 1;
        if unsubscribe(&spec, &c, next_id).await {
            break;
        }
        let until = (now() + spec.backoff).min(spec.end);
        tokio::time::sleep_until(origin + until).await;
    }
    tokio::time::sleep_until(origin + spec.end).await;
    serving.abort();
}

/// The subscription's params: this receiver's URL, and from `cursor`.
fn params(spec: &WebhookSpec, cursor: Option<u64>) -> serde_json::Value {
    json!({
        "name": ev::CLOCK_TICK,
        "arguments": {},
        "delivery": {"mode": "webhook", "url": spec.url, "secret": wh::secret_of(&spec.key)},
        "cursor": cursor.map(|seq| Cursor { seq }.encode(ev::CLOCK_TICK)),
        "ttlMs": spec.receiver.ttl_ms,
    })
}

/// One request answered with a result, or `None`.
async fn ask<C: Connector>(
    spec: &WebhookSpec,
    c: &C,
    n: u64,
    method: &str,
    p: serde_json::Value,
) -> Option<Message> {
    let bearer = format!("Bearer mcp-chaos-events-{}", spec.client);
    let out = request(spec.client, n, method, p).header("authorization", &bearer);
    let answer = tokio::time::timeout(spec.read_timeout, async {
        let io = c.connect().await.ok()?;
        let ex = http::send_bounded(io, out, Limits::default()).await.ok()?;
        match ex.status.is_success() {
            true => ex.json().await.ok().flatten(),
            false => None,
        }
    });
    answer.await.ok().flatten()
}

async fn subscribe<C: Connector>(
    spec: &WebhookSpec,
    c: &C,
    n: u64,
    cursor: Option<u64>,
) -> Option<SubscribeResult> {
    match ask(spec, c, n, wh::SUBSCRIBE, params(spec, cursor)).await? {
        Message::Result { result, .. } => result.parse_as_value().ok(),
        _ => None,
    }
}

/// Whether the subscription is gone: unsubscribed now, or not found.
async fn unsubscribe<C: Connector>(spec: &WebhookSpec, c: &C, n: u64) -> bool {
    let p = json!({"name": ev::CLOCK_TICK, "arguments": {}, "delivery": {"url": spec.url}});
    match ask(spec, c, n, wh::UNSUBSCRIBE, p).await {
        Some(Message::Result { .. }) => true,
        Some(Message::Error { error, .. }) => error.code == ev::NOT_FOUND,
        _ => false,
    }
}

/// The receiver: each connection served on a task of its own.
async fn receive<A: Accept>(mut listener: A, recv: Rc<RefCell<Receiver>>) {
    while let Ok(io) = listener.accept().await {
        if recv.borrow().power.down.get() {
            // Down: the connection closes unanswered.
            drop(io);
            continue;
        }
        let recv = recv.clone();
        tokio::task::spawn_local(async move {
            let svc = hyper::service::service_fn(move |req| {
                let recv = recv.clone();
                async move { Ok::<_, io::Error>(take(&recv, req).await) }
            });
            let io = hyper_util::rt::TokioIo::new(io);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await;
        });
    }
}

/// One delivery: its status, answered `delay_ms` late when it was taken,
/// and the occurrence applied (before the answer) unless a duplicate the
/// receiver recognised.
async fn take(
    recv: &RefCell<Receiver>,
    req: ::http::Request<hyper::body::Incoming>,
) -> ::http::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let code = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => judge(recv, &parts, &body.to_bytes()),
        Err(_) => 413,
    };
    let delay = recv.borrow().spec.delay_ms;
    if code == 200 && delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let mut r = ::http::Response::new(Full::new(Bytes::new()));
    *r.status_mut() = ::http::StatusCode::from_u16(code).unwrap_or_default();
    r
}

/// What the receiver answers one delivery, having applied it or not.
fn judge(recv: &RefCell<Receiver>, parts: &::http::request::Parts, body: &[u8]) -> u16 {
    let h = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (id, ts, sig) = (
        h(wh::WEBHOOK_ID),
        h(wh::WEBHOOK_TIMESTAMP),
        h(wh::WEBHOOK_SIGNATURE),
    );
    let mut r = recv.borrow_mut();
    let restarts = r.power.restarts.get();
    if r.restarts != restarts {
        // Restarted since the last delivery: what it took is forgotten.
        r.restarts = restarts;
        r.seen.clear();
    }
    let busy = r.spec.busy_rate;
    if busy > 0.0 && r.rng.random_bool(busy) {
        return 503;
    }
    let now_us = r.history.now_us();
    if r.spec.verify {
        let ts: Option<i64> = ts.parse().ok();
        // Checked against its own wall clock, both ways (Standard
        // Webhooks refuses a timestamp too old or too far ahead).
        let wall = ev::unix_secs(r.wall.read(now_us));
        let fresh = ts.is_some_and(|t| (wall - t).abs() <= wh::TOLERANCE_SECS);
        let signed = ts.is_some_and(|t| wh::verify(&r.key, &id, t, body, &sig));
        if !(fresh && signed) {
            return 401;
        }
    }
    if let Ok(env) = serde_json::from_slice::<Envelope>(body) {
        if let Envelope::Gap { cursor } = env {
            let upto = super::events::seq(&cursor);
            r.history.record(ClientRecord::EventsTruncated {
                client: r.client,
                lost: upto.map(|u| (r.cursor.unwrap_or(0), u)),
            });
            r.moved_to(&cursor);
        }
        return 200;
    }
    let Ok(o) = serde_json::from_slice::<Occurrence>(body) else {
        return 400;
    };
    let key = match r.spec.dedup {
        Dedup::None => None,
        Dedup::WebhookId => Some(id.clone()),
        Dedup::EventId => Some(o.event_id.clone()),
    };
    let window = r.spec.dedup_window_ms * 1_000;
    if let Some(k) = &key {
        let recent = r
            .seen
            .get(k)
            .is_some_and(|&at| window == 0 || now_us - at < window);
        if recent {
            return 200;
        }
        r.seen.insert(k.clone(), now_us);
    }
    r.history.record(ClientRecord::EventApplied {
        client: r.client,
        event_id: o.event_id.as_str().into(),
        webhook_id: Some(id.as_str().into()),
    });
    if let Some(c) = &o.cursor {
        r.moved_to(c);
    }
    200
}

impl Receiver {
    /// Holds `cursor` when it is ahead of the watermark held.
    fn moved_to(&mut self, cursor: &str) {
        if let Some(seq) = super::events::seq(cursor) {
            self.cursor = Some(self.cursor.map_or(seq, |h| h.max(seq)));
        }
    }
}

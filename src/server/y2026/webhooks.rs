//! Webhook delivery of the Events extension (docs/events.md):
//! `events/subscribe` and `events/unsubscribe`, and a sender per
//! subscription that POSTs each occurrence to the receiver's URL, signed
//! as Standard Webhooks sign, retried on a failure as
//! `server.events_sender` says, and a `gap` envelope when the sender fell
//! behind the retention. A subscription is keyed by (principal, URL,
//! event type, arguments) and lives in this incarnation's memory: a
//! restart loses it, and the client's next refresh subscribes again from
//! the watermark it holds. It lapses unless refreshed before its TTL.

use super::events::{checked, occurrence, period_us, read};
use crate::history::Record;
use crate::ledger::outbox::{self, Holder, Row};
use crate::protocol::events::{self as ev, Cursor};
use crate::protocol::jsonrpc::{self, ErrorObject, RequestId};
use crate::protocol::webhook::{self as wh, Envelope, SubscribeParams};
use crate::protocol::Json;
use crate::server::http::body::ServerBody;
use crate::server::http::principal::bearer;
use crate::server::http::respond::error_with;
use crate::server::{EventsSender, Shared};
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// A connection a sender writes one delivery on.
pub trait EgressIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> EgressIo for T {}

/// A connection being opened.
pub type Dialing = Pin<Box<dyn Future<Output = io::Result<Box<dyn EgressIo>>>>>;

/// Opens a connection to (host, port).
pub type Dial = Rc<dyn Fn(&str, u16) -> Dialing>;

/// How a server reaches receivers: a dial to (host, port), and whether
/// any host may be dialled (the simulation) or
/// only loopback ones (`serve`).
#[derive(Clone)]
pub struct Egress {
    /// Opens a connection to (host, port).
    pub dial: Dial,
    /// The host's wall clock: the time its signatures carry.
    pub wall: crate::base::clock::WallClock,
    /// Any host, not only `localhost`, `127.0.0.1` and `[::1]`.
    pub remote: bool,
}

/// Deliveries one subscription has in flight at most: past it the sender
/// reads no further until one settles (its retry queue's bound).
pub(in crate::server) const MAX_IN_FLIGHT: usize = 64;

/// A receiver's URL, as a sender dials it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Url {
    text: Rc<str>,
    host: String,
    port: u16,
    path: String,
}

/// `http://host[:port]/path`, or why not. The simulated network (and
/// `serve`) has no TLS: an `https://` URL is refused with the reason.
fn parse_url(s: &str, remote: bool) -> Result<Url, String> {
    let Some(rest) = s.strip_prefix("http://") else {
        return Err(match s.starts_with("https://") {
            true => "delivery.url: this server delivers over plain http:// (no TLS in the simulated network, nor on serve's loopback)".into(),
            false => "delivery.url must be an http:// URL".into(),
        });
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h, p.parse().map_err(|_| "delivery.url has a bad port")?)
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.contains(['@', ' ']) {
        return Err("delivery.url has no host (http://host:port/path)".into());
    }
    if !remote && !matches!(host, "localhost" | "127.0.0.1" | "::1") {
        return Err(format!(
            "delivery.url host {host:?} is not loopback: this server delivers only to receivers on localhost, 127.0.0.1 or [::1] (serve --allow-remote delivers elsewhere too)"
        ));
    }
    Ok(Url {
        text: Rc::from(s),
        host: host.to_string(),
        port,
        path: if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
    })
}

/// The `webhook-id` of a `gap` envelope, before the position it resumes
/// from (the same on every attempt and every incarnation).
const GAP_ID: &str = "msg_gap_";

/// The key a subscription is known by.
type Key = outbox::SubKey;

/// How long a durable sender's claim on a subscription stands without a
/// renewal: past it, another replica takes the subscription over.
pub(in crate::server) const OUTBOX_LEASE_MS: u64 = 2_000;

/// One webhook subscription as this incarnation sends it: its row (this
/// incarnation's own, or the outbox's under the durable sender) and the
/// sender's state.
pub(in crate::server) struct Sub {
    row: outbox::Shared,
    url: Url,
    /// The source position read up to.
    next: Cell<u64>,
    /// Positions in flight (not yet acknowledged or given up).
    unsettled: RefCell<BTreeSet<u64>>,
    /// Ended (lapsed, closed, or taken over): deliveries stop.
    ended: Cell<bool>,
    wake: Notify,
}

impl Sub {
    /// The watermark: every occurrence at or before it was acknowledged
    /// or given up.
    fn watermark(&self) -> u64 {
        match self.unsettled.borrow().first() {
            Some(&s) => s - 1,
            None => self.next.get(),
        }
    }

    /// Writes the watermark to the row (the outbox's, under the durable
    /// sender).
    fn mark(&self) {
        self.row.borrow_mut().watermark = self.watermark();
    }
}

/// The subscriptions this incarnation sends, and who it is.
#[derive(Default)]
pub(in crate::server) struct Subscriptions {
    by_key: RefCell<BTreeMap<Key, Rc<Sub>>>,
    me: Cell<Option<Holder>>,
}

impl Subscriptions {
    fn held_by(&self, principal: &str) -> usize {
        self.by_key
            .borrow()
            .keys()
            .filter(|k| &*k.0 == principal)
            .count()
    }

    /// This incarnation, as a row's holder (counted in the outbox on
    /// first use).
    fn me(&self, shared: &Shared) -> Holder {
        if let Some(h) = self.me.get() {
            return h;
        }
        let h = Holder {
            replica: shared.ledger.replica(),
            incarnation: shared.ledger.outbox().next_incarnation(),
        };
        self.me.set(Some(h));
        h
    }
}

fn durable(shared: &Shared) -> bool {
    shared.cfg.events_sender == EventsSender::Durable
}

/// The row of `k`: the outbox's under the durable sender, else the one
/// this incarnation sends.
fn row_of(shared: &Shared, k: &Key) -> Option<outbox::Shared> {
    match durable(shared) {
        true => shared.ledger.outbox().get(k),
        false => shared
            .subscriptions
            .by_key
            .borrow()
            .get(k)
            .map(|s| s.row.clone()),
    }
}

/// Starts this incarnation's sender of `row` from its watermark.
fn start(shared: &Rc<Shared>, k: Key, row: outbox::Shared, url: Url) -> Rc<Sub> {
    let next = row.borrow().watermark;
    let sub = Rc::new(Sub {
        row,
        url,
        next: Cell::new(next),
        unsettled: RefCell::default(),
        ended: Cell::new(false),
        wake: Notify::new(),
    });
    let mut table = shared.subscriptions.by_key.borrow_mut();
    table.insert(k.clone(), sub.clone());
    tokio::task::spawn_local(send(shared.clone(), k, sub.clone()));
    sub
}

/// The durable sender's keeper, one per incarnation: it renews the
/// leases of the rows this incarnation sends and takes over every row
/// whose holder is gone (its lease ran out, or it was this replica's
/// incarnation before), resuming delivery from the row's watermark.
pub(in crate::server) async fn keep(shared: Rc<Shared>) {
    let me = shared.subscriptions.me(&shared);
    let lease = OUTBOX_LEASE_MS * 1_000;
    loop {
        let now = shared.history.now_us();
        let rows = shared.ledger.outbox().rows();
        for (k, row) in rows {
            let running = shared.subscriptions.by_key.borrow().contains_key(&k);
            let mut r = row.borrow_mut();
            let gone = r.lease_until_us <= now || me.succeeds(&r.holder);
            if r.holder == me && running {
                r.lease_until_us = now + lease;
            } else if !running && (r.holder == me || gone) {
                let Ok(url) = parse_url(&r.url, true) else {
                    continue;
                };
                r.holder = me;
                r.lease_until_us = now + lease;
                drop(r);
                start(&shared, k, row, url);
            }
        }
        tokio::time::sleep(Duration::from_millis(OUTBOX_LEASE_MS / 4)).await;
    }
}

/// The key of `p`'s subscription for `principal` at `url`.
fn key_for(principal: Rc<str>, url: Rc<str>, p: &SubscribeParams) -> Key {
    (principal, url, p.name.clone(), canonical(&p.arguments))
}

/// Wakes this incarnation's sender of `k`, if it sends it (under the
/// durable sender another replica may; it sees the row at its next turn).
fn wake(shared: &Shared, k: &Key) {
    if let Some(sub) = shared.subscriptions.by_key.borrow().get(k) {
        sub.wake.notify_one();
    }
}

fn invalid(m: impl Into<String>) -> ErrorObject {
    ErrorObject::new(jsonrpc::INVALID_PARAMS, m.into(), None)
}

/// What `events/subscribe` and `events/unsubscribe` answer: a result, or
/// an error with its HTTP status (429 past a cap).
pub(in crate::server) enum Answer {
    Done(Result<Json, ErrorObject>),
    Refused(Response<ServerBody>),
}

/// The principal a subscription is held by: its bearer token (the draft
/// requires an authenticated principal).
fn principal_of(h: &HeaderMap) -> Result<Rc<str>, ErrorObject> {
    bearer(h).ok_or_else(|| {
        ErrorObject::new(
            wh::FORBIDDEN,
            "events/subscribe needs an authenticated principal: send Authorization: Bearer <token>",
            None,
        )
    })
}

fn parse(params: Option<&Json>) -> Result<SubscribeParams, ErrorObject> {
    params
        .and_then(|p| p.parse_as_value().ok())
        .ok_or_else(|| invalid("events/subscribe needs name, arguments, delivery {mode: \"webhook\", url, secret} and cursor"))
}

/// `events/subscribe`: a new subscription, or a refresh of the one with
/// the same key (a new secret and TTL; delivery goes on from where it is).
pub(in crate::server) fn subscribe(
    shared: &Rc<Shared>,
    h: &HeaderMap,
    id: &RequestId,
    params: Option<&Json>,
) -> Answer {
    match subscribe_checked(shared, h, params) {
        Ok(Ok(v)) => Answer::Done(Ok(v)),
        Ok(Err(r)) => Answer::Refused(r(id.clone())),
        Err(e) => Answer::Done(Err(e)),
    }
}

type Refusal = Box<dyn FnOnce(RequestId) -> Response<ServerBody>>;

fn subscribe_checked(
    shared: &Rc<Shared>,
    h: &HeaderMap,
    params: Option<&Json>,
) -> Result<Result<Json, Refusal>, ErrorObject> {
    let Some(egress) = shared.egress.get() else {
        return Err(ErrorObject::new(
            ev::UNSUPPORTED,
            "this server delivers events by poll and push only",
            Some(json!({"feature": "deliveryMode", "value": "webhook"})),
        ));
    };
    let principal = principal_of(h)?;
    let p = parse(params)?;
    let (_, from) = checked(shared, params)?;
    if p.delivery.mode != "webhook" {
        return Err(ErrorObject::new(
            ev::UNSUPPORTED,
            format!("events/subscribe delivers by webhook only, not {:?}: use events/poll or events/stream", p.delivery.mode),
            Some(json!({"feature": "deliveryMode", "value": p.delivery.mode})),
        ));
    }
    let url = parse_url(&p.delivery.url, egress.remote).map_err(invalid)?;
    let key = p
        .delivery
        .secret
        .as_deref()
        .and_then(wh::key_of)
        .ok_or_else(|| {
            invalid("delivery.secret must be whsec_ and the base64 of 24 to 64 random bytes")
        })?;
    let now = shared.history.now_us();
    let ttl = p
        .ttl_ms
        .unwrap_or(shared.cfg.events_ttl_ms)
        .clamp(crate::settings::MIN_EVENTS_TTL_MS, shared.cfg.events_ttl_ms);
    let k = key_for(principal.clone(), url.text.clone(), &p);
    let (row, truncated) = match row_of(shared, &k) {
        Some(row) => {
            let mut r = row.borrow_mut();
            r.key = key;
            r.expires_us = now + ttl * 1_000;
            drop(r);
            wake(shared, &k);
            (row, false)
        }
        None => {
            let (held, all) = match durable(shared) {
                true => {
                    let o = shared.ledger.outbox();
                    (o.held_by(&principal), o.len())
                }
                false => (
                    shared.subscriptions.held_by(&principal),
                    shared.subscriptions.by_key.borrow().len(),
                ),
            };
            let per = shared.cfg.events_subscriptions as usize;
            if held >= per || all >= crate::settings::MAX_SUBSCRIPTIONS {
                let (limit, max) = match held >= per {
                    true => ("subscriptions per principal", per),
                    false => ("subscriptions", crate::settings::MAX_SUBSCRIPTIONS),
                };
                let message = format!("{limit}: at most {max}; unsubscribe one, or retry later");
                let data = json!({"limit": limit, "max": max});
                return Ok(Err(Box::new(move |id| {
                    let e = ErrorObject::new(wh::RESOURCE_EXHAUSTED, message, Some(data));
                    let mut r = error_with(StatusCode::TOO_MANY_REQUESTS, Some(id), e);
                    r.headers_mut()
                        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(1u64));
                    r
                })));
            }
            let log = shared.ledger.events(period_us(shared));
            let r = read(shared, &log, from, 0);
            drop(log);
            let digest = Sha256::digest(format!("{}\n{}\n{}\n{}", k.0, k.1, k.2, k.3));
            let row = Rc::new(RefCell::new(Row {
                id: format!("sub_{}", hex(&digest[..8])),
                url: url.text.clone(),
                key,
                expires_us: now + ttl * 1_000,
                watermark: r.cursor,
                closing: None,
                holder: shared.subscriptions.me(shared),
                lease_until_us: now + OUTBOX_LEASE_MS * 1_000,
            }));
            if durable(shared) {
                shared.ledger.outbox().insert(k.clone(), row.clone());
            }
            shared.history.record(Record::Subscribed {
                url: url.text.clone(),
            });
            start(shared, k, row.clone(), url);
            (row, r.truncated)
        }
    };
    let r = row.borrow();
    Ok(Ok(Json::from_value(&json!({
        "id": r.id,
        "refreshBefore": ev::timestamp(r.expires_us),
        "cursor": Cursor { seq: r.watermark }.encode(&p.name),
        "truncated": truncated,
    }))))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `events/unsubscribe`: the subscription delivers what was produced by
/// now, then ends.
pub(in crate::server) fn unsubscribe(
    shared: &Shared,
    h: &HeaderMap,
    params: Option<&Json>,
) -> Result<Json, ErrorObject> {
    let principal = principal_of(h)?;
    let p = parse(params)?;
    let k = key_for(principal, Rc::from(p.delivery.url.as_str()), &p);
    let Some(row) = row_of(shared, &k) else {
        return Err(ErrorObject::new(
            ev::NOT_FOUND,
            "no subscription of this principal to this event type at this URL",
            Some(json!({"kind": "subscription"})),
        ));
    };
    let newest = shared.ledger.events(period_us(shared)).newest();
    row.borrow_mut().closing = Some(newest);
    wake(shared, &k);
    Ok(Json::from_value(&json!({})))
}

/// The sender of one subscription: reads the source after where it is,
/// hands each occurrence to a delivery of its own (at most
/// [`MAX_IN_FLIGHT`] at once), until it lapses or, unsubscribed, has
/// delivered what was produced by then.
async fn send(shared: Rc<Shared>, k: Key, sub: Rc<Sub>) {
    let name = k.2.clone();
    let settled = Rc::new(Notify::new());
    let me = shared.subscriptions.me(&shared);
    loop {
        let now = shared.history.now_us();
        let (expires, closing, holder) = {
            let r = sub.row.borrow();
            (r.expires_us, r.closing, r.holder)
        };
        if holder != me {
            // Taken over (this incarnation's lease ran out): the holder
            // resumes from the watermark.
            break;
        }
        if now >= expires {
            shared.history.record(Record::SubscriptionLapsed {
                url: sub.url.text.clone(),
            });
            break;
        }
        if let Some(last) = closing {
            if sub.next.get() >= last && sub.unsettled.borrow().is_empty() {
                break;
            }
        }
        let room = MAX_IN_FLIGHT.saturating_sub(sub.unsettled.borrow().len());
        if room == 0 {
            settled.notified().await;
            continue;
        }
        let (found, next_us) = {
            let log = shared.ledger.events(period_us(&shared));
            let upto = closing.unwrap_or(u64::MAX);
            let r = read(&shared, &log, sub.next.get(), room);
            let events: Vec<_> = r.events.into_iter().filter(|e| e.0 <= upto).collect();
            if r.truncated {
                // The gap stands at the first position it lost, unsettled
                // until delivered: the watermark the occurrences after it
                // carry stays before what was lost, so a receiver that
                // hears of the gap after them still knows what it lost.
                let at = events.first().map_or(r.cursor, |e| e.0 - 1);
                let lost = sub.next.get() + 1;
                sub.unsettled.borrow_mut().insert(lost);
                let env = Envelope::Gap {
                    cursor: Cursor { seq: at }.encode(&name),
                };
                let body = serde_json::to_vec(&env).unwrap_or_default();
                let id = format!("{GAP_ID}{at}");
                let d = deliver(&shared, &sub, id, lost, move |_| body.clone(), &settled);
                tokio::task::spawn_local(d);
            }
            match events.last() {
                Some(&(last, _)) => sub.next.set(last),
                None => sub.next.set(r.cursor.min(upto).max(sub.next.get())),
            }
            // In flight before the watermark is written: a successor
            // resumes before what this one has not settled.
            sub.unsettled
                .borrow_mut()
                .extend(events.iter().map(|e| e.0));
            sub.mark();
            (events, log.next_at(period_us(&shared)))
        };
        for e in found {
            let mut o = occurrence(&name, e, Some(String::new()));
            let id = o.event_id.clone();
            // Each attempt's body carries the watermark as it is then.
            let body = move |sub: &Sub| {
                let cursor = Cursor {
                    seq: sub.watermark(),
                };
                o.cursor = Some(cursor.encode(&o.name));
                serde_json::to_vec(&o).unwrap_or_default()
            };
            tokio::task::spawn_local(deliver(&shared, &sub, id, e.0, body, &settled));
        }
        let until = next_us.min(expires);
        let wait = Duration::from_micros(until.saturating_sub(shared.history.now_us()));
        tokio::select! {
            biased;
            _ = sub.wake.notified() => {}
            _ = settled.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
    sub.ended.set(true);
    let mut table = shared.subscriptions.by_key.borrow_mut();
    if table.get(&k).is_some_and(|s| Rc::ptr_eq(s, &sub)) {
        table.remove(&k);
    }
    if sub.row.borrow().holder == me {
        shared.ledger.outbox().remove(&k, &sub.row);
    }
}

/// One delivery, an occurrence or a `gap`, standing at source position
/// `seq` until it settles (delivered or given up), which moves the
/// watermark past it. An occurrence given up is recorded.
fn deliver(
    shared: &Rc<Shared>,
    sub: &Rc<Sub>,
    id: String,
    seq: u64,
    body: impl FnMut(&Sub) -> Vec<u8> + 'static,
    settled: &Rc<Notify>,
) -> impl Future<Output = ()> + 'static {
    let (shared, sub, settled) = (shared.clone(), sub.clone(), settled.clone());
    async move {
        let outcome = attempts(&shared, &sub, &id, body).await;
        sub.unsettled.borrow_mut().remove(&seq);
        sub.mark();
        if outcome == Outcome::GaveUp && !id.starts_with(GAP_ID) {
            shared.history.record(Record::DeliveryAbandoned {
                url: sub.url.text.clone(),
                event_id: Rc::from(id.as_str()),
            });
        }
        settled.notify_one();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Delivered,
    GaveUp,
    Ended,
}

/// Attempts one delivery until a 2xx, a non-retryable answer (410, 413),
/// the attempts run out, or the subscription ends. The naive sender mints
/// a new `webhook-id` for each attempt; the spec sender keeps `id`.
async fn attempts(
    shared: &Shared,
    sub: &Sub,
    id: &str,
    mut body: impl FnMut(&Sub) -> Vec<u8>,
) -> Outcome {
    let egress = match shared.egress.get() {
        Some(e) => e.clone(),
        None => return Outcome::GaveUp,
    };
    let cfg = &shared.cfg;
    let mut wait = Duration::from_millis(cfg.events_retry_ms);
    for n in 0..cfg.events_attempts {
        if sub.ended.get() {
            return Outcome::Ended;
        }
        let hook_id = match cfg.events_sender {
            EventsSender::Spec | EventsSender::Durable => id.to_string(),
            EventsSender::Naive => format!("msg_{id}_{n}"),
        };
        let bytes = body(sub);
        let now = ev::unix_secs(egress.wall.read(shared.history.now_us()));
        let sig = wh::sign(&sub.row.borrow().key, &hook_id, now, &bytes);
        let headers = [
            (wh::WEBHOOK_ID, hook_id),
            (wh::WEBHOOK_TIMESTAMP, now.to_string()),
            (wh::WEBHOOK_SIGNATURE, sig),
            (wh::SUBSCRIPTION_ID, sub.row.borrow().id.clone()),
        ];
        let timeout = Duration::from_millis(cfg.events_webhook_timeout_ms);
        let status = tokio::time::timeout(timeout, post(&egress, &sub.url, &headers, bytes))
            .await
            .ok()
            .and_then(Result::ok);
        match status {
            Some(s) if s.is_success() => return Outcome::Delivered,
            Some(StatusCode::GONE | StatusCode::PAYLOAD_TOO_LARGE) => return Outcome::GaveUp,
            _ => {}
        }
        if n + 1 < cfg.events_attempts {
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }
    Outcome::GaveUp
}

/// One POST on a connection of its own: the receiver's status.
async fn post(
    egress: &Egress,
    url: &Url,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> io::Result<StatusCode> {
    let io = (egress.dial)(&url.host, url.port).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
            .await
            .map_err(io::Error::other)?;
    let mut req = http::Request::post(url.path.as_str())
        .header(http::header::HOST, format!("{}:{}", url.host, url.port))
        .header(http::header::CONTENT_TYPE, "application/json");
    for (k, v) in headers {
        req = req.header(*k, v.as_str());
    }
    let req = req
        .body(http_body_util::Full::new(Bytes::from(body)))
        .map_err(io::Error::other)?;
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        biased;
        r = sender.send_request(req) => r.map(|r| r.status()).map_err(io::Error::other),
        c = &mut conn => Err(io::Error::other(format!("connection ended: {c:?}"))),
    }
}

/// `v` as JSON with every object's keys sorted, so two spellings of the
/// same arguments are one key.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let by: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(by.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            v => v.clone(),
        }
    }
    sorted(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_plain_http_with_a_host_and_loopback_unless_remote() {
        let u = parse_url("http://client3:9000/hooks/7", true);
        assert_eq!(
            u.map(|u| (u.host, u.port, u.path)),
            Ok(("client3".into(), 9000, "/hooks/7".into()))
        );
        assert_eq!(
            parse_url("http://localhost", false).map(|u| (u.port, u.path)),
            Ok((80, "/".into()))
        );
        assert!(parse_url("http://[::1]:8080/x", false).is_ok());
        assert!(parse_url("http://client3:9000/", false)
            .unwrap_err()
            .contains("only to receivers on localhost"));
        assert!(parse_url("https://localhost/", false)
            .unwrap_err()
            .contains("plain http"));
        assert!(parse_url("ftp://localhost/", true).is_err());
        assert!(parse_url("http://:80/", true).is_err());
        assert!(parse_url("http://localhost:x/", true).is_err());
    }
}

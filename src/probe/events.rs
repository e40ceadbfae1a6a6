//! The Events extension's hazards (`probe --era 2026-07-28`,
//! docs/events.md): what a live server's delivery layer does that a
//! client cannot undo. A retry under a new `webhook-id` (no receiver can
//! tell it from a new occurrence), and a cursor behind the retention
//! reset without `truncated` by poll, or without a `gap` envelope by
//! webhook. Each declares the extension, reads the first event type
//! `events/list` offers (`clock-tick` when there is one), and for
//! webhooks runs a receiver on loopback.

use super::ctx::{Ctx, Step, Verdict};
use super::peer::{clip, Session};
use crate::protocol::events as ev;
use crate::protocol::jsonrpc::Message;
use crate::protocol::webhook as wh;
use crate::protocol::Json;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// How long the probe holds a cursor before it reads from it again
/// (times `--time-scale`): a server retaining more than this much shows
/// the cursor hazards untestable.
const HOLD_MS: u64 = 2_000;

/// One delivery a probe receiver took: its `webhook-id` and body.
#[derive(Clone, Debug)]
struct Taken {
    id: String,
    body: Value,
}

/// A receiver on loopback: every delivery it took, in order. It answers
/// 503 to the first occurrence it is sent when `refuse_first`, 200 to
/// everything else.
struct Receiver {
    url: String,
    taken: Rc<RefCell<Vec<Taken>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receiver(refuse_first: bool) -> Step<Receiver> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("could not open a receiver on loopback: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("the receiver has no address: {e}"))?;
    let taken: Rc<RefCell<Vec<Taken>>> = Rc::default();
    let log = taken.clone();
    let task = tokio::task::spawn_local(async move {
        while let Ok((io, _)) = listener.accept().await {
            let log = log.clone();
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let log = log.clone();
                    async move {
                        let id = req
                            .headers()
                            .get(wh::WEBHOOK_ID)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string();
                        let bytes: Option<Bytes> =
                            req.into_body().collect().await.ok().map(|b| b.to_bytes());
                        let body: Value = bytes
                            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                            .unwrap_or(Value::Null);
                        let mut log = log.borrow_mut();
                        let occurrence = body.get("eventId").is_some();
                        let first = !log.iter().any(|t| t.body.get("eventId").is_some());
                        log.push(Taken { id, body });
                        let status = match refuse_first && occurrence && first {
                            true => 503,
                            false => 200,
                        };
                        http::Response::builder()
                            .status(status)
                            .body(Full::new(Bytes::new()))
                    }
                });
            tokio::task::spawn_local(async move {
                let io = hyper_util::rt::TokioIo::new(io);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(Receiver {
        url: format!("http://{addr}/hook"),
        taken,
        task,
    })
}

/// A probe receiver's secret: fixed bytes (the probe verifies nothing).
fn secret() -> String {
    wh::secret_of(&[7u8; 32])
}

impl Ctx<'_> {
    /// A session that declares the extension.
    async fn events_session(&self) -> Step<Session> {
        let plain = self.session().await?;
        Ok(Session {
            modern: Some(json!({"extensions": {ev::EXTENSION: {}}})),
            ..plain
        })
    }

    /// The result of `method` with `params`, or why none came.
    async fn ask(&self, s: &Session, method: &str, params: Value) -> Step<Value> {
        let id = self.peer.fresh_id();
        let msg = Message::Request {
            id: id.clone(),
            method: method.into(),
            params: Some(Json::from_value(&params)),
        };
        self.answer_of(s, &msg, &id, None)
            .await
            .map_err(|e| format!("{method}: {e}"))
    }

    /// Subscribes `recv` to `name` from `cursor` (`None`: from now).
    async fn subscribe(
        &self,
        s: &Session,
        name: &str,
        recv: &Receiver,
        cursor: Option<String>,
    ) -> Step<Value> {
        let delivery = json!({"mode": "webhook", "url": recv.url, "secret": secret()});
        let params = json!({"name": name, "arguments": {}, "delivery": delivery,
            "cursor": cursor, "ttlMs": 60_000});
        self.ask(s, wh::SUBSCRIBE, params).await
    }

    /// Ends `recv`'s subscription to `name` (what it answers changes no
    /// verdict).
    async fn unsubscribe(&self, s: &Session, name: &str, recv: &Receiver) {
        let delivery = json!({"mode": "webhook", "url": recv.url});
        let params = json!({"name": name, "arguments": {}, "delivery": delivery});
        let _ = self.ask(s, wh::UNSUBSCRIBE, params).await;
    }

    /// The event type to read: `clock-tick` when offered, else the first
    /// `events/list` names.
    async fn event_name(&self, s: &Session) -> Step<String> {
        let list = self.ask(s, ev::LIST, json!({})).await.map_err(|e| {
            format!("the server offers no events ({e}); no SDK or reference server offers the Events extension yet")
        })?;
        let names: Vec<&str> = list["events"]
            .as_array()
            .map(|a| a.iter().filter_map(|e| e["name"].as_str()).collect())
            .unwrap_or_default();
        names
            .iter()
            .find(|n| **n == ev::CLOCK_TICK)
            .or(names.first())
            .map(|n| n.to_string())
            .ok_or_else(|| {
                format!(
                    "events/list names no event type: {}",
                    clip(&list.to_string())
                )
            })
    }

    /// Polls `name` from `cursor`, following `hasMore`: the `eventId`s
    /// in order, the cursor after them, and whether the first answer said
    /// `truncated`.
    async fn poll_all(
        &self,
        s: &Session,
        name: &str,
        cursor: Option<String>,
    ) -> Step<(Vec<String>, Option<String>, bool)> {
        let (mut ids, mut at, mut truncated) = (Vec::new(), cursor, None);
        for _ in 0..16 {
            let r = self
                .ask(
                    s,
                    ev::POLL,
                    json!({"name": name, "arguments": {}, "cursor": at}),
                )
                .await?;
            truncated.get_or_insert(r["truncated"] == true);
            if let Some(list) = r["events"].as_array() {
                ids.extend(
                    list.iter()
                        .filter_map(|e| e["eventId"].as_str().map(str::to_string)),
                );
            }
            at = r["cursor"].as_str().map(str::to_string).or(at);
            if r["hasMore"] != true {
                break;
            }
        }
        Ok((ids, at, truncated.unwrap_or(false)))
    }

    /// A cursor held [`HOLD_MS`] while another reader polls on from it:
    /// (the held cursor, what the live reader got after it).
    async fn hold_a_cursor(&self, s: &Session, name: &str) -> Step<(Option<String>, Vec<String>)> {
        let (_, held, _) = self.poll_all(s, name, None).await?;
        let until = tokio::time::Instant::now() + self.ms(HOLD_MS);
        let (mut live, mut at) = (Vec::new(), held.clone());
        while tokio::time::Instant::now() < until && !self.peer.out_of_time() {
            let (ids, next, _) = self.poll_all(s, name, at.clone()).await?;
            live.extend(ids);
            at = next;
            tokio::time::sleep(self.ms(100)).await;
        }
        if live.is_empty() {
            return Err(format!(
                "no occurrence of {name} in {} ms: nothing to lose",
                self.ms(HOLD_MS).as_millis()
            ));
        }
        Ok((held, live))
    }

    /// events-retry-new-webhook-id: refuse a webhook delivery (503) and
    /// compare the retry's `webhook-id` with the first attempt's.
    pub(super) async fn webhook_retry_id(&self) -> Step<(Verdict, String)> {
        let s = self.events_session().await?;
        let name = self.event_name(&s).await?;
        let recv = receiver(true).await?;
        self.subscribe(&s, &name, &recv, None).await?;
        let until = tokio::time::Instant::now() + self.wait.max(self.ms(4_000));
        let verdict = loop {
            let pair = {
                let taken = recv.taken.borrow();
                let mut occ = taken.iter().filter(|t| t.body.get("eventId").is_some());
                occ.next().and_then(|first| {
                    let again = taken
                        .iter()
                        .skip(1)
                        .find(|t| t.body["eventId"] == first.body["eventId"]);
                    again.map(|a| (first.clone(), a.clone()))
                })
            };
            if let Some((first, again)) = pair {
                let what = format!(
                    "{} refused (503) under webhook-id {:?}, retried under {:?}",
                    first.body["eventId"],
                    clip(&first.id),
                    clip(&again.id)
                );
                break match first.id == again.id {
                    true => (Verdict::Absent, format!("{what}: the same id, as the draft requires")),
                    false => (Verdict::Present, format!("{what}: a new id, so no receiver can tell the retry from a new occurrence")),
                };
            }
            if tokio::time::Instant::now() >= until || self.peer.out_of_time() {
                let n = recv.taken.borrow().len();
                break (
                    Verdict::Untestable,
                    format!("{n} deliveries came, and no retry of the refused one within the wait"),
                );
            }
            tokio::time::sleep(self.ms(50)).await;
        };
        self.unsubscribe(&s, &name, &recv).await;
        Ok(verdict)
    }

    /// events-cursor-skips: hold a poll cursor while another reader polls
    /// on, then poll from it.
    pub(super) async fn cursor_skips(&self) -> Step<(Verdict, String)> {
        let s = self.events_session().await?;
        let name = self.event_name(&s).await?;
        let (held, live) = self.hold_a_cursor(&s, &name).await?;
        let (late, _, truncated) = self.poll_all(&s, &name, held).await?;
        let next = &live[0];
        let seen = format!(
            "held a cursor {} ms while {} occurrences came (the first {next})",
            self.ms(HOLD_MS).as_millis(),
            live.len()
        );
        Ok(if late.first() == Some(next) {
            (
                Verdict::Untestable,
                format!("{seen}; polled from it, it still had {next}: the retention outlasted the hold (raise --time-scale)"),
            )
        } else if truncated {
            (
                Verdict::Absent,
                format!("{seen}; polled from it, the answer began at {} with truncated: true (the loss announced)", late.first().map_or("nothing", String::as_str)),
            )
        } else {
            (
                Verdict::Present,
                format!("{seen}; polled from it, the answer began at {} without truncated: the occurrences in between were skipped unwarned", late.first().map_or("nothing", String::as_str)),
            )
        })
    }

    /// events-webhook-no-gap: hold a cursor past the retention, then
    /// subscribe a receiver from it.
    pub(super) async fn webhook_no_gap(&self) -> Step<(Verdict, String)> {
        let s = self.events_session().await?;
        let name = self.event_name(&s).await?;
        let (held, live) = self.hold_a_cursor(&s, &name).await?;
        let recv = receiver(false).await?;
        let answer = self.subscribe(&s, &name, &recv, held).await?;
        let until = tokio::time::Instant::now() + self.wait.min(self.ms(2_000));
        while tokio::time::Instant::now() < until
            && !recv
                .taken
                .borrow()
                .iter()
                .any(|t| t.body.get("eventId").is_some())
        {
            tokio::time::sleep(self.ms(50)).await;
        }
        // Let anything sent at once with the first arrive too.
        tokio::time::sleep(self.ms(200)).await;
        self.unsubscribe(&s, &name, &recv).await;
        let taken = recv.taken.borrow();
        let gap = taken.iter().any(|t| t.body["type"] == "gap") || answer["truncated"] == true;
        let first = taken.iter().find_map(|t| t.body["eventId"].as_str());
        let next = &live[0];
        let seen = format!(
            "held a cursor {} ms while {} occurrences came (the first {next}), then subscribed from it",
            self.ms(HOLD_MS).as_millis(),
            live.len()
        );
        Ok(match first {
            None => (Verdict::Untestable, format!("{seen}; no delivery came within the wait")),
            Some(f) if f == next => (
                Verdict::Untestable,
                format!("{seen}; the first delivery was {next}: the retention outlasted the hold (raise --time-scale)"),
            ),
            Some(f) if gap => (
                Verdict::Absent,
                format!("{seen}; deliveries began at {f}, and a gap (or truncated) announced the loss"),
            ),
            Some(f) => (
                Verdict::Present,
                format!("{seen}; deliveries began at {f} with no gap envelope: the receiver skipped the occurrences in between unwarned"),
            ),
        })
    }
}

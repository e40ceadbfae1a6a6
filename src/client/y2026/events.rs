//! A client's events reader (the Events extension, docs/events.md): beside
//! its calls, it reads the server's `clock-tick` occurrences by poll or by
//! a push stream, from the last cursor it holds, until the run stops it;
//! then it drains once more by poll, so the occurrences owed to it end at
//! that read. It hands each occurrence to the application once (it keeps
//! the `eventId`s it applied) and writes what the oracle needs: when it
//! began, each occurrence applied, each `truncated` it was told, and the
//! drain.

use crate::client::http::{self, Limits, Outgoing};
use crate::client::reader::Connector;
use crate::history::{ClientRecord, History};
use crate::protocol::events::{self as ev, PollResult};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::{headers, y2026 as wire, Json};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::Instant;

/// One reader's settings.
#[derive(Clone, Debug)]
pub struct EventsSpec {
    /// The client it reads for.
    pub client: u32,
    /// Poll or push.
    pub mode: ReadMode,
    /// When it stops reading and drains, since the run's start.
    pub stop: Duration,
    /// When the drain gives up, since the run's start.
    pub end: Duration,
    /// Longest wait for an answer, or silence on a push stream.
    pub read_timeout: Duration,
    /// Pause after a failed read.
    pub backoff: Duration,
}

/// How a reader reads (a webhook reader is [`super::webhook`]'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// `events/poll`.
    Poll,
    /// `events/stream`.
    Push,
}

/// The reader's state: where it resumes, and what it applied.
struct Reader {
    spec: EventsSpec,
    history: History,
    cursor: Option<String>,
    applied: BTreeSet<String>,
    started: Started,
    next_id: u64,
    origin: Instant,
}

/// A reader's records of its start and of each `truncated` it is told.
pub(super) struct Started {
    client: u32,
    history: History,
    started: bool,
}

impl Started {
    pub(super) fn new(client: u32, history: History) -> Started {
        Started {
            client,
            history,
            started: false,
        }
    }

    /// Its first answer: what is produced from now on is owed to it.
    pub(super) fn begin(&mut self) {
        if !self.started {
            self.started = true;
            self.history.record(ClientRecord::EventsStarted {
                client: self.client,
            });
        }
    }

    /// Told of a loss: the positions after `held` (the cursor it held)
    /// up to `resumed` (where the server resumed it).
    pub(super) fn truncated(&self, held: Option<&str>, resumed: Option<&str>) {
        let lost = resumed
            .and_then(seq)
            .map(|upto| (held.and_then(seq).unwrap_or(0), upto));
        self.history.record(ClientRecord::EventsTruncated {
            client: self.client,
            lost,
        });
    }
}

/// The position a `clock-tick` cursor names.
pub(super) fn seq(cursor: &str) -> Option<u64> {
    ev::Cursor::decode(cursor, ev::CLOCK_TICK)
        .ok()
        .map(|c| c.seq)
}

/// Request `n` of `client`'s reader: `method` with `params`, as the
/// 2026-07-28 wire sends it, declaring the extension.
pub(super) fn request(client: u32, n: u64, method: &str, params: Value) -> Outgoing {
    let caps = json!({"extensions": {ev::EXTENSION: {}}});
    let who = format!("mcp-chaos-events-{client}");
    let msg = Message::Request {
        id: RequestId::Str(ev::reader_request_id(client, n)),
        method: method.into(),
        params: Some(wire::with_meta(
            Some(&Json::from_value(&params)),
            wire::request_meta(caps, &who),
        )),
    };
    Outgoing::post(None, &msg)
        .header(headers::MCP_PROTOCOL_VERSION, wire::VERSION)
        .header(wire::MCP_METHOD, method)
}

/// Runs one events reader to the end of the run. Must run inside a
/// `LocalSet`.
pub async fn run<C: Connector>(spec: EventsSpec, connector: C, history: History) {
    let mut r = Reader {
        origin: Instant::now() - Duration::from_micros(history.now_us()),
        started: Started::new(spec.client, history.clone()),
        spec,
        history,
        cursor: None,
        applied: BTreeSet::new(),
        next_id: 0,
    };
    while r.now() < r.spec.stop {
        let wait = match r.spec.mode {
            ReadMode::Poll => r.poll_once(&connector, r.spec.stop).await,
            ReadMode::Push => r.push_once(&connector).await,
        };
        let until = (r.now() + wait).min(r.spec.stop);
        tokio::time::sleep_until(r.origin + until).await;
    }
    // The drain: one poll answered, from the cursor held.
    while r.now() < r.spec.end {
        let sent_us = r.history.now_us();
        if r.poll(&connector, r.spec.end).await.is_some() {
            r.history.record(ClientRecord::EventsDrained {
                client: r.spec.client,
                sent_us,
            });
            return;
        }
        let until = (r.now() + r.spec.backoff).min(r.spec.end);
        tokio::time::sleep_until(r.origin + until).await;
    }
}

impl Reader {
    fn now(&self) -> Duration {
        Duration::from_micros(self.history.now_us())
    }

    /// A request of `method` from this cursor.
    fn request(&mut self, method: &str) -> Outgoing {
        self.next_id += 1;
        let params = json!({"name": ev::CLOCK_TICK, "arguments": {}, "cursor": self.cursor});
        request(self.spec.client, self.next_id, method, params)
    }

    /// Hands `o` to the application unless it was handed over before.
    fn apply(&mut self, o: &ev::Occurrence) {
        if self.applied.insert(o.event_id.clone()) {
            self.history.record(ClientRecord::EventApplied {
                client: self.spec.client,
                event_id: o.event_id.as_str().into(),
                webhook_id: None,
            });
        }
    }

    /// One poll; the wait before the next: none while `hasMore`, else
    /// `nextPollMs`, or the backoff after a failure.
    async fn poll_once<C: Connector>(&mut self, c: &C, deadline: Duration) -> Duration {
        match self.poll(c, deadline).await {
            Some(r) if r.has_more => Duration::ZERO,
            Some(r) => Duration::from_millis(r.next_poll_ms),
            None => self.spec.backoff,
        }
    }

    /// One `events/poll` answered (applied), or `None`.
    async fn poll<C: Connector>(&mut self, c: &C, deadline: Duration) -> Option<PollResult> {
        let out = self.request(ev::POLL);
        let wait = self
            .spec
            .read_timeout
            .min(deadline.saturating_sub(self.now()));
        let answer = tokio::time::timeout(wait, async {
            let io = c.connect().await.ok()?;
            let ex = http::send_bounded(io, out, Limits::default()).await.ok()?;
            match ex.status.is_success() {
                true => ex.json().await.ok().flatten(),
                false => None,
            }
        })
        .await
        .ok()
        .flatten()?;
        let Message::Result { result, .. } = answer else {
            return None;
        };
        let r: PollResult = result.parse_as_value().ok()?;
        self.started.begin();
        if r.truncated {
            // Resumed before the first occurrence returned.
            let first = r
                .events
                .first()
                .and_then(|o| ev::seq_of(&o.event_id, ev::CLOCK_TICK));
            let resumed = first.map_or(r.cursor.clone(), |s| {
                ev::Cursor { seq: s - 1 }.encode(ev::CLOCK_TICK)
            });
            self.started
                .truncated(self.cursor.as_deref(), Some(&resumed));
        }
        for o in &r.events {
            self.apply(o);
        }
        self.cursor = Some(r.cursor.clone());
        Some(r)
    }

    /// One push stream, read until it ends, breaks, falls silent past the
    /// read timeout or the reader must stop; the wait before reopening it.
    async fn push_once<C: Connector>(&mut self, c: &C) -> Duration {
        let out = self.request(ev::STREAM);
        let Ok(Ok(io)) = tokio::time::timeout(self.spec.read_timeout, c.connect()).await else {
            return self.spec.backoff;
        };
        let open = http::send_bounded(io, out, Limits::default());
        let Ok(Ok(mut ex)) = tokio::time::timeout(self.spec.read_timeout, open).await else {
            return self.spec.backoff;
        };
        if !ex.status.is_success() || !ex.is_sse() {
            return self.spec.backoff;
        }
        loop {
            let left = self.spec.stop.saturating_sub(self.now());
            if left.is_zero() {
                return Duration::ZERO;
            }
            let next = tokio::time::timeout(self.spec.read_timeout.min(left), ex.next_event());
            let Ok(Ok(Some(e))) = next.await else {
                return if self.now() >= self.spec.stop {
                    Duration::ZERO
                } else {
                    self.spec.backoff
                };
            };
            let Ok(Message::Notification { method, params }) = Message::decode(e.data.as_bytes())
            else {
                continue;
            };
            let p: Value = params.map_or(Value::Null, |p| p.to_value());
            let held = self.cursor.clone();
            if let Some(c) = p.get("cursor").and_then(Value::as_str) {
                self.cursor = Some(c.to_string());
            }
            // The stream's first message of any kind begins the reader:
            // an intermediary that drops the `active` must not hide it.
            self.started.begin();
            match method.as_str() {
                ev::ACTIVE if p.get("truncated") == Some(&Value::Bool(true)) => {
                    self.started
                        .truncated(held.as_deref(), self.cursor.as_deref());
                }
                ev::EVENT => {
                    if let Ok(o) = serde_json::from_value::<ev::Occurrence>(p) {
                        self.apply(&o);
                    }
                }
                _ => {}
            }
        }
    }
}

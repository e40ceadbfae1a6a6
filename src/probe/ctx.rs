//! What every hazard test shares: the probe's state ([`Ctx`]), how it
//! counts executions, its timing, the verdict a test reaches, and the
//! steps the tests are made of (open a session, start a call and drop
//! it, count executions). The tests (`retry.rs`, `resume.rs`,
//! `sessions.rs`) and the list that runs them (`hazards.rs`) stand on it.

use super::peer::{call, clip, End, Got, Peer, Reply, Session, Target};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use http::StatusCode;
use serde::Serialize;
use serde_json::json;
use std::time::Duration;

/// A verdict on one hazard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The rule's failure was seen.
    Present,
    /// The rule's failure was not seen.
    Absent,
    /// The server offers nothing the rule can judge.
    Untestable,
}

impl Verdict {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Present => "present",
            Verdict::Absent => "absent",
            Verdict::Untestable => "untestable",
        }
    }
}

/// How the probe counts a tool's executions.
#[derive(Clone, Debug)]
pub enum Counter {
    /// `ledger_append` runs, `ledger_read {tag}` counts.
    Ledger,
    /// One tool that counts its own runs: the first number in its text
    /// result is how many times it has run.
    Tool {
        /// Its name.
        name: String,
        /// The arguments it is called with.
        args: serde_json::Value,
    },
    /// No tool to call: only what a client sees without one.
    None,
}

/// Timing of the probe's ledger calls: chunks, and the pause before each
/// at `--time-scale 1` ([`Ctx::interval`]).
pub(super) const CHUNKS: u32 = 5;
const INTERVAL_MS: u64 = 200;
/// How many polling closes (`retry:`, then the end before the result) a
/// read follows before it gives up.
pub(super) const MAX_POLLS: u32 = 16;

pub(super) type Step<T> = Result<T, String>;

/// The probe's state shared by the hazard tests.
pub struct Ctx<'a> {
    /// The server.
    pub peer: &'a Peer,
    /// How executions are counted.
    pub counter: Counter,
    /// Send `Idempotency-Key` on every tool call.
    pub keys: bool,
    /// Where the legacy HTTP+SSE transport's GET goes.
    pub legacy: Target,
    /// How long to wait for a response or a result.
    pub wait: Duration,
    /// What every real-time window of the probe is multiplied by
    /// (`--time-scale`): its calls' pacing, its pauses, how long it waits
    /// for a close to be seen or a call to finish.
    pub scale: u32,
}

/// A call whose connection the probe dropped.
pub(super) struct Dropped {
    pub(super) id: RequestId,
    pub(super) tag: String,
    pub(super) key: Option<String>,
    /// Events received before the drop.
    pub(super) seen: Vec<Got>,
    /// The status of the dropped response, when its head arrived.
    pub(super) status: Option<StatusCode>,
}

impl Dropped {
    /// A call dropped before any answer came.
    fn unanswered(id: RequestId, tag: String, key: Option<String>) -> Dropped {
        Dropped {
            id,
            tag,
            key,
            seen: Vec::new(),
            status: None,
        }
    }
    pub(super) fn last_id(&self) -> Option<&str> {
        self.seen.iter().rev().find_map(|g| g.id.as_deref())
    }
    pub(super) fn finished(&self) -> bool {
        self.seen.iter().any(|g| g.answers(&self.id))
    }
}

impl Ctx<'_> {
    /// `ms` milliseconds of real time, stretched by `--time-scale`.
    pub(super) fn ms(&self, ms: u64) -> Duration {
        Duration::from_millis(ms.saturating_mul(u64::from(self.scale.max(1))))
    }

    /// The pause before each chunk of the probe's ledger calls.
    pub(super) fn interval(&self) -> Duration {
        self.ms(INTERVAL_MS)
    }

    /// A client's pause after losing a connection, before it acts again:
    /// more than the server needs to see the close on loopback (a retry
    /// sent sooner races the close, which is a different hazard).
    pub(super) fn backoff(&self) -> Duration {
        self.ms(250)
    }

    /// Long enough for a call of `CHUNKS` chunks to have finished.
    pub(super) fn settle_window(&self) -> Duration {
        self.ms(CHUNKS as u64 * INTERVAL_MS + 600)
    }

    /// Refuses a test that needs a tool to call when there is none.
    pub(super) fn need_tool(&self) -> Step<()> {
        match self.counter {
            Counter::None => Err("needs a tool to call: the server lists no ledger_append/ledger_read and --tool names none".into()),
            _ => Ok(()),
        }
    }

    pub(super) async fn session(&self) -> Step<Session> {
        self.peer
            .initialize()
            .await
            .map_err(|e| format!("could not open a session: {e}"))
    }

    /// The call of one operation: `ledger_append` of `chunks` chunks, or
    /// the counter tool.
    pub(super) fn op(&self, id: &RequestId, tag: &str, chunks: u32, interval: Duration) -> Message {
        match &self.counter {
            Counter::Tool { name, args } => call(id, name, args.clone()),
            _ => call(
                id,
                mcp::LEDGER_APPEND,
                json!({"tag": tag, "chunks": chunks, "chunk_interval_ms": interval.as_millis() as u64}),
            ),
        }
    }

    /// `r`, a stream that may answer any of `ids` and whose read stopped
    /// at `end`, followed through the server's polling closes as a client
    /// must: each time the server ended it cleanly after `retry: R`, before
    /// an answer, and its last connection carried a message, the stream is
    /// resumed exactly R later from its last event id (up to
    /// [`MAX_POLLS`] times). The events of every resume are added to the
    /// returned reply's `seen`; the end is its last connection's. A server
    /// that does not poll gets `r` back as it was.
    pub(super) async fn follow_polls(
        &self,
        s: &Session,
        mut r: Reply,
        mut end: End,
        ids: &[RequestId],
    ) -> (Reply, End) {
        let answered = |g: &Got| ids.iter().any(|i| g.answers(i));
        // Where the latest connection's events begin in `seen`.
        let mut from = 0;
        for _ in 0..MAX_POLLS {
            let latest = &r.seen[from..];
            if end != End::Ended
                || r.seen.iter().any(answered)
                || !latest.iter().any(|g| g.msg.is_some())
            {
                break;
            }
            let advised = latest.iter().rev().find_map(|g| g.retry_ms);
            let (Some(wait), Some(cursor)) = (advised, r.last_id().map(str::to_string)) else {
                break;
            };
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let Ok(mut g) = self.peer.get(s, Some(&cursor)).await else {
                break;
            };
            end = g
                .read_until(self.peer.within(self.wait + self.settle_window()), answered)
                .await;
            let mut seen = std::mem::take(&mut r.seen);
            from = seen.len();
            seen.append(&mut g.seen);
            g.seen = seen;
            r = g;
        }
        (r, end)
    }

    /// Reads `r` until it answers one of `ids` or `wait` passes, through
    /// the server's polling closes ([`Self::follow_polls`]).
    pub(super) async fn read_answer(
        &self,
        s: &Session,
        mut r: Reply,
        ids: &[RequestId],
        wait: Duration,
    ) -> (Reply, End) {
        let end = r
            .read_until(self.peer.within(wait), |g| ids.iter().any(|i| g.answers(i)))
            .await;
        self.follow_polls(s, r, end, ids).await
    }

    /// Reads a stream whose result arrived to its end, as a client does
    /// (a connection closed before the stream's end is a drop), briefly.
    pub(super) async fn drain(&self, r: &mut Reply) {
        r.read_until(self.peer.within(self.ms(1000)), |_| false)
            .await;
    }

    pub(super) fn key_for(&self, tag: &str) -> Option<String> {
        self.keys.then(|| tag.to_string())
    }

    /// How many times the counter has run so far (tool mode), before an
    /// operation; 0 with the ledger (tags are new).
    pub(super) async fn baseline(&self, s: &Session) -> Step<u64> {
        match &self.counter {
            Counter::Tool { .. } => self.tool_count(s).await,
            _ => Ok(0),
        }
    }

    pub(super) async fn tool_count(&self, s: &Session) -> Step<u64> {
        let id = self.peer.fresh_id();
        let msg = self.op(&id, "", 1, Duration::ZERO);
        let text = self.result_text(s, &msg, &id).await?;
        text.split(|c: char| !c.is_ascii_digit())
            .find(|t| !t.is_empty())
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| {
                format!(
                    "the counter tool's result names no number: {:?}",
                    clip(&text)
                )
            })
    }

    /// The text of a tool call's first content item.
    pub(super) async fn result_text(
        &self,
        s: &Session,
        msg: &Message,
        id: &RequestId,
    ) -> Step<String> {
        let result = self
            .answer_of(s, msg, id, None)
            .await
            .map_err(|e| format!("reading the count: {e}"))?;
        result["content"][0]["text"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "a tool result without text content".to_string())
    }

    /// The result of request `id` (`msg`, under `key`), or why none came.
    pub(super) async fn answer_of(
        &self,
        s: &Session,
        msg: &Message,
        id: &RequestId,
        key: Option<&str>,
    ) -> Step<serde_json::Value> {
        let r = self
            .peer
            .post(s, msg, key)
            .await
            .map_err(|e| e.to_string())?;
        let (r, _) = self
            .read_answer(s, r, std::slice::from_ref(id), self.wait)
            .await;
        match r.response(id).and_then(|g| g.msg.as_ref()) {
            Some(Message::Result { result, .. }) => Ok(result.to_value()),
            _ => Err(format!("no result: {}", r.describe())),
        }
    }

    /// Executions of operation `tag` since `base` (see [`Self::baseline`]).
    pub(super) async fn executions(&self, s: &Session, tag: &str, base: u64) -> Step<u64> {
        match &self.counter {
            Counter::Tool { .. } => Ok(self.tool_count(s).await?.saturating_sub(base + 1)),
            _ => {
                let id = self.peer.fresh_id();
                let msg = call(&id, mcp::LEDGER_READ, json!({"tag": tag}));
                let text = self.result_text(s, &msg, &id).await?;
                let v: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|_| format!("ledger_read's text is not JSON: {:?}", clip(&text)))?;
                v.get("executions")
                    .and_then(|e| e.get(tag))
                    .and_then(|n| n.as_u64())
                    .ok_or_else(|| {
                        format!("ledger_read names no count for the tag: {}", clip(&text))
                    })
            }
        }
    }

    /// Starts operation `name` of `chunks` chunks and drops its connection
    /// after the first event, or before the head if none comes in time.
    pub(super) async fn start_and_drop(
        &self,
        s: &Session,
        name: &str,
        chunks: u32,
    ) -> Step<Dropped> {
        let id = self.peer.fresh_id();
        let tag = self.peer.tag(name);
        let key = self.key_for(&tag);
        let msg = self.op(&id, &tag, chunks, self.interval());
        if let Counter::Tool { .. } = self.counter {
            // A tool of unknown duration: lose the connection before any
            // answer is read.
            self.peer
                .fire(s, &msg, key.as_deref(), self.backoff())
                .await
                .map_err(|e| format!("the call failed: {e}"))?;
            return Ok(Dropped::unanswered(id, tag, key));
        }
        let drop_at = self.peer.within(self.interval() * 3 / 2);
        let sent = tokio::time::timeout_at(drop_at, self.peer.post(s, &msg, key.as_deref())).await;
        let mut reply = match sent {
            // No head in time: the connection goes (a lost response head).
            Err(_) => return Ok(Dropped::unanswered(id, tag, key)),
            Ok(r) => r.map_err(|e| format!("the call failed: {e}"))?,
        };
        if !reply.status.is_success() {
            reply.read_response(&id, self.peer.within(self.wait)).await;
            return Err(format!("the call was refused: {}", reply.describe()));
        }
        reply
            .read_until(self.peer.within(self.wait), |g| {
                g.chunk().is_some() || g.answers(&id)
            })
            .await;
        let status = Some(reply.status);
        let seen = std::mem::take(&mut reply.seen);
        drop(reply);
        tokio::time::sleep(self.backoff()).await;
        Ok(Dropped {
            id,
            tag,
            key,
            seen,
            status,
        })
    }
}

/// Where a dropped call's connection went.
pub(super) fn dropped_at(d: &Dropped) -> String {
    match (d.status, d.seen.len()) {
        (None, _) => "before the response head".into(),
        (Some(st), 0) => format!("after the head ({}) before any event", st.as_u16()),
        (Some(_), n) => format!(
            "after {n} event{} (last id {})",
            if n == 1 { "" } else { "s" },
            d.last_id().unwrap_or("none")
        ),
    }
}

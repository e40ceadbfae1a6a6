//! The hazards the probe tries, each with the written rule that makes it
//! present or absent. Every test runs in a session of its own, calls only
//! the counting tools, and ends its session when done.

use super::peer::{call, clip, Got, Peer, Reply, Session, Target};
use super::retry::Retry;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use http::StatusCode;
use serde::Serialize;
use serde_json::json;
use std::time::Duration;

/// One hazard: a stable name, a one-line title, and its rule.
#[derive(Debug)]
pub struct Hazard {
    /// Kebab-case name (JSON `hazard`, `--only`).
    pub name: &'static str,
    /// What goes wrong, in a few words.
    pub title: &'static str,
    /// What the probe does, and what makes the hazard present or absent.
    pub rule: &'static str,
}

/// Every hazard, in the order the probe tries them.
pub const HAZARDS: &[Hazard] = &[
    Hazard {
        name: "retry-new-id",
        title: "retried tool runs twice",
        rule: "Call the tool, drop the connection after its first event (or before the response head when none comes), wait 250 ms, re-POST the same call with a new request id (and the same Idempotency-Key under --profile keys), following the server's answers (a 409 with a Last-Event-ID hint: resume by GET; a 409 without: back off and retry). Present when the tool ran more than once for the one call; absent when once.",
    },
    Hazard {
        name: "retry-same-id",
        title: "a retry with the same request id runs twice",
        rule: "As retry-new-id, but the re-POST reuses the first request's id while the first execution is still running. Present when the tool ran more than once; absent when once.",
    },
    Hazard {
        name: "retry-after-completion",
        title: "a retry after the tool finished runs it again",
        rule: "As retry-new-id, but the re-POST waits until the first execution has finished (the client missed its result). Present when the tool ran more than once; absent when once.",
    },
    Hazard {
        name: "resume-inclusive",
        title: "a resume re-delivers events the client had",
        rule: "Drop a call's stream after its first event, then GET with Last-Event-ID = the last id received. Present when the replay contains that id again or a chunk the client already had (inclusive replay); absent when it does not. Untestable when events carry no ids or the resume is refused.",
    },
    Hazard {
        name: "resume-after-completion",
        title: "a result produced while the client was away is silently lost",
        rule: "Drop a call's stream after its first event, wait until the tool has finished, then GET with Last-Event-ID. Present when the resume answers 2xx but ends or stays silent without the result; absent when the result arrives, or when the server announces the loss (410). Untestable when events carry no ids or resumption is not offered (405).",
    },
    Hazard {
        name: "resume-malformed",
        title: "a malformed Last-Event-ID is accepted",
        rule: "GET with a Last-Event-ID no server issues. Present when the answer is 2xx (the client believes it resumed: an empty or unrelated stream) or 5xx, or the connection closes without an answer; absent on any 4xx.",
    },
    Hazard {
        name: "resume-foreign-session",
        title: "another session's event id replays that session's events",
        rule: "Run a call to completion in session A, then GET in a new session B with Last-Event-ID = A's first event id. Present when B receives any event of A's call (its chunks, or a response to its request id); absent otherwise.",
    },
    Hazard {
        name: "resume-then-post",
        title: "a resume interleaves replayed and live events out of order",
        rule: "Drop call 1's stream after its first event while it still runs, resume it by GET and at once POST call 2. Present when call 1's new chunks (those the client did not have) arrive out of order or twice on the resumed stream, when call 2's response arrives on call 1's stream, or when either result arrives twice; absent otherwise.",
    },
    Hazard {
        name: "legacy-session",
        title: "a legacy session id is served on the streamable endpoint",
        rule: "Open a session on the legacy HTTP+SSE transport (GET --legacy-url, initialize through its endpoint), then POST tools/list to the streamable endpoint with that session id. Present when it is served (2xx with a result): the session's continuity (cursor, subscriptions) does not carry across transports; absent on 4xx or a JSON-RPC error. Untestable without a legacy endpoint.",
    },
    Hazard {
        name: "second-get",
        title: "a second standalone GET stream is accepted",
        rule: "Open the session's standalone GET stream, then a second one. Present when both are 2xx (a server message may go to either, or be lost on the one the client is not reading); absent when the second is refused (409 or another 4xx). Untestable when the first GET is refused (no standalone stream).",
    },
];

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

/// A hazard's verdict with its evidence.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// The hazard's name.
    pub hazard: &'static str,
    /// Its title.
    pub title: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// What the probe saw, in one line.
    pub evidence: String,
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

/// Timing of the probe's ledger calls: chunks and the pause before each.
pub(super) const CHUNKS: u32 = 5;
pub(super) const INTERVAL: Duration = Duration::from_millis(200);
/// A client's pause after losing a connection, before it acts again: more
/// than the server needs to see the close on loopback (a retry sent
/// sooner races the close, which is a different hazard).
pub(super) const BACKOFF: Duration = Duration::from_millis(250);
/// Long enough for a call of `CHUNKS` chunks to have finished.
pub(super) const SETTLE: Duration = Duration::from_millis(CHUNKS as u64 * 200 + 600);

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
    /// Runs one hazard's test to its finding.
    pub async fn run(&self, hazard: &'static Hazard) -> Finding {
        let outcome = match hazard.name {
            "retry-new-id" => self.retry(Retry::NewId).await,
            "retry-same-id" => self.retry(Retry::SameId).await,
            "retry-after-completion" => self.retry(Retry::AfterCompletion).await,
            "resume-inclusive" => self.resume_inclusive().await,
            "resume-after-completion" => self.resume_after_completion().await,
            "resume-malformed" => self.resume_malformed().await,
            "resume-foreign-session" => self.resume_foreign().await,
            "resume-then-post" => self.resume_then_post().await,
            "legacy-session" => self.legacy_session().await,
            "second-get" => self.second_get().await,
            other => Err(format!("no test for {other}")),
        };
        let (verdict, evidence) = match self.peer.stopped() {
            // Whatever this test read was cut short: it judges nothing.
            Some(line) => (Verdict::Untestable, format!("cut short: {line}")),
            None => outcome.unwrap_or_else(|e| (Verdict::Untestable, e)),
        };
        Finding {
            hazard: hazard.name,
            title: hazard.title,
            verdict,
            evidence,
        }
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

    /// Reads a stream whose result arrived to its end, as a client does
    /// (a connection closed before the stream's end is a drop), briefly.
    pub(super) async fn drain(&self, r: &mut Reply) {
        r.read_until(self.peer.within(Duration::from_secs(1)), |_| false)
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
        let mut r = self
            .peer
            .post(s, msg, None)
            .await
            .map_err(|e| e.to_string())?;
        r.read_response(id, self.peer.within(self.wait)).await;
        match r.response(id).and_then(|g| g.msg.as_ref()) {
            Some(Message::Result { result, .. }) => result
                .get("content")
                .and_then(|c| c.index(0))
                .and_then(|c| c.get("text"))
                .and_then(|t| t.as_str().map(|t| t.into_owned()))
                .ok_or_else(|| "a tool result without text content".to_string()),
            _ => Err(format!("reading the count: {}", r.describe())),
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
        let msg = self.op(&id, &tag, chunks, INTERVAL);
        if let Counter::Tool { .. } = self.counter {
            // A tool of unknown duration: lose the connection before any
            // answer can come.
            self.peer
                .fire(s, &msg, key.as_deref())
                .await
                .map_err(|e| format!("the call failed: {e}"))?;
            tokio::time::sleep(BACKOFF).await;
            return Ok(Dropped::unanswered(id, tag, key));
        }
        let drop_at = self.peer.within(INTERVAL * 3 / 2);
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
        tokio::time::sleep(BACKOFF).await;
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

#[cfg(test)]
mod tests {
    use super::HAZARDS;

    #[test]
    fn the_docs_state_every_rule_as_the_probe_applies_it() {
        let doc = include_str!("../../docs/probe.md");
        for h in HAZARDS {
            let row = format!("| `{}` | {} | {} |", h.name, h.title, h.rule);
            assert!(
                doc.contains(&row),
                "docs/probe.md lacks the row of {}",
                h.name
            );
        }
    }

    #[test]
    fn hazard_names_are_unique_kebab_case() {
        let mut names: Vec<_> = HAZARDS.iter().map(|h| h.name).collect();
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '-')));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), HAZARDS.len());
    }
}

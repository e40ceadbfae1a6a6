//! The hazards the probe tries, each with the written rule that makes it
//! present or absent. Every test runs in a session of its own, calls only
//! the counting tools, and ends its session when done.

use super::ctx::{Ctx, Verdict};
use super::retry::Retry;
use serde::Serialize;

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
        rule: "Drop a call's stream after its first event, then GET with Last-Event-ID = the last id received. Present when the replay brings a message under that id again or a chunk the client already had (inclusive replay); absent when it does not. Untestable when events carry no ids or the resume is refused.",
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
        name: "resume-future-cursor",
        title: "a forged cursor past the stream's end loses the stream silently",
        rule: "Drop a call's stream after its first event, then GET with a Last-Event-ID of the same shape as the last id received, its last number moved 1000 past it (an id the stream has not reached). Present when the answer is 2xx and the call's result never comes (the client believes it resumed), 5xx, or the connection closes without an answer; absent on any 4xx, or when the result arrives all the same. Untestable when events carry no ids with a number in them.",
    },
    Hazard {
        name: "resume-twice",
        title: "a second resume re-delivers what the first brought",
        rule: "Drop a call's stream after its first event, resume it by GET until one new chunk arrives, drop that too, then resume again from the last id received. Present when the second resume delivers that id again or a chunk the client already had; absent otherwise. Untestable when a resume is refused or brings nothing new.",
    },
    Hazard {
        name: "resume-unnamed",
        title: "a resume names no position until its next message",
        rule: "Drop a call's stream after its first event, resume it by GET until one new chunk arrives, drop that too, then resume again at once from the last id received (nothing is left to replay) and read it for a quarter of the call's chunk interval. Present when no event with an id arrives in that time: a reader that keeps its cursor only from the current stream's events has none if the stream breaks then, and reconnects without Last-Event-ID (typescript-sdk PR #2509); absent when one does (a position marker, a priming event, the named event again). Untestable when a resume is refused or brings nothing new.",
    },
    Hazard {
        name: "replay-dropped",
        title: "a replay dropped mid-way loses the rest",
        rule: "Drop a call's stream after its first event, wait until the tool has finished, resume by GET, drop the replay after its first new chunk, then resume again from the last id received. Present when the second resume does not bring the result and does not announce the loss (410); absent when the result arrives or the loss is announced. Untestable when the first resume is refused, brings nothing new, or brings the result first.",
    },
    Hazard {
        name: "duplicate-inflight-id",
        title: "two calls under one request id cross their answers",
        rule: "Start call A (several chunks) and, once its first event arrived, POST a different call B with the same request id. Present when a stream gets the other call's result, or A's stream never gets a result; absent when B is refused (4xx or a JSON-RPC error) and A gets its own result, or each gets its own. Untestable with a counter tool (results must name their call).",
    },
    Hazard {
        name: "retry-honoured",
        title: "a resume made exactly when `retry:` says is not honoured",
        rule: "Call the tool (ten chunks) and read its stream; each time the server ends it before the result after a `retry: R` field, wait exactly R ms and GET with Last-Event-ID = the last id received, up to 16 times. Absent when the result arrives and no resume re-sent a chunk the client had; present when such a resume is refused or fails, re-sends a chunk from before the cursor, or no result comes. Untestable when the server never closes a stream with `retry:` (it does not poll).",
    },
    Hazard {
        name: "legacy-session",
        title: "a legacy session id is served on the streamable endpoint",
        rule: "Open a session on the legacy HTTP+SSE transport (GET --legacy-url, initialize through its endpoint), then POST tools/list to the streamable endpoint with that session id. Present when it is served (2xx with a result): the session's continuity (cursor, subscriptions) does not carry across transports; absent on 4xx or a JSON-RPC error. Untestable without a legacy endpoint.",
    },
    Hazard {
        name: "cancel-ignored",
        title: "a call told to stop by notifications/cancelled runs on",
        rule: "Call ledger_append, and after its first event POST notifications/cancelled naming its request id; read the call's stream until its end, wait until the tool would have finished, then ledger_read the tag. Present when the call's result arrived after the cancellation or its execution reached its result (the server dropped the cancellation: the work it was told to stop ran on); absent when the stream ended without the result and no execution finished. Untestable without the ledger tools, or when the call finished before the cancellation went out.",
    },
    Hazard {
        name: "second-get",
        title: "a second standalone GET stream is accepted",
        rule: "Open the session's standalone GET stream, then a second one. Present when both are 2xx (a server message may go to either, or be lost on the one the client is not reading); absent when the second is refused (409 or another 4xx). Untestable when the first GET is refused (no standalone stream).",
    },
];

/// The 2026-07-28 wire's hazards (`probe --era 2026-07-28`), in the
/// order the probe tries them: no sessions, no resumption; a broken
/// stream's call is re-issued with a new id.
pub const HAZARDS_2026: &[Hazard] = &[
    Hazard {
        name: "close-cancels",
        title: "a close stops a call whose effect is taken",
        rule: "Call ledger_append, drop the connection after its first event, wait until it would have finished, then ledger_read the tag. Present when an execution took its effect and fewer reached their result (the close cancelled it, as the wire requires: the effect stays, the result is gone, and the client's only way on is a re-issue); absent when it ran to its result or took no effect. Untestable without ledger_read's finished count.",
    },
    Hazard {
        name: "reissue-runs-twice",
        title: "a re-issued call runs twice",
        rule: "Call the tool, drop the connection after its first event, wait 250 ms, re-issue the call with a new request id (and the same Idempotency-Key under --profile keys), as the wire tells a client to. Present when the tool ran more than once for the one call; absent when once.",
    },
    Hazard {
        name: "mrtr-retry-runs-twice",
        title: "the retry that answers an input request runs the tool again",
        rule: "Call ledger_append with asks_input, which takes its effect and then answers an input-required result; retry the call with a new id, the answers and the requestState. Present when the tool ran more than once for the one call; absent when once. Untestable when the tool asks for nothing.",
    },
    Hazard {
        name: "task-create-retry",
        title: "a task creation re-sent after its answer was lost runs twice",
        rule: "Declare the tasks extension, call ledger_append and close the connection without reading the answer (a lost CreateTaskResult: the client knows no task id), send the call again (the same Idempotency-Key under --profile keys), poll the task it gets to its end. Present when the tool ran more than once for the one call; absent when once. Untestable when the server answers without a task.",
    },
    Hazard {
        name: "events-retry-new-webhook-id",
        title: "a webhook retry carries a new webhook-id",
        rule: "Declare the Events extension, subscribe a receiver on loopback to the first event type events/list offers (clock-tick when offered) from now, answer its first occurrence 503 and every other delivery 200. Present when the retry of that occurrence (the same eventId) carries another webhook-id: no receiver deduplicating on it, as the draft says it should, can tell the retry from a new occurrence; absent when the same. Untestable when the server offers no events or webhooks, or no retry comes within the wait.",
    },
    Hazard {
        name: "events-cursor-skips",
        title: "a poll cursor behind the retention skips silently",
        rule: "Poll from now, hold the cursor two seconds (times --time-scale) while polling on from it, then poll from the held cursor. Present when that answer does not begin at the first occurrence the live reader got and does not say truncated: true (the occurrences in between were skipped unwarned); absent when it says truncated. Untestable when it still begins there (the retention outlasted the hold) or nothing occurred.",
    },
    Hazard {
        name: "events-webhook-no-gap",
        title: "a webhook subscription behind the retention skips without a gap",
        rule: "Hold a poll cursor as events-cursor-skips does, then subscribe a receiver on loopback from it. Present when the deliveries begin past the first occurrence the live reader got with no gap envelope (and no truncated in the answer); absent when the loss is announced. Untestable when the first delivery is that occurrence (the retention outlasted the hold) or none comes.",
    },
];

/// The hazards of a wire.
pub fn of(era: crate::settings::Era) -> &'static [Hazard] {
    match era {
        crate::settings::Era::Y2025 => HAZARDS,
        crate::settings::Era::Y2026 => HAZARDS_2026,
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
            "resume-future-cursor" => self.resume_future_cursor().await,
            "resume-twice" => self.resume_twice().await,
            "resume-unnamed" => self.resume_unnamed().await,
            "replay-dropped" => self.replay_dropped().await,
            "duplicate-inflight-id" => self.duplicate_inflight_id().await,
            "retry-honoured" => self.retry_honoured().await,
            "legacy-session" => self.legacy_session().await,
            "second-get" => self.second_get().await,
            "cancel-ignored" => self.cancel_ignored().await,
            "close-cancels" => self.close_cancels().await,
            "reissue-runs-twice" => self.retry(Retry::NewId).await,
            "mrtr-retry-runs-twice" => self.mrtr_retry().await,
            "task-create-retry" => self.task_create_retry().await,
            "events-retry-new-webhook-id" => self.webhook_retry_id().await,
            "events-cursor-skips" => self.cursor_skips().await,
            "events-webhook-no-gap" => self.webhook_no_gap().await,
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
}

#[cfg(test)]
mod tests {
    use super::{HAZARDS, HAZARDS_2026};

    #[test]
    fn the_docs_state_every_rule_as_the_probe_applies_it() {
        let doc = include_str!("../../docs/probe.md");
        for h in HAZARDS.iter().chain(HAZARDS_2026) {
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
        let mut names: Vec<_> = HAZARDS.iter().chain(HAZARDS_2026).map(|h| h.name).collect();
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '-')));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), HAZARDS.len() + HAZARDS_2026.len());
    }

    #[test]
    fn probe_help_names_every_hazard_of_both_wires() {
        use clap::Args;
        let mut cmd = super::super::ProbeArgs::augment_args(clap::Command::new("probe"));
        let help = cmd.render_long_help().to_string();
        for h in HAZARDS.iter().chain(HAZARDS_2026) {
            assert!(help.contains(h.name), "probe --help lacks {}", h.name);
        }
    }
}

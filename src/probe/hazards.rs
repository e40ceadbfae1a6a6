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

//! Causes: why a failed operation failed (docs/causes.md). Every failed
//! operation gets exactly one primary cause, the first in [`PRECEDENCE`]
//! whose rule holds for it. Every rule reads only what a black box shows:
//! the clients' records, the side-effect ledger and the world's fault
//! records, so any server under test gets a cause. A failed operation that
//! no rule explains is a defect of the oracle, and fails the run.
//!
//! The catalogue in `docs/causes.md` states each rule with a minimal
//! scenario; `tests/all/causes.rs` runs each one and asserts its cause.

use super::ops::{Failure, OpFacts, RunFacts};

/// A primary cause of a failed operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// A replica of a deployment that held the operation went down,
    /// killed or hung, while the operation was open: one that ran one of
    /// its executions (the ledger says which), with the execution in
    /// flight or the session owing its result, or the one its client's
    /// calls last ran on, when the client was refused (404) after it went
    /// down (a pinned balancer waiting on a dead owner). The client
    /// re-issued elsewhere, and the tool ran again, or nothing finished it.
    OwnerDead,
    /// A server restart fell inside one of the operation's executions: the
    /// effect was taken, the result never produced, and the re-issue ran
    /// the tool again (or nothing ran it to the end).
    RestartMidExecution,
    /// A server restart fell inside the operation's lifetime (not inside an
    /// execution): the session and what it owed were gone (404), and the
    /// client re-issued or gave up. A shared store's restart that kept
    /// nothing is one too, for an operation refused (404) after it.
    RestartLostSession,
    /// The operation's call was answered with a task whose
    /// `CreateTaskResult` never reached the client (a fault took the
    /// answer): the client, knowing no task id, re-issued the call, which
    /// created a second task and ran the tool again.
    TaskCreateLost,
    /// An execution of the operation took its effect and asked for input
    /// (an input-required result, 2026-07-28); the retry that answered ran
    /// the tool from the start, taking the effect again.
    MrtrReexecution,
    /// The client cancelled the operation's task (`tasks/cancel`, past its
    /// deadline), the server acknowledged, and the client re-issued the
    /// call; the first execution had taken its effect (it ran on to its
    /// result, or stopped after taking it), so the tool ran twice.
    TaskCancelRace,
    /// A resume of the operation went out after the shared store lost what
    /// it held (a restart that kept nothing, in the operation's lifetime)
    /// or while its reads lagged: the replica serving it lacked the cursor,
    /// answered nothing (or 410), and the re-issue ran the call again or
    /// nothing finished it.
    ColdResume,
    /// Events the operation was owed left the server's bounded store: the
    /// client got a 410 for it, or a resume skipped some of an execution's
    /// chunks and delivered later ones (a hole).
    Eviction,
    /// A poll of the operation's task found it gone (its `ttlMs` ran out
    /// before the client came back for the result): the client re-issued
    /// the call and the tool ran again, or nothing finished it.
    TaskExpired,
    /// The client switched transport, was refused (404) on the new one and
    /// re-initialized, re-issuing the operation while its first execution
    /// still ran or had run.
    TransportReissue,
    /// The balancer lost the pin that kept the operation's session on its
    /// replica (the balancer restarted, or the pin expired while the
    /// session lived), sent a request of it to another replica, which
    /// refused it (404); the re-initialization duplicated or lost it.
    AffinityLost,
    /// A request of the operation was refused (404) while the shared
    /// store's reads lagged: the replica that looked the session up read a
    /// copy that did not hold it yet, and the re-initialization duplicated
    /// or lost the operation.
    StoreLag,
    /// A request of the operation reached a replica that did not hold its
    /// session (the balancer sent it elsewhere than the replica that
    /// issued it), was refused (404), and the re-initialization that
    /// forced duplicated or lost the operation.
    WrongReplica,
    /// A keyed re-issue of the operation went out while one of its
    /// executions was still running (a re-issue that a guarded server
    /// joins to that execution), the execution went on to its result, and
    /// the operation was lost all the same: the answer to the re-issue
    /// never followed the execution it met to its end.
    JoinLost,
    /// A request of the operation went out on a kept-alive connection
    /// that was already dead (a fault killed it while it idled in the
    /// pool, or the server's idle close raced it), never ran, and the
    /// operation was lost: the read timeout it waited out, or the EOF,
    /// spent the attempts a fresh connection would have had.
    StaleConnection,
    /// A POST of the operation reached the server and ran, but the client
    /// never saw its response begin (no status, no stream), so it re-sent.
    LostResponseHead,
    /// An execution of the operation took its effect and ended without its
    /// result (no restart or crash explains it: the server cancelled it,
    /// as the 2026-07-28 wire requires when the response stream closes),
    /// and the client's re-issue ran the tool again.
    CancelledAfterEffect,
    /// The client gave the operation up without cancelling its request,
    /// and the execution running then took its effect after: the call its
    /// client reported failed ran all the same, where a
    /// `notifications/cancelled` would have stopped it (a field client's
    /// `cancel-never-sent`).
    CancelNotSent,
    /// The client gave the operation up and cancelled its request, the
    /// server accepted the cancellation (202), and the execution running
    /// then took its effect after it: the server dropped the cancellation.
    CancelIgnored,
    /// The client re-sent the operation without an `Idempotency-Key` after
    /// losing its stream, and the server ran it again.
    RetryWithoutKey,
    /// The client re-sent the operation with a new `Idempotency-Key` (a
    /// key per attempt), and the server ran it again: by its key, no
    /// server can tell that retry from a new call.
    KeyChanged,
    /// Every attempt carried the same `Idempotency-Key`, and the server ran
    /// the operation again anyway (keys ignored, or the key forgotten).
    KeyNotHonored,
    /// A resume's replay and live events interleaved on one stream: the
    /// result was handled after a later operation's (it came in the
    /// replay while the later one's arrived live), or it was lost because
    /// live events moved the client's cursor past it before the replay
    /// reached it, so every later resume started after it.
    ReplayLiveInterleave,
    /// The client's connection closed while the server finished the
    /// stream: the drop that interrupted the operation came after an
    /// execution's result was emitted, so the server saw a finished stream
    /// where the client saw a broken one. (Ranked above the retry causes:
    /// it says why the retry happened at all.)
    FinRace,
    /// In the heal phase, with the faults gone, the client went round a
    /// reconnect loop for the operation: five or more resumes with one
    /// cursor and nothing new, or requests as frequent at the heal's end
    /// as at its start (rmcp's client after a resume answered 200 and
    /// nothing, every second, forever).
    ReconnectLoop,
    /// The server refused the operation's call by design: guarded on the
    /// 2026-07-28 wire answers a call without an `Idempotency-Key` to a
    /// tool that is not idempotent 400, and the client gave it up there.
    KeyRequired,
    /// A gateway answered the operation's call 502 or 504 (its replica
    /// broke off or did not answer in time), and the client, holding no
    /// key that would make sending it again safe, gave it up there, with
    /// attempts left.
    GatewayGaveUp,
    /// The server answered 404 (it no longer has the session) and the
    /// client gave the operation up there instead of opening a new session
    /// (a stale session kept: the field behaviour
    /// `never-reinit-after-404`).
    StaleSession,
    /// The operation never ran because its client could get no session:
    /// its last initialize was answered 503 (the server held all the
    /// sessions it may, or was draining) and none came after (a client
    /// that opens a session per call and closes none: the field behaviour
    /// `fresh-session-per-call`).
    SessionRefused,
    /// The client used up its attempts and gave the operation up.
    GaveUp,
    /// The server paused a stream of the client while the operation was
    /// open (`retry:` advice, then a close: polling), the client sent no
    /// resume after, and the operation's result never came (a client that
    /// ignores `retry:`: the field behaviour `ignore-retry-field`).
    RetryIgnored,
    /// A resumed stream of the operation broke before any event with an
    /// id arrived on it, and the client reconnected without
    /// `Last-Event-ID` (a cursor kept only by the broken stream: the field
    /// behaviour `no-cursor-on-second-resume`), so the result never came.
    CursorDropped,
    /// A webhook receiver applied one occurrence twice (a delivery):
    /// the sender minted a new `webhook-id` for a retry, or the receiver
    /// does not deduplicate. A delivery cause: the deliveries judge
    /// (docs/events.md) gives it, never an operation's rule.
    WebhookDuplicate,
    /// A deduplicating webhook receiver applied one occurrence twice under
    /// one id: its memory of the first had gone (its window passed).
    DedupWindowLost,
    /// The sender gave a webhook delivery up (its attempts ran out, or the
    /// receiver answered 410 or 413), and it never came.
    RetryExhausted,
    /// The webhook subscription lapsed (not refreshed before its TTL) with
    /// the occurrence undelivered, and it never came.
    SubscriptionLapsed,
    /// The server told the reader's push stream of a loss covering the
    /// occurrence (`active` with `truncated`), and the reader never heard
    /// it: a proxy on the way dropped the control envelope.
    EnvelopeDropped,
    /// The reader's cursor moved past the occurrence with no `truncated`
    /// (or `gap`) saying so: it applied a later one, never this one.
    CursorTruncatedSilently,
    /// The run (fault phase plus heal phase) ended with the operation (or
    /// the delivery) still unresolved.
    RunEnded,
}

/// The causes' registry and precedence list: the first cause whose rule
/// holds wins. A new cause is a variant, its place here, its name, its
/// glossary line and its rule ([`Cause::applies`]); the metrics'
/// `failures_by_cause`, `validate`'s metric names, the report's glossary
/// and `shrink --until-cause` read this list.
pub const PRECEDENCE: &[Cause] = &[
    Cause::OwnerDead,
    Cause::RestartMidExecution,
    Cause::RestartLostSession,
    Cause::TaskCreateLost,
    Cause::MrtrReexecution,
    Cause::TaskCancelRace,
    Cause::ColdResume,
    Cause::Eviction,
    Cause::TaskExpired,
    Cause::TransportReissue,
    Cause::AffinityLost,
    Cause::StoreLag,
    Cause::WrongReplica,
    Cause::JoinLost,
    Cause::StaleConnection,
    Cause::LostResponseHead,
    Cause::FinRace,
    Cause::CancelNotSent,
    Cause::CancelIgnored,
    Cause::CancelledAfterEffect,
    Cause::RetryWithoutKey,
    Cause::KeyChanged,
    Cause::KeyNotHonored,
    Cause::ReplayLiveInterleave,
    Cause::ReconnectLoop,
    Cause::KeyRequired,
    Cause::GatewayGaveUp,
    Cause::StaleSession,
    Cause::SessionRefused,
    Cause::GaveUp,
    Cause::RetryIgnored,
    Cause::CursorDropped,
    Cause::WebhookDuplicate,
    Cause::DedupWindowLost,
    Cause::RetryExhausted,
    Cause::SubscriptionLapsed,
    Cause::EnvelopeDropped,
    Cause::CursorTruncatedSilently,
    Cause::RunEnded,
];

/// The causes a failed delivery (the Events extension) may get; no
/// operation gets one (`run_ended` is both's).
pub const DELIVERY_CAUSES: &[Cause] = &[
    Cause::WebhookDuplicate,
    Cause::DedupWindowLost,
    Cause::RetryExhausted,
    Cause::SubscriptionLapsed,
    Cause::EnvelopeDropped,
    Cause::CursorTruncatedSilently,
    Cause::RunEnded,
];

impl Cause {
    /// The snake_case name (JSON keys of `failures_by_cause`).
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::OwnerDead => "owner_dead",
            Cause::RestartMidExecution => "restart_mid_execution",
            Cause::RestartLostSession => "restart_lost_session",
            Cause::TaskCreateLost => "task_create_lost",
            Cause::MrtrReexecution => "mrtr_reexecution",
            Cause::TaskCancelRace => "task_cancel_race",
            Cause::TaskExpired => "task_expired",
            Cause::ColdResume => "cold_resume",
            Cause::Eviction => "eviction",
            Cause::TransportReissue => "transport_reissue",
            Cause::AffinityLost => "affinity_lost",
            Cause::StoreLag => "store_lag",
            Cause::WrongReplica => "wrong_replica",
            Cause::JoinLost => "join_lost",
            Cause::StaleConnection => "stale_connection",
            Cause::LostResponseHead => "lost_response_head",
            Cause::CancelledAfterEffect => "cancelled_after_effect",
            Cause::RetryWithoutKey => "retry_without_key",
            Cause::KeyChanged => "key_changed",
            Cause::KeyNotHonored => "key_not_honored",
            Cause::ReplayLiveInterleave => "replay_live_interleave",
            Cause::FinRace => "fin_race",
            Cause::CancelNotSent => "cancel_not_sent",
            Cause::CancelIgnored => "cancel_ignored",
            Cause::ReconnectLoop => "reconnect_loop",
            Cause::KeyRequired => "key_required",
            Cause::GatewayGaveUp => "gateway_gave_up",
            Cause::StaleSession => "stale_session",
            Cause::RetryIgnored => "retry_ignored",
            Cause::CursorDropped => "cursor_dropped",
            Cause::SessionRefused => "session_refused",
            Cause::GaveUp => "gave_up",
            Cause::WebhookDuplicate => "webhook_duplicate",
            Cause::DedupWindowLost => "dedup_window_lost",
            Cause::RetryExhausted => "retry_exhausted",
            Cause::SubscriptionLapsed => "subscription_lapsed",
            Cause::EnvelopeDropped => "envelope_dropped",
            Cause::CursorTruncatedSilently => "cursor_truncated_silently",
            Cause::RunEnded => "run_ended",
        }
    }

    /// One line on what happened, for the report's glossary (the rule
    /// itself is [`Cause::applies`]; `docs/causes.md` has the catalogue).
    pub fn glossary(self) -> &'static str {
        match self {
            Cause::OwnerDead => {
                "the replica that ran the call went down (killed or hung) while the call was open: the re-issue ran it again elsewhere, or nothing finished it."
            }
            Cause::RestartMidExecution => {
                "a server restart hit while the tool was running: its effect was taken, no result came, and the re-issue ran it again (or nothing finished it)."
            }
            Cause::RestartLostSession => {
                "a server restart (or a shared store's that kept nothing) hit after the result was produced but before the client got it: the session vanished (404) and the client re-issued."
            }
            Cause::TaskCreateLost => {
                "the call ran as a task, but its CreateTaskResult never reached the client: knowing no task id, it re-issued the call, which created a second task and ran the tool again."
            }
            Cause::MrtrReexecution => {
                "the tool took its effect, then asked for input; the retry that answered ran it from the start and took the effect again."
            }
            Cause::TaskCancelRace => {
                "the client cancelled its task and the server acknowledged, but the effect was already taken: the re-issued call ran the tool again."
            }
            Cause::TaskExpired => {
                "the task's result expired (ttlMs) before the client polled for it: the client re-issued the call and the tool ran again, or nothing finished it."
            }
            Cause::ColdResume => {
                "a resume reached a replica whose shared store lacked the cursor (the store restarted keeping nothing, or its reads lagged): nothing was replayed, and the re-issue ran the call again or nothing finished it."
            }
            Cause::Eviction => {
                "events owed to the client left the server's bounded event store before it came back for them (a 410, or a resume that skipped a hole)."
            }
            Cause::TransportReissue => {
                "the client switched transport, was refused (404) on the new one, re-initialized and re-issued while the first execution ran or had run."
            }
            Cause::AffinityLost => {
                "the balancer lost the session's pin (it restarted, or the pin expired): a request went to another replica, which answered 404, and the re-initialization ran the call again or lost it."
            }
            Cause::StoreLag => {
                "a replica read the shared store's lagging copy, which did not hold the session yet: it answered 404, and the re-initialization ran the call again or lost it."
            }
            Cause::WrongReplica => {
                "the balancer sent a request to a replica that did not hold the session: it answered 404, and the re-initialization that forced ran the call again or lost it."
            }
            Cause::JoinLost => {
                "a keyed re-issue met the call's execution still running, that execution went on to its result, and the result never reached the client: the re-issue's answer did not follow the execution it met."
            }
            Cause::StaleConnection => {
                "a request went out on a kept-alive connection that was already dead (a fault, or the server's idle close), never ran, and the call was lost."
            }
            Cause::LostResponseHead => {
                "a POST reached the server and ran, but the client never saw its response begin, so it sent it again."
            }
            Cause::FinRace => {
                "the connection broke just as the server finished the stream: the server saw a finished stream, the client a broken one, and retried."
            }
            Cause::CancelNotSent => {
                "the client gave the call up and never cancelled its request: the execution running then took its effect after, so a call reported failed ran all the same."
            }
            Cause::CancelIgnored => {
                "the client gave the call up and cancelled its request, the server answered 202, and the execution running then took its effect after all: the server dropped the cancellation."
            }
            Cause::CancelledAfterEffect => {
                "the server cancelled an execution whose effect was already taken (its stream closed), and the client's re-issue ran the tool again."
            }
            Cause::RetryWithoutKey => {
                "the client re-sent the call without an `Idempotency-Key` after losing its stream, and the server ran it again."
            }
            Cause::KeyChanged => {
                "the client re-sent the call with a new `Idempotency-Key` (one per attempt), so the server took the retry for a new call and ran it again."
            }
            Cause::KeyNotHonored => {
                "every attempt carried the same key and the server ran the call again anyway."
            }
            Cause::ReplayLiveInterleave => {
                "a resume's replay and live events interleaved on one stream: the result came back after a later call's (out of order), or live events moved the client's cursor past it and no resume could bring it (lost)."
            }
            Cause::ReconnectLoop => {
                "with the faults gone, the client kept resuming the same stream from the same cursor (or retrying as often at the end as at the start) and nothing came: a reconnect loop, not a network fault."
            }
            Cause::KeyRequired => {
                "the server refused the call by design (guarded on the 2026-07-28 wire wants an `Idempotency-Key` on a tool that is not idempotent: 400), and the client gave it up."
            }
            Cause::GatewayGaveUp => {
                "a gateway answered 502 or 504 (its replica broke off or did not answer in time) and the client, with no key to make a re-send safe, gave the call up with attempts left."
            }
            Cause::StaleSession => {
                "the server no longer had the session (404) and the client gave the call up there, keeping its stale session id instead of opening a new one."
            }
            Cause::SessionRefused => {
                "the client could get no session: its last initialize was answered 503 (the server held all the sessions it may, or was draining), so the call never ran."
            }
            Cause::GaveUp => {
                "the client used up its attempts."
            }
            Cause::RetryIgnored => {
                "the server paused the stream (`retry:`, then a close) and the client never resumed it: it reconnected without `Last-Event-ID`, and the result never came."
            }
            Cause::CursorDropped => {
                "a resumed stream broke before any event with an id came on it, and the client reconnected without `Last-Event-ID`: nothing resumed the call's stream again, and the result never came."
            }
            Cause::WebhookDuplicate => {
                "events: a webhook receiver applied one occurrence twice: the sender retried under a new `webhook-id`, or the receiver does not deduplicate."
            }
            Cause::DedupWindowLost => {
                "events: a deduplicating webhook receiver applied one occurrence twice: it had forgotten the first delivery's id (its window passed)."
            }
            Cause::RetryExhausted => {
                "events: the server gave a webhook delivery up (its attempts ran out, or the receiver answered 410 or 413), and the occurrence never arrived."
            }
            Cause::SubscriptionLapsed => {
                "events: the webhook subscription lapsed (no refresh reached the server before its TTL) with the occurrence undelivered."
            }
            Cause::EnvelopeDropped => {
                "events: the server told the reader's push stream that occurrences were lost (`truncated`), and a proxy on the way dropped that envelope: the reader skipped them unwarned."
            }
            Cause::CursorTruncatedSilently => {
                "events: the reader's cursor moved past an occurrence it never got, and no `truncated` or `gap` told it so."
            }
            Cause::RunEnded => {
                "the run (faults, then the heal phase) ended with the call (or the event delivery) unresolved."
            }
        }
    }

    /// The cause named `name` (a `failures_by_cause` key).
    pub fn named(name: &str) -> Option<Cause> {
        PRECEDENCE.iter().copied().find(|c| c.as_str() == name)
    }

    /// Whether this cause's rule holds for a failed operation.
    fn applies(self, op: &OpFacts, run: &RunFacts) -> bool {
        let dup = op.failures.contains(Failure::Duplicated);
        match self {
            Cause::OwnerDead => op.owner_died(&run.crashes_us),
            Cause::RestartMidExecution => op.execs.iter().any(|x| {
                run.restarts_us
                    .iter()
                    .any(|&r| x.start_us <= r && x.result_us.is_none_or(|f| f > r))
            }),
            Cause::RestartLostSession => {
                op.restarted_during(&run.restarts_us)
                    || (op.refused_404 && op.restarted_during(&run.store_lost_us))
            }
            Cause::TaskCreateLost => dup && op.task_create_unseen,
            Cause::MrtrReexecution => dup && op.asked_after_effect(),
            Cause::TaskCancelRace => dup && op.task_cancel_acked,
            Cause::TaskExpired => op.task_gone && (dup || op.failures.contains(Failure::Lost)),
            Cause::ColdResume => run.shared_store && op.resumed_cold(run),
            Cause::Eviction => op.evicted(),
            Cause::TransportReissue => op.reinit_after_switch,
            Cause::AffinityLost => op.affinity_lost,
            Cause::StoreLag => run.shared_store && op.refused_lagging,
            Cause::WrongReplica => run.deployed && op.refused_404,
            Cause::JoinLost => {
                op.failures.contains(Failure::Lost) && !dup && op.met_running_execution()
            }
            Cause::StaleConnection => op.stale_unrun && op.failures.contains(Failure::Lost),
            Cause::LostResponseHead => op.unseen_attempt_ran,
            Cause::CancelledAfterEffect => {
                dup && op
                    .execs
                    .iter()
                    .any(|x| x.committed && x.result_us.is_none())
            }
            Cause::CancelNotSent => op.ran_after_leaving(false),
            Cause::CancelIgnored => op.ran_after_leaving(true),
            Cause::RetryWithoutKey => dup && op.keyless_retry,
            Cause::KeyChanged => dup && op.key_changed,
            Cause::KeyNotHonored => dup && !op.keyless_retry && !op.key_changed,
            Cause::ReplayLiveInterleave => {
                (op.failures.contains(Failure::OutOfOrder) && op.resumed)
                    || (op.failures.contains(Failure::Lost) && op.cursor_past_result)
            }
            Cause::FinRace => op.result_before_drop,
            Cause::ReconnectLoop => op.failures.contains(Failure::Lost) && op.looped(run),
            Cause::KeyRequired => op.gave_up && !op.keyed && op.last_status == Some(400),
            Cause::GatewayGaveUp => {
                op.gave_up && !op.keyed && matches!(op.last_status, Some(502 | 504))
            }
            Cause::StaleSession => op.gave_up && op.last_status == Some(404),
            Cause::SessionRefused => op.failures.contains(Failure::Lost) && op.session_refused,
            Cause::GaveUp => op.gave_up,
            Cause::RetryIgnored => op.failures.contains(Failure::Lost) && op.retry_ignored,
            Cause::CursorDropped => op.failures.contains(Failure::Lost) && op.cursor_dropped,
            Cause::RunEnded => op.failures.contains(Failure::Lost) && !run.clients_finished,
            Cause::WebhookDuplicate
            | Cause::DedupWindowLost
            | Cause::RetryExhausted
            | Cause::SubscriptionLapsed
            | Cause::EnvelopeDropped
            | Cause::CursorTruncatedSilently => false,
        }
    }
}

/// The primary cause of a failed operation, or `None` when no rule holds
/// (an oracle defect).
pub fn primary(op: &OpFacts, run: &RunFacts) -> Option<Cause> {
    PRECEDENCE.iter().copied().find(|c| c.applies(op, run))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cause has its place in the precedence, a name of its own and
    /// a glossary line: one forgotten would count its failures nowhere.
    #[test]
    fn every_cause_has_a_whole_entry() {
        let mut names = std::collections::BTreeSet::new();
        for (i, c) in PRECEDENCE.iter().enumerate() {
            assert!(names.insert(c.as_str()), "{} twice", c.as_str());
            assert!(!c.glossary().is_empty(), "{}", c.as_str());
            assert_eq!(Cause::named(c.as_str()), Some(*c));
            // Tally arrays are indexed by `Cause as usize`.
            assert!((*c as usize) < PRECEDENCE.len(), "{i}");
        }
        // `RunEnded` is declared last: every variant has its place.
        assert_eq!(PRECEDENCE.len(), Cause::RunEnded as usize + 1);
        // The delivery causes are the list's tail, `run_ended` with them.
        assert!(PRECEDENCE.ends_with(DELIVERY_CAUSES));
    }
}

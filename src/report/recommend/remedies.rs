//! What removes each cause: the line every report writes under a cause
//! that remains (a unit test fails on a cause without one).

/// What removes each cause, and where the report's arms and profiles
/// show it. Ordered as the oracle's causes.
pub const REMEDIES: &[(&str, &str)] = &[
    (
        "owner_dead",
        "effects that commit with their key when the tool finishes (`--set server.effects=transactional`) and keys every replica sees (`--set deployment.store=shared`, with `deployment.on_dead_upstream=repin`), so the re-issue on another replica gets the stored result or runs once the dead runner's lease ran out; with local stores no replica knows the dead one's keys",
    ),
    (
        "restart_mid_execution",
        "effects that commit with their key when the tool finishes (`--set server.effects=transactional`), keys kept across restarts (`--set server.durable_dedup=true`) and clients that send keys",
    ),
    (
        "restart_lost_session",
        "keys kept across restarts (`--set server.durable_dedup=true`) and clients that send keys, so the re-issue after the 404 gets the stored result",
    ),
    (
        "task_create_lost",
        "task creation under an `Idempotency-Key` (the `tasks+keys` profile) on an arm that honours it (`keys`, `guarded`): the re-sent creation gets the task its key created",
    ),
    (
        "mrtr_reexecution",
        "the `guarded` arm with keyed clients, which continues the execution the signed `requestState` names instead of running the tool again; or `effects = \"transactional\"` (the asking execution commits nothing)",
    ),
    (
        "task_cancel_race",
        "keyed tasks (`tasks+keys`) on `guarded`, which lets a keyed execution whose effect is taken run on past the cancel, so the re-issue under the key gets that task; or `effects = \"transactional\"` (a cancelled execution commits nothing)",
    ),
    (
        "cold_resume",
        "a shared store that keeps its contents (`--set deployment.store_durable=true`), resumes sent to the replica that gave the cursor (`--set deployment.resume=pin-owner`) and clients that send keys, so the re-issue is answered from the key table",
    ),
    (
        "eviction",
        "the guard's announced gaps (the `guarded` arm turns the loss into a degraded operation) or a larger `server.store_capacity`",
    ),
    (
        "task_expired",
        "a `task_ttl_ms` longer than the longest a client may be away (partitions, backoff), and keyed tasks (`tasks+keys`) on an arm that keeps the key's result after its task expired (`keys`, `guarded`, with `server.durable_dedup` across restarts)",
    ),
    (
        "transport_reissue",
        "clients that send an `Idempotency-Key` (the `keys` profile) to an arm that honours it: the re-issue after re-initializing is answered from the key table",
    ),
    (
        "affinity_lost",
        "pins that outlive the sessions they keep (`deployment.affinity_ttl_ms` 0, or longer than a session) and a balancer whose routing survives its restart (`--set deployment.balancer=hash`: the ring needs no table)",
    ),
    (
        "store_lag",
        "a store whose reads do not lag (a session read from the primary), or routing that keeps a session on the replica that opened it (`--set deployment.balancer=sticky` or `hash`)",
    ),
    (
        "wrong_replica",
        "a shared store every replica loads the session from (`--set deployment.store=shared`), or a balancer that keeps a session on the replica that issued it (`--set deployment.balancer=sticky`, or `hash`)",
    ),
    (
        "join_lost",
        "the `guarded` arm, whose joined re-issue follows the key's execution where every replica sees it (its result, its runner's lease) and answers with the stored result or runs the call once the runner is gone; a keyed client that keeps retrying a 409 for a key in flight long enough for the execution to end",
    ),
    (
        "stale_connection",
        "clients whose pool retires an idle connection before the server closes it (`pool_idle_ms` below `server.server_idle_ms`) and whose read timeout leaves attempts to retry on a fresh one; no server mechanism sees a request that never arrived",
    ),
    (
        "lost_response_head",
        "clients that send an `Idempotency-Key` (the `keys` profile) to an arm that honours it",
    ),
    (
        "fin_race",
        "clients that send an `Idempotency-Key` (the `keys` profile) to an arm that honours it",
    ),
    (
        "cancel_not_sent",
        "a server that cancels a request on a close it sees (the `cancel` arm, the 2026-07-28 wire); fix the client: cancel the call it gives up",
    ),
    (
        "cancel_ignored",
        "a server that stops a cancelled request (`cancel_notifications = \"honoured\"`, the default), or one that cancels on a close it sees (the `cancel` arm)",
    ),
    (
        "cancelled_after_effect",
        "the `guarded` arm with keyed clients (a keyed execution whose effect is taken runs on past the close and its key answers the re-issue), or `effects = \"transactional\"` (a cancelled execution commits nothing)",
    ),
    (
        "retry_without_key",
        "clients that send an `Idempotency-Key` on every non-idempotent call (the `keys` profile) to an arm that honours it (`keys`, `guarded`)",
    ),
    (
        "key_changed",
        "the `guarded` arm, whose Rule M answers a re-POST on a session that still holds the call's stream with 409 and its cursor, whatever key it carries; no key-honouring server can help a client that changes its key (fix the client: one key per call, kept across its attempts)",
    ),
    (
        "key_not_honored",
        "a server that honours `Idempotency-Key` (the `keys` or `guarded` arm)",
    ),
    (
        "replay_live_interleave",
        "Rule M (the `guarded` arm): a POST waits for the replay its client is owed",
    ),
    (
        "key_required",
        "clients that send an `Idempotency-Key` and a bearer token on every non-idempotent call (`keys` or `tasks+keys`): guarded refuses the rest by design",
    ),
    (
        "gateway_gave_up",
        "keyed clients (`keys`), which send a call again after a 502 or 504, to an arm that honours keys; and a gateway that repins a dead upstream (`deployment.on_dead_upstream = \"repin\"`)",
    ),
    (
        "stale_session",
        "a deployment whose sessions outlive a replica's restart (`deployment.store = \"shared\"` with `store_durable = true`), or the 2026-07-28 wire, which has no session to go stale; in one process no server helps (a server that lost a session can only answer 404): fix the client, which must open a new session",
    ),
    (
        "session_refused",
        "a server that ends idle sessions (`server.session_idle_ms`), so a client's leftover sessions go back, or the 2026-07-28 wire, which has no session; fix the client too (keep one session across calls, or DELETE the one it leaves)",
    ),
    (
        "gave_up",
        "a longer client budget, or the server settings docs/causes.md names for the residual",
    ),
    (
        "reconnect_loop",
        "the guarded arm's replay of the stream's tail (a resume never gets 200 and nothing), or a client that re-issues after an empty resume instead of resuming again forever (`reconnect = \"backoff\"`)",
    ),
    (
        "retry_ignored",
        "a server that does not poll (`poll_after = 0`, the default), which never pauses a stream; no arm resumes a stream the client never asks for: fix the client (wait the advised `retry:`, then resume with `Last-Event-ID`)",
    ),
    (
        "cursor_dropped",
        "the `guarded` arm, whose resumed stream names its position at once (its `replay-end` marker carries the stream's last id), so even a client that keeps its cursor only from the current stream's events has one when the stream breaks again; fix the client too (keep the cursor across reconnects: typescript-sdk PR #2509)",
    ),
    (
        "webhook_duplicate",
        "the draft's webhook sender (`--set server.events_sender=spec`, the default), which keeps the `eventId` as the `webhook-id` on every retry, and receivers that deduplicate on it (or on the body's `eventId`, `receiver.dedup = \"event-id\"`, which also catches a naive sender)",
    ),
    (
        "dedup_window_lost",
        "a receiver that remembers ids longer than the sender retries (`receiver.dedup_window_ms` above the sender's whole retry schedule, 0: for good)",
    ),
    (
        "retry_exhausted",
        "a retry schedule longer than the receiver's outages (`--set server.events_attempts=…`, `server.events_retry_ms=…`), or a receiver that reads the missed occurrences by poll from its watermark after an outage",
    ),
    (
        "subscription_lapsed",
        "a refresh well inside the TTL (`receiver.refresh_ms` at most half `receiver.ttl_ms`) and a prompt re-subscription from the watermark after a lapse, so the source replays what was pending",
    ),
    (
        "envelope_dropped",
        "a proxy that relays a push stream's control messages unchanged (`notifications/events/active`; `[intermediary] drop_control` off), or reading by poll through such a proxy (a poll's `truncated` travels in its answer, which proxies pass whole)",
    ),
    (
        "cursor_truncated_silently",
        "a server that announces a cursor reset (`truncated: true`, a `gap` envelope: `--set server.events_truncation=announced`, the default), and a retention longer than the readers' outages (`--set server.events_retention=…`)",
    ),
    (
        "run_ended",
        "a longer heal phase, or the server settings docs/causes.md names for the residual",
    ),
];

/// The mechanism that removes `cause`.
pub fn remedy(cause: &str) -> &'static str {
    REMEDIES
        .iter()
        .find(|(c, _)| *c == cause)
        .map_or("no mechanism known to this version", |(_, r)| r)
}

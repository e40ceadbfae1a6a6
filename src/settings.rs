//! The server's settings as plain data: a scenario's `[server]` table
//! (sims/README.md), `--set server.KEY=VALUE`, `serve`'s own. Below both
//! the server that runs with them (`server` re-exports them) and the
//! scenario file that writes them, so the file format needs nothing of
//! the server.

use serde::{Deserialize, Serialize};

/// Where a tool call's response events go: a history type (the clients
/// and the server's log read it too), re-exported here with the settings.
pub use crate::history::Delivery;

/// Server settings (a scenario's `[server]` table, sims/README.md).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Delivery mode.
    pub delivery: Delivery,
    /// The first event id of every session.
    pub first_event_id: u64,
    /// Events a session's store holds before evicting the oldest.
    pub store_capacity: usize,
    /// Pause before each replayed backlog event (a slow link), ms.
    pub replay_interval_ms: u64,
    /// POSTs a session may queue behind a replay (guarded).
    pub queue_capacity: u32,
    /// Longest a queued POST waits for the replay, ms (guarded).
    pub queue_wait_ms: u64,
    /// A writer that cannot hand a frame over in this long drops the
    /// connection, ms.
    pub write_deadline_ms: u64,
    /// Largest POST body accepted, bytes.
    pub max_body_bytes: usize,
    /// Dedup tokens remembered server-wide (arms that honor keys), each
    /// scoped to its principal.
    pub dedup_capacity: usize,
    /// `retry:` advice on priming events, ms.
    pub retry_ms: Option<u64>,
    /// Most chunks one tool call may ask for.
    pub max_chunks: u32,
    /// Most live sessions.
    pub max_sessions: usize,
    /// Seed of the session-id generator (ChaCha20).
    pub session_seed: u64,
    /// How long a legacy session outlives its GET stream, ms.
    pub legacy_session_ttl_ms: u64,
    /// Rule T: a cross-transport cursor mapping is registered for every
    /// session (guarded): legacy sessions resume over streamable HTTP
    /// exactly, keeping what they negotiated.
    pub cross_transport_mapping: bool,
    /// The clock resource changes this often, ms (0: never).
    pub resource_interval_ms: u64,
    /// Every SSE response says `X-Accel-Buffering: no`, so a buffering
    /// intermediary that honours it (as nginx does) streams it. On by
    /// default, as the SDKs' servers do; `false` models a server that
    /// does not (the `go` preset). `None`: the preset's, else on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_buffering: Option<bool>,
    /// A stream's connection silent this long gets a `:` comment, ms (0:
    /// never): a sign of life for the client and any intermediary.
    #[serde(skip_serializing_if = "is_zero")]
    pub keepalive_ms: u64,
    /// (guarded) A `replay_in_progress` refusal says `Retry-After`: the
    /// replay's remaining length (its backlog at `replay_interval_ms` an
    /// event), in whole seconds, at least 1.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay_retry_after: bool,
    /// Polling (2025-11-25, SSE `retry:`): after this many events on one
    /// connection of a stream, with more to come, the server sends
    /// `retry: poll_retry_ms` and closes the connection itself; the stream
    /// is paused until the client resumes it (0: never).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub poll_after: u32,
    /// The `retry:` a polling close sends, ms.
    #[serde(skip_serializing_if = "is_default_poll_retry")]
    pub poll_retry_ms: u64,
    /// (guarded) How long past its `retry:` a paused stream waits for its
    /// resume before Rule M counts it dropped, ms (the clients' read
    /// timeout is a fair value).
    #[serde(skip_serializing_if = "is_default_poll_grace")]
    pub poll_grace_ms: u64,
    /// (guarded) A legacy session that Rule T refuses over streamable
    /// HTTP (its client has moved on) is ended there and then when no
    /// connection of it is open and nothing of it runs, not at its TTL: its
    /// slot under `max_sessions` is free for the client's re-initialize.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub release_moved_legacy: bool,
    /// A kept-alive connection that serves nothing for this long is
    /// closed by the server, ms.
    pub server_idle_ms: u64,
    /// A session with no open connection and nothing done for this long
    /// is ended by the server, ms (0: never; `serve` bounds it itself).
    /// Its client's next request gets 404 and a client that honours the
    /// server opens a new session.
    #[serde(skip_serializing_if = "is_zero")]
    pub session_idle_ms: u64,
    /// Completed keys survive a restart: the key table's completed entries
    /// are kept beside the ledger (in-flight ones are not). Off: the table
    /// is lost on restart.
    pub durable_dedup: bool,
    /// When a tool's effect lands in the ledger.
    pub effects: Effects,
    /// How long a task (the 2026-07-28 tasks extension) and its result are
    /// kept after its creation, ms (`ttlMs`).
    pub task_ttl_ms: u64,
    /// How often a task's client is asked to poll it, ms
    /// (`pollIntervalMs`).
    pub task_poll_ms: u64,
    /// What a resume re-sends (unguarded, keys): after the event its
    /// `Last-Event-ID` names (`None`: exclusive), or from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// What a resume of a POST stream whose result was produced gets
    /// (unguarded, keys). `None`: `replay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_resume: Option<CompletedResume>,
    /// What a `notifications/cancelled` does to the request it names.
    /// `None`: the preset's, else honoured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_notifications: Option<CancelNotifications>,
    /// (unguarded, keys) A resume opens with a priming event that names
    /// the cursor's position (its id, no data), so the client has a cursor
    /// before anything is replayed. `None`: the preset's, else off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prime_resume: Option<bool>,
    /// What a close the server sees does to the execution whose response
    /// stream it was, where it cancels (every arm on the 2026-07-28 wire,
    /// the `cancel` arm on both). `None`: the preset's, else cancel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_close: Option<OnClose>,
    /// The event source's `clock-tick` period, ms (0: no source; the
    /// Events extension is not offered).
    #[serde(skip_serializing_if = "is_zero")]
    pub events_tick_ms: u64,
    /// Occurrences the server serves from, the newest so many: a cursor
    /// behind them is reset to the oldest (`truncated`).
    pub events_retention: u32,
    /// `nextPollMs` in a poll's answer, ms.
    pub events_poll_ms: u64,
    /// A push stream's heartbeat period, ms.
    pub events_heartbeat_ms: u64,
    /// What a cursor behind the retention is told.
    pub events_truncation: Truncation,
    /// How a webhook subscription's deliveries are sent and retried.
    #[serde(skip_serializing_if = "EventsSender::is_default")]
    pub events_sender: EventsSender,
    /// Attempts per webhook delivery, the first included.
    #[serde(skip_serializing_if = "is_default_attempts")]
    pub events_attempts: u32,
    /// Wait before a delivery's first retry, ms (doubling after each).
    #[serde(skip_serializing_if = "is_default_events_retry")]
    pub events_retry_ms: u64,
    /// Longest wait for a receiver's answer to one attempt, ms.
    #[serde(skip_serializing_if = "is_default_webhook_timeout")]
    pub events_webhook_timeout_ms: u64,
    /// Longest TTL a webhook subscription is granted, ms (a longer ask,
    /// or none, gets this).
    #[serde(skip_serializing_if = "is_default_events_ttl")]
    pub events_ttl_ms: u64,
    /// Webhook subscriptions one principal may hold.
    #[serde(skip_serializing_if = "is_default_subscriptions")]
    pub events_subscriptions: u32,
    /// A preset of one SDK's quirks (`rmcp`: inclusive replay, an empty
    /// resume once the result was produced; `python`: cancellations
    /// dropped, resumes primed; `typescript`: cancellations dropped, a
    /// close that stops nothing; `csharp`: the defaults; `go`: no
    /// buffering header, a close that stops nothing, 2025-11-25 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdk: Option<Sdk>,
    /// Which revisions of the wire the server speaks. Not a `[server]`
    /// key: a scenario's `era` sets it for its run, `serve --era` for a
    /// served one.
    #[serde(skip)]
    pub wire: Wire,
}

/// A revision of the MCP wire a run speaks (a scenario's `era`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Era {
    /// Sessions, `initialize`, the GET stream, resumption by
    /// `Last-Event-ID`.
    #[default]
    #[serde(rename = "2025-11-25")]
    Y2025,
    /// No sessions: every request self-contained (`_meta`), a closed
    /// response stream cancels its request, the client re-issues with a
    /// new id; no resumption.
    #[serde(rename = "2026-07-28")]
    Y2026,
}

impl Era {
    /// Every era, oldest first.
    pub const ALL: [Era; 2] = [Era::Y2025, Era::Y2026];

    /// The revision's date, as the wire and the files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Y2025 => "2025-11-25",
            Era::Y2026 => "2026-07-28",
        }
    }

    /// Whether this is the default era (written only when not).
    pub fn is_default(&self) -> bool {
        *self == Era::Y2025
    }
}

impl std::str::FromStr for Era {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Era::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| format!("unknown era {s:?}: use 2025-11-25 or 2026-07-28"))
    }
}

/// Which revisions a server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// One era's wire only.
    #[default]
    Y2025,
    /// The 2026-07-28 wire only: `initialize` is refused.
    Y2026,
    /// Both, per request: one that carries a 2026-07-28 protocol version
    /// (in `_meta` or its header) or is `server/discover` takes the 2026
    /// path, any other the 2025 one (as the Python SDK does).
    Both,
}

impl Wire {
    /// The wire of a run in `era`.
    pub fn of(era: Era) -> Wire {
        match era {
            Era::Y2025 => Wire::Y2025,
            Era::Y2026 => Wire::Y2026,
        }
    }
}

/// What a resume re-sends (`[server] replay`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    /// The events after the one `Last-Event-ID` names (the spec; the
    /// TypeScript and Python SDKs).
    #[default]
    Exclusive,
    /// The named event again, then the ones after it (rmcp): one duplicate
    /// event per resume.
    Inclusive,
}

/// What a resume of a completed stream gets (`[server] completed_resume`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompletedResume {
    /// The stream's tail from the store, result included.
    #[default]
    Replay,
    /// 200 and an empty stream (rmcp drops a stream once its final
    /// response is routed): the tail is unrecoverable.
    Empty,
}

/// What a `notifications/cancelled` does (`[server] cancel_notifications`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CancelNotifications {
    /// The named request stops at its next step (the spec); an effect it
    /// took already stays.
    #[default]
    Honoured,
    /// Answered 202 and nothing more: the request runs on to its result,
    /// as the TypeScript v2 (2.4.0) and Python (2.3.0) SDK servers do
    /// (the probe's `cancel-ignored`).
    Dropped,
}

/// What a seen close does where it cancels (`[server] on_close`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnClose {
    /// The execution stops at its next chunk (Python's cancel scope,
    /// rmcp); an effect it took already stays.
    #[default]
    Cancel,
    /// The execution runs on to its effect, and its result goes nowhere:
    /// TypeScript v2 aborts a signal (`ctx.mcpReq.signal`) its tools, as
    /// the SDK's examples write them, do not watch (the probe's
    /// `close-cancels` absent); go-sdk leaves the handler's context alone
    /// unless `PropagateRequestCancellation` is set.
    #[serde(rename = "run_on")]
    RunOn,
}

/// Largest `server.events_retention`: the event source keeps no more.
pub const MAX_EVENTS_RETENTION: u32 = 4_096;

/// Webhook subscriptions a server holds in all (`serve`'s bound beside
/// the per-principal `events_subscriptions`).
pub const MAX_SUBSCRIPTIONS: usize = 1_024;

/// The shortest TTL a server grants (an ask below it is raised to it),
/// and the shortest `events_ttl_ms` and client `receiver.ttl_ms`, ms.
pub const MIN_EVENTS_TTL_MS: u64 = 1_000;

const DEFAULT_EVENTS_ATTEMPTS: u32 = 4;
const DEFAULT_EVENTS_RETRY_MS: u64 = 1_000;
const DEFAULT_WEBHOOK_TIMEOUT_MS: u64 = 2_000;
const DEFAULT_EVENTS_TTL_MS: u64 = 30_000;
const DEFAULT_SUBSCRIPTIONS: u32 = 16;

fn is_default_attempts(v: &u32) -> bool {
    *v == DEFAULT_EVENTS_ATTEMPTS
}

fn is_default_events_retry(v: &u64) -> bool {
    *v == DEFAULT_EVENTS_RETRY_MS
}

fn is_default_webhook_timeout(v: &u64) -> bool {
    *v == DEFAULT_WEBHOOK_TIMEOUT_MS
}

fn is_default_events_ttl(v: &u64) -> bool {
    *v == DEFAULT_EVENTS_TTL_MS
}

fn is_default_subscriptions(v: &u32) -> bool {
    *v == DEFAULT_SUBSCRIPTIONS
}

/// How a server sends a webhook subscription's deliveries
/// (`[server] events_sender`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventsSender {
    /// Retries mint a new `webhook-id` each attempt: no receiver can tell
    /// a retry from a new occurrence by its id.
    Naive,
    /// The draft's sender: the same `webhook-id` (the `eventId`) on every
    /// attempt, bounded retries with doubling waits, a `gap` envelope when
    /// the subscription fell behind the retention.
    #[default]
    Spec,
    /// The draft's sender over an outbox beside the ledger: each
    /// subscription and the watermark its deliveries are settled up to
    /// outlive the incarnation, and another replica, or the next
    /// incarnation, resumes delivery from the watermark once the holder's
    /// lease ran out.
    Durable,
}

impl EventsSender {
    /// The name `events_sender` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            EventsSender::Naive => "naive",
            EventsSender::Spec => "spec",
            EventsSender::Durable => "durable",
        }
    }

    fn is_default(&self) -> bool {
        *self == EventsSender::Spec
    }
}

/// What a reader whose cursor is behind the retention is told
/// (`[server] events_truncation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Truncation {
    /// `truncated: true` with the reset cursor (the draft's rule).
    #[default]
    Announced,
    /// The reset cursor alone: the reader skips what was lost without
    /// being told (a server that does not follow the draft).
    Silent,
}

/// An SDK whose quirks a preset sets (`[server] sdk`): what its server
/// does, measured by `probe` against the release named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sdk {
    /// rmcp 3.11: `replay = "inclusive"`, `completed_resume = "empty"`.
    Rmcp,
    /// The Python SDK, `mcp` 2.3.0: `cancel_notifications = "dropped"`,
    /// `prime_resume = true`.
    Python,
    /// The TypeScript SDK v2, `@modelcontextprotocol/server` 2.4.0:
    /// `cancel_notifications = "dropped"`, `on_close = "run_on"`.
    Typescript,
    /// The C# SDK, `ModelContextProtocol.AspNetCore` 2.2.0 in its
    /// `StatefulForInitializeClients` mode (documented, not measured: it
    /// does not install here): what the built-in server does on every knob
    /// the model has, so it sets none.
    Csharp,
    /// go-sdk's default stateful server (documented, not measured; main
    /// after v1.7.0): `no_buffering = false`, `on_close = "run_on"`, and the
    /// 2025-11-25 wire only (it refuses the 2026-07-28 one with -32022).
    Go,
}

impl Sdk {
    /// Every preset.
    pub const ALL: [Sdk; 5] = [
        Sdk::Rmcp,
        Sdk::Python,
        Sdk::Typescript,
        Sdk::Csharp,
        Sdk::Go,
    ];

    /// Its name in a scenario and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Sdk::Rmcp => "rmcp",
            Sdk::Python => "python",
            Sdk::Typescript => "typescript",
            Sdk::Csharp => "csharp",
            Sdk::Go => "go",
        }
    }
}

impl std::str::FromStr for Sdk {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Sdk::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Sdk::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown sdk {s:?}: use {}", names.join(", "))
            })
    }
}

impl ServerConfig {
    /// The replay mode asked for: `replay`, else the preset's, else
    /// exclusive.
    pub fn replay_mode(&self) -> Replay {
        match (self.replay, self.sdk) {
            (Some(r), _) => r,
            (None, Some(Sdk::Rmcp)) => Replay::Inclusive,
            (None, _) => Replay::Exclusive,
        }
    }

    /// What a completed stream's resume gets: `completed_resume`, else the
    /// preset's, else a replay.
    pub fn completed_resume_mode(&self) -> CompletedResume {
        match (self.completed_resume, self.sdk) {
            (Some(c), _) => c,
            (None, Some(Sdk::Rmcp)) => CompletedResume::Empty,
            (None, _) => CompletedResume::Replay,
        }
    }

    /// Whether a resume opens with a priming event: `prime_resume`, else
    /// the preset's, else not.
    pub fn prime_resume_mode(&self) -> bool {
        match (self.prime_resume, self.sdk) {
            (Some(p), _) => p,
            (None, Some(Sdk::Python)) => true,
            (None, _) => false,
        }
    }

    /// What a `notifications/cancelled` does: `cancel_notifications`, else
    /// the preset's, else honoured.
    pub fn cancel_mode(&self) -> CancelNotifications {
        match (self.cancel_notifications, self.sdk) {
            (Some(c), _) => c,
            (None, Some(Sdk::Python | Sdk::Typescript)) => CancelNotifications::Dropped,
            (None, _) => CancelNotifications::Honoured,
        }
    }

    /// What a seen close does where it cancels: `on_close`, else the
    /// preset's, else cancel.
    pub fn close_mode(&self) -> OnClose {
        match (self.on_close, self.sdk) {
            (Some(c), _) => c,
            (None, Some(Sdk::Typescript | Sdk::Go)) => OnClose::RunOn,
            (None, _) => OnClose::Cancel,
        }
    }

    /// Whether SSE responses say `X-Accel-Buffering: no`: `no_buffering`,
    /// else the preset's, else yes.
    pub fn buffering_header(&self) -> bool {
        match (self.no_buffering, self.sdk) {
            (Some(b), _) => b,
            (None, Some(Sdk::Go)) => false,
            (None, _) => true,
        }
    }
}

/// When a tool execution's effect lands in the side-effect ledger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effects {
    /// When the tool starts (today's SDK tools): a restart mid-execution
    /// followed by a re-issue is a duplicate nothing can prevent.
    #[default]
    Immediate,
    /// When the tool finishes, together with its key: a key commits at most
    /// once, a killed execution commits nothing.
    Transactional,
}

impl Effects {
    /// `immediate` or `transactional`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effects::Immediate => "immediate",
            Effects::Transactional => "transactional",
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            delivery: Delivery::PostStream,
            first_event_id: 1,
            store_capacity: 1024,
            replay_interval_ms: 0,
            queue_capacity: 16,
            queue_wait_ms: 5_000,
            write_deadline_ms: 2_000,
            max_body_bytes: 1 << 20,
            dedup_capacity: 65_536,
            retry_ms: None,
            max_chunks: 10_000,
            max_sessions: 100_000,
            session_seed: 0,
            legacy_session_ttl_ms: 30_000,
            cross_transport_mapping: false,
            resource_interval_ms: 0,
            no_buffering: None,
            keepalive_ms: 0,
            replay_retry_after: false,
            release_moved_legacy: false,
            poll_after: 0,
            poll_retry_ms: DEFAULT_POLL_RETRY_MS,
            poll_grace_ms: DEFAULT_POLL_GRACE_MS,
            server_idle_ms: 5_000,
            session_idle_ms: 0,
            durable_dedup: false,
            effects: Effects::Immediate,
            task_ttl_ms: 300_000,
            task_poll_ms: 100,
            replay: None,
            completed_resume: None,
            cancel_notifications: None,
            prime_resume: None,
            on_close: None,
            events_tick_ms: 0,
            events_retention: 64,
            events_poll_ms: 1_000,
            events_heartbeat_ms: 1_000,
            events_truncation: Truncation::Announced,
            events_sender: EventsSender::Spec,
            events_attempts: DEFAULT_EVENTS_ATTEMPTS,
            events_retry_ms: DEFAULT_EVENTS_RETRY_MS,
            events_webhook_timeout_ms: DEFAULT_WEBHOOK_TIMEOUT_MS,
            events_ttl_ms: DEFAULT_EVENTS_TTL_MS,
            events_subscriptions: DEFAULT_SUBSCRIPTIONS,
            sdk: None,
            wire: Wire::Y2025,
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// `poll_retry_ms`'s default, ms.
const DEFAULT_POLL_RETRY_MS: u64 = 1_000;
/// `poll_grace_ms`'s default, ms: the clients' default read timeout.
const DEFAULT_POLL_GRACE_MS: u64 = 1_500;

fn is_default_poll_retry(v: &u64) -> bool {
    *v == DEFAULT_POLL_RETRY_MS
}

fn is_default_poll_grace(v: &u64) -> bool {
    *v == DEFAULT_POLL_GRACE_MS
}

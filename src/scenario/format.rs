//! The scenario file's types (`sims/*.toml`, schema in sims/README.md):
//! data that composes a workload of virtual clients with fault
//! generators, network settings, a heal phase and the expectations each
//! server must meet, with their defaults.

use super::deployment::DeploymentSpec;
use super::intermediary::Intermediary;
use crate::fault::{FaultPlan, FaultSpec, Group, Workload};
use crate::settings::{Era, ServerConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a client reacts to a dropped stream (sims/README.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Behaviour {
    /// Re-POSTs the call (new id, same tag); opens no GET.
    RetryByPost,
    /// GETs with Last-Event-ID and POSTs its next call at once.
    ResumeThenPost,
    /// GETs with Last-Event-ID, waits for the owed result, then goes on.
    Resume,
    /// Sends `Idempotency-Key` = tag on every attempt; re-POSTs after a drop.
    DedupRetry,
    /// Legacy HTTP+SSE first; on a network change, streamable HTTP with the
    /// same session id and a `Last-Event-ID` from the legacy stream.
    TransportSwitch,
}

impl Behaviour {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Behaviour::RetryByPost => "retry-by-post",
            Behaviour::ResumeThenPost => "resume-then-post",
            Behaviour::Resume => "resume",
            Behaviour::DedupRetry => "dedup-retry",
            Behaviour::TransportSwitch => "transport-switch",
        }
    }

    /// Whether its clients start on the legacy HTTP+SSE transport.
    pub fn is_legacy(self) -> bool {
        self == Behaviour::TransportSwitch
    }
}

/// A field client behaviour: a way clients users run do not honour the
/// server, on purpose, as reported since mid-2026 (sims/README.md, each
/// with its source; sims/field/ shows each against every arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    /// A retry mints a new `Idempotency-Key` for each attempt, which
    /// defeats every key-honouring server (square-mcp-server #31,
    /// KeeperHub #2207).
    KeyPerAttempt,
    /// After a 404 the client keeps its stale `Mcp-Session-Id` and never
    /// re-initializes: each operation on it fails with the 404
    /// (anthropics/claude-code #50450, #46533). The 2026-07-28 wire has no
    /// session to go stale.
    #[serde(rename = "never-reinit-after-404")]
    NeverReinitAfter404,
    /// A stream the server closed with `retry:` advice (polling) is
    /// reconnected at once, without `Last-Event-ID`: a plain GET, so the
    /// rest of the paused stream never comes (the Java SDK's failing
    /// `sse-retry` conformance scenario).
    IgnoreRetryField,
    /// A resumed stream that breaks before any event with an id arrived on
    /// it is reconnected without `Last-Event-ID` (the cursor lived only in
    /// the broken stream's reader): a plain GET, and the request hangs to
    /// its timeout (typescript-sdk PR #2509).
    NoCursorOnSecondResume,
    /// Every call after the first goes out on a session of its own: a
    /// fresh `initialize` (no `Mcp-Session-Id`) before it, the old session
    /// never closed (anthropics/claude-ai-mcp #583; ChatGPT per SEP-2567).
    /// On the 2026-07-28 wire, a `server/discover` before every call.
    FreshSessionPerCall,
    /// A call the client stops waiting for (given up, or re-sent without
    /// a key) is never cancelled: no `notifications/cancelled` goes out,
    /// and the server runs the request it left to its end (mcp 2.x's
    /// direct path, strands-agents #4130). On the 2026-07-28 wire the
    /// close is the cancellation, which every client makes: nothing to
    /// leave out.
    CancelNeverSent,
}

impl Field {
    /// Every field behaviour, in the order sims/README.md lists them.
    pub const ALL: [Field; 6] = [
        Field::KeyPerAttempt,
        Field::NeverReinitAfter404,
        Field::IgnoreRetryField,
        Field::NoCursorOnSecondResume,
        Field::FreshSessionPerCall,
        Field::CancelNeverSent,
    ];

    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::KeyPerAttempt => "key-per-attempt",
            Field::NeverReinitAfter404 => "never-reinit-after-404",
            Field::IgnoreRetryField => "ignore-retry-field",
            Field::NoCursorOnSecondResume => "no-cursor-on-second-resume",
            Field::FreshSessionPerCall => "fresh-session-per-call",
            Field::CancelNeverSent => "cancel-never-sent",
        }
    }
}

/// How a client holds its connections to the server (sims/README.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Connections {
    /// One idle connection kept and reused, as the SDKs' HTTP clients
    /// (undici, httpx, hyper-util) do.
    KeepAlive,
    /// A new connection for every exchange.
    PerExchange,
}

/// The `connections` of a group that does not set it: keep-alive, what the
/// SDKs do. A scenario about a per-exchange phenomenon writes
/// `connections = "per-exchange"`.
pub const DEFAULT_CONNECTIONS: Connections = Connections::KeepAlive;

impl Connections {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Connections::KeepAlive => "keep-alive",
            Connections::PerExchange => "per-exchange",
        }
    }
}

/// One group of identical clients.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientGroup {
    /// Reaction to a dropped stream.
    pub behaviour: Behaviour,
    /// How many clients.
    pub count: u32,
    /// Present a cursor list on every POST (guarded-server extension).
    pub cursor_on_post: bool,
    /// Tool calls per client.
    pub calls: u32,
    /// Chunks per call (C−1 progress events, then the result).
    pub chunks: u32,
    /// Time between chunks, ms.
    pub chunk_interval_ms: u64,
    /// Pause between a result and the next call, ms.
    pub think_ms: u64,
    /// Delay before a client's first call, drawn in 0..=this, ms.
    pub start_jitter_ms: u64,
    /// Connect timeout, ms.
    pub connect_timeout_ms: u64,
    /// Longest silence on a stream that owes the client something, ms.
    pub read_timeout_ms: u64,
    /// First backoff before a retry or resume, ms (doubles up to the max).
    pub backoff_ms: u64,
    /// Largest backoff, ms.
    pub backoff_max_ms: u64,
    /// Attempts per operation before giving up.
    pub max_attempts: u32,
    /// Send `Idempotency-Key` (= the tag) on every non-idempotent call
    /// (default: only `dedup-retry` clients do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<bool>,
    /// Declare the tasks extension (2026-07-28 era): `ledger_append`
    /// calls then run as tasks the client polls (set by the `tasks`
    /// profiles; such clients do not run in the 2025-11-25 era).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<bool>,
    /// A task still unfinished this long after its creation is cancelled
    /// (`tasks/cancel`) and its call re-issued as a new task, at most once
    /// per call, ms (0: never).
    #[serde(skip_serializing_if = "is_zero")]
    pub task_deadline_ms: u64,
    /// Its calls ask for input after taking their effect (2026-07-28: an
    /// input-required result, answered by a retry of the call).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub asks_input: bool,
    /// Keep one idle connection and reuse it, or connect per exchange.
    pub connections: Connections,
    /// A pooled connection idle this long is closed by the client, ms.
    pub pool_idle_ms: u64,
    /// Drop every SSE frame without an `event:` field, as some clients
    /// behind gateways do.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_event_field: bool,
    /// How the clients come back to a resume that failed quietly (200 and
    /// an empty stream): `backoff` (re-issue the call, an attempt) or
    /// `rmcp` (rmcp's SSE client: resume again every second, or every
    /// `retry:` the server advised, with the same `Last-Event-ID`, without
    /// end).
    #[serde(skip_serializing_if = "Reconnect::is_default")]
    pub reconnect: Reconnect,
    /// Field behaviours these clients show (none: a client that honours
    /// the server).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub field: Vec<Field>,
    /// Read the server's `clock-tick` occurrences beside the calls
    /// (2026-07-28 era, the Events extension, docs/events.md): by `poll`
    /// or by a `push` stream, resuming from the last cursor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<EventsMode>,
    /// A webhook client's receiver and subscription (`events =
    /// "webhook"`; `[clients.receiver]`).
    #[serde(skip_serializing_if = "super::ReceiverSpec::is_default")]
    pub receiver: super::ReceiverSpec,
}

/// How a client reads events (`events`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventsMode {
    /// `events/poll`, again at once while `hasMore`, else after
    /// `nextPollMs`.
    Poll,
    /// One `events/stream` held open, reopened from its cursor when it
    /// breaks or falls silent.
    Push,
    /// `events/subscribe` with a receiver on the client's host
    /// (`[clients.receiver]`), refreshed before it lapses.
    Webhook,
}

/// A client's policy for a resume answered 200 with nothing (`reconnect`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reconnect {
    /// The resume failed: re-issue what waited on it (an attempt).
    #[default]
    Backoff,
    /// rmcp's reconnect policy: the same resume again after a fixed wait
    /// (1 s, or the server's `retry:`), forever.
    Rmcp,
}

impl Reconnect {
    fn is_default(&self) -> bool {
        *self == Reconnect::Backoff
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl ClientGroup {
    /// Whether these clients send `Idempotency-Key`: the group's `keys`
    /// (set by a client profile), else only `dedup-retry` clients do. The
    /// one rule the client and the class labels both follow.
    pub fn keyed(&self) -> bool {
        self.keys.unwrap_or(self.behaviour == Behaviour::DedupRetry)
    }

    /// Whether these clients show field behaviour `f`.
    pub fn shows(&self, f: Field) -> bool {
        self.field.contains(&f)
    }

    /// Whether these clients declare the tasks extension.
    pub fn tasked(&self) -> bool {
        self.tasks.unwrap_or(false)
    }
}

impl Default for ClientGroup {
    fn default() -> Self {
        ClientGroup {
            behaviour: Behaviour::Resume,
            count: 1,
            cursor_on_post: false,
            calls: 5,
            chunks: 4,
            chunk_interval_ms: 20,
            think_ms: 50,
            start_jitter_ms: 0,
            connect_timeout_ms: 1_000,
            read_timeout_ms: 1_500,
            backoff_ms: 200,
            backoff_max_ms: 3_000,
            max_attempts: 8,
            keys: None,
            tasks: None,
            task_deadline_ms: 0,
            asks_input: false,
            connections: DEFAULT_CONNECTIONS,
            pool_idle_ms: 4_000,
            require_event_field: false,
            reconnect: Reconnect::Backoff,
            events: None,
            receiver: super::ReceiverSpec::default(),
            field: Vec::new(),
        }
    }
}

/// Network settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way message latency range, ms.
    #[serde(deserialize_with = "crate::fault::range::network_latency_ms")]
    pub latency_ms: [u64; 2],
    /// turmoil's accept backlog and per-connection credit window.
    pub tcp_capacity: usize,
    /// Client hosts the clients are spread over (round robin).
    pub client_hosts: u32,
    /// turmoil tick, ms.
    pub tick_ms: u64,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            latency_ms: [1, 5],
            tcp_capacity: 4096,
            client_hosts: 4,
            tick_ms: 1,
        }
    }
}

/// The heal phase: faults off, bounded simulated time to finish.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HealSpec {
    /// Longest the heal phase runs, ms.
    pub duration_ms: u64,
}

impl Default for HealSpec {
    fn default() -> Self {
        HealSpec {
            duration_ms: 30_000,
        }
    }
}

/// What one server must show: bounds on metrics by name
/// (`guard_bugs`, `duplicate_side_effects`, …).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Expect {
    /// Each metric must be at least this.
    pub min: BTreeMap<String, u64>,
    /// Each metric must be at most this.
    pub max: BTreeMap<String, u64>,
}

/// Expectations per arm (`[expect.<arm>]`: `guarded`, `unguarded`, `keys`, `cancel`,
/// `rmcp`, `rmcp-es`), for the scenario's own era; and per era and arm
/// (`[expect.<era>.<arm>]`), for a run in that era (in its own era they
/// replace the arm's own table).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Expectations(
    pub BTreeMap<String, Expect>,
    pub BTreeMap<Era, BTreeMap<String, Expect>>,
);

impl Serialize for Expectations {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Entry<'a> {
            Arm(&'a Expect),
            Era(&'a BTreeMap<String, Expect>),
        }
        let mut m: BTreeMap<&str, Entry> = BTreeMap::new();
        for (arm, e) in &self.0 {
            m.insert(arm, Entry::Arm(e));
        }
        for (era, arms) in &self.1 {
            m.insert(era.as_str(), Entry::Era(arms));
        }
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Expectations {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw: BTreeMap<String, toml::Value> = BTreeMap::deserialize(d)?;
        let mut out = Expectations::default();
        for (key, v) in raw {
            match key.parse::<Era>() {
                Ok(era) => {
                    let arms: BTreeMap<String, Expect> = v
                        .try_into()
                        .map_err(|e| D::Error::custom(format!("expect.{key}: {e}")))?;
                    out.1.insert(era, arms);
                }
                Err(_) => {
                    let e: Expect = v
                        .try_into()
                        .map_err(|e| D::Error::custom(format!("expect.{key}: {e}")))?;
                    out.0.insert(key, e);
                }
            }
        }
        Ok(out)
    }
}

impl Expectations {
    /// Every table with the name it is written under (`arm`, or
    /// `era.arm`).
    pub fn all(&self) -> Vec<(String, &Expect)> {
        let mut v: Vec<(String, &Expect)> = self.0.iter().map(|(a, e)| (a.clone(), e)).collect();
        for (era, arms) in &self.1 {
            v.extend(
                arms.iter()
                    .map(|(a, e)| (format!("{}.{a}", era.as_str()), e)),
            );
        }
        v
    }

    /// The expectations of a run in `era` of a scenario written for
    /// `own`: its own tables, with the era's replacing them, in its own
    /// era; only the era's tables in another.
    pub fn in_era(&self, own: Era, era: Era) -> Expectations {
        let mut arms = if era == own {
            self.0.clone()
        } else {
            BTreeMap::new()
        };
        if let Some(e) = self.1.get(&era) {
            arms.extend(e.iter().map(|(a, x)| (a.clone(), x.clone())));
        }
        Expectations(arms, BTreeMap::new())
    }

    /// What the arm named `arm` must show (nothing, when the scenario
    /// says nothing about it).
    pub fn of(&self, arm: &str) -> Expect {
        self.0.get(arm).cloned().unwrap_or_default()
    }

    /// Replaces what `arm` must show.
    pub fn set(&mut self, arm: &str, e: Expect) {
        self.0.insert(arm.to_string(), e);
    }
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name (the file stem by convention).
    pub name: String,
    /// What it models.
    #[serde(default)]
    pub description: String,
    /// Length of the fault phase, ms.
    pub duration_ms: u64,
    /// The revision of the wire the run speaks (default 2025-11-25).
    #[serde(default, skip_serializing_if = "Era::is_default")]
    pub era: Era,
    /// Server settings.
    #[serde(default)]
    pub server: ServerConfig,
    /// Client groups.
    pub clients: Vec<ClientGroup>,
    /// Faults.
    #[serde(default)]
    pub faults: FaultSpec,
    /// Network.
    #[serde(default)]
    pub network: NetworkSpec,
    /// Heal phase.
    #[serde(default)]
    pub heal: HealSpec,
    /// Replicas and the balancer in front of them (default: one server,
    /// no balancer).
    #[serde(default, skip_serializing_if = "DeploymentSpec::is_default")]
    pub deployment: DeploymentSpec,
    /// What the proxy between the clients and the server does to their
    /// traffic (`[intermediary]`; none by default: no proxy).
    #[serde(default, skip_serializing_if = "Intermediary::is_off")]
    pub intermediary: Intermediary,
    /// The hazards this scenario means to exercise (`drop`, `partition`,
    /// `latency`, `restart`, `eviction`, `switch`); `compare` flags any
    /// that no seed of it produced.
    #[serde(default)]
    pub hazards: Vec<String>,
    /// Expectations.
    #[serde(default)]
    pub expect: Expectations,
    /// Set in a regression file (`sims/regressions/`): what it pins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression: Option<Regression>,
}

impl Scenario {
    /// The server's settings for a run of this scenario: its `[server]`
    /// table, speaking its era's wire.
    pub fn server_config(&self) -> ServerConfig {
        ServerConfig {
            wire: crate::settings::Wire::of(self.era),
            ..self.server.clone()
        }
    }
}

/// What a regression scenario pins (`[regression]`): a failure of one arm
/// on its seed, as a hazard the arm is expected to show or as a bug.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regression {
    /// Hazard or bug.
    pub kind: RegressionKind,
    /// The arm that shows it.
    pub server: String,
    /// The metrics that show it (each above 0 while it reproduces).
    pub metrics: Vec<String>,
}

/// Whether a regression passes while its failure reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegressionKind {
    /// An arm expected to fail (e.g. unguarded duplicates): the file
    /// passes while the failure reproduces (`min` = 1 on each metric) and
    /// fails once it no longer does.
    Hazard,
    /// A failure that should not happen: the file fails until it is
    /// fixed (`max` = 0 on each metric).
    Bug,
}

impl RegressionKind {
    /// `hazard` or `bug`.
    pub fn as_str(self) -> &'static str {
        match self {
            RegressionKind::Hazard => "hazard",
            RegressionKind::Bug => "bug",
        }
    }
}

impl std::str::FromStr for RegressionKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hazard" => Ok(RegressionKind::Hazard),
            "bug" => Ok(RegressionKind::Bug),
            _ => Err(format!("unknown regression kind {s:?}: use hazard or bug")),
        }
    }
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read (the cause is the error's source, so a
    /// chain prints it once).
    #[error("cannot read scenario {path} (`mcp-chaos list DIR` shows the scenarios)")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The TOML is malformed or does not match the schema.
    #[error("scenario {path} is not valid: {message} (see sims/README.md for the schema)")]
    Parse {
        /// The path.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Scenario {
    /// Total clients (valid once the scenario is validated: the loader
    /// refuses totals above [`MAX_CLIENTS`]).
    pub fn client_count(&self) -> u32 {
        u32::try_from(self.total_clients()).unwrap_or(u32::MAX)
    }

    /// The fault plan of this scenario under `root_seed`: its explicit
    /// faults plus what its generators draw (see [`FaultPlan::draw`]).
    pub fn fault_plan(&self, root_seed: u64) -> FaultPlan {
        FaultPlan::draw(&self.workload(), root_seed)
    }

    /// The scenario as the fault generators see it.
    fn workload(&self) -> Workload<'_> {
        Workload {
            spec: &self.faults,
            groups: self
                .clients
                .iter()
                .map(|g| Group {
                    count: g.count,
                    calls: g.calls,
                    chunks: g.chunks,
                    switches: g.behaviour == Behaviour::TransportSwitch,
                })
                .collect(),
            duration_ms: self.duration_ms,
            // Only hosts that run clients exist in the world.
            hosts: self.network.client_hosts.min(self.client_count()).max(1),
            latency_max_ms: self.network.latency_ms[1],
        }
    }

    /// The group client `client` (global index, file order) belongs to.
    pub fn group_of(&self, client: u32) -> Option<&ClientGroup> {
        let mut first = 0u64;
        for g in &self.clients {
            first += u64::from(g.count);
            if u64::from(client) < first {
                return Some(g);
            }
        }
        None
    }

    /// Total clients, without overflow.
    pub(super) fn total_clients(&self) -> u64 {
        self.clients
            .iter()
            .fold(0u64, |n, g| n.saturating_add(u64::from(g.count)))
    }
}

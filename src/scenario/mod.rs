//! Scenarios (`sims/*.toml`, schema in sims/README.md): data that composes a workload of
//! virtual clients with fault generators, network settings, a heal phase
//! and the expectations each server must meet.

use crate::server::{ServerConfig, MAX_CHUNK_INTERVAL_MS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

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
}

impl ClientGroup {
    /// Whether these clients send `Idempotency-Key`: the group's `keys`
    /// (set by a client profile), else only `dedup-retry` clients do. The
    /// one rule the client and the class labels both follow.
    pub fn keyed(&self) -> bool {
        self.keys.unwrap_or(self.behaviour == Behaviour::DedupRetry)
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
        }
    }
}

/// An explicit fault (also the form every generated fault takes).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Client `client` drops its connection right after the `after_event`-th
    /// counted event of its call `call` (0-based calls, 1-based events).
    Drop {
        /// Global client index.
        client: u32,
        /// Call index.
        call: u32,
        /// Counted events received before the drop.
        after_event: u32,
    },
    /// Client host `host` is partitioned from the server for `duration_ms`.
    Partition {
        /// Client host index.
        host: u32,
        /// Start, ms of simulated time.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
    },
    /// A network change: client `client` (a transport-switch client)
    /// leaves the legacy transport after its call `after_call` completes.
    Switch {
        /// Global client index.
        client: u32,
        /// Call index (0-based).
        after_call: u32,
    },
    /// The server host restarts: in-memory sessions are lost.
    Restart {
        /// When, ms.
        at_ms: u64,
    },
    /// Messages between client host `host` and the server take up to
    /// `max_ms` for `duration_ms`.
    Latency {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// Largest one-way latency during the window, ms.
        max_ms: u64,
    },
}

/// Fault generators (rates and ranges), drawn from the `faults` child seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct FaultSpec {
    /// Probability that a given call of a given client is dropped.
    pub drop_rate: f64,
    /// Random partitions over the fault phase.
    pub partitions: u32,
    /// Partition length range, ms.
    pub partition_ms: Option<[u64; 2]>,
    /// Random server restarts over the fault phase.
    pub restarts: u32,
    /// Random latency spikes over the fault phase.
    pub latency_spikes: u32,
    /// Spike length range, ms.
    pub latency_spike_ms: Option<[u64; 2]>,
    /// Spike ceiling, ms.
    pub latency_spike_max_ms: u64,
    /// Explicit faults, applied as written.
    pub explicit: Vec<Fault>,
}

/// Network settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way message latency range, ms.
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
/// `rmcp`, `rmcp-es`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Expectations(pub BTreeMap<String, Expect>);

impl Expectations {
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
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|message| ScenarioError::Parse {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses and validates scenario text.
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(String::new(), |span| {
                let (line, col) = line_col(text, span.start);
                format!("line {line}, column {col}: ")
            });
            format!("{at}{}", toml_problem(e.message()))
        })?;
        s.apply_regression()?;
        s.validate()?;
        let (hosts, clients) = (s.network.client_hosts, s.total_clients());
        // The default (4 hosts) fits any count; a file that asks for more
        // hosts than clients asks for hosts that run nothing.
        if u64::from(hosts) > clients && written(text, "network", "client_hosts") {
            return Err(format!(
                "network.client_hosts = {hosts} is above the {clients} clients: a host without a \
                 client runs nothing (and a fault on it applies to no one); use at most {clients}"
            ));
        }
        Ok(s)
    }

    /// A `[regression]` table implies its arm's bounds (hazard: each metric
    /// at least 1; bug: at most 0): added when the file does not write
    /// them, refused when it writes others.
    fn apply_regression(&mut self) -> Result<(), String> {
        let Some(r) = self.regression.clone() else {
            return Ok(());
        };
        if !crate::sut::Arm::NAMES.contains(&r.server.as_str()) {
            return Err(format!(
                "regression.server: unknown server arm {:?}: use one of {}",
                r.server,
                crate::sut::Arm::NAMES.join(", ")
            ));
        }
        if r.metrics.is_empty() {
            return Err(
                "regression.metrics is empty: name what the run shows, e.g. [\"duplicate_side_effects\"]"
                    .into(),
            );
        }
        let mut e = self.expect.of(&r.server);
        for m in &r.metrics {
            if !crate::oracle::Metrics::is_known(m) {
                return Err(format!(
                    "regression.metrics: unknown metric {m:?} (known: {}, and \
                     failures_by_cause.CAUSE, hazards.HAZARD, rejections.REASON)",
                    crate::oracle::Metrics::NAMES.join(", ")
                ));
            }
            let (min, max) = (e.min.get(m).copied(), e.max.get(m).copied());
            let fits = match r.kind {
                RegressionKind::Hazard => min.unwrap_or(1) >= 1 && max.is_none_or(|x| x >= 1),
                RegressionKind::Bug => max.unwrap_or(0) == 0 && min.unwrap_or(0) == 0,
            };
            if !fits {
                return Err(format!(
                    "expect.{}: a {} regression pins {m} {}; the file bounds it otherwise: \
                     drop those bounds or change regression.kind",
                    r.server,
                    r.kind.as_str(),
                    match r.kind {
                        RegressionKind::Hazard => "at least 1 (passes while it reproduces)",
                        RegressionKind::Bug => "at most 0 (fails until fixed)",
                    }
                ));
            }
            match r.kind {
                RegressionKind::Hazard => e.min.insert(m.clone(), min.unwrap_or(1)),
                RegressionKind::Bug => e.max.insert(m.clone(), 0),
            };
        }
        self.expect.set(&r.server, e);
        Ok(())
    }

    /// Overrides one setting (`--set server.KEY=VALUE`): VALUE is read as
    /// TOML (a number, a boolean, a quoted string), else as a bare string.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        self.server =
            check_set(&self.server, key, value).map_err(|e| format!("--set {key}={value}: {e}"))?;
        Ok(())
    }

    /// Total clients (valid once the scenario is validated: the loader
    /// refuses totals above [`MAX_CLIENTS`]).
    pub fn client_count(&self) -> u32 {
        u32::try_from(self.total_clients()).unwrap_or(u32::MAX)
    }

    /// Total clients, without overflow.
    fn total_clients(&self) -> u64 {
        self.clients
            .iter()
            .fold(0u64, |n, g| n.saturating_add(u64::from(g.count)))
    }

    /// Checks bounds that the simulator relies on. Every error is one line
    /// that names the key and what to do.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_workload()?;
        self.validate_times()?;
        self.validate_server()?;
        self.validate_faults()?;
        self.validate_network()?;
        self.validate_expectations()
    }

    fn validate_workload(&self) -> Result<(), String> {
        check_name(&self.name)?;
        let total = self.total_clients();
        if total == 0 {
            return Err("at least one client is needed ([[clients]] with count >= 1)".into());
        }
        if total > MAX_CLIENTS {
            return Err(format!(
                "[[clients]] count adds up to {total} clients, above the limit of {MAX_CLIENTS} \
                 (every client runs in one process with its connections and history, \
                 about 100 KB each): use fewer clients"
            ));
        }
        let (mut operations, mut events) = (0u64, 0u64);
        for (i, g) in self.clients.iter().enumerate() {
            if g.chunks == 0 || g.calls == 0 || g.max_attempts == 0 {
                return Err(format!(
                    "clients[{i}]: calls, chunks and max_attempts must be at least 1"
                ));
            }
            if g.read_timeout_ms == 0 || g.connect_timeout_ms == 0 {
                return Err(format!(
                    "clients[{i}]: read_timeout_ms and connect_timeout_ms must be at least 1"
                ));
            }
            if g.backoff_ms > g.backoff_max_ms {
                return Err(format!(
                    "clients[{i}]: backoff_ms {} is above backoff_max_ms {}: the first backoff \
                     must not exceed the largest",
                    g.backoff_ms, g.backoff_max_ms
                ));
            }
            let ops = u64::from(g.count) * u64::from(g.calls);
            operations = operations.saturating_add(ops);
            events = events.saturating_add(ops.saturating_mul(u64::from(g.chunks)));
        }
        if operations > MAX_OPERATIONS {
            return Err(format!(
                "[[clients]] count x calls adds up to {operations} operations, above the limit \
                 of {MAX_OPERATIONS} (each keeps its records in memory): use fewer clients or calls"
            ));
        }
        if events > MAX_EVENTS {
            return Err(format!(
                "[[clients]] count x calls x chunks adds up to {events} events, above the limit \
                 of {MAX_EVENTS} (each keeps its records in memory): use fewer chunks, calls or clients"
            ));
        }
        Ok(())
    }

    /// Durations: bounded so that no sum of them overflows simulated time.
    fn validate_times(&self) -> Result<(), String> {
        let s = &self.server;
        let mut times: Vec<(String, u64)> = vec![
            ("duration_ms".into(), self.duration_ms),
            ("heal.duration_ms".into(), self.heal.duration_ms),
            ("server.replay_interval_ms".into(), s.replay_interval_ms),
            ("server.queue_wait_ms".into(), s.queue_wait_ms),
            ("server.write_deadline_ms".into(), s.write_deadline_ms),
            ("server.retry_ms".into(), s.retry_ms.unwrap_or(0)),
            (
                "server.legacy_session_ttl_ms".into(),
                s.legacy_session_ttl_ms,
            ),
            ("server.resource_interval_ms".into(), s.resource_interval_ms),
            ("network.latency_ms".into(), self.network.latency_ms[1]),
            ("network.tick_ms".into(), self.network.tick_ms),
            (
                "faults.latency_spike_max_ms".into(),
                self.faults.latency_spike_max_ms,
            ),
        ];
        for (key, r) in [
            ("faults.partition_ms", self.faults.partition_ms),
            ("faults.latency_spike_ms", self.faults.latency_spike_ms),
        ] {
            if let Some([_, hi]) = r {
                times.push((key.into(), hi));
            }
        }
        for (i, g) in self.clients.iter().enumerate() {
            for (key, v) in [
                ("think_ms", g.think_ms),
                ("start_jitter_ms", g.start_jitter_ms),
                ("connect_timeout_ms", g.connect_timeout_ms),
                ("read_timeout_ms", g.read_timeout_ms),
                ("backoff_ms", g.backoff_ms),
                ("backoff_max_ms", g.backoff_max_ms),
            ] {
                times.push((format!("clients[{i}].{key}"), v));
            }
        }
        for (i, f) in self.faults.explicit.iter().enumerate() {
            match *f {
                Fault::Partition {
                    at_ms, duration_ms, ..
                } => {
                    times.push((format!("faults.explicit[{i}].at_ms"), at_ms));
                    times.push((format!("faults.explicit[{i}].duration_ms"), duration_ms));
                }
                Fault::Latency {
                    at_ms,
                    duration_ms,
                    max_ms,
                    ..
                } => {
                    times.push((format!("faults.explicit[{i}].at_ms"), at_ms));
                    times.push((format!("faults.explicit[{i}].duration_ms"), duration_ms));
                    times.push((format!("faults.explicit[{i}].max_ms"), max_ms));
                }
                Fault::Restart { at_ms } => {
                    times.push((format!("faults.explicit[{i}].at_ms"), at_ms));
                }
                Fault::Drop { .. } | Fault::Switch { .. } => {}
            }
        }
        for (key, v) in times {
            if v > MAX_MS {
                return Err(format!(
                    "{key} = {v} is above {MAX_MS} (one day of simulated time): use a shorter time"
                ));
            }
        }
        for (i, g) in self.clients.iter().enumerate() {
            if g.chunk_interval_ms > MAX_CHUNK_INTERVAL_MS {
                return Err(format!(
                    "clients[{i}].chunk_interval_ms = {} is above the server's limit of \
                     {MAX_CHUNK_INTERVAL_MS}: every call would be refused; lower it",
                    g.chunk_interval_ms
                ));
            }
        }
        if self.network.tick_ms == 0 {
            return Err("network.tick_ms must be at least 1".into());
        }
        Ok(())
    }

    /// Server limits the workload must fit in: a call the server refuses
    /// every time is an operation lost without any fault.
    fn validate_server(&self) -> Result<(), String> {
        let s = &self.server;
        check_server(s)?;
        // A preset and an explicit setting that disagrees with it: say so
        // rather than let one win silently.
        if let Some(sdk) = s.sdk {
            let preset = ServerConfig {
                sdk: Some(sdk),
                ..ServerConfig::default()
            };
            if s.replay.is_some_and(|r| r != preset.replay_mode()) {
                return Err(format!(
                    "server.replay = {:?} contradicts server.sdk = {:?} (which sets replay = {:?}): \
                     drop one of them",
                    enum_name(&s.replay),
                    sdk.as_str(),
                    enum_name(&Some(preset.replay_mode()))
                ));
            }
            if s.completed_resume
                .is_some_and(|c| c != preset.completed_resume_mode())
            {
                return Err(format!(
                    "server.completed_resume = {:?} contradicts server.sdk = {:?} (which sets \
                     completed_resume = {:?}): drop one of them",
                    enum_name(&s.completed_resume),
                    sdk.as_str(),
                    enum_name(&Some(preset.completed_resume_mode()))
                ));
            }
        }
        if s.first_event_id > MAX_FIRST_EVENT_ID {
            return Err(format!(
                "server.first_event_id = {} is above {MAX_FIRST_EVENT_ID}: event ids count up \
                 from it; lower it",
                s.first_event_id
            ));
        }
        let total = self.total_clients();
        if (s.max_sessions as u64) < total {
            return Err(format!(
                "server.max_sessions = {} is below the {total} clients (each holds a session, \
                 the rest would be refused with 503): raise it to at least {total}",
                s.max_sessions
            ));
        }
        let mut index = 0u32;
        for (i, g) in self.clients.iter().enumerate() {
            if g.chunks > s.max_chunks {
                return Err(format!(
                    "clients[{i}].chunks = {} is above server.max_chunks = {}: the server would \
                     refuse every call; raise server.max_chunks or lower chunks",
                    g.chunks, s.max_chunks
                ));
            }
            let last = index + (g.count.max(1) - 1);
            let body = crate::client::virtual_client::largest_request_body(g, last);
            if s.max_body_bytes < body {
                return Err(format!(
                    "server.max_body_bytes = {} is below the {body}-byte requests of clients[{i}]: \
                     the server would refuse them with 413; raise it to at least {body}",
                    s.max_body_bytes
                ));
            }
            index = index.saturating_add(g.count);
        }
        Ok(())
    }

    fn validate_faults(&self) -> Result<(), String> {
        let f = &self.faults;
        if !(0.0..=1.0).contains(&f.drop_rate) {
            return Err("faults.drop_rate must be within 0..=1".into());
        }
        for (key, range) in [
            ("faults.partition_ms", f.partition_ms),
            ("faults.latency_spike_ms", f.latency_spike_ms),
        ] {
            if let Some([lo, hi]) = range {
                if lo > hi {
                    return Err(format!(
                        "{key} = [{lo}, {hi}] must be [min, max] with min <= max: swap them"
                    ));
                }
            }
        }
        let timed = u64::from(f.partitions)
            + u64::from(f.restarts)
            + u64::from(f.latency_spikes)
            + f.explicit.len() as u64;
        if timed > MAX_TIMED_FAULTS {
            return Err(format!(
                "faults.partitions + restarts + latency_spikes + explicit faults add up to \
                 {timed}, above the limit of {MAX_TIMED_FAULTS}: use fewer"
            ));
        }
        let clients = self.total_clients();
        for (i, fault) in f.explicit.iter().enumerate() {
            match fault {
                Fault::Drop {
                    client,
                    after_event,
                    ..
                } => {
                    if u64::from(*client) >= clients {
                        return Err(format!(
                            "faults.explicit[{i}]: drop names client {client}, but there are \
                             {clients} (0-based, in file order)"
                        ));
                    }
                    if *after_event == 0 {
                        return Err(format!(
                            "faults.explicit[{i}]: drop after_event is 1-based: use 1 or more"
                        ));
                    }
                }
                Fault::Partition { host, .. } | Fault::Latency { host, .. } => {
                    if *host >= self.network.client_hosts {
                        return Err(format!(
                            "faults.explicit[{i}]: names client host {host}, but there are {} \
                             (network.client_hosts)",
                            self.network.client_hosts
                        ));
                    }
                }
                Fault::Restart { .. } => {}
                Fault::Switch { client, .. } => {
                    if u64::from(*client) >= clients {
                        return Err(format!(
                            "faults.explicit[{i}]: switch names client {client}, but there are \
                             {clients} (0-based, in file order)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_network(&self) -> Result<(), String> {
        let net = &self.network;
        if net.client_hosts == 0 {
            return Err("network.client_hosts must be at least 1".into());
        }
        if net.latency_ms[0] > net.latency_ms[1] {
            return Err(format!(
                "network.latency_ms = [{}, {}] must be [min, max] with min <= max: swap them",
                net.latency_ms[0], net.latency_ms[1]
            ));
        }
        // Every client may connect at once (start, reconnect storm), each
        // with up to three connections: the accept backlog must hold them.
        let burst = self.total_clients() * CONNECTIONS_PER_CLIENT;
        if (net.tcp_capacity as u64) < burst {
            return Err(format!(
                "network.tcp_capacity {} is below the largest connect burst {burst} \
                 ({CONNECTIONS_PER_CLIENT} per client): raise it",
                net.tcp_capacity
            ));
        }
        if net.tcp_capacity > MAX_TCP_CAPACITY {
            return Err(format!(
                "network.tcp_capacity {} is above {MAX_TCP_CAPACITY}: lower it",
                net.tcp_capacity
            ));
        }
        self.validate_ports()
    }

    /// Ephemeral ports per client host. The world gives each host
    /// [`PORTS_PER_HOST`] of them; a port is taken while the client holds a
    /// connection on it (at most [`CONNECTIONS_PER_CLIENT`] per client) and
    /// while the server still holds the other end: a connection cut by a
    /// partition stays half-open on the server until the server closes it
    /// or writes into it after the heal, and a client never reuses such a
    /// port. So a host needs, per client, its connections once plus once
    /// more for every window that may cut it off while they are open (its
    /// partitions, latency windows at least half a connect timeout slow,
    /// generated ones counted as if all hit it, and server restarts). A
    /// host that ran out would fail the run.
    fn validate_ports(&self) -> Result<(), String> {
        let net = &self.network;
        let f = &self.faults;
        let total = self.total_clients();
        let hosts = u64::from(net.client_hosts);
        let used_hosts = hosts.min(total) as usize;
        let restarts = u64::from(f.restarts)
            + f.explicit
                .iter()
                .filter(|x| matches!(x, Fault::Restart { .. }))
                .count() as u64;
        // Windows that may cut host `h` off from clients with connect
        // timeout `ct`.
        let windows = |h: u32, ct: u64| -> u64 {
            let slow = |max_ms: u64| max_ms.saturating_mul(2) >= ct;
            let mut n = u64::from(f.partitions) + restarts;
            if slow(f.latency_spike_max_ms.max(net.latency_ms[1])) {
                n += u64::from(f.latency_spikes);
            }
            for x in &f.explicit {
                match *x {
                    Fault::Partition { host, .. } if host == h => n += 1,
                    Fault::Latency { host, max_ms, .. } if host == h && slow(max_ms) => n += 1,
                    _ => {}
                }
            }
            n
        };
        let mut need = vec![0u64; used_hosts];
        let mut clients_on = vec![0u64; used_hosts];
        let mut most_windows = vec![0u64; used_hosts];
        let mut index = 0u64;
        for g in &self.clients {
            let ct = g.connect_timeout_ms.max(1);
            let per_host: Vec<u64> = (0..used_hosts as u32).map(|h| windows(h, ct)).collect();
            for _ in 0..g.count {
                let h = (index % hosts) as usize;
                need[h] += CONNECTIONS_PER_CLIENT * (1 + per_host[h]);
                clients_on[h] += 1;
                most_windows[h] = most_windows[h].max(per_host[h]);
                index += 1;
            }
        }
        let (h, &most) = need
            .iter()
            .enumerate()
            .max_by_key(|(h, n)| (**n, std::cmp::Reverse(*h)))
            .expect("at least one host");
        if most > PORTS_PER_HOST {
            let suggest = (most.saturating_mul(hosts))
                .div_ceil(PORTS_PER_HOST)
                .max(hosts + 1);
            return Err(format!(
                "network.client_hosts = {hosts}: client host {h} would need about {most} of its \
                 {PORTS_PER_HOST} ephemeral ports ({} clients x {CONNECTIONS_PER_CLIENT} \
                 connections, held once more for each of up to {} windows that may cut the \
                 host off, when the server keeps the far end half-open): raise \
                 network.client_hosts to about {suggest}, or use fewer clients or fewer cuts",
                clients_on[h], most_windows[h]
            ));
        }
        Ok(())
    }

    /// Expectations name known metrics, and no metric's min is above its max.
    fn validate_expectations(&self) -> Result<(), String> {
        let known = crate::oracle::Metrics::NAMES;
        for h in &self.hazards {
            if !crate::oracle::ops::HAZARDS.contains(&h.as_str()) {
                return Err(format!(
                    "hazards: unknown hazard {h:?}: use one of {}",
                    crate::oracle::ops::HAZARDS.join(", ")
                ));
            }
        }
        for (server, e) in &self.expect.0 {
            if !crate::sut::Arm::NAMES.contains(&server.as_str()) {
                return Err(format!(
                    "expect.{server}: unknown server arm: use one of {}",
                    crate::sut::Arm::NAMES.join(", ")
                ));
            }
            for (bound, table) in [("min", &e.min), ("max", &e.max)] {
                for name in table.keys() {
                    if !crate::oracle::Metrics::is_known(name) {
                        return Err(format!(
                            "expect.{server}.{bound}: unknown metric {name:?} (known: {}, \
                             and failures_by_cause.CAUSE, hazards.HAZARD, rejections.REASON)",
                            known.join(", ")
                        ));
                    }
                }
            }
            for (name, min) in &e.min {
                if let Some(max) = e.max.get(name) {
                    if min > max {
                        return Err(format!(
                            "expect.{server}: {name} min {min} is above its max {max}: \
                             no run can meet both"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Settings no server can run with, wherever its configuration comes
/// from (a scenario, `--set`, `serve`'s own): one line naming the key.
pub fn check_server(s: &ServerConfig) -> Result<(), String> {
    if s.store_capacity == 0 {
        return Err(
            "server.store_capacity must be at least 1 (a session stores the events it sends)"
                .into(),
        );
    }
    if s.write_deadline_ms == 0 {
        return Err(
            "server.write_deadline_ms must be at least 1 (a zero deadline means every write \
             misses it and every stream is cut): use e.g. 2000, the default"
                .into(),
        );
    }
    Ok(())
}

/// `cfg` with `--set KEY=VALUE` applied, or one line naming the fix (the
/// caller names the input): only `server.*` settings can be set (a bare server key is
/// told its prefix), an unknown key is told the nearest known one, a
/// value of the wrong type the type its key takes.
pub fn check_set(cfg: &ServerConfig, key: &str, value: &str) -> Result<ServerConfig, String> {
    let Some(field) = key.strip_prefix("server.") else {
        let server = crate::schema::fields_of::<ServerConfig>();
        let fix = if server.contains(&key) {
            format!("server settings are named with their table: --set server.{key}={value}")
        } else {
            "only [server] settings can be set (--set server.KEY=VALUE, e.g. \
             server.store_capacity=64); other tables are edited in the scenario file"
                .to_string()
        };
        return Err(fix);
    };
    crate::schema::set_server(cfg, field, value)
}

/// Longest scenario name.
pub const MAX_NAME_LEN: usize = 64;

/// A scenario name is 1 to [`MAX_NAME_LEN`] of `A-Z a-z 0-9 . _ -`, and not
/// `.` or `..`: names become file names (`target/repro/NAME-…`,
/// `sims/regressions/NAME.toml`), so one can never name another directory.
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(allowed)
        && name != "."
        && name != ".."
    {
        return Ok(());
    }
    // A hostile name is shown short: the message stays one readable line.
    let shown: String = name
        .chars()
        .take(24)
        .collect::<String>()
        .escape_debug()
        .to_string();
    let more = name.chars().count().saturating_sub(24);
    let shown = if more > 0 {
        format!("\"{shown}\"... ({} characters)", name.chars().count())
    } else {
        format!("\"{shown}\"")
    };
    Err(format!(
        "name {shown}: a scenario name is 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ - \
         (not . or ..): use e.g. the file's stem"
    ))
}

/// `name` made a valid scenario name: characters outside the rule become
/// `-`, and a name too long keeps its start and ends in a hash of the
/// whole, so two long names that differ only at the end stay distinct.
/// For names built from others (`NAME-seed3-unguarded-shrunk`).
pub fn fit_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if check_name(&clean).is_ok() {
        return clean;
    }
    let hash = format!("{:08x}", crate::seed::fnv1a(name.as_bytes()) as u32);
    let keep = MAX_NAME_LEN - hash.len() - 1;
    format!("{}-{hash}", &clean[..clean.len().min(keep)])
}

/// A TOML error's message on one line, with the fix where the error
/// alone does not say it.
fn toml_problem(message: &str) -> String {
    let one = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    let fix = if one.contains("duplicate key") {
        ": write each table once (merge the two into one)"
    } else if one.contains("recursion limit") {
        ": keys and values nest at most 80 levels deep (scenarios need 3): flatten it"
    } else {
        ""
    };
    format!("{one}{fix}")
}

/// Whether `text` writes `key` in its `[table]` (rather than taking the
/// default). Called only on text that parsed.
fn written(text: &str, table: &str, key: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get(table)?.as_table()?.get(key).cloned())
        .is_some()
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

/// Most clients in one scenario.
pub const MAX_CLIENTS: u64 = 20_000;
/// Most operations (clients x calls) in one scenario.
pub const MAX_OPERATIONS: u64 = 200_000;
/// Most counted events (clients x calls x chunks) in one scenario.
pub const MAX_EVENTS: u64 = 2_000_000;
/// Most timed faults (generated and explicit) in one scenario.
pub const MAX_TIMED_FAULTS: u64 = 10_000;
/// Longest time any `*_ms` setting may name: one day.
pub const MAX_MS: u64 = 86_400_000;
/// A unit enum's name as the scenario spells it.
fn enum_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Largest `server.first_event_id`.
pub const MAX_FIRST_EVENT_ID: u64 = 1 << 53;
/// Largest `network.tcp_capacity`.
pub const MAX_TCP_CAPACITY: usize = 1 << 30;
/// Connections one client may hold open at once.
pub const CONNECTIONS_PER_CLIENT: u64 = 3;
/// The ephemeral ports the world gives a simulated host.
pub const EPHEMERAL_PORTS: std::ops::RangeInclusive<u16> = 1024..=65535;
/// How many there are.
pub const PORTS_PER_HOST: u64 = 64_512;

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
name = "t"
duration_ms = 1000
[[clients]]
behaviour = "retry-by-post"
"#;

    #[test]
    fn a_minimal_scenario_takes_defaults() {
        let s = Scenario::parse(MIN).unwrap();
        assert_eq!(s.clients[0].behaviour, Behaviour::RetryByPost);
        assert_eq!(s.clients[0].count, 1);
        assert_eq!(s.server, ServerConfig::default());
    }

    #[test]
    fn sdk_quirk_settings_parse_and_the_preset_sets_both() {
        use crate::server::{CompletedResume, Replay, Sdk};
        let s = Scenario::parse(&format!(
            "{MIN}[server]\nreplay = \"inclusive\"\ncompleted_resume = \"empty\"\n"
        ))
        .unwrap();
        assert_eq!(s.server.replay_mode(), Replay::Inclusive);
        assert_eq!(s.server.completed_resume_mode(), CompletedResume::Empty);
        let d = ServerConfig::default();
        assert_eq!(d.replay_mode(), Replay::Exclusive);
        assert_eq!(d.completed_resume_mode(), CompletedResume::Replay);
        let rmcp = Scenario::parse(&format!("{MIN}[server]\nsdk = \"rmcp\"\n")).unwrap();
        assert_eq!(rmcp.server.sdk, Some(Sdk::Rmcp));
        assert_eq!(rmcp.server.replay_mode(), Replay::Inclusive);
        assert_eq!(rmcp.server.completed_resume_mode(), CompletedResume::Empty);
        // Agreeing with the preset is fine; contradicting it is refused.
        Scenario::parse(&format!(
            "{MIN}[server]\nsdk = \"rmcp\"\nreplay = \"inclusive\"\n"
        ))
        .unwrap();
        for (extra, needle) in [
            (
                "replay = \"exclusive\"",
                "server.replay = \"exclusive\" contradicts server.sdk",
            ),
            (
                "completed_resume = \"replay\"",
                "server.completed_resume = \"replay\" contradicts server.sdk",
            ),
        ] {
            let err =
                Scenario::parse(&format!("{MIN}[server]\nsdk = \"rmcp\"\n{extra}\n")).unwrap_err();
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert!(!err.contains('\n'), "one line: {err:?}");
        }
        let err = Scenario::parse(&format!("{MIN}[server]\nreplay = \"sideways\"\n")).unwrap_err();
        assert!(err.contains("unknown variant"), "{err}");
        // Defaults print nothing new: a printed scenario is unchanged.
        let printed = toml::to_string(&ServerConfig::default()).unwrap();
        for key in ["replay", "completed_resume", "sdk"] {
            let line = format!("{key} =");
            assert!(
                !printed.lines().any(|l| l.starts_with(&line)),
                "{key} printed: {printed}"
            );
        }
    }

    #[test]
    fn bad_scenarios_name_the_problem() {
        let bad = [
            (format!("{MIN}\nbogus = 1"), "unknown field"),
            (MIN.replace("retry-by-post", "teleport"), "unknown variant"),
            (format!("{MIN}[network]\ntcp_capacity = 1\n"), "tcp_capacity"),
            (format!("{MIN}[[faults.explicit]]\nkind = \"drop\"\nclient = 9\ncall = 0\nafter_event = 1\n"), "client 9"),
            ("name = 1".to_string(), "invalid type"),
        ];
        for (text, needle) in bad {
            let err = Scenario::parse(&text).unwrap_err();
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
        }
    }

    /// Scenarios that used to pass validation and then panic, abort,
    /// overflow, or lose every operation without a fault: each is refused
    /// at load with one line naming the key.
    #[test]
    fn the_loader_refuses_what_would_crash_or_cannot_work() {
        let group = |extra: &str| format!("[[clients]]\nbehaviour = \"resume\"\n{extra}");
        let t = |body: String| format!("name = \"t\"\nduration_ms = 1000\n{body}");
        let cases: Vec<(String, &str)> = vec![
            (
                t(format!("[server]\nstore_capacity = 0\n{}", group(""))),
                "server.store_capacity",
            ),
            (
                t(format!(
                    "{}{}[network]\ntcp_capacity = 100000\n",
                    group("count = 4294967295\n"),
                    group("count = 2\n")
                )),
                "4294967297 clients",
            ),
            (
                t(format!("{}[faults]\npartitions = 4294967295\n", group(""))),
                "faults.partitions",
            ),
            (
                t(format!(
                    "{}[faults]\nrestarts = 4294967295\nlatency_spikes = 4294967295\n",
                    group("")
                )),
                "8589934590",
            ),
            (
                t(format!(
                    "{}[network]\nclient_hosts = 20\ntcp_capacity = 300000\n",
                    group("count = 100000\n")
                )),
                "100000 clients",
            ),
            (
                t(format!("{}[faults]\npartition_ms = [2500, 500]\n", group(""))),
                "faults.partition_ms = [2500, 500]",
            ),
            (
                t(format!(
                    "{}[faults]\nlatency_spike_ms = [9, 1]\n",
                    group("")
                )),
                "faults.latency_spike_ms",
            ),
            (
                t(format!("{}[network]\nlatency_ms = [9, 1]\n", group(""))),
                "network.latency_ms = [9, 1]",
            ),
            (
                t(group("backoff_ms = 5000\nbackoff_max_ms = 100\n")),
                "clients[0]: backoff_ms 5000",
            ),
            (
                t(format!("{}[expect.guarded.max]\nbogus = 0\n", group(""))),
                "expect.guarded.max: unknown metric \"bogus\"",
            ),
            (
                t(format!("{}[expect.unguarded.min]\nbogus = 0\n", group(""))),
                "expect.unguarded.min: unknown metric \"bogus\"",
            ),
            (
                t(format!(
                    "{}[expect.guarded.min]\nguard_bugs = 2\n[expect.guarded.max]\nguard_bugs = 1\n",
                    group("")
                )),
                "guard_bugs min 2 is above its max 1",
            ),
            (
                t(format!("[server]\nmax_chunks = 3\n{}", group("chunks = 4\n"))),
                "clients[0].chunks = 4 is above server.max_chunks = 3",
            ),
            (
                t(format!("[server]\nmax_body_bytes = 100\n{}", group(""))),
                "server.max_body_bytes = 100",
            ),
            (
                t(format!(
                    "[server]\nmax_sessions = 1\n{}",
                    group("count = 2\n")
                )),
                "server.max_sessions = 1",
            ),
            (
                t(group("chunk_interval_ms = 3600001\n")),
                "clients[0].chunk_interval_ms",
            ),
            (
                t(format!("[heal]\nduration_ms = 9223372036854775807\n{}", group(""))),
                "heal.duration_ms",
            ),
            (
                t(format!("[server]\nfirst_event_id = 9223372036854775807\n{}", group(""))),
                "server.first_event_id",
            ),
            (
                t(format!(
                    "{}[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 1\nduration_ms = 9223372036854775807\n",
                    group("")
                )),
                "faults.explicit[0].duration_ms",
            ),
            (
                t(format!("{}[network]\ntcp_capacity = 9223372036854775807\n", group(""))),
                "network.tcp_capacity",
            ),
            // 20,000 clients fit one host's ports only while nothing cuts
            // it off: a partition may leave every connection half-open.
            (
                format!(
                    "name = \"t\"\nduration_ms = 30000\n{}[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 100\nduration_ms = 25000\n[network]\nclient_hosts = 1\ntcp_capacity = 60000\n",
                    group("count = 20000\n")
                ),
                "network.client_hosts = 1: client host 0 would need",
            ),
        ];
        for (text, needle) in cases {
            let err = match Scenario::parse(&text) {
                Ok(_) => panic!("accepted, expected {needle:?}:\n{text}"),
                Err(e) => e,
            };
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert!(!err.contains('\n'), "one line: {err:?}");
        }
    }

    #[test]
    fn derived_names_are_fitted_to_the_name_rule() {
        let long = format!("{}-seed18446744073709551615-rmcp-es-shrunk", "n".repeat(64));
        let a = fit_name(&long);
        let b = fit_name(&long.replace("rmcp-es", "guarded"));
        assert!(check_name(&a).is_ok() && check_name(&b).is_ok(), "{a} {b}");
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert_ne!(a, b, "names differing past the cut stay distinct");
        assert_eq!(
            fit_name("half-open-seed3-guarded"),
            "half-open-seed3-guarded"
        );
        assert_eq!(fit_name("a/b c"), "a-b-c");
    }

    #[test]
    fn ports_scale_with_hosts_and_cut_off_time() {
        let text = |count: u32, hosts: u32, partition_ms: u64| {
            format!(
                "name = \"t\"\nduration_ms = 30000\n[[clients]]\nbehaviour = \"resume\"\ncount = {count}\n\
                 [[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 100\nduration_ms = {partition_ms}\n\
                 [network]\nclient_hosts = {hosts}\ntcp_capacity = 60000\n"
            )
        };
        // One partition of host 0: each client may hold its 3 ports twice
        // (open, and half-open on the server): 10,000 clients fit one host,
        // 11,000 do not; spread over more hosts, host 0 has fewer.
        assert!(Scenario::parse(&text(10_000, 1, 25_000)).is_ok());
        assert!(Scenario::parse(&text(11_000, 1, 25_000)).is_err());
        assert!(Scenario::parse(&text(11_000, 2, 25_000)).is_ok());
    }

    #[test]
    fn every_committed_scenario_loads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sims");
        let mut n = 0;
        for dir in [root.clone(), root.join("regressions")] {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "toml") {
                    Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                }
            }
        }
        assert!(n >= 11);
    }
}

//! Scenarios (`sims/*.toml`, DESIGN §7): data that composes a workload of
//! virtual clients with fault generators, network settings, a heal phase
//! and the expectations each server must meet.

use crate::server::ServerConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// How a client reacts to a dropped stream (DESIGN §4).
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

/// Expectations per server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Expectations {
    /// For the guarded server.
    pub guarded: Expect,
    /// For the unguarded server.
    pub unguarded: Expect,
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
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario {path}: {source}")]
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
        let s: Scenario = toml::from_str(text).map_err(|e| e.message().to_string())?;
        s.validate()?;
        Ok(s)
    }

    /// Total clients.
    pub fn client_count(&self) -> u32 {
        self.clients.iter().map(|g| g.count).sum()
    }

    /// Checks bounds that the simulator relies on.
    pub fn validate(&self) -> Result<(), String> {
        for h in &self.hazards {
            if !crate::oracle::ops::HAZARDS.contains(&h.as_str()) {
                return Err(format!(
                    "hazards: unknown hazard {h:?}: use one of {}",
                    crate::oracle::ops::HAZARDS.join(", ")
                ));
            }
        }
        if self.clients.is_empty() || self.client_count() == 0 {
            return Err("at least one client is needed ([[clients]] with count >= 1)".into());
        }
        if self.network.client_hosts == 0 {
            return Err("network.client_hosts must be at least 1".into());
        }
        let per_host = self.client_count().div_ceil(self.network.client_hosts);
        if per_host > 5_000 {
            return Err(format!(
                "{per_host} clients per host exceeds 5000 (ephemeral ports): raise network.client_hosts"
            ));
        }
        // Every client may connect at once (start, reconnect storm), each
        // with up to three connections: the accept backlog must hold them.
        let burst = self.client_count() as usize * 3;
        if self.network.tcp_capacity < burst {
            return Err(format!(
                "network.tcp_capacity {} is below the largest connect burst {burst} (3 per client): raise it",
                self.network.tcp_capacity
            ));
        }
        if self.network.latency_ms[0] > self.network.latency_ms[1] {
            return Err("network.latency_ms must be [min, max] with min <= max".into());
        }
        if self.network.tick_ms == 0 {
            return Err("network.tick_ms must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.faults.drop_rate) {
            return Err("faults.drop_rate must be within 0..=1".into());
        }
        for g in &self.clients {
            if g.chunks == 0 || g.calls == 0 || g.max_attempts == 0 {
                return Err("clients need calls, chunks and max_attempts of at least 1".into());
            }
            if g.read_timeout_ms == 0 || g.connect_timeout_ms == 0 {
                return Err("clients need non-zero read_timeout_ms and connect_timeout_ms".into());
            }
        }
        let clients = self.client_count();
        for f in &self.faults.explicit {
            match f {
                Fault::Drop {
                    client,
                    after_event,
                    ..
                } => {
                    if *client >= clients {
                        return Err(format!(
                            "explicit drop names client {client}, but there are {clients}"
                        ));
                    }
                    if *after_event == 0 {
                        return Err("explicit drop after_event is 1-based".into());
                    }
                }
                Fault::Partition { host, .. } | Fault::Latency { host, .. } => {
                    if *host >= self.network.client_hosts {
                        return Err(format!(
                            "explicit fault names client host {host}, but there are {}",
                            self.network.client_hosts
                        ));
                    }
                }
                Fault::Restart { .. } => {}
                Fault::Switch { client, .. } => {
                    if *client >= clients {
                        return Err(format!(
                            "explicit switch names client {client}, but there are {clients}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

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
}

//! The `[deployment]` table: how many replicas of the system under test
//! run, and what stands between them and the clients (sims/README.md).
//! One replica without a balancer, the default, is the world with one
//! server host that every older scenario describes, byte for byte.

use serde::{Deserialize, Serialize};

/// How the balancer picks a replica for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BalancerKind {
    /// No balancer: the clients talk to the one replica directly.
    None,
    /// Every request to the next live replica in turn, whatever session
    /// it names (agentgateway #573's failure).
    RoundRobin,
    /// A pin table: the replica that answered `initialize` keeps the
    /// session (or the client's token) until the pin expires.
    Sticky,
    /// A hash ring over the session id, no table: each replica mints
    /// session ids the ring maps to itself.
    Hash,
}

/// What a sticky balancer pins by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PinKey {
    /// The `Mcp-Session-Id` the replica issued.
    Session,
    /// The client's bearer token (as a cookie would pin a browser).
    Client,
}

/// What the balancer does when the pinned replica does not answer within
/// `forward_timeout_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnDeadUpstream {
    /// Keep the pin and answer 404 (a gateway whose owning worker died).
    Wait,
    /// Drop the pin and forward to a live replica.
    Repin,
}

/// Where the replicas keep sessions, events and keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// In each replica's memory, as the SDKs ship: another replica does
    /// not know the session (404).
    Local,
    /// On a store host every replica reaches over the network.
    Shared,
}

/// How a resume on a replica other than the session's owner reaches the
/// events the owner still produces (a shared store only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResumeRouting {
    /// The resuming replica becomes the owner.
    MoveOwner,
    /// The balancer sends every resume to the owner.
    PinOwner,
}

/// `[deployment]`: replicas, the balancer in front of them, the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeploymentSpec {
    /// Replicas of the system under test.
    pub replicas: u32,
    /// The balancer in front of them.
    pub balancer: BalancerKind,
    /// A sticky pin lives this long from when it was made, ms (0: for
    /// ever).
    pub affinity_ttl_ms: u64,
    /// What a sticky balancer pins by.
    pub pin_key: PinKey,
    /// How long the balancer waits for a replica's response head, ms.
    pub forward_timeout_ms: u64,
    /// What the balancer does when a forward times out.
    pub on_dead_upstream: OnDeadUpstream,
    /// Where the replicas keep their state.
    pub store: StoreKind,
    /// A replica reads the shared store this far behind, ms.
    pub store_lag_ms: u64,
    /// Whether a store restart keeps what it held.
    pub store_durable: bool,
    /// How a resume reaches the owner's live events.
    pub resume: ResumeRouting,
}

impl Default for DeploymentSpec {
    fn default() -> Self {
        DeploymentSpec {
            replicas: 1,
            balancer: BalancerKind::None,
            affinity_ttl_ms: 0,
            pin_key: PinKey::Session,
            forward_timeout_ms: 30_000,
            on_dead_upstream: OnDeadUpstream::Wait,
            store: StoreKind::Local,
            store_lag_ms: 0,
            store_durable: true,
            resume: ResumeRouting::PinOwner,
        }
    }
}

/// Most replicas a deployment runs (each is a host with its own server).
pub const MAX_REPLICAS: u32 = 16;

impl DeploymentSpec {
    /// Whether this is the one-server world (no `[deployment]`, or one
    /// that changes nothing).
    pub fn is_single(&self) -> bool {
        self.replicas == 1 && self.balancer == BalancerKind::None
    }

    /// Whether the table is all defaults (it is then not written out).
    pub fn is_default(&self) -> bool {
        *self == DeploymentSpec::default()
    }

    /// The bounds the file alone can judge; one line naming the key and
    /// the fix.
    pub fn validate(&self) -> Result<(), String> {
        if self.replicas == 0 || self.replicas > MAX_REPLICAS {
            return Err(format!(
                "deployment.replicas = {} is out of range: use 1 to {MAX_REPLICAS}",
                self.replicas
            ));
        }
        if self.replicas > 1 && self.balancer == BalancerKind::None {
            return Err(format!(
                "deployment.replicas = {} needs a balancer in front of them: add \
                 balancer = \"round-robin\", \"sticky\" or \"hash\" to [deployment]",
                self.replicas
            ));
        }
        if self.forward_timeout_ms == 0 {
            return Err("deployment.forward_timeout_ms must be at least 1".into());
        }
        if self.store == StoreKind::Shared && self.balancer == BalancerKind::None {
            return Err(
                "deployment.store = \"shared\" is for replicas behind a balancer: add \
                 balancer = \"round-robin\", \"sticky\" or \"hash\" to [deployment]"
                    .into(),
            );
        }
        if self.store_lag_ms > 0 && self.store == StoreKind::Local {
            return Err(format!(
                "deployment.store_lag_ms = {} is the shared store's lag, and deployment.store is \
                 \"local\": set store = \"shared\" or drop store_lag_ms",
                self.store_lag_ms
            ));
        }
        Ok(())
    }

    /// The balancer's name as the file writes it.
    pub fn balancer_name(&self) -> &'static str {
        match self.balancer {
            BalancerKind::None => "none",
            BalancerKind::RoundRobin => "round-robin",
            BalancerKind::Sticky => "sticky",
            BalancerKind::Hash => "hash",
        }
    }

    /// What a report shows of this deployment, `None` for the one-server
    /// world.
    pub fn topology(&self) -> Option<Topology> {
        (!self.is_single()).then(|| Topology {
            replicas: self.replicas,
            balancer: self.balancer_name().to_string(),
            store: named(&self.store),
            on_dead_upstream: named(&self.on_dead_upstream),
            resume: named(&self.resume),
        })
    }
}

/// What a run's deployment was, as the report's Deployments section reads
/// it: replicas, balancer, store, what the balancer does on a dead
/// upstream and how a resume is routed, each as the file writes it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Topology {
    /// Replicas of the system under test.
    pub replicas: u32,
    /// `round-robin`, `sticky` or `hash`.
    pub balancer: String,
    /// `local` or `shared`.
    pub store: String,
    /// `wait` or `repin`.
    pub on_dead_upstream: String,
    /// `pin-owner` or `move-owner`.
    pub resume: String,
}

/// A kebab-case enum's name as the file writes it.
fn named<T: Serialize>(v: &T) -> String {
    match toml::Value::try_from(v) {
        Ok(toml::Value::String(s)) => s,
        _ => String::new(),
    }
}

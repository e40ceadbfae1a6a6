//! The world's records: timed faults as they start and end, and the heal
//! phase.

use super::SessionId;
use serde::Serialize;

/// The kinds of fault a plan holds: the one list every part names them
/// from (the plan's counts, the world's records, the clients' accounts,
/// the oracle's hazards, the timelines). A new kind is one entry here
/// (with its description) plus the code that applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// A client's response stream dropped after some events.
    Drop,
    /// A client host cut off from the server for a while.
    Partition,
    /// The server host restarted.
    Restart,
    /// A client host's link slowed for a while.
    Latency,
    /// A client switched transport after a call.
    Switch,
    /// A replica of a deployment went down (killed or hung).
    ReplicaCrash,
    /// A replica drained (no new sessions), then restarted.
    ReplicaDrain,
    /// A rolling deploy: every replica drained and restarted in turn.
    Deploy,
    /// The balancer restarted: its pins were lost.
    BalancerRestart,
    /// A replica joined the deployment.
    ReplicaAdd,
    /// A replica left the deployment (and stopped).
    ReplicaRemove,
    /// The shared store was cut off from the replicas for a while.
    StorePartition,
    /// The shared store's reads lagged its writes for a while.
    StoreLagWindow,
    /// The shared store restarted.
    StoreRestart,
    /// A client host's link cut in one direction for a while.
    Oneway,
    /// A client host's messages held, then released together.
    Hold,
    /// A client host's connections cut after some bytes.
    Truncate,
    /// A client host's reads fragmented.
    Slice,
    /// A client host's reads rate-limited.
    Bandwidth,
    /// A client host's closes delayed.
    SlowClose,
    /// A host's clock stepped ahead or behind.
    Skew,
    /// The server stopped for a while, its connections up.
    Stall,
    /// A client's webhook receiver restarted, forgetting the ids it took.
    ReceiverRestart,
    /// A client's webhook subscription refreshes were lost on the way.
    RefreshLost,
}

impl FaultKind {
    /// Every kind, in the plan's order.
    pub const ALL: [FaultKind; 24] = [
        FaultKind::Drop,
        FaultKind::Partition,
        FaultKind::Restart,
        FaultKind::Latency,
        FaultKind::Switch,
        FaultKind::ReplicaCrash,
        FaultKind::ReplicaDrain,
        FaultKind::Deploy,
        FaultKind::BalancerRestart,
        FaultKind::ReplicaAdd,
        FaultKind::ReplicaRemove,
        FaultKind::StorePartition,
        FaultKind::StoreLagWindow,
        FaultKind::StoreRestart,
        FaultKind::Oneway,
        FaultKind::Hold,
        FaultKind::Truncate,
        FaultKind::Slice,
        FaultKind::Bandwidth,
        FaultKind::SlowClose,
        FaultKind::Skew,
        FaultKind::Stall,
        FaultKind::ReceiverRestart,
        FaultKind::RefreshLost,
    ];

    /// The name scenarios, records and reports use.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Drop => "drop",
            FaultKind::Partition => "partition",
            FaultKind::Restart => "restart",
            FaultKind::Latency => "latency",
            FaultKind::Switch => "switch",
            FaultKind::ReplicaCrash => "replica_crash",
            FaultKind::ReplicaDrain => "replica_drain",
            FaultKind::Deploy => "deploy",
            FaultKind::BalancerRestart => "balancer_restart",
            FaultKind::ReplicaAdd => "replica_add",
            FaultKind::ReplicaRemove => "replica_remove",
            FaultKind::StorePartition => "store_partition",
            FaultKind::StoreLagWindow => "store_lag_window",
            FaultKind::StoreRestart => "store_restart",
            FaultKind::Oneway => "oneway",
            FaultKind::Hold => "hold",
            FaultKind::Truncate => "truncate",
            FaultKind::Slice => "slice",
            FaultKind::Bandwidth => "bandwidth",
            FaultKind::SlowClose => "slow_close",
            FaultKind::Skew => "skew",
            FaultKind::Stall => "stall",
            FaultKind::ReceiverRestart => "receiver_restart",
            FaultKind::RefreshLost => "refresh_lost",
        }
    }

    /// One line on what the fault does.
    pub fn description(self) -> &'static str {
        match self {
            FaultKind::Drop => "a client's response stream drops after some of its events",
            FaultKind::Partition => "a client host is cut off from the server for a while",
            FaultKind::Restart => "the server host restarts: what it held in memory is gone",
            FaultKind::Latency => "a client host's link to the server slows for a while",
            FaultKind::Switch => "a client switches transport (streamable or legacy) after a call",
            FaultKind::ReplicaCrash => {
                "a replica of a deployment goes down (killed, or hung) and later starts afresh"
            }
            FaultKind::ReplicaDrain => {
                "a replica takes no new session for a grace period, then exits and starts afresh"
            }
            FaultKind::Deploy => "a rolling deploy: each replica in turn drains and restarts",
            FaultKind::BalancerRestart => "the balancer restarts: its pins are lost",
            FaultKind::ReplicaAdd => "a replica joins the deployment (scale-up)",
            FaultKind::ReplicaRemove => {
                "a replica leaves the deployment and stops, with what it held (scale-down)"
            }
            FaultKind::StorePartition => {
                "the shared store is cut off from every replica for a while"
            }
            FaultKind::StoreLagWindow => {
                "the shared store's reads lag its writes for a while (a lagging copy)"
            }
            FaultKind::StoreRestart => {
                "the shared store restarts: what it held is gone unless it is durable"
            }
            FaultKind::Oneway => {
                "a client host's link is cut in one direction for a while (one-way loss)"
            }
            FaultKind::Hold => "a client host's messages queue for a while, then arrive together",
            FaultKind::Truncate => {
                "a client host's connections are cut after some bytes, mid-event or mid-body"
            }
            FaultKind::Slice => "what a client host reads arrives in small pieces, with delays",
            FaultKind::Bandwidth => "what a client host reads arrives at a limited rate",
            FaultKind::SlowClose => "a close on a client host's connections arrives late",
            FaultKind::Skew => {
                "a host's clock steps ahead or behind: its timers fire early or late, or only its wall clock (webhook signatures) moves"
            }
            FaultKind::Stall => {
                "the server stops for a while with its connections up, then catches up"
            }
            FaultKind::ReceiverRestart => {
                "a client's webhook receiver is down for a while and comes back without the ids it took"
            }
            FaultKind::RefreshLost => {
                "a client's webhook subscription refreshes are lost on the way to the server for a while"
            }
        }
    }

    /// The kind named `name`.
    pub fn of(name: &str) -> Option<FaultKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the world times it (a window or an instant on the clock);
    /// the others are the clients' own (drops, switches).
    pub fn timed(self) -> bool {
        !matches!(self, FaultKind::Drop | FaultKind::Switch)
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a run's shared store is, as its `Deployed` record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SharedStoreFacts {
    /// `store_lag_ms`.
    pub lag_ms: u64,
    /// `store_durable`.
    pub durable: bool,
}

/// World records: faults and phases.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorldRecord {
    /// A timed fault began.
    FaultStarted {
        /// Index in the plan.
        index: u32,
        /// Kind.
        kind: FaultKind,
        /// The client host it acts on (partitions, latency).
        host: Option<u32>,
        /// The replica it acts on (replica crashes).
        #[serde(skip_serializing_if = "Option::is_none")]
        replica: Option<u32>,
    },
    /// A timed fault ended (partition repaired, latency restored).
    FaultEnded {
        /// Index in the plan.
        index: u32,
    },
    /// Faults are off; the heal phase began.
    HealStarted,
    /// A replica exited at the end of a drain and started afresh (its
    /// sessions and executions gone).
    ReplicaRestarted {
        /// The replica.
        replica: u32,
    },
    /// A sticky pin expired under a request: the balancer sent it where
    /// its turn said, not to the pinned replica.
    PinExpired {
        /// The replica it was pinned to.
        replica: u32,
        /// The session the request named, if any.
        session: Option<SessionId>,
    },
    /// The run is a deployment: replicas behind a balancer (recorded
    /// first; a run with one server and no balancer has no such record).
    Deployed {
        /// Replicas of the system under test.
        replicas: u32,
        /// The balancer's kind (`round-robin`, `sticky`, `hash`).
        balancer: &'static str,
        /// On a shared store: how far its reads lag, ms, and whether a
        /// restart keeps its contents (absent: each replica's own memory).
        #[serde(skip_serializing_if = "Option::is_none")]
        shared_store: Option<SharedStoreFacts>,
    },
}

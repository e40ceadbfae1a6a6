//! Faults and the fault plan: the faults a scenario writes
//! (`[[faults.explicit]]`) and generates (`[faults]`), and the plan, an
//! explicit, printable list of faults drawn from the `faults` child seed
//! before the run, the same for every server. Below the scenario file,
//! which writes these types, and above nothing but the seed.

use crate::base::seed;
use crate::history::FaultKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod fields;
mod params;
mod placed;
pub mod range;
pub mod swarm;
pub use params::{Close, CrashMode, Direction, SkewClock, SkewOn};
pub use placed::{to_table, At, Boundary, PLACEMENT_KEYS};
pub use swarm::Swarm;

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
        /// A clean close (FIN, the default) or an abortive one (RST).
        #[serde(default, skip_serializing_if = "Close::is_fin")]
        close: Close,
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
    /// Replica `replica` of a deployment goes down at `at_ms` for
    /// `duration_ms` (0: for good), then starts afresh (its memory gone).
    ReplicaCrash {
        /// Replica index (0-based).
        replica: u32,
        /// When, ms.
        at_ms: u64,
        /// How long it stays down, ms (0: for the rest of the run).
        duration_ms: u64,
        /// A killed process or a hung one.
        #[serde(default)]
        mode: CrashMode,
    },
    /// Replica `replica` drains at `at_ms`: the balancer sends it no new
    /// session, it keeps serving the ones it holds for `grace_ms`, then
    /// exits and starts afresh (its memory gone) and takes new sessions
    /// again.
    ReplicaDrain {
        /// Replica index (0-based).
        replica: u32,
        /// When the drain begins, ms.
        at_ms: u64,
        /// How long it keeps serving before it exits, ms.
        grace_ms: u64,
    },
    /// A rolling deploy from `at_ms`: each replica in turn, in index
    /// order, drains for `grace_ms` and restarts.
    Deploy {
        /// When the first drain begins, ms.
        at_ms: u64,
        /// Each replica's drain, ms.
        grace_ms: u64,
    },
    /// The balancer restarts at `at_ms`: its pins are gone and every
    /// client connection to it closes.
    BalancerRestart {
        /// When, ms.
        at_ms: u64,
    },
    /// A new replica joins the deployment at `at_ms` (scale-up): the
    /// k-th added, in time order, is replica `replicas + k`.
    ReplicaAdd {
        /// When, ms.
        at_ms: u64,
    },
    /// Replica `replica` leaves the deployment at `at_ms` (scale-down):
    /// the balancer stops routing to it and it stops, with what it held.
    ReplicaRemove {
        /// Replica index (0-based).
        replica: u32,
        /// When, ms.
        at_ms: u64,
    },
    /// The shared store is cut off from every replica for `duration_ms`
    /// (a request to it then fails after the replica's store timeout).
    StorePartition {
        /// When, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
    },
    /// The shared store's reads lag `lag_ms` behind its writes for
    /// `duration_ms` (a replica reading a lagging copy).
    StoreLagWindow {
        /// When, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// How far reads lag during the window, ms.
        lag_ms: u64,
    },
    /// Client `client`'s webhook receiver restarts at `at_ms`: it takes no
    /// delivery for `duration_ms` (a connection to it is closed unanswered)
    /// and comes back without the ids it had taken (its deduplication
    /// memory).
    ReceiverRestart {
        /// Global client index (a client with `events = "webhook"`).
        client: u32,
        /// When, ms.
        at_ms: u64,
        /// How long it is down, ms (0: back at once).
        duration_ms: u64,
    },
    /// Client `client`'s webhook subscription refreshes (`events/subscribe`)
    /// are lost on the way to the server from `at_ms` for `duration_ms`:
    /// the server never sees one, and the client waits out its read
    /// timeout, then tries again after its backoff.
    RefreshLost {
        /// Global client index (a client with `events = "webhook"`).
        client: u32,
        /// When, ms.
        at_ms: u64,
        /// How long, ms.
        duration_ms: u64,
    },
    /// The shared store restarts at `at_ms`: its connections close, and
    /// what it held is gone unless `deployment.store_durable`.
    StoreRestart {
        /// When, ms.
        at_ms: u64,
    },
    /// A partition of client host `host` in one direction only for
    /// `duration_ms`: what it sends is lost (`to_server`), or what it is
    /// sent (`to_client`).
    Oneway {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// Which direction is cut.
        direction: Direction,
    },
    /// Messages between client host `host` and the server queue for
    /// `duration_ms`, then arrive together (a hold, then its release).
    Hold {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
    },
    /// Each connection of client host `host` in use during the window is
    /// cut once `bytes` more bytes have crossed it in direction
    /// `direction` (`to_client`: mid-event or mid-body of a response;
    /// `to_server`: mid-body of a request): the client reads an end there
    /// and the server sees the close.
    Truncate {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// Bytes let through before the cut.
        bytes: u64,
        /// Which direction is counted.
        #[serde(default = "Direction::to_client")]
        direction: Direction,
        /// How the cut closes: FIN (default) or RST.
        #[serde(default, skip_serializing_if = "Close::is_fin")]
        close: Close,
    },
    /// What client host `host` reads arrives in pieces of at most
    /// `bytes`, `delay_ms` apart (fragmentation).
    Slice {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// Largest piece, bytes.
        bytes: u64,
        /// Between pieces, ms.
        delay_ms: u64,
    },
    /// What client host `host` reads arrives at no more than
    /// `bytes_per_s`.
    Bandwidth {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// The link's rate, bytes per second.
        bytes_per_s: u64,
    },
    /// A close on client host `host`'s connections, either side's, reaches
    /// the other side `delay_ms` late.
    SlowClose {
        /// Client host index.
        host: u32,
        /// Start, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// How late, ms.
        delay_ms: u64,
    },
    /// A host's clock steps ahead (`offset_ms` > 0: its timers fire that
    /// much early) or behind (< 0: that much late) at `at_ms`: the server
    /// (every replica), the balancer, or client host `host`. With
    /// `clock = "wall"` only its wall clock steps (the time webhook
    /// signatures are stamped and checked with), its timers keep time.
    Skew {
        /// When, ms.
        at_ms: u64,
        /// The step, ms.
        offset_ms: i64,
        /// Whose clock.
        #[serde(default)]
        on: SkewOn,
        /// The client host, for `on = "client"`.
        #[serde(default)]
        host: u32,
        /// Which clock: its timers, or only its wall clock.
        #[serde(default, skip_serializing_if = "SkewClock::is_timers")]
        clock: SkewClock,
    },
    /// The server (or replica `replica` of a deployment) stops for
    /// `duration_ms` with its connections up, then catches up at once.
    Stall {
        /// When, ms.
        at_ms: u64,
        /// Length, ms.
        duration_ms: u64,
        /// The replica (a deployment); every server host when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replica: Option<u32>,
    },
    /// `fault` fires when the run reaches boundary `on` of one operation,
    /// not at a time (its own `at_ms` is the moment it fires).
    /// `[[faults.explicit]]` writes it as the fault's keys plus `at`,
    /// `client`, `call` and `after_event` ([`to_table`]).
    #[serde(skip_deserializing)]
    Placed {
        /// The boundary.
        on: Boundary,
        /// What fires there.
        fault: Box<Fault>,
    },
}

impl Fault {
    /// Whether it acts on a deployment's replicas or balancer (a world
    /// with one server has none).
    pub fn needs_deployment(&self) -> bool {
        if let Fault::Placed { fault, .. } = self {
            return fault.needs_deployment();
        }
        matches!(
            self,
            Fault::ReplicaCrash { .. }
                | Fault::ReplicaDrain { .. }
                | Fault::Deploy { .. }
                | Fault::BalancerRestart { .. }
                | Fault::ReplicaAdd { .. }
                | Fault::ReplicaRemove { .. }
                | Fault::Skew {
                    on: SkewOn::Balancer,
                    ..
                }
                | Fault::Stall {
                    replica: Some(_),
                    ..
                }
        ) || self.needs_shared_store()
    }

    /// When a timed fault starts, ms (`None`: a drop or a switch, which the
    /// clients place, or a placed fault, which its boundary places).
    pub fn at_ms(&self) -> Option<u64> {
        self.timing().map(|(at, _)| at)
    }

    /// A drop placed at a boundary: the boundary (its client's connection
    /// drops there); `None` for anything else.
    pub fn placed_drop(&self) -> Option<Boundary> {
        match self {
            Fault::Placed { on, fault } if matches!(**fault, Fault::Drop { .. }) => Some(*on),
            _ => None,
        }
    }

    /// Whether it acts on the shared store (a deployment with
    /// `store = "shared"`).
    pub fn needs_shared_store(&self) -> bool {
        if let Fault::Placed { fault, .. } = self {
            return fault.needs_shared_store();
        }
        matches!(
            self,
            Fault::StorePartition { .. }
                | Fault::StoreLagWindow { .. }
                | Fault::StoreRestart { .. }
        )
    }
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
    #[serde(deserialize_with = "range::partition_ms")]
    pub partition_ms: Option<[u64; 2]>,
    /// Random server restarts over the fault phase.
    pub restarts: u32,
    /// Random latency spikes over the fault phase.
    pub latency_spikes: u32,
    /// Spike length range, ms.
    #[serde(deserialize_with = "range::latency_spike_ms")]
    pub latency_spike_ms: Option<[u64; 2]>,
    /// Spike ceiling, ms.
    pub latency_spike_max_ms: u64,
    /// Swarm ranges (`[faults.swarm]`): with `--swarm`, each seed draws
    /// which generator kinds are on and at what rates within them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<Swarm>,
    /// Swarm is on for this run (`--swarm`, `--set swarm=on`).
    #[serde(skip)]
    pub swarm_on: bool,
    /// Explicit faults, applied as written (placed ones at their
    /// boundary).
    #[serde(
        deserialize_with = "placed::de_explicit",
        serialize_with = "placed::ser_explicit"
    )]
    pub explicit: Vec<Fault>,
}

/// What the generators draw over: the scenario's workload as far as the
/// plan needs it (built by `Scenario::fault_plan`).
#[derive(Clone, Debug)]
pub struct Workload<'a> {
    /// The generators and the explicit faults.
    pub spec: &'a FaultSpec,
    /// The client groups, in file order.
    pub groups: Vec<Group>,
    /// Length of the fault phase, ms.
    pub duration_ms: u64,
    /// Client hosts that run clients (the only ones the world creates).
    pub hosts: u32,
    /// The network's largest one-way latency, ms: no spike is below it.
    pub latency_max_ms: u64,
}

/// One group of identical clients, as the plan sees it.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// How many clients.
    pub count: u32,
    /// Tool calls per client.
    pub calls: u32,
    /// Chunks per call.
    pub chunks: u32,
    /// Its clients switch transport once (transport-switch clients).
    pub switches: bool,
}

/// Every fault of one run, in a canonical order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FaultPlan {
    /// The faults.
    pub faults: Vec<Fault>,
}

impl FaultPlan {
    /// Draws the plan for `workload` under `root_seed`: the explicit
    /// faults plus whatever the generators produce.
    pub fn draw(workload: &Workload<'_>, root_seed: u64) -> FaultPlan {
        let mut rng = ChaCha8Rng::seed_from_u64(seed::child(root_seed, "faults"));
        let swarmed = workload
            .spec
            .swarm_on
            .then(|| swarm::draw(workload.spec, root_seed));
        let spec = swarmed.as_ref().unwrap_or(workload.spec);
        let mut faults = spec.explicit.clone();
        let span = workload.duration_ms.max(1);
        if spec.drop_rate > 0.0 {
            let mut client = 0u32;
            for g in &workload.groups {
                for _ in 0..g.count {
                    for call in 0..g.calls {
                        if rng.random_bool(spec.drop_rate) {
                            let after_event = rng.random_range(1..=g.chunks);
                            faults.push(Fault::Drop {
                                client,
                                call,
                                after_event,
                                close: Close::Fin,
                            });
                        }
                    }
                    client += 1;
                }
            }
        }
        // Every transport-switch client switches once (unless the explicit
        // faults already say when), after a drawn call.
        let explicit_switch: std::collections::BTreeSet<u32> = spec
            .explicit
            .iter()
            .filter_map(|f| match f {
                Fault::Switch { client, .. } => Some(*client),
                _ => None,
            })
            .collect();
        let mut client = 0u32;
        for g in &workload.groups {
            for _ in 0..g.count {
                if g.switches && !explicit_switch.contains(&client) {
                    let after_call = rng.random_range(0..g.calls.saturating_sub(1).max(1));
                    faults.push(Fault::Switch { client, after_call });
                }
                client += 1;
            }
        }
        let hosts = workload.hosts;
        let window = |rng: &mut ChaCha8Rng, range: Option<[u64; 2]>| {
            let [lo, hi] = range.unwrap_or([span / 20, span / 5]);
            let len = rng.random_range(lo.min(hi)..=hi.max(lo)).max(1);
            let at = rng.random_range(0..=span.saturating_sub(len));
            (at, len)
        };
        for _ in 0..spec.partitions {
            let host = rng.random_range(0..hosts);
            let (at_ms, duration_ms) = window(&mut rng, spec.partition_ms);
            faults.push(Fault::Partition {
                host,
                at_ms,
                duration_ms,
            });
        }
        for _ in 0..spec.restarts {
            let at_ms = rng.random_range(span / 10..=span * 9 / 10);
            faults.push(Fault::Restart { at_ms });
        }
        for _ in 0..spec.latency_spikes {
            let host = rng.random_range(0..hosts);
            let (at_ms, duration_ms) = window(&mut rng, spec.latency_spike_ms);
            faults.push(Fault::Latency {
                host,
                at_ms,
                duration_ms,
                max_ms: spec.latency_spike_max_ms.max(workload.latency_max_ms),
            });
        }
        faults.sort();
        faults.dedup_by(|a, b| match (a, b) {
            // One drop per client call: keep the first drawn position.
            (
                Fault::Drop {
                    client: c1,
                    call: n1,
                    ..
                },
                Fault::Drop {
                    client: c2,
                    call: n2,
                    ..
                },
            ) => c1 == c2 && n1 == n2,
            _ => false,
        });
        FaultPlan { faults }
    }

    /// Drops planned for one client: call → events before the drop.
    pub fn drops_for(&self, client: u32) -> BTreeMap<u32, u32> {
        self.faults
            .iter()
            .filter_map(|f| match f {
                Fault::Drop {
                    client: c,
                    call,
                    after_event,
                    ..
                } if *c == client => Some((*call, *after_event)),
                _ => None,
            })
            .collect()
    }

    /// Drops placed at a boundary client `client` sees itself (its call's
    /// response head or result): call → boundary.
    pub fn placed_drops_for(&self, client: u32) -> BTreeMap<u32, At> {
        self.faults
            .iter()
            .filter_map(Fault::placed_drop)
            .filter(|on| on.client == client && matches!(on.at, At::ResponseHead | At::Result))
            .map(|on| (on.call, on.at))
            .collect()
    }

    /// Client `client`'s calls whose planned drop (at an event, or
    /// placed) closes with RST.
    pub fn resets_for(&self, client: u32) -> std::collections::BTreeSet<u32> {
        let drop_of = |f: &Fault| match f {
            Fault::Drop {
                client: c,
                call,
                close: Close::Rst,
                ..
            } if *c == client => Some(*call),
            _ => None,
        };
        self.faults
            .iter()
            .filter_map(|f| drop_of(f.acting()))
            .collect()
    }

    /// The call after which a client switches transport, if planned.
    pub fn switch_for(&self, client: u32) -> Option<u32> {
        self.faults.iter().find_map(|f| match f {
            Fault::Switch {
                client: c,
                after_call,
            } if *c == client => Some(*after_call),
            _ => None,
        })
    }

    /// Faults the world schedules in time (all but drops), by start time.
    pub fn timed(&self) -> Vec<(u64, Fault)> {
        let mut v: Vec<(u64, Fault)> = self
            .faults
            .iter()
            .filter_map(|f| f.at_ms().map(|at| (at, f.clone())))
            .collect();
        v.sort();
        v
    }

    /// Replicas the plan adds to a deployment.
    pub fn replicas_added(&self) -> u32 {
        let adds = self
            .faults
            .iter()
            .filter(|f| matches!(f, Fault::ReplicaAdd { .. }));
        adds.count() as u32
    }

    /// Faults planned, by kind.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for f in &self.faults {
            *m.entry(kind_name(f).to_string()).or_insert(0) += 1;
        }
        m
    }

    /// The plan as TOML `[[faults.explicit]]` tables, replayable as-is.
    pub fn to_toml(&self) -> String {
        #[derive(Serialize)]
        struct Wrap {
            explicit: Vec<toml::Table>,
        }
        toml::to_string(&Wrap {
            explicit: self.faults.iter().map(to_table).collect(),
        })
        .expect("faults serialize")
    }
}

/// What became of one planned fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The world (a timed fault) or its client (a drop, a switch) applied it.
    Applied,
    /// It did not happen, with why (one line).
    NotApplied(String),
}

/// A planned fault with its fate: what the world returns for every fault
/// of the plan, so a run's fault account is a count over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFault {
    /// The fault, as `[[faults.explicit]]` writes it.
    pub fault: Fault,
    /// Applied or not, and why not.
    pub fate: Fate,
}

impl PlannedFault {
    /// `fault`, not applied because of `reason`.
    pub fn not_applied(fault: Fault, reason: String) -> PlannedFault {
        PlannedFault {
            fault,
            fate: Fate::NotApplied(reason),
        }
    }
}

/// A fault's kind ([`FaultKind`], the kinds' registry).
pub fn kind_of(f: &Fault) -> FaultKind {
    match f {
        Fault::Drop { .. } => FaultKind::Drop,
        Fault::Partition { .. } => FaultKind::Partition,
        Fault::Restart { .. } => FaultKind::Restart,
        Fault::Latency { .. } => FaultKind::Latency,
        Fault::Switch { .. } => FaultKind::Switch,
        Fault::ReplicaCrash { .. } => FaultKind::ReplicaCrash,
        Fault::ReplicaDrain { .. } => FaultKind::ReplicaDrain,
        Fault::Deploy { .. } => FaultKind::Deploy,
        Fault::BalancerRestart { .. } => FaultKind::BalancerRestart,
        Fault::ReplicaAdd { .. } => FaultKind::ReplicaAdd,
        Fault::ReplicaRemove { .. } => FaultKind::ReplicaRemove,
        Fault::StorePartition { .. } => FaultKind::StorePartition,
        Fault::StoreLagWindow { .. } => FaultKind::StoreLagWindow,
        Fault::StoreRestart { .. } => FaultKind::StoreRestart,
        Fault::Oneway { .. } => FaultKind::Oneway,
        Fault::Hold { .. } => FaultKind::Hold,
        Fault::Truncate { .. } => FaultKind::Truncate,
        Fault::Slice { .. } => FaultKind::Slice,
        Fault::Bandwidth { .. } => FaultKind::Bandwidth,
        Fault::SlowClose { .. } => FaultKind::SlowClose,
        Fault::Skew { .. } => FaultKind::Skew,
        Fault::Stall { .. } => FaultKind::Stall,
        Fault::ReceiverRestart { .. } => FaultKind::ReceiverRestart,
        Fault::RefreshLost { .. } => FaultKind::RefreshLost,
        Fault::Placed { fault, .. } => kind_of(fault),
    }
}

/// The snake_case kind of a fault.
pub fn kind_name(f: &Fault) -> &'static str {
    kind_of(f).name()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 resume clients of 10 calls over 10 s, every generator on, one
    /// explicit restart.
    fn spec() -> FaultSpec {
        FaultSpec {
            drop_rate: 0.2,
            partitions: 3,
            restarts: 1,
            latency_spikes: 2,
            latency_spike_max_ms: 50,
            explicit: vec![Fault::Restart { at_ms: 5 }],
            ..FaultSpec::default()
        }
    }

    fn workload(spec: &FaultSpec) -> Workload<'_> {
        Workload {
            spec,
            groups: vec![Group {
                count: 20,
                calls: 10,
                chunks: 4,
                switches: false,
            }],
            duration_ms: 10_000,
            hosts: 4,
            latency_max_ms: 5,
        }
    }

    #[test]
    fn the_plan_is_a_function_of_the_seed() {
        let spec = spec();
        let w = workload(&spec);
        let a = FaultPlan::draw(&w, 1);
        assert_eq!(a, FaultPlan::draw(&w, 1));
        assert_ne!(a, FaultPlan::draw(&w, 2));
        let counts = a.counts();
        assert_eq!(counts["partition"], 3);
        assert_eq!(counts["restart"], 2, "one drawn, one explicit");
        assert_eq!(counts["latency"], 2);
        assert!(counts["drop"] > 10 && counts["drop"] < 80, "{counts:?}");
    }

    #[test]
    fn switches_are_drawn_once_per_client_unless_written() {
        let spec = FaultSpec {
            explicit: vec![Fault::Switch {
                client: 1,
                after_call: 2,
            }],
            ..FaultSpec::default()
        };
        let mut w = workload(&spec);
        w.groups = vec![Group {
            count: 3,
            calls: 4,
            chunks: 4,
            switches: true,
        }];
        let plan = FaultPlan::draw(&w, 7);
        assert_eq!(plan.counts()["switch"], 3, "{plan:?}");
        assert_eq!(plan.switch_for(1), Some(2), "the written one stands");
        for c in [0, 2] {
            assert!(plan.switch_for(c).is_some_and(|n| n < 3), "{plan:?}");
        }
    }
}

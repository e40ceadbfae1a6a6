//! The plan's timed faults as the world applies them: each a start and
//! an end edge (a rolling deploy, one drain per replica), scheduled in
//! time order with the fate of each planned fault, and what one edge does
//! to the simulation (a partition, a latency window, a restart, a replica's
//! crash or drain, the balancer's restart, the store's faults).

use super::act::{apply, Act, HostAct, Turn};
use super::{Front, Placed};
use crate::fault::{kind_of, Fate, Fault, FaultPlan, PlannedFault};
use crate::history::{History, WorldRecord};
use crate::scenario::Scenario;
use std::collections::{BTreeSet, VecDeque};

/// One edge of a timed fault: its start or its end.
struct Edge {
    at_ms: u64,
    start: bool,
    /// The fault's index in [`FaultPlan::timed`] (the `index` of its
    /// world records).
    index: u32,
    /// The planned fault.
    fault: Fault,
    /// What this edge does: the fault's act, or one step of it (a
    /// rolling deploy is a drain of each replica in turn).
    act: Act,
    /// The client host it acts on, for its record.
    host: Option<u32>,
    /// This start edge decides the planned fault's fate (a deploy's
    /// first step).
    decides: bool,
    /// The replica it acts on (an added replica's index is given in time
    /// order, after the deployment's own).
    replica: Option<u32>,
}

impl Edge {
    fn of(at_ms: u64, start: bool, index: u32, fault: &Fault, act: &Act) -> Edge {
        Edge {
            at_ms,
            start,
            index,
            fault: fault.clone(),
            act: act.clone(),
            host: fault.host(),
            decides: start,
            replica: match *fault {
                Fault::ReplicaCrash { replica, .. }
                | Fault::ReplicaDrain { replica, .. }
                | Fault::ReplicaRemove { replica, .. } => Some(replica),
                _ => None,
            },
        }
    }
}

/// The plan's timed faults scheduled as start and end edges in time
/// order, with the fate of each fault decided so far. A placed fault
/// joins when its boundary is reached ([`Schedule::place`]).
pub(super) struct Schedule {
    /// Edges not yet fired, in firing order.
    edges: VecDeque<Edge>,
    fates: Vec<PlannedFault>,
    /// The network's latency ceiling, restored when a latency window ends.
    base_latency_ms: u64,
    /// The hosts the faults act on.
    front: Front,
    /// End of the fault phase, ms.
    fault_ms: u64,
    /// Client hosts that run clients.
    populated: BTreeSet<u32>,
    /// (clients, client hosts, replicas), for the reasons it gives.
    sizes: (u32, u32, u32),
    /// The index the next added replica gets.
    added: u32,
}

impl Schedule {
    /// Schedules every timed fault that can apply: one that starts after
    /// the fault phase, or names a host without clients (turmoil has no
    /// link to a host never created), is not applied; a window is cut to
    /// end with the fault phase.
    pub(super) fn new(
        plan: &FaultPlan,
        scenario: &Scenario,
        clients: &[Placed],
        front: Front,
    ) -> Schedule {
        let mut s = Schedule {
            edges: VecDeque::new(),
            fates: Vec::new(),
            base_latency_ms: scenario.network.latency_ms[1],
            front,
            fault_ms: scenario.duration_ms,
            populated: clients.iter().filter(|c| c.runs).map(|c| c.host).collect(),
            sizes: (
                scenario.client_count(),
                scenario.network.client_hosts,
                scenario.deployment.replicas,
            ),
            added: scenario.deployment.replicas,
        };
        for (i, (at, f)) in plan.timed().into_iter().enumerate() {
            s.plan(i as u32, at, &f, f.clone());
        }
        s
    }

    /// Schedules placed fault `planned` (the plan's `index`-th timed
    /// fault onwards) to start now: its boundary was reached at `now_ms`.
    pub(super) fn place(&mut self, index: u32, now_ms: u64, planned: &Fault) {
        let Fault::Placed { fault, .. } = planned else {
            return;
        };
        self.plan(index, now_ms, fault, planned.clone());
    }

    /// Schedules `f` from `at` as the edges of planned fault `planned`
    /// (the same fault, or the placed fault it materializes).
    fn plan(&mut self, index: u32, at: u64, f: &Fault, planned: Fault) {
        let fault_ms = self.fault_ms;
        let mut edges = Vec::new();
        if let Fault::ReplicaAdd { .. } = f {
            // The k-th added replica, in time order, whether it joins or
            // not: the world made a dormant host for each.
            let mut e = Edge::of(at, true, index, f, &Act::Hosts(HostAct::ReplicaAdd));
            e.replica = Some(self.added);
            self.added += 1;
            if at < fault_ms {
                edges.push(e);
            }
        }
        if at >= fault_ms {
            self.fates.push(PlannedFault::not_applied(
                planned,
                format!("starts at {at} ms, not before the fault phase ends at {fault_ms} ms"),
            ));
            return;
        }
        if f.needs_shared_store() && self.front.store_lag.is_none() {
            let why =
                "the system under test keeps its own memory on each replica (no shared store)";
            self.fates
                .push(PlannedFault::not_applied(planned, why.to_string()));
            return;
        }
        let (clients, client_hosts, replicas) = self.sizes;
        match f {
            Fault::ReplicaAdd { .. } => {}
            f if f.host().is_some_and(|h| !self.populated.contains(&h)) => {
                let host = f.host().unwrap_or(0);
                let why = format!(
                    "client host {host} has no clients ({clients} clients over {client_hosts} hosts)"
                );
                self.fates.push(PlannedFault::not_applied(planned, why));
                return;
            }
            // Each replica in turn drains, until the fault phase ends.
            Fault::Deploy { grace_ms, .. } => {
                for r in 0..replicas {
                    let from = at.saturating_add(grace_ms.saturating_mul(u64::from(r)));
                    if from >= fault_ms {
                        break;
                    }
                    for (at_ms, start) in [(from, true), (from + grace_ms, false)] {
                        edges.push(Edge {
                            at_ms: at_ms.min(fault_ms),
                            start,
                            index,
                            fault: f.clone(),
                            act: Act::Hosts(HostAct::ReplicaDrain { replica: r }),
                            host: None,
                            decides: start && r == 0,
                            replica: Some(r),
                        });
                    }
                }
            }
            f => {
                // A drop or a switch is the clients' to apply.
                let Some(act) = Act::of(f) else {
                    let why = "the clients apply it, not the world".to_string();
                    self.fates.push(PlannedFault::not_applied(planned, why));
                    return;
                };
                let window = f.timing().map_or(0, |(_, len)| len);
                // A replica down for good (no length) has no end: it
                // stays down. Every window has a start and an end edge.
                if window > 0 {
                    let end = at.saturating_add(window).min(fault_ms);
                    edges.push(Edge::of(end, false, index, f, &act));
                }
                edges.push(Edge::of(at, true, index, f, &act));
            }
        }
        for mut e in edges {
            e.fault = planned.clone();
            self.edges.push_back(e);
        }
        self.edges
            .make_contiguous()
            .sort_by_key(|e| (e.at_ms, !e.start, e.index));
    }

    /// Applies every edge due by `now_ms`, recording each.
    pub(super) fn fire_due(&mut self, now_ms: u64, sim: &mut turmoil::Sim<'_>, history: &History) {
        while self.edges.front().is_some_and(|e| e.at_ms <= now_ms) {
            let Some(e) = self.edges.pop_front() else {
                break;
            };
            let replica = e.replica;
            if e.start {
                history.record(WorldRecord::FaultStarted {
                    index: e.index,
                    kind: kind_of(&e.fault),
                    host: e.host,
                    replica,
                });
            } else {
                history.record(WorldRecord::FaultEnded { index: e.index });
            }
            let edge = Turn {
                start: e.start,
                base_latency_ms: self.base_latency_ms,
                replica: e.replica,
                index: e.index,
            };
            apply(sim, &e.act, &edge, &self.front);
            if let (Act::Hosts(HostAct::ReplicaDrain { replica }), false) = (&e.act, e.start) {
                history.record(WorldRecord::ReplicaRestarted { replica: *replica });
            }
            if e.decides {
                self.fates.push(PlannedFault {
                    fault: e.fault,
                    fate: Fate::Applied,
                });
            }
        }
    }

    /// The fates of every timed fault, once the run ended at `end_ms`:
    /// one that had not started by then was not applied.
    pub(super) fn unfired(self, end_ms: u64, clients_finished: bool) -> Vec<PlannedFault> {
        let mut fates = self.fates;
        for e in self.edges.into_iter().filter(|e| e.decides) {
            let why = if clients_finished {
                "every client had finished"
            } else {
                "the heal phase ran out"
            };
            let reason = format!(
                "starts at {} ms; the run ended at {end_ms} ms ({why})",
                e.at_ms
            );
            fates.push(PlannedFault::not_applied(e.fault, reason));
        }
        fates
    }
}

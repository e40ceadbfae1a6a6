//! The plan's timed faults as the world applies them: each a start and
//! an end edge (a rolling deploy, one drain per replica), scheduled in
//! time order with the fate of each planned fault, and what one edge does
//! to the simulation (a partition, a latency window, a restart, a replica's
//! crash or drain, the balancer's restart, the store's faults).

use super::{client_host, replica_host, Front, Placed, BALANCER, SERVER, STORE};
use crate::fault::{kind_of, CrashMode, Direction, Fate, Fault, FaultPlan, PlannedFault, SkewOn};
use crate::history::{History, WorldRecord};
use crate::scenario::Scenario;
use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

/// One edge of a timed fault: its start or its end.
struct Edge {
    at_ms: u64,
    start: bool,
    /// The fault's index in [`FaultPlan::timed`] (the `index` of its
    /// world records).
    index: u32,
    /// The planned fault.
    fault: Fault,
    /// What this edge does: the fault itself, or one step of it (a
    /// rolling deploy is a drain of each replica in turn).
    act: Fault,
    /// This start edge decides the planned fault's fate (a deploy's
    /// first step).
    decides: bool,
    /// The replica it acts on (an added replica's index is given in time
    /// order, after the deployment's own).
    replica: Option<u32>,
}

impl Edge {
    fn of(at_ms: u64, start: bool, index: u32, fault: &Fault) -> Edge {
        Edge {
            at_ms,
            start,
            index,
            fault: fault.clone(),
            act: fault.clone(),
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
            let mut e = Edge::of(at, true, index, f);
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
                    let act = Fault::ReplicaDrain {
                        replica: r,
                        at_ms: from,
                        grace_ms: *grace_ms,
                    };
                    for (at_ms, start) in [(from, true), (from + grace_ms, false)] {
                        edges.push(Edge {
                            at_ms: at_ms.min(fault_ms),
                            start,
                            index,
                            fault: f.clone(),
                            act: act.clone(),
                            decides: start && r == 0,
                            replica: Some(r),
                        });
                    }
                }
            }
            // A replica down for good has no end: it stays down.
            Fault::ReplicaCrash { duration_ms: 0, .. } => {
                edges.push(Edge::of(at, true, index, f));
            }
            // Every window: a start and an end edge.
            f if f.timing().is_some_and(|(_, len)| len > 0) => {
                let len = f.timing().map_or(0, |(_, len)| len);
                let end = at.saturating_add(len).min(fault_ms);
                edges.push(Edge::of(end, false, index, f));
                edges.push(Edge::of(at, true, index, f));
            }
            _ => edges.push(Edge::of(at, true, index, f)),
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
                let host = e.act.host();
                history.record(WorldRecord::FaultStarted {
                    index: e.index,
                    kind: kind_of(&e.fault),
                    host,
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
            if let (Fault::ReplicaDrain { replica, .. }, false) = (&e.act, e.start) {
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

/// One edge of a timed fault (its start or its end), as [`apply`] acts
/// on it.
struct Turn {
    /// Its start (else its end).
    start: bool,
    /// The network's latency ceiling, which a latency fault's end restores.
    base_latency_ms: u64,
    /// The replica it acts on (a replica added or removed).
    replica: Option<u32>,
    /// The fault's index in the plan (a connector toxic's slot).
    index: u32,
}

/// Applies one edge of a timed fault: partitions and latency act on the
/// link between a client host and the front (the server, or the
/// balancer); a restart restarts every server host in the deployment.
fn apply(sim: &mut turmoil::Sim<'_>, f: &Fault, edge: &Turn, front: &Front) {
    let &Turn {
        start,
        base_latency_ms,
        replica,
        ..
    } = edge;
    let front_host = &*front.name;
    match *f {
        Fault::Oneway { .. }
        | Fault::Hold { .. }
        | Fault::Truncate { .. }
        | Fault::Slice { .. }
        | Fault::Bandwidth { .. }
        | Fault::SlowClose { .. }
        | Fault::Skew { .. }
        | Fault::Stall { .. } => apply_new(sim, f, edge, front),
        Fault::Partition { host, .. } => {
            if start {
                sim.partition(front_host, client_host(host));
            } else {
                sim.repair(front_host, client_host(host));
            }
        }
        Fault::Latency { host, max_ms, .. } => {
            let ms = if start { max_ms } else { base_latency_ms };
            sim.set_link_max_message_latency(
                front_host,
                client_host(host),
                Duration::from_millis(ms),
            );
        }
        Fault::Restart { .. } => match &front.control {
            Some(c) => {
                let members: Vec<u32> = c.borrow().members.iter().copied().collect();
                for r in members {
                    sim.bounce(replica_host(r));
                }
            }
            None => sim.bounce(SERVER),
        },
        Fault::ReplicaAdd { .. } | Fault::ReplicaRemove { .. } => {
            let (Some(r), Some(c)) = (replica, &front.control) else {
                return;
            };
            if matches!(f, Fault::ReplicaAdd { .. }) {
                sim.bounce(replica_host(r));
                c.borrow_mut().join(r);
            } else {
                c.borrow_mut().leave(r);
                sim.crash(replica_host(r));
            }
        }
        Fault::ReplicaCrash { replica, mode, .. } => {
            let host = replica_host(replica);
            match (mode, start) {
                (CrashMode::Kill, true) => sim.crash(host),
                // Frozen: nothing in or out, then the process stops (its
                // closes wait on the held link like everything else).
                (CrashMode::Hang, true) => {
                    sim.hold(front_host, host.as_str());
                    sim.crash(host);
                }
                (CrashMode::Kill, false) => sim.bounce(host),
                (CrashMode::Hang, false) => {
                    sim.bounce(host.as_str());
                    sim.release(front_host, host);
                }
            }
        }
        Fault::ReplicaDrain { replica, .. } => {
            if let Some(control) = &front.control {
                let mut m = control.borrow_mut();
                if start {
                    m.draining.insert(replica);
                } else {
                    m.draining.remove(&replica);
                }
            }
            // The grace is over: it exits, and starts afresh.
            if !start {
                sim.bounce(replica_host(replica));
            }
        }
        Fault::BalancerRestart { .. } => sim.bounce(BALANCER),
        Fault::StorePartition { .. } => {
            for r in 0..front.replica_hosts {
                if start {
                    sim.partition(STORE, replica_host(r));
                } else {
                    sim.repair(STORE, replica_host(r));
                }
            }
        }
        Fault::StoreLagWindow { lag_ms, .. } => {
            if let Some((lag, base)) = &front.store_lag {
                let ms = if start { lag_ms.max(*base) } else { *base };
                lag.set(Duration::from_millis(ms));
            }
        }
        Fault::StoreRestart { .. } => sim.bounce(STORE),
        Fault::Deploy { .. } => unreachable!("a deploy is applied as its drains"),
        Fault::Drop { .. } | Fault::Switch { .. } => {
            unreachable!("drops and switches are applied by the clients")
        }
        Fault::Placed { .. } => unreachable!("a placed fault is applied as what it places"),
    }
}

/// Applies one edge of the kinds chaos tools add (docs/faults.md): a
/// one-way cut, a hold, the connector's toxics, a clock step, a stall.
fn apply_new(sim: &mut turmoil::Sim<'_>, f: &Fault, edge: &Turn, front: &Front) {
    let &Turn { start, index, .. } = edge;
    let front_host = &*front.name;
    // Every server host: the server, or each replica in the deployment.
    let servers = || match &front.control {
        Some(c) => c
            .borrow()
            .members
            .iter()
            .map(|&r| replica_host(r))
            .collect(),
        None => vec![SERVER.to_string()],
    };
    match *f {
        Fault::Oneway {
            host, direction, ..
        } => {
            let client = client_host(host);
            let (from, to) = match direction {
                Direction::ToServer => (client.as_str(), front_host),
                Direction::ToClient => (front_host, client.as_str()),
            };
            if start {
                sim.partition_oneway(from, to);
            } else {
                sim.repair_oneway(from, to);
            }
        }
        Fault::Hold { host, .. } => {
            if start {
                sim.hold(front_host, client_host(host));
            } else {
                sim.release(front_host, client_host(host));
            }
        }
        Fault::Truncate { .. }
        | Fault::Slice { .. }
        | Fault::Bandwidth { .. }
        | Fault::SlowClose { .. } => {
            if let Some(t) = &front.toxics {
                t.set(index, f, start);
            }
        }
        Fault::Skew {
            offset_ms,
            on,
            host,
            ..
        } => {
            let hosts = match on {
                SkewOn::Server => servers(),
                SkewOn::Balancer => vec![BALANCER.to_string()],
                SkewOn::Client => vec![client_host(host)],
            };
            let by = Duration::from_millis(offset_ms.unsigned_abs());
            for h in hosts {
                sim.step_clock(h, by, offset_ms > 0);
            }
        }
        Fault::Stall { replica, .. } => {
            let hosts = match replica {
                Some(r) => vec![replica_host(r)],
                None => servers(),
            };
            for h in hosts {
                if start {
                    sim.pause(h);
                } else {
                    sim.resume(h);
                }
            }
        }
        _ => unreachable!("not one of the kinds chaos tools add"),
    }
}

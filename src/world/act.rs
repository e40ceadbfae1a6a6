//! What one edge of a timed fault does to the simulation. [`Act`] holds
//! only the kinds the world applies itself, each with the fields it acts
//! on: a drop and a switch are the clients' to apply, a rolling deploy is
//! applied as its drains and a placed fault as what it places, so none of
//! them has an act ([`Act::of`] says so, and the schedule gives them their
//! fate instead).

use super::toxic::Toxic;
use super::{client_host, replica_host, Front, BALANCER, SERVER, STORE};
use crate::fault::{CrashMode, Direction, Fault, SkewClock, SkewOn};
use std::time::Duration;

/// One world-applied effect, with what it needs to act.
#[derive(Clone, Debug)]
pub(super) enum Act {
    /// On the link between client host `host` and the front.
    Link { host: u32, act: LinkAct },
    /// On server-side hosts: the server, replicas, balancer, store.
    Hosts(HostAct),
}

/// What a fault does to one client host's link with the front.
#[derive(Clone, Copy, Debug)]
pub(super) enum LinkAct {
    /// Cut off.
    Partition,
    /// Its latency ceiling raised to `max_ms`.
    Latency { max_ms: u64 },
    /// One direction cut.
    Oneway { direction: Direction },
    /// Its messages held.
    Hold,
    /// A byte-level toxic on its connections.
    Toxic(Toxic),
}

/// What a fault does to server-side hosts.
#[derive(Clone, Copy, Debug)]
pub(super) enum HostAct {
    /// Every server host restarts.
    Restart,
    /// A replica joins (its index is the edge's).
    ReplicaAdd,
    /// A replica leaves (its index is the edge's).
    ReplicaRemove,
    /// A replica goes down, killed or hung.
    ReplicaCrash { replica: u32, mode: CrashMode },
    /// A replica drains, then restarts.
    ReplicaDrain { replica: u32 },
    /// The balancer restarts.
    BalancerRestart,
    /// The store is cut off from every replica.
    StorePartition,
    /// The store's reads lag `lag_ms`.
    StoreLag { lag_ms: u64 },
    /// The store restarts.
    StoreRestart,
    /// A clock step: the server's, the balancer's or client host `host`'s;
    /// its timers or only its wall clock.
    Skew {
        on: SkewOn,
        host: u32,
        offset_ms: i64,
        clock: SkewClock,
    },
    /// A server host stops with its connections up.
    Stall { replica: Option<u32> },
    /// A client's webhook subscription refreshes are lost on the way.
    RefreshLost { client: u32 },
    /// A client's webhook receiver restarts, down for a while or not.
    ReceiverRestart { client: u32, down: bool },
}

impl Act {
    /// What the world does for `f`; `None` for the kinds it does not
    /// apply itself (a drop, a switch, a deploy, a placed fault).
    pub(super) fn of(f: &Fault) -> Option<Act> {
        let link = |act| f.host().map(|host| Act::Link { host, act });
        if let Some(toxic) = Toxic::of(f) {
            return link(LinkAct::Toxic(toxic));
        }
        Some(Act::Hosts(match *f {
            Fault::Partition { .. } => return link(LinkAct::Partition),
            Fault::Latency { max_ms, .. } => return link(LinkAct::Latency { max_ms }),
            Fault::Oneway { direction, .. } => return link(LinkAct::Oneway { direction }),
            Fault::Hold { .. } => return link(LinkAct::Hold),
            Fault::Restart { .. } => HostAct::Restart,
            Fault::ReplicaAdd { .. } => HostAct::ReplicaAdd,
            Fault::ReplicaRemove { .. } => HostAct::ReplicaRemove,
            Fault::ReplicaCrash { replica, mode, .. } => HostAct::ReplicaCrash { replica, mode },
            Fault::ReplicaDrain { replica, .. } => HostAct::ReplicaDrain { replica },
            Fault::BalancerRestart { .. } => HostAct::BalancerRestart,
            Fault::StorePartition { .. } => HostAct::StorePartition,
            Fault::StoreLagWindow { lag_ms, .. } => HostAct::StoreLag { lag_ms },
            Fault::StoreRestart { .. } => HostAct::StoreRestart,
            Fault::Skew {
                offset_ms,
                on,
                host,
                clock,
                ..
            } => HostAct::Skew {
                on,
                host,
                offset_ms,
                clock,
            },
            Fault::Stall { replica, .. } => HostAct::Stall { replica },
            Fault::ReceiverRestart {
                client,
                duration_ms,
                ..
            } => HostAct::ReceiverRestart {
                client,
                down: duration_ms > 0,
            },
            Fault::RefreshLost { client, .. } => HostAct::RefreshLost { client },
            Fault::Truncate { .. }
            | Fault::Slice { .. }
            | Fault::Bandwidth { .. }
            | Fault::SlowClose { .. }
            | Fault::Drop { .. }
            | Fault::Switch { .. }
            | Fault::Deploy { .. }
            | Fault::Placed { .. } => return None,
        }))
    }
}

/// One edge of an act, as [`apply`] takes it.
pub(super) struct Turn {
    /// Its start (else its end).
    pub(super) start: bool,
    /// The network's latency ceiling, which a latency fault's end restores.
    pub(super) base_latency_ms: u64,
    /// The replica it acts on (a replica added or removed).
    pub(super) replica: Option<u32>,
    /// The fault's index in the plan (a connector toxic's slot).
    pub(super) index: u32,
}

/// Applies one edge of an act.
pub(super) fn apply(sim: &mut turmoil::Sim<'_>, act: &Act, edge: &Turn, front: &Front) {
    match *act {
        Act::Link { host, act } => apply_to_link(sim, host, act, edge, front),
        Act::Hosts(act) => apply_to_hosts(sim, act, edge, front),
    }
}

/// Applies one edge on the link between client host `host` and the front
/// (the server, or the balancer).
fn apply_to_link(sim: &mut turmoil::Sim<'_>, host: u32, act: LinkAct, edge: &Turn, front: &Front) {
    let &Turn {
        start,
        base_latency_ms,
        index,
        ..
    } = edge;
    let front_host = &*front.name;
    match act {
        LinkAct::Partition => {
            if start {
                sim.partition(front_host, client_host(host));
            } else {
                sim.repair(front_host, client_host(host));
            }
        }
        LinkAct::Latency { max_ms } => {
            let ms = if start { max_ms } else { base_latency_ms };
            sim.set_link_max_message_latency(
                front_host,
                client_host(host),
                Duration::from_millis(ms),
            );
        }
        LinkAct::Oneway { direction } => {
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
        LinkAct::Hold => {
            if start {
                sim.hold(front_host, client_host(host));
            } else {
                sim.release(front_host, client_host(host));
            }
        }
        LinkAct::Toxic(toxic) => {
            if let Some(t) = &front.toxics {
                t.set(host, index, toxic, start);
            }
        }
    }
}

/// Applies one edge on server-side hosts: a restart restarts every server
/// host in the deployment; a replica's arrival, departure, crash or
/// drain, the balancer's restart, the store's faults, a clock step, a
/// stall.
fn apply_to_hosts(sim: &mut turmoil::Sim<'_>, act: HostAct, edge: &Turn, front: &Front) {
    let &Turn { start, replica, .. } = edge;
    let front_host = &*front.name;
    match act {
        HostAct::Restart => {
            for h in server_hosts(front) {
                sim.bounce(h);
            }
        }
        HostAct::ReplicaAdd | HostAct::ReplicaRemove => {
            let (Some(r), Some(c)) = (replica, &front.control) else {
                return;
            };
            if matches!(act, HostAct::ReplicaAdd) {
                sim.bounce(replica_host(r));
                c.borrow_mut().join(r);
            } else {
                c.borrow_mut().leave(r);
                sim.crash(replica_host(r));
            }
        }
        HostAct::ReplicaCrash { replica, mode } => {
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
        HostAct::ReplicaDrain { replica } => {
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
        HostAct::BalancerRestart => sim.bounce(BALANCER),
        HostAct::StorePartition => {
            for r in 0..front.replica_hosts {
                if start {
                    sim.partition(STORE, replica_host(r));
                } else {
                    sim.repair(STORE, replica_host(r));
                }
            }
        }
        HostAct::StoreLag { lag_ms } => {
            if let Some((lag, base)) = &front.store_lag {
                let ms = if start { lag_ms.max(*base) } else { *base };
                lag.set(Duration::from_millis(ms));
            }
        }
        HostAct::StoreRestart => sim.bounce(STORE),
        HostAct::Skew {
            on,
            host,
            offset_ms,
            clock: SkewClock::Wall,
        } => match on {
            SkewOn::Server => front.walls.server.step(offset_ms),
            SkewOn::Client => front.walls.host(host).step(offset_ms),
            SkewOn::Balancer => {}
        },
        HostAct::Skew {
            on,
            host,
            offset_ms,
            clock: SkewClock::Timers,
        } => {
            let hosts = match on {
                SkewOn::Server => server_hosts(front),
                SkewOn::Balancer => vec![BALANCER.to_string()],
                SkewOn::Client => vec![client_host(host)],
            };
            let by = Duration::from_millis(offset_ms.unsigned_abs());
            for h in hosts {
                sim.step_clock(h, by, offset_ms > 0);
            }
        }
        HostAct::RefreshLost { client } => {
            if let Some(power) = front.receivers.get(&client) {
                power.refresh_lost.set(start);
            }
        }
        HostAct::ReceiverRestart { client, down } => {
            if let Some(power) = front.receivers.get(&client) {
                match start {
                    true => power.restart(down),
                    false => power.up(),
                }
            }
        }
        HostAct::Stall { replica } => {
            let hosts = match replica {
                Some(r) => vec![replica_host(r)],
                None => server_hosts(front),
            };
            for h in hosts {
                if start {
                    sim.pause(h);
                } else {
                    sim.resume(h);
                }
            }
        }
    }
}

/// Every server host: the server, or each replica in the deployment.
fn server_hosts(front: &Front) -> Vec<String> {
    match &front.control {
        Some(c) => c
            .borrow()
            .members
            .iter()
            .map(|&r| replica_host(r))
            .collect(),
        None => vec![SERVER.to_string()],
    }
}

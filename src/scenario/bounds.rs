//! The bounds a scenario is held to when it loads: what the simulator
//! relies on (no sum of times overflows, memory stays bounded, ports and
//! the accept backlog suffice) and what makes a workload runnable at all
//! (a call the server refuses every time is an operation lost without any
//! fault). Every error is one line that names the key and what to do.

use super::fault_values::{check_values, fault_times};
use super::format::Scenario;
use super::names::check_name;
use crate::fault::Fault;
use crate::settings::ServerConfig;
use serde::Serialize;

impl Scenario {
    /// Checks bounds that the simulator relies on, those the file alone
    /// can judge (`crate::check::validate` adds the ones that need the
    /// rest of the house). Every error is one line that names the key and
    /// what to do.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_workload()?;
        self.validate_times()?;
        self.validate_server()?;
        self.validate_faults()?;
        self.validate_network()?;
        self.deployment.validate()?;
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
        for (i, g) in self.clients.iter().enumerate() {
            if g.chunks == 0 || g.calls == 0 || g.max_attempts == 0 {
                return Err(format!(
                    "clients[{i}]: calls, chunks and max_attempts must be at least 1"
                ));
            }
            if g.read_timeout_ms == 0 || g.connect_timeout_ms == 0 || g.pool_idle_ms == 0 {
                return Err(format!(
                    "clients[{i}]: read_timeout_ms, connect_timeout_ms and pool_idle_ms must be \
                     at least 1"
                ));
            }
            if g.events.is_some() && self.era != crate::settings::Era::Y2026 {
                return Err(format!(
                    "clients[{i}]: events are read on the 2026-07-28 wire (the Events \
                     extension): set era = \"2026-07-28\" or drop events"
                ));
            }
            if g.events.is_some() && self.server.events_tick_ms == 0 {
                return Err(format!(
                    "clients[{i}]: events needs an event source: set server.events_tick_ms \
                     (e.g. 100) or drop events"
                ));
            }
            if g.events == Some(crate::scenario::EventsMode::Webhook) {
                check_receiver(i, g)?;
            } else if g.receiver != crate::scenario::ReceiverSpec::default() {
                return Err(format!(
                    "clients[{i}]: [clients.receiver] describes a webhook receiver: set \
                     events = \"webhook\" or drop it"
                ));
            }
            if g.backoff_ms > g.backoff_max_ms {
                return Err(format!(
                    "clients[{i}]: backoff_ms {} is above backoff_max_ms {}: the first backoff \
                     must not exceed the largest",
                    g.backoff_ms, g.backoff_max_ms
                ));
            }
        }
        // No cap on operations or events short of what no run can finish:
        // long soaks and big fleets are what a simulator is for.
        let planned = self.clients.iter().fold(0u64, |n, g| {
            n.saturating_add(u64::from(g.count) * u64::from(g.calls))
        });
        if planned > MAX_WORKLOAD {
            return Err(format!(
                "[[clients]] count x calls adds up to {planned} calls, above the limit of \
                 {MAX_WORKLOAD} (no run can finish them): use fewer clients or fewer calls"
            ));
        }
        for (i, g) in self.clients.iter().enumerate() {
            let thinking = u64::from(g.calls).saturating_mul(g.think_ms);
            if thinking > MAX_WORKLOAD {
                return Err(format!(
                    "clients[{i}]: calls = {} x think_ms = {} is {thinking} ms of thinking \
                     alone, above {MAX_WORKLOAD} ms of simulated time (no run can finish it): \
                     use fewer calls or a shorter think_ms",
                    g.calls, g.think_ms
                ));
            }
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
            ("server.server_idle_ms".into(), s.server_idle_ms),
            ("server.task_ttl_ms".into(), s.task_ttl_ms),
            ("server.task_poll_ms".into(), s.task_poll_ms),
            ("server.events_tick_ms".into(), s.events_tick_ms),
            ("server.events_poll_ms".into(), s.events_poll_ms),
            ("server.events_heartbeat_ms".into(), s.events_heartbeat_ms),
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
                ("pool_idle_ms", g.pool_idle_ms),
            ] {
                times.push((format!("clients[{i}].{key}"), v));
            }
        }
        for (i, f) in self.faults.explicit.iter().enumerate() {
            times.extend(fault_times(i, f));
        }
        let d = &self.deployment;
        for (key, v) in [
            ("affinity_ttl_ms", d.affinity_ttl_ms),
            ("forward_timeout_ms", d.forward_timeout_ms),
            ("store_lag_ms", d.store_lag_ms),
        ] {
            times.push((format!("deployment.{key}"), v));
        }
        for (key, v) in times {
            if v > MAX_MS {
                return Err(format!(
                    "{key} = {v} is above {MAX_MS} (one day of simulated time): use a shorter time"
                ));
            }
        }
        if self.network.tick_ms == 0 {
            return Err("network.tick_ms must be at least 1".into());
        }
        Ok(())
    }

    /// Server settings the workload must fit in: a call the server refuses
    /// every time is an operation lost without any fault (the limits
    /// that are the server's own, not settings, are checked above the
    /// loader, `crate::check`).
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
            let name = sdk.as_str();
            agrees("replay", s.replay, preset.replay_mode(), name)?;
            agrees(
                "prime_resume",
                s.prime_resume,
                preset.prime_resume_mode(),
                name,
            )?;
            let cancel = preset.cancel_mode();
            agrees("cancel_notifications", s.cancel_notifications, cancel, name)?;
            agrees("on_close", s.on_close, preset.close_mode(), name)?;
            agrees(
                "no_buffering",
                s.no_buffering,
                preset.buffering_header(),
                name,
            )?;
            sdk_speaks(sdk, crate::settings::Wire::of(self.era))?;
            let completed = preset.completed_resume_mode();
            agrees("completed_resume", s.completed_resume, completed, name)?;
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
        for (i, g) in self.clients.iter().enumerate() {
            if g.chunks > s.max_chunks {
                return Err(format!(
                    "clients[{i}].chunks = {} is above server.max_chunks = {}: the server would \
                     refuse every call; raise server.max_chunks or lower chunks",
                    g.chunks, s.max_chunks
                ));
            }
        }
        Ok(())
    }

    fn validate_faults(&self) -> Result<(), String> {
        let f = &self.faults;
        if !(0.0..=1.0).contains(&f.drop_rate) {
            return Err("faults.drop_rate must be within 0..=1".into());
        }
        if let Some(sw) = &f.swarm {
            sw.validate()?;
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
        let added = f
            .explicit
            .iter()
            .filter(|x| matches!(x, Fault::ReplicaAdd { .. }))
            .count() as u64;
        let most = u64::from(super::MAX_REPLICAS);
        if u64::from(self.deployment.replicas) + added > most {
            return Err(format!(
                "deployment.replicas + replica_add faults come to {}, above the limit of {most}: \
                 add fewer",
                u64::from(self.deployment.replicas) + added
            ));
        }
        if let Some(most) = f.swarm_most() {
            let total = most.saturating_add(f.explicit.len() as u64);
            if total > MAX_TIMED_FAULTS {
                return Err(format!(
                    "faults.swarm: the partitions, restarts and latency_spikes ranges may draw \
                     up to {most} faults (each range's max, 2 x the [faults] count when not \
                     written), {total} with the explicit faults, above the limit of \
                     {MAX_TIMED_FAULTS}: lower the ranges' maxima"
                ));
            }
        }
        let clients = self.total_clients();
        for (i, fault) in f.explicit.iter().enumerate() {
            self.validate_explicit(i, fault, clients, added)?;
        }
        self.validate_removals(added)
    }

    /// `replica_remove` faults (scale-down): each replica removed at most
    /// once, and at least one left (`added`: the replicas the plan adds).
    fn validate_removals(&self, added: u64) -> Result<(), String> {
        let mut removed: std::collections::BTreeMap<u32, usize> = Default::default();
        for (i, fault) in self.faults.explicit.iter().enumerate() {
            if let Fault::ReplicaRemove { replica, .. } = fault.acting() {
                if let Some(j) = removed.insert(*replica, i) {
                    return Err(format!(
                        "faults.explicit[{i}]: replica_remove removes replica {replica} a second \
                         time (faults.explicit[{j}] removed it): remove each replica once"
                    ));
                }
            }
        }
        let replicas = u64::from(self.deployment.replicas) + added;
        if !removed.is_empty() && removed.len() as u64 >= replicas {
            return Err(format!(
                "faults.explicit: the replica_remove faults remove all {replicas} replicas \
                 (deployment.replicas and the replica_add faults), and nothing would serve the \
                 clients: keep at least one"
            ));
        }
        Ok(())
    }

    /// One `[[faults.explicit]]` fault against the workload, the hosts
    /// and the deployment (`added`: the replicas the plan adds).
    fn validate_explicit(
        &self,
        i: usize,
        fault: &Fault,
        clients: u64,
        added: u64,
    ) -> Result<(), String> {
        let placed = match fault {
            Fault::Placed { on, .. } => Some(*on),
            _ => None,
        };
        if let Some(on) = placed {
            self.check_boundary(i, on)?;
        }
        let fault = fault.acting();
        check_values(i, fault)?;
        match fault {
            Fault::Placed { .. } => {
                return Err(format!(
                    "faults.explicit[{i}]: a placed fault places one fault"
                ))
            }
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
                if *after_event == 0 && placed.is_none() {
                    return Err(format!(
                        "faults.explicit[{i}]: drop after_event is 1-based: use 1 or more"
                    ));
                }
            }
            Fault::Partition { .. }
            | Fault::Latency { .. }
            | Fault::Oneway { .. }
            | Fault::Hold { .. }
            | Fault::Truncate { .. }
            | Fault::Slice { .. }
            | Fault::Bandwidth { .. }
            | Fault::SlowClose { .. }
            | Fault::Skew {
                on: crate::fault::SkewOn::Client,
                ..
            } => {
                let host = fault.host().unwrap_or(0);
                if host >= self.network.client_hosts {
                    return Err(format!(
                        "faults.explicit[{i}]: names client host {host}, but there are {} \
                         (network.client_hosts)",
                        self.network.client_hosts
                    ));
                }
            }
            Fault::Restart { .. } => {}
            _ if fault.needs_deployment() && self.deployment.is_single() => {
                return Err(format!(
                    "faults.explicit[{i}]: {} needs a deployment: add [deployment] with \
                     replicas and a balancer (a restart is the one-server fault)",
                    crate::fault::kind_name(fault)
                ));
            }
            _ if fault.needs_shared_store()
                && self.deployment.store != crate::scenario::StoreKind::Shared =>
            {
                return Err(format!(
                    "faults.explicit[{i}]: {} acts on the shared store: set \
                     deployment.store = \"shared\"",
                    crate::fault::kind_name(fault)
                ));
            }
            Fault::Deploy { .. }
            | Fault::BalancerRestart { .. }
            | Fault::ReplicaAdd { .. }
            | Fault::StorePartition { .. }
            | Fault::StoreLagWindow { .. }
            | Fault::StoreRestart { .. }
            | Fault::Skew { .. }
            | Fault::Stall { replica: None, .. } => {}
            Fault::ReplicaCrash { replica, .. }
            | Fault::Stall {
                replica: Some(replica),
                ..
            }
            | Fault::ReplicaDrain { replica, .. }
            | Fault::ReplicaRemove { replica, .. } => {
                if u64::from(*replica) >= u64::from(self.deployment.replicas) + added {
                    return Err(format!(
                        "faults.explicit[{i}]: names replica {replica}, but there are {} \
                         (deployment.replicas and the replica_add faults, 0-based)",
                        u64::from(self.deployment.replicas) + added
                    ));
                }
            }
            Fault::ReceiverRestart { client, .. } | Fault::RefreshLost { client, .. } => {
                let mut first = 0u64;
                let group = self.clients.iter().find(|g| {
                    first = first.saturating_add(u64::from(g.count));
                    u64::from(*client) < first
                });
                let webhook = group.is_some_and(|g| g.events == Some(super::EventsMode::Webhook));
                if !webhook {
                    return Err(format!(
                        "faults.explicit[{i}]: {} names client {client}, which has \
                         no webhook receiver: name a client of a group with events = \"webhook\" \
                         (0-based, in file order)",
                        crate::fault::kind_name(fault)
                    ));
                }
            }
            Fault::Switch { client, .. } => {
                if u64::from(*client) >= clients {
                    return Err(format!(
                        "faults.explicit[{i}]: switch names client {client}, but there are \
                         {clients} (0-based, in file order)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// A placed fault's boundary names a client and one of its calls.
    fn check_boundary(&self, i: usize, on: crate::fault::Boundary) -> Result<(), String> {
        let Some(g) = self.group_of(on.client) else {
            return Err(format!(
                "faults.explicit[{i}]: names client {}, but there are {} (0-based, in file order)",
                on.client,
                self.total_clients()
            ));
        };
        if on.call >= g.calls {
            return Err(format!(
                "faults.explicit[{i}]: names call {} of client {}, which makes {} calls (0-based)",
                on.call, on.client, g.calls
            ));
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

    /// No metric's min is above its max (whether the arms and metrics
    /// exist is checked above the loader, `crate::check`).
    fn validate_expectations(&self) -> Result<(), String> {
        for (server, e) in self.expect.all() {
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
    if let Some(sdk) = s.sdk {
        sdk_speaks(sdk, s.wire)?;
    }
    if s.store_capacity == 0 {
        return Err(
            "server.store_capacity must be at least 1 (a session stores the events it sends)"
                .into(),
        );
    }
    if s.server_idle_ms == 0 {
        return Err(
            "server.server_idle_ms must be at least 1 (at 0 the server would close every \
             connection before its first request): use e.g. 5000, the default"
                .into(),
        );
    }
    if s.task_ttl_ms == 0 || s.task_poll_ms == 0 {
        return Err(
            "server.task_ttl_ms and server.task_poll_ms must be at least 1 (a task kept for 0 ms \
             is gone before its client can poll it, and the wire asks for positive values): use \
             e.g. 300000 and 100, the defaults"
                .into(),
        );
    }
    check_events(s)?;
    if s.task_poll_ms > s.task_ttl_ms {
        return Err(format!(
            "server.task_poll_ms = {} is above server.task_ttl_ms = {} (a task would be gone \
             before its client's first poll): lower task_poll_ms or raise task_ttl_ms",
            s.task_poll_ms, s.task_ttl_ms
        ));
    }
    if s.poll_retry_ms == 0 {
        return Err(
            "server.poll_retry_ms must be at least 1 (a polling close's `retry: 0` asks the \
             client to resume at once, every time): use e.g. 1000, the default"
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

/// Most clients in one scenario.
pub const MAX_CLIENTS: u64 = 20_000;
/// Most timed faults (generated and explicit) in one scenario.
pub const MAX_TIMED_FAULTS: u64 = 10_000;
/// Most calls a scenario plans (count x calls over its client groups), and
/// the most simulated ms one group's `calls x think_ms` may take: no run
/// finishes more.
pub const MAX_WORKLOAD: u64 = 1_000_000_000;
/// Longest time any `*_ms` setting may name: one day.
pub const MAX_MS: u64 = 86_400_000;
/// A unit enum's name as the scenario spells it.
/// A setting given beside `sdk` that contradicts what its preset sets:
/// refused in one line that names both.
fn agrees<T: Serialize + PartialEq>(
    key: &str,
    set: Option<T>,
    preset: T,
    sdk: &str,
) -> Result<(), String> {
    match set {
        Some(v) if v != preset => Err(format!(
            "server.{key} = {} contradicts server.sdk = {sdk:?} (which sets {key} = {}): drop one \
             of them",
            shown(&v),
            shown(&preset)
        )),
        _ => Ok(()),
    }
}

/// A webhook client's receiver and subscription settings.
fn check_receiver(i: usize, g: &crate::scenario::ClientGroup) -> Result<(), String> {
    let r = &g.receiver;
    use crate::settings::MIN_EVENTS_TTL_MS as MIN_TTL;
    if r.ttl_ms < MIN_TTL {
        return Err(format!(
            "clients[{i}]: receiver.ttl_ms = {} is below {MIN_TTL}: ask for a TTL a refresh \
             can beat, e.g. 10000, the default",
            r.ttl_ms
        ));
    }
    if r.refresh_ms == 0 || r.refresh_ms >= r.ttl_ms {
        return Err(format!(
            "clients[{i}]: receiver.refresh_ms = {} must be in 1..{} (below receiver.ttl_ms, \
             or every subscription lapses before its refresh)",
            r.refresh_ms, r.ttl_ms
        ));
    }
    if !(0.0..=1.0).contains(&r.busy_rate) {
        return Err(format!(
            "clients[{i}]: receiver.busy_rate = {} is outside 0..=1 (the share of deliveries \
             answered 503)",
            r.busy_rate
        ));
    }
    Ok(())
}

/// The event source's settings (the Events extension), when it runs.
fn check_events(s: &ServerConfig) -> Result<(), String> {
    use crate::settings::MAX_EVENTS_RETENTION as KEPT;
    if s.events_tick_ms == 0 {
        return Ok(());
    }
    if s.events_retention == 0 || s.events_retention > KEPT {
        return Err(format!(
            "server.events_retention = {} is outside 1..={KEPT} (the newest occurrences a \
             server serves from; at 0 every cursor is behind it): use e.g. 64, the default",
            s.events_retention
        ));
    }
    if s.events_poll_ms == 0 || s.events_heartbeat_ms == 0 {
        return Err(
            "server.events_poll_ms and server.events_heartbeat_ms must be at least 1 (a client \
             told to poll again in 0 ms polls without pause): use e.g. 1000, the defaults"
                .into(),
        );
    }
    if s.events_attempts == 0 {
        return Err(
            "server.events_attempts = 0 would send no webhook delivery at all: use at least 1 \
             (1: never retry), e.g. 4, the default"
                .into(),
        );
    }
    if s.events_retry_ms == 0 || s.events_webhook_timeout_ms == 0 || s.events_subscriptions == 0 {
        return Err(
            "server.events_retry_ms, events_webhook_timeout_ms and events_subscriptions must be \
             at least 1: use the defaults (1000, 2000, 16)"
                .into(),
        );
    }
    use crate::settings::MIN_EVENTS_TTL_MS as MIN_TTL;
    if s.events_ttl_ms < MIN_TTL {
        return Err(format!(
            "server.events_ttl_ms = {} is below {MIN_TTL} (a subscription granted less \
             lapses before a client can refresh it): use e.g. 30000, the default",
            s.events_ttl_ms
        ));
    }
    Ok(())
}

/// The `go` preset is go-sdk's default stateful server, which speaks the
/// 2025-11-25 wire alone: it refuses a 2026-07-28 request with -32022.
fn sdk_speaks(sdk: crate::settings::Sdk, wire: crate::settings::Wire) -> Result<(), String> {
    use crate::settings::{Sdk, Wire};
    match (sdk, wire) {
        (Sdk::Go, Wire::Y2026 | Wire::Both) => Err(
            "server.sdk = \"go\" is go-sdk's default stateful server, which refuses the \
             2026-07-28 wire (-32022): run it on the 2025-11-25 wire, or drop server.sdk"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// A setting's value as a scenario file writes it.
fn shown<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
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
mod tests;

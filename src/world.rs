//! The world: the only module that names turmoil. One `server` host and a
//! few client hosts, each running many virtual clients as tasks; a driver
//! that steps the simulation, applies the fault plan's timed faults, then
//! heals and lets the run finish. The side-effect ledger lives here,
//! outside the server host, so it survives restarts.

use crate::client::{self, ClientSpec, Connector};
use crate::fault::{kind_name, FaultPlan};
use crate::history::{History, WorldRecord};
use crate::ledger::Ledger;
use crate::scenario::{Fault, Scenario};
use crate::seed;
use crate::server::Listener;
use crate::sut::{Host, SystemUnderTest};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

const SERVER: &str = "server";
const PORT: u16 = 80;

/// The server host's listener, bound at its first accept: binding never
/// waits, so the system under test is handed its listener when the
/// incarnation starts and can set itself up (a built-in server records its
/// start) before anything is polled.
struct TurmoilListener(Option<turmoil::net::TcpListener>);

impl Listener for TurmoilListener {
    type Io = turmoil::net::TcpStream;
    async fn accept(&mut self) -> io::Result<Self::Io> {
        let listener = match &mut self.0 {
            Some(l) => l,
            None => self
                .0
                .insert(turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?),
        };
        listener.accept().await.map(|(s, _)| s)
    }
}

#[derive(Clone)]
struct TurmoilConnector;

impl Connector for TurmoilConnector {
    type Io = turmoil::net::TcpStream;
    async fn connect(&self) -> io::Result<Self::Io> {
        turmoil::net::TcpStream::connect((SERVER, PORT)).await
    }
}

fn client_host(h: u32) -> String {
    format!("client{h}")
}

/// What one run produced.
pub struct RunOutput {
    /// Every record of the run.
    pub history: History,
    /// The plan the run followed.
    pub plan: FaultPlan,
    /// Timed faults the world applied, by kind (drops are counted by the
    /// clients' `dropped` records).
    pub applied_timed: BTreeMap<String, u64>,
    /// Timed faults the world did not apply, each with why, sorted.
    pub not_applied_timed: Vec<(Fault, String)>,
    /// Simulated time at the end, ms.
    pub sim_ms: u64,
    /// Whether every client finished before the heal phase ran out.
    pub clients_finished: bool,
    /// Clients not run: legacy-transport clients of a system without the
    /// legacy transport (global indices, ascending).
    pub not_applicable: Vec<u32>,
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
#[error("simulation failed: {0}")]
pub struct WorldError(pub String);

/// The client specs of a scenario: global index, group, host, start delay.
pub fn client_specs(
    scenario: &Scenario,
    root_seed: u64,
    plan: &FaultPlan,
) -> Vec<(u32, ClientSpec)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed::child(root_seed, "client-start"));
    let mut out = Vec::new();
    let mut index = 0u32;
    for g in &scenario.clients {
        for _ in 0..g.count {
            let start_delay_ms = if g.start_jitter_ms > 0 {
                rng.random_range(0..=g.start_jitter_ms)
            } else {
                0
            };
            let host = index % scenario.network.client_hosts;
            out.push((
                host,
                ClientSpec {
                    index,
                    group: g.clone(),
                    delivery: scenario.server.delivery,
                    drops: plan.drops_for(index),
                    switch_after: plan.switch_for(index),
                    start_delay_ms,
                },
            ));
            index += 1;
        }
    }
    out
}

/// Runs `scenario` under `root_seed` against `sut`.
pub fn run<S: SystemUnderTest>(
    scenario: &Scenario,
    root_seed: u64,
    sut: &S,
) -> Result<RunOutput, WorldError> {
    let plan = FaultPlan::draw(scenario, root_seed);
    let net = &scenario.network;
    let fault_ms = scenario.duration_ms;
    let end_ms = fault_ms + scenario.heal.duration_ms;
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed::child(root_seed, "turmoil"))
        .epoch(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
        .simulation_duration(Duration::from_millis(end_ms + 60_000))
        .tick_duration(Duration::from_millis(net.tick_ms))
        .min_message_latency(Duration::from_millis(net.latency_ms[0]))
        .max_message_latency(Duration::from_millis(net.latency_ms[1]))
        .tcp_capacity(net.tcp_capacity)
        .ephemeral_ports(crate::scenario::EPHEMERAL_PORTS)
        .build();

    let driver_clock = Rc::new(Cell::new(Duration::ZERO));
    let clock_cell = driver_clock.clone();
    let history = History::new(Rc::new(move || {
        turmoil::sim_elapsed().unwrap_or_else(|| clock_cell.get())
    }));
    let ledger = Ledger::new(history.clone());

    let incarnation = Rc::new(Cell::new(0u32));
    {
        let (history, ledger) = (history.clone(), ledger.clone());
        sim.host(SERVER, move || {
            let n = incarnation.get();
            incarnation.set(n + 1);
            let serving = sut.serve(Host {
                listener: TurmoilListener(None),
                seed: seed::child(root_seed, &format!("server-sessions/{n}")),
                incarnation: n,
                ledger: ledger.clone(),
                history: history.clone(),
            });
            async move {
                serving.await?;
                Ok(())
            }
        });
    }
    let mut by_host: BTreeMap<u32, Vec<ClientSpec>> = BTreeMap::new();
    let mut not_applicable = Vec::new();
    for (host, spec) in client_specs(scenario, root_seed, &plan) {
        if spec.group.behaviour.is_legacy() && !sut.legacy_transport() {
            not_applicable.push(spec.index);
            continue;
        }
        by_host.entry(host).or_default().push(spec);
    }
    let populated: std::collections::BTreeSet<u32> = by_host.keys().copied().collect();
    for (host, specs) in by_host {
        let history = history.clone();
        sim.client(client_host(host), async move {
            let tasks: Vec<_> = specs
                .into_iter()
                .map(|spec| {
                    tokio::task::spawn_local(client::virtual_client::run(
                        spec,
                        TurmoilConnector,
                        history.clone(),
                    ))
                })
                .collect();
            for t in tasks {
                t.await?;
            }
            Ok(())
        });
    }

    // Timed faults as start/end events, in time order.
    let mut events: Vec<(u64, bool, u32, Fault)> = Vec::new();
    let mut not_applied_timed = Vec::new();
    for (i, (at, f)) in plan.timed().into_iter().enumerate() {
        let i = i as u32;
        if at >= fault_ms {
            not_applied_timed.push((
                f,
                format!("starts at {at} ms, not before the fault phase ends at {fault_ms} ms"),
            ));
            continue;
        }
        match &f {
            Fault::Partition { host, .. } | Fault::Latency { host, .. }
                if !populated.contains(host) =>
            {
                // turmoil has no link to a host that was never created.
                not_applied_timed.push((
                    f.clone(),
                    format!(
                        "client host {host} has no clients ({} clients over {} hosts)",
                        scenario.client_count(),
                        net.client_hosts
                    ),
                ));
                continue;
            }
            Fault::Partition { duration_ms, .. } | Fault::Latency { duration_ms, .. } => {
                events.push((
                    at.saturating_add(*duration_ms).min(fault_ms),
                    false,
                    i,
                    f.clone(),
                ));
            }
            _ => {}
        }
        events.push((at, true, i, f));
    }
    events.sort_by_key(|(t, start, i, _)| (*t, !*start, *i));
    let mut events = events.into_iter().peekable();
    let mut applied_timed = BTreeMap::new();
    let mut healed = false;
    let clients_finished = loop {
        let now = sim.elapsed();
        driver_clock.set(now);
        let now_ms = now.as_millis() as u64;
        while let Some((_, start, i, f)) = events.next_if(|(t, ..)| *t <= now_ms) {
            if start {
                *applied_timed.entry(kind_name(&f).to_string()).or_insert(0) += 1;
                let host = match f {
                    Fault::Partition { host, .. } | Fault::Latency { host, .. } => Some(host),
                    _ => None,
                };
                history.record(WorldRecord::FaultStarted {
                    index: i,
                    kind: kind_name(&f),
                    host,
                });
            } else {
                history.record(WorldRecord::FaultEnded { index: i });
            }
            apply(&mut sim, &f, start, net.latency_ms[1]);
        }
        if !healed && now_ms >= fault_ms {
            healed = true;
            // Faults off: repair every link (events past the fault phase
            // were cut to end here and have fired above).
            history.record(WorldRecord::HealStarted);
        }
        match sim.step() {
            Ok(true) => break true,
            Ok(false) => {}
            Err(e) => return Err(WorldError(e.to_string())),
        }
        // Its caller's --timeout passed: the run ends here, its report unwritten.
        if crate::stop::requested() {
            return Err(WorldError(
                "stopped: the run took longer than --timeout".into(),
            ));
        }
        if sim.elapsed().as_millis() as u64 >= end_ms {
            break false;
        }
    };
    driver_clock.set(sim.elapsed());
    let end = sim.elapsed().as_millis() as u64;
    for (at, start, _, f) in events {
        if start {
            let why = if clients_finished {
                "every client had finished"
            } else {
                "the heal phase ran out"
            };
            not_applied_timed.push((
                f,
                format!("starts at {at} ms; the run ended at {end} ms ({why})"),
            ));
        }
    }
    not_applied_timed.sort();
    Ok(RunOutput {
        history,
        plan,
        applied_timed,
        not_applied_timed,
        sim_ms: sim.elapsed().as_millis() as u64,
        clients_finished,
        not_applicable,
    })
}

fn apply(sim: &mut turmoil::Sim<'_>, f: &Fault, start: bool, base_latency_ms: u64) {
    match *f {
        Fault::Partition { host, .. } => {
            if start {
                sim.partition(SERVER, client_host(host));
            } else {
                sim.repair(SERVER, client_host(host));
            }
        }
        Fault::Latency { host, max_ms, .. } => {
            let ms = if start { max_ms } else { base_latency_ms };
            sim.set_link_max_message_latency(SERVER, client_host(host), Duration::from_millis(ms));
        }
        Fault::Restart { .. } => sim.bounce(SERVER),
        Fault::Drop { .. } | Fault::Switch { .. } => {
            unreachable!("drops and switches are applied by the clients")
        }
    }
}

//! The world: the only module that names turmoil. One `server` host (or,
//! in a deployment, `replica0..N` behind a `balancer` host) and a few
//! client hosts, each running many virtual clients as tasks; a driver
//! that steps the simulation, applies the fault plan's timed faults, then
//! heals and lets the run finish. The side-effect ledger lives here,
//! outside the server host, so it survives restarts.
//!
//! A run goes through named phases ([`run`]): build the simulation, host
//! the server, host the clients (the table of clients and hosts), schedule
//! the plan's timed faults, tick them through the fault phase, heal, and
//! account for every planned fault (applied, or not with why).

use crate::base::clock::WallClock;
use crate::base::seed;
use crate::client::{self, ClientSpec, Connector};
use crate::fault::{Fault, FaultPlan, PlannedFault};
use crate::history::{History, Recording, SharedStoreFacts, WorldRecord};
use crate::hosts::balancer::{Balancer, Control, Membership};
use crate::hosts::sut::{Host, Replica, SystemUnderTest};
use crate::ledger::Ledger;
use crate::scenario::{BalancerKind, DeploymentSpec, Intermediary, Scenario, StoreKind};
use crate::server::{Listener, Mints, StoreLink};
use crate::store::{StoreData, StoreIo, StoreState};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

mod act;
mod fates;
mod readers;
mod schedule;
mod toxic;
mod triggers;

use fates::{client_fates, Fates};
use readers::{egress, events_readers, webhook_readers, ReceiverListener, RECEIVER_PORT};
use schedule::Schedule;
use triggers::Triggers;

const SERVER: &str = "server";
const BALANCER: &str = "balancer";
const STORE: &str = "store";

/// How long a replica waits for the shared store before answering 503.
const STORE_TIMEOUT: Duration = Duration::from_millis(2_000);

/// How long a key a replica began stays its own unless the replica
/// renews it (every third of it, while it lives).
const KEY_LEASE: Duration = Duration::from_millis(3_000);
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

/// Connects to one host of the simulation on the server port.
#[derive(Clone)]
struct TurmoilConnector(Rc<str>);

impl Connector for TurmoilConnector {
    type Io = turmoil::net::TcpStream;
    async fn connect(&self) -> io::Result<Self::Io> {
        turmoil::net::TcpStream::connect((&*self.0, PORT)).await
    }
}

fn client_host(h: u32) -> String {
    format!("client{h}")
}

fn replica_host(r: u32) -> String {
    format!("replica{r}")
}

/// The server side of the world as the clients and the faults see it:
/// the one server host, or the replicas behind their balancer.
#[derive(Clone, Debug)]
struct Front {
    /// The host the clients connect to (and partitions cut them from).
    name: Rc<str>,
    /// The orchestrator's handle on the balancer (drains).
    control: Option<Control>,
    /// Replica hosts, added ones included (none: the one server).
    replica_hosts: u32,
    /// The shared store's lag now, and its `store_lag_ms` (a deployment
    /// on a shared store).
    store_lag: Option<(Rc<Cell<Duration>>, u64)>,
    /// The client hosts' toxics, when the plan has any.
    toxics: Option<Rc<toxic::Toxics>>,
    /// The webhook receivers the plan restarts, by client.
    receivers: readers::Powers,
    /// The wall clocks a wall-clock skew steps.
    walls: readers::Walls,
}

impl Front {
    fn of(scenario: &Scenario, plan: &FaultPlan, shared_store: bool) -> Front {
        let d = &scenario.deployment;
        let toxic = |f: &Fault| toxic::Toxic::of(f.acting()).is_some();
        let toxics = plan.faults.iter().any(toxic).then(Rc::default);
        let receivers = readers::powers(plan);
        let walls = readers::Walls::of(scenario.network.client_hosts);
        if d.is_single() {
            // An intermediary is a proxy host in front of the one server.
            let proxied = !scenario.intermediary.is_off();
            Front {
                name: if proxied { BALANCER } else { SERVER }.into(),
                control: None,
                replica_hosts: 0,
                store_lag: None,
                toxics,
                receivers,
                walls,
            }
        } else {
            Front {
                toxics,
                receivers,
                walls,
                name: BALANCER.into(),
                control: Some(Rc::new(RefCell::new(Membership::of(d.replicas)))),
                replica_hosts: d.replicas + plan.replicas_added(),
                store_lag: (shared_store && d.store == StoreKind::Shared).then(|| {
                    let lag = Duration::from_millis(d.store_lag_ms);
                    (Rc::new(Cell::new(lag)), d.store_lag_ms)
                }),
            }
        }
    }
}

/// What one run produced.
pub struct RunOutput {
    /// Every record of the run.
    pub history: History,
    /// The plan the run followed.
    pub plan: FaultPlan,
    /// Every planned fault and its fate: the timed faults in the order the
    /// world scheduled them ([`FaultPlan::timed`]), then the drops and
    /// switches in plan order.
    pub faults: Vec<PlannedFault>,
    /// Simulated time at the end, ms.
    pub sim_ms: u64,
    /// Whether every client finished before the heal phase ran out.
    pub clients_finished: bool,
    /// Every client of the scenario as the world placed it, by global
    /// index.
    pub clients: Vec<Placed>,
    /// Requests the shared store host answered over the run, across its
    /// incarnations (0 without one): a deployment's cost, kept out of the
    /// history so traces do not depend on it.
    pub store_round_trips: u64,
    /// Every protocol boundary the run reached, the first time each, in
    /// order (gathered only when asked, [`run_watching`], or when the
    /// plan places a fault at one).
    pub reached: Vec<crate::fault::Boundary>,
}

/// One client as the world placed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Global client index (file order).
    pub index: u32,
    /// Its group in `[[clients]]` (file order).
    pub group: usize,
    /// The client host it runs on.
    pub host: u32,
    /// Whether it runs: a legacy-transport client of a system without
    /// that transport does not (it owes no operations).
    pub runs: bool,
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
#[error("simulation failed: {0}")]
pub struct WorldError(pub String);

/// The client specs of a scenario: host, then spec (global index, group,
/// start delay, planned drops and switch), in index order.
fn client_specs(scenario: &Scenario, root_seed: u64, plan: &FaultPlan) -> Vec<(u32, ClientSpec)> {
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
                    // The 2026-07-28 wire answers on the POST's own stream.
                    delivery: match scenario.era {
                        crate::settings::Era::Y2025 => scenario.server.delivery,
                        crate::settings::Era::Y2026 => crate::history::Delivery::PostStream,
                    },
                    drops: plan.drops_for(index),
                    placed_drops: plan.placed_drops_for(index),
                    resets: plan.resets_for(index),
                    switch_after: plan.switch_for(index),
                    start_delay_ms,
                    era: scenario.era,
                },
            ));
            index += 1;
        }
    }
    out
}

/// Runs `scenario` under `root_seed` against `sut`, phase by phase,
/// keeping every record.
pub fn run<S: SystemUnderTest>(
    scenario: &Scenario,
    root_seed: u64,
    sut: &S,
) -> Result<RunOutput, WorldError> {
    run_recorded(scenario, root_seed, sut, Recording::default())
}

/// [`run`], its history recording as `rec` says.
pub fn run_recorded<S: SystemUnderTest>(
    scenario: &Scenario,
    root_seed: u64,
    sut: &S,
    rec: Recording,
) -> Result<RunOutput, WorldError> {
    run_watching(scenario, root_seed, sut, rec, false)
}

/// [`run_recorded`], gathering every protocol boundary the run reached
/// ([`RunOutput::reached`]) when `watch`.
pub fn run_watching<S: SystemUnderTest>(
    scenario: &Scenario,
    root_seed: u64,
    sut: &S,
    mut rec: Recording,
    watch: bool,
) -> Result<RunOutput, WorldError> {
    let plan = scenario.fault_plan(root_seed);
    let mut sim = build(scenario, root_seed);
    let driver_clock = Rc::new(Cell::new(Duration::ZERO));
    let clock_cell = driver_clock.clone();
    let fates = Rc::new(RefCell::new(Fates::watching(&plan)));
    rec.observers.push(Box::new(fates.clone()));
    let placing = plan
        .faults
        .iter()
        .any(|f| matches!(f, Fault::Placed { .. }));
    let triggers = (watch || placing).then(|| {
        let t = Rc::new(RefCell::new(Triggers::of(&plan, plan.timed().len() as u32)));
        rec.observers.push(Box::new(t.clone()));
        t
    });
    let reports: client::Reports = Rc::default();
    let history = History::recording(
        Rc::new(move || turmoil::sim_elapsed().unwrap_or_else(|| clock_cell.get())),
        rec,
    );
    let ledger = Ledger::new(history.clone());
    let front = Front::of(scenario, &plan, sut.shared_store());
    let store_answered = Rc::new(Cell::new(0u64));
    if scenario.deployment.is_single() {
        let beside = (&history, &ledger, &front.walls.server);
        host_server(&mut sim, sut, root_seed, beside);
        if !scenario.intermediary.is_off() {
            host_proxy(&mut sim, scenario, &history);
        }
    } else {
        let d = &scenario.deployment;
        history.record(WorldRecord::Deployed {
            replicas: d.replicas,
            balancer: d.balancer_name(),
            shared_store: front.store_lag.as_ref().map(|_| SharedStoreFacts {
                lag_ms: d.store_lag_ms,
                durable: d.store_durable,
            }),
        });
        let control = front.control.clone().unwrap_or_default();
        let added = plan.replicas_added();
        let store = front.store_lag.clone().map(|(lag, _)| {
            host_store(&mut sim, d, lag, store_answered.clone());
            store_link()
        });
        let replicas = Replicas {
            spec: d,
            added,
            control: &control,
            store,
        };
        let beside = (&history, &ledger, &front.walls.server);
        host_replicas(&mut sim, sut, root_seed, replicas, beside);
        let upstreams = (0..d.replicas + added).map(replica_host).collect();
        let spec = (d, &scenario.intermediary);
        host_balancer(&mut sim, spec, upstreams, control, &history);
    }
    let serves = Serves {
        legacy: sut.legacy_transport(),
        y2026: sut.speaks_2026(),
    };
    let watched = triggers.as_ref().map(|_| &reports);
    let (clients, taps) = host_clients(
        &mut sim,
        scenario,
        (root_seed, &plan),
        serves,
        &history,
        &front,
        watched,
    );
    let mut schedule = Schedule::new(&plan, scenario, &clients, front);
    let driver = Driver {
        clock: &driver_clock,
        history: &history,
        fault_ms: scenario.duration_ms,
        end_ms: scenario.duration_ms + scenario.heal.duration_ms,
        placed: triggers.as_ref().map(|triggers| triggers::Placing {
            triggers,
            reports: &reports,
            taps: &taps,
        }),
    };
    let clients_finished = driver.tick_and_heal(&mut sim, &mut schedule)?;
    driver_clock.set(sim.elapsed());
    // Every occurrence of the run is on record, read or not.
    drop(ledger.events(scenario.server.events_tick_ms * 1_000));
    let sim_ms = sim.elapsed().as_millis() as u64;
    let mut faults = schedule.unfired(sim_ms, clients_finished);
    let reached = match &triggers {
        Some(t) => {
            // What the clients saw in the last step.
            t.borrow_mut().reports(&reports);
            let t = t.borrow();
            faults.extend(t.unfired());
            t.reached.clone()
        }
        None => Vec::new(),
    };
    faults.extend(client_fates(
        &plan,
        &fates.borrow(),
        sim_ms,
        clients_finished,
    ));
    Ok(RunOutput {
        history,
        plan,
        faults,
        sim_ms,
        clients_finished,
        clients,
        store_round_trips: store_answered.get(),
        reached,
    })
}

/// The simulation: its seed, epoch, time bounds and network.
fn build<'a>(scenario: &Scenario, root_seed: u64) -> turmoil::Sim<'a> {
    let net = &scenario.network;
    let end_ms = scenario.duration_ms + scenario.heal.duration_ms;
    turmoil::Builder::new()
        .rng_seed(seed::child(root_seed, "turmoil"))
        .epoch(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
        .simulation_duration(Duration::from_millis(end_ms + 60_000))
        .tick_duration(Duration::from_millis(net.tick_ms))
        .min_message_latency(Duration::from_millis(net.latency_ms[0]))
        .max_message_latency(Duration::from_millis(net.latency_ms[1]))
        .tcp_capacity(net.tcp_capacity)
        .ephemeral_ports(crate::scenario::EPHEMERAL_PORTS)
        .build()
}

/// The server host: each incarnation (a restart bounces the host) serves
/// on a fresh listener with its own seed, over the one ledger and history
/// (and the server's wall clock, `beside` them).
fn host_server<'a, S: SystemUnderTest>(
    sim: &mut turmoil::Sim<'a>,
    sut: &'a S,
    root_seed: u64,
    beside: Beside<'_>,
) {
    let seed_of = move |n: u32| Some(seed::child(root_seed, &format!("server-sessions/{n}")));
    host_sut(sim, sut, SERVER.to_string(), seed_of, None, beside);
}

/// What every server host shares: the history, the ledger, and the
/// servers' wall clock.
type Beside<'r> = (&'r History, &'r Ledger, &'r WallClock);

/// What [`host_replicas`] hosts: the deployment, the replicas a plan adds
/// beyond it, the balancer's control and the shared store's link.
struct Replicas<'d> {
    spec: &'d DeploymentSpec,
    added: u32,
    control: &'d Control,
    store: Option<StoreLink>,
}

/// The replica hosts of a deployment: each incarnation of replica `r`
/// serves with its own seed, its connection ids apart from every other
/// replica's and, behind a hash balancer, minting only the session ids
/// the ring over the members maps to it. The `added` replicas a plan adds
/// later start dormant: their first incarnation serves nothing until
/// they join.
fn host_replicas<'a, S: SystemUnderTest>(
    sim: &mut turmoil::Sim<'a>,
    sut: &'a S,
    root_seed: u64,
    replicas: Replicas<'_>,
    (history, ledger, wall): Beside<'_>,
) {
    let Replicas {
        spec,
        added,
        control,
        store,
    } = replicas;
    let hashed = spec.balancer == BalancerKind::Hash;
    for r in 0..spec.replicas + added {
        let control = control.clone();
        let mints: Option<Mints> = hashed
            .then(|| Rc::new(move |sid: &str| control.borrow_mut().ring().owner(sid) == r) as _);
        let dormant = r >= spec.replicas;
        let seed_of = move |n: u32| {
            (!dormant || n > 0)
                .then(|| seed::child(root_seed, &format!("replica{r}/server-sessions/{n}")))
        };
        let replica = Some(Replica {
            index: r,
            mints,
            incarnation: 0,
            store: store.clone(),
        });
        let ledger = ledger.for_replica(r);
        host_sut(
            sim,
            sut,
            replica_host(r),
            seed_of,
            replica,
            (history, &ledger, wall),
        );
    }
}

/// One host running the system under test: each incarnation (a restart
/// bounces the host) serves on a fresh listener with the seed `seed_of`
/// gives its number, over the one ledger and history (none: it serves
/// nothing).
fn host_sut<'a, S: SystemUnderTest>(
    sim: &mut turmoil::Sim<'a>,
    sut: &'a S,
    name: String,
    seed_of: impl Fn(u32) -> Option<u64> + 'a,
    replica: Option<Replica>,
    (history, ledger, wall): Beside<'_>,
) {
    let incarnation = Rc::new(Cell::new(0u32));
    let (history, ledger, wall) = (history.clone(), ledger.clone(), wall.clone());
    sim.host(name, move || {
        let n = incarnation.get();
        incarnation.set(n + 1);
        let replica = replica.clone().map(|r| Replica {
            incarnation: n,
            ..r
        });
        let serving = seed_of(n).map(|seed| {
            sut.serve(Host {
                listener: TurmoilListener(None),
                seed,
                incarnation: n,
                ledger: ledger.clone(),
                history: history.clone(),
                replica,
                egress: Some(egress(&wall)),
            })
        });
        async move {
            match serving {
                Some(s) => s.await?,
                None => std::future::pending::<()>().await,
            }
            Ok(())
        }
    });
}

/// The store host: each incarnation serves what the store held (durable)
/// or an empty store, reading `lag` behind, every incarnation counting the
/// requests it answers in `answered`.
fn host_store(
    sim: &mut turmoil::Sim<'_>,
    spec: &DeploymentSpec,
    lag: Rc<Cell<Duration>>,
    answered: Rc<Cell<u64>>,
) {
    let durable = spec
        .store_durable
        .then(|| Rc::new(RefCell::new(StoreData::default())));
    sim.host(STORE, move || {
        let data = durable.clone().unwrap_or_default();
        let clock = Rc::new(|| turmoil::sim_elapsed().unwrap_or_default());
        let state = StoreState::new(data, clock, lag.clone()).counting(answered.clone());
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", crate::store::PORT)).await?;
            let accept = || async { listener.accept().await.map(|(s, _)| s) };
            crate::store::serve(accept, state).await?;
            Ok(())
        }
    });
}

/// How a replica reaches the store host.
fn store_link() -> StoreLink {
    StoreLink {
        connect: Rc::new(|| {
            Box::pin(async {
                let s = turmoil::net::TcpStream::connect((STORE, crate::store::PORT)).await?;
                Ok(Box::new(s) as Box<dyn StoreIo>)
            })
        }),
        timeout: STORE_TIMEOUT,
        key_lease: KEY_LEASE,
    }
}

/// The balancer host: a fresh balancer (no pins) in each incarnation,
/// under the orchestrator's `control`.
/// The proxy in front of the one server when the scenario has an
/// `[intermediary]`: the balancer's relay over that one upstream.
fn host_proxy(sim: &mut turmoil::Sim<'_>, scenario: &Scenario, history: &History) {
    let control = Rc::new(RefCell::new(Membership::of(1)));
    let spec = (&DeploymentSpec::default(), &scenario.intermediary);
    host_balancer(sim, spec, vec![SERVER.to_string()], control, history);
}

fn host_balancer(
    sim: &mut turmoil::Sim<'_>,
    (spec, intermediary): (&DeploymentSpec, &Intermediary),
    upstreams: Vec<String>,
    control: Control,
    history: &History,
) {
    let spec = spec.clone();
    let intermediary = intermediary.clone();
    let history = history.clone();
    sim.host(BALANCER, move || {
        let upstreams = upstreams
            .iter()
            .map(|h| TurmoilConnector(h.as_str().into()))
            .collect();
        let balancer = Balancer::new(
            (&spec, &intermediary),
            upstreams,
            control.clone(),
            history.clone(),
        );
        async move {
            balancer.serve(TurmoilListener(None)).await?;
            Ok(())
        }
    });
}

/// The client hosts, each running its clients as tasks; returns the table
/// of every client with its host and whether it runs (a legacy client of
/// a system without the legacy transport does not).
fn host_clients(
    sim: &mut turmoil::Sim<'_>,
    scenario: &Scenario,
    (root_seed, plan): (u64, &FaultPlan),
    serves: Serves,
    history: &History,
    front: &Front,
    reports: Option<&client::Reports>,
) -> (Vec<Placed>, Vec<client::Tap>) {
    let table = placement(scenario, serves);
    let taps: Vec<client::Tap> = table
        .iter()
        .map(|_| reports.map(client::Tap::watching).unwrap_or_default())
        .collect();
    let mut by_host: BTreeMap<u32, Vec<ClientSpec>> = BTreeMap::new();
    for ((host, spec), p) in client_specs(scenario, root_seed, plan)
        .into_iter()
        .zip(&table)
    {
        debug_assert_eq!((host, spec.index), (p.host, p.index));
        if p.runs {
            by_host.entry(host).or_default().push(spec);
        }
    }
    let lingers = plan
        .faults
        .iter()
        .any(|f| matches!(f.acting(), Fault::SlowClose { .. }));
    for (host, specs) in by_host {
        let history = history.clone();
        let connector = toxic::ToxicConnector {
            front: front.name.clone(),
            host,
            toxics: front.toxics.clone(),
        };
        let taps = taps.clone();
        let readers = events_readers(scenario, &specs);
        let hooks = webhook_readers(
            scenario,
            (root_seed, host),
            &specs,
            (&front.receivers, &front.walls),
        );
        sim.client(client_host(host), async move {
            if let (true, Some(t)) = (lingers, &connector.toxics) {
                tokio::task::spawn_local(t.clone().close_lingering());
            }
            let reading: Vec<_> = readers
                .into_iter()
                .map(|r| {
                    let run = client::y2026::events::run(r, connector.clone(), history.clone());
                    tokio::task::spawn_local(run)
                })
                .chain(hooks.into_iter().enumerate().map(|(k, w)| {
                    let listener =
                        ReceiverListener(RECEIVER_PORT + k as u16, connector.clone(), None);
                    let run = client::y2026::webhook::run(
                        w,
                        connector.clone(),
                        listener,
                        history.clone(),
                    );
                    tokio::task::spawn_local(run)
                }))
                .collect();
            let tasks: Vec<_> = specs
                .into_iter()
                .map(|spec| {
                    let tap = taps[spec.index as usize].clone();
                    tokio::task::spawn_local(client::virtual_client::run(
                        spec,
                        connector.clone(),
                        history.clone(),
                        tap,
                    ))
                })
                .collect();
            for t in tasks.into_iter().chain(reading) {
                t.await?;
            }
            Ok(())
        });
    }
    (table, taps)
}

/// Where each client of `scenario` runs and whether it does (a legacy
/// client of a system without the legacy transport does not): known
/// before the run, so the oracle can be set up to judge as records arrive.
/// What a system under test serves, as placement asks.
#[derive(Clone, Copy, Debug)]
pub struct Serves {
    /// The legacy HTTP+SSE transport ([`SystemUnderTest::legacy_transport`]).
    pub legacy: bool,
    /// The 2026-07-28 wire ([`SystemUnderTest::speaks_2026`]).
    pub y2026: bool,
}

/// Where each client runs, and whether it runs at all: a client is *not
/// applicable* to a server that does not serve its transport (a legacy
/// client, a server without HTTP+SSE), and on the 2026-07-28 wire to a
/// server that does not speak it, or when it is a transport switcher
/// (that wire has no legacy transport to switch from).
pub fn placement(scenario: &Scenario, serves: Serves) -> Vec<Placed> {
    let modern = scenario.era == crate::settings::Era::Y2026;
    let mut out = Vec::new();
    for (group, g) in scenario.clients.iter().enumerate() {
        for _ in 0..g.count {
            let index = out.len() as u32;
            out.push(Placed {
                index,
                group,
                host: index % scenario.network.client_hosts,
                // Tasks are of the 2026-07-28 wire: a tasks client has no
                // counterpart on the old one.
                runs: (serves.legacy || !g.behaviour.is_legacy())
                    && (!modern || (serves.y2026 && !g.behaviour.is_legacy()))
                    && (modern || !g.tasked()),
            });
        }
    }
    out
}

/// What steps the simulation: the clock the driver's own records read,
/// and the two phase ends.
struct Driver<'a> {
    clock: &'a Cell<Duration>,
    history: &'a History,
    /// End of the fault phase, ms.
    fault_ms: u64,
    /// End of the heal phase, ms.
    end_ms: u64,
    /// Faults placed at boundaries, when the plan has any or the run
    /// watches boundaries.
    placed: Option<triggers::Placing<'a>>,
}

impl Driver<'_> {
    /// Ticks the faults through the fault phase, then heals (faults off:
    /// every link repaired, since windows were cut to end with the fault
    /// phase and have fired) and runs until every client finished or the
    /// heal phase ran out. Whether every client finished.
    fn tick_and_heal(
        &self,
        sim: &mut turmoil::Sim<'_>,
        schedule: &mut Schedule,
    ) -> Result<bool, WorldError> {
        loop {
            let now_ms = self.now(sim);
            if let Some(p) = &self.placed {
                p.fire(now_ms, schedule);
            }
            schedule.fire_due(now_ms, sim, self.history);
            if now_ms >= self.fault_ms {
                break;
            }
            if let Some(finished) = self.step(sim)? {
                return Ok(finished);
            }
        }
        self.history.record(WorldRecord::HealStarted);
        loop {
            if let Some(finished) = self.step(sim)? {
                return Ok(finished);
            }
            self.now(sim);
        }
    }

    /// The simulated time, set on the driver's clock, ms.
    fn now(&self, sim: &turmoil::Sim<'_>) -> u64 {
        let now = sim.elapsed();
        self.clock.set(now);
        now.as_millis() as u64
    }

    /// One step: `Some(true)` when every client finished, `Some(false)`
    /// when the heal phase ran out.
    fn step(&self, sim: &mut turmoil::Sim<'_>) -> Result<Option<bool>, WorldError> {
        match sim.step() {
            Ok(true) => return Ok(Some(true)),
            Ok(false) => {}
            Err(e) => return Err(WorldError(e.to_string())),
        }
        // Its caller's --timeout passed: the run ends here, its report unwritten.
        if crate::base::stop::requested() {
            return Err(WorldError(
                "stopped: the run took longer than --timeout".into(),
            ));
        }
        Ok((sim.elapsed().as_millis() as u64 >= self.end_ms).then_some(false))
    }
}

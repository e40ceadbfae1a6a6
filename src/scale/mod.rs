//! `mcp-chaos scale`: the same traffic through a bare turmoil + hyper
//! program ([`baseline`]) and through mcp-chaos, at several client counts,
//! with keep-alive and per-exchange connections; the mixed fleet at its own
//! size and scaled to 1,000 and 10,000 clients; a soak of ten times the
//! calls; and a sweep on one worker against two. Each measurement runs in
//! its own child process, so that its peak memory is its own. The baseline
//! is what the simulation costs without MCP, the guard, the history or the
//! oracle: the ratio between the two is mcp-chaos's own overhead.
//!
//! The traffic: `clients` clients spread round robin over `hosts` client
//! hosts; each makes two short exchanges (initialize, initialized), then
//! `calls` calls whose answer is an SSE stream of `chunks` events
//! `chunk_interval_ms` apart, `think_ms` between calls, on one connection
//! it keeps alive or on one connection per exchange. No faults.

mod baseline;
mod table;

pub use table::{targets, Target};

use crate::base::console::{errln, outln};
use crate::hosts::sut::Arm;
use crate::run::{self, Options};
use crate::scenario::Scenario;
use crate::server::Variant;
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// One size of traffic.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Traffic {
    /// Clients.
    pub clients: u32,
    /// Client hosts.
    pub hosts: u32,
    /// Calls per client.
    pub calls: u32,
    /// Events per call (the last is the result).
    pub chunks: u32,
    /// Time between events, ms.
    pub chunk_interval_ms: u64,
    /// Pause between calls, ms.
    pub think_ms: u64,
    /// Each client keeps its connection alive between exchanges (as the
    /// SDKs' HTTP clients do) rather than opening one per exchange.
    pub keep_alive: bool,
}

impl Traffic {
    /// How the clients hold connections, as the scenario key says it.
    pub fn connections(&self) -> &'static str {
        connections_name(self.keep_alive)
    }
}

/// The name of a connection mode, as `--connections` takes it.
pub fn connections_name(keep_alive: bool) -> &'static str {
    if keep_alive {
        "keep-alive"
    } else {
        "per-exchange"
    }
}

/// What one side measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figures {
    /// The side: `baseline`, `mcp-chaos`, a fleet's name, `jobs-1`, ….
    pub side: String,
    /// Wall time of the run, s (the simulation and, for mcp-chaos, the
    /// oracle and the trace hash).
    pub wall_s: f64,
    /// Simulated time, s.
    pub sim_s: f64,
    /// Peak resident memory of the process, MB.
    pub peak_mb: f64,
    /// Exchanges completed (baseline) or operations judged (mcp-chaos).
    pub work: u64,
    /// CPU time of the process, user and system, s: unlike wall time,
    /// what a loaded machine does not inflate (a waiting process spends
    /// none).
    #[serde(default)]
    pub cpu_s: f64,
}

impl Figures {
    /// Simulated seconds per wall second.
    pub fn speed(&self) -> f64 {
        self.sim_s / self.wall_s.max(1e-9)
    }

    /// CPU seconds per 1,000 units of work (operations or exchanges).
    pub fn cpu_per_1000(&self) -> f64 {
        self.cpu_s * 1000.0 / (self.work.max(1) as f64)
    }

    /// Simulated seconds per CPU second.
    pub fn sim_per_cpu(&self) -> f64 {
        self.sim_s / self.cpu_s.max(1e-9)
    }
}

/// A measurement's figures, or why its child failed (a row says so; the
/// other rows still run).
pub type Measured = Result<Figures, String>;

/// One connection mode's sizes: per client count, the baseline and
/// mcp-chaos.
pub type SizeRows = Vec<(u32, Measured, Measured)>;

/// The mixed fleets the bench runs on seed 0 under the guarded arm (their
/// own clients, drops, partitions, latency spikes): how fast faulted
/// traffic runs against real time, and how it grows with the fleet.
pub const FLEETS: [(&str, &str); 4] = [
    ("mixed-fleet", include_str!("../../sims/mixed-fleet.toml")),
    (
        "mixed-fleet-1k",
        include_str!("../../sims/scale/mixed-fleet-1k.toml"),
    ),
    (
        "mixed-fleet-3k",
        include_str!("../../sims/scale/mixed-fleet-3k.toml"),
    ),
    (
        "mixed-fleet-10k",
        include_str!("../../sims/scale/mixed-fleet-10k.toml"),
    ),
];

/// Seeds of the sweep that measures one worker against two.
const JOBS_SEEDS: u64 = 4;

/// Runs one side in this process; prints nothing.
pub fn measure(side: &str, t: Traffic) -> Measured {
    let started = Instant::now();
    let (sim_s, work) = match side {
        "baseline" => baseline::run(t)?,
        "mcp-chaos" => chaos(t)?,
        "jobs-1" => jobs(1, t)?,
        "jobs-2" => jobs(2, t)?,
        FLEET_BASELINE => baseline::run(fleet_baseline_traffic(t.keep_alive)?)?,
        fleet => match FLEETS.iter().find(|(name, _)| *name == fleet) {
            Some((_, text)) => mixed_fleet(text, t)?,
            None => {
                let names: Vec<&str> = FLEETS.iter().map(|(name, _)| *name).collect();
                return Err(format!(
                    "unknown side {fleet:?}: use baseline, mcp-chaos, jobs-1, jobs-2, \
                     {FLEET_BASELINE} or a fleet ({})",
                    names.join(", ")
                ));
            }
        },
    };
    Ok(Figures {
        side: side.to_string(),
        wall_s: started.elapsed().as_secs_f64(),
        sim_s,
        peak_mb: peak_rss_mb(),
        work,
        cpu_s: cpu_seconds(),
    })
}

/// The side that runs the bare program with the largest fleet's traffic.
pub const FLEET_BASELINE: &str = "baseline-mixed-fleet-10k";

/// The largest fleet's traffic for the bare program: its clients, hosts
/// and calls, its first group's events and pauses, no faults. Where this
/// baseline itself takes over 20 s, the fleet's wall-time target is 1.5
/// times it instead of 30 s: the bare program sets the floor of what the
/// network can carry.
pub fn fleet_baseline_traffic(keep_alive: bool) -> Result<Traffic, String> {
    let (_, text) = FLEETS[FLEETS.len() - 1];
    let s = crate::check::parse(text).map_err(|e| e.to_string())?;
    let first = s.clients.first().ok_or("the fleet has no client group")?;
    Ok(Traffic {
        clients: s.clients.iter().map(|g| g.count).sum(),
        hosts: s.network.client_hosts,
        calls: first.calls,
        chunks: first.chunks,
        chunk_interval_ms: first.chunk_interval_ms,
        think_ms: first.think_ms,
        keep_alive,
    })
}

/// The scenario mcp-chaos runs for `t`.
pub fn scenario(t: Traffic) -> Result<Scenario, String> {
    let text = format!(
        "name = \"scale-{clients}\"\nduration_ms = 1000\n\
         [[clients]]\nbehaviour = \"retry-by-post\"\ncount = {clients}\ncalls = {calls}\n\
         chunks = {chunks}\nchunk_interval_ms = {ci}\nthink_ms = {think}\n\
         connect_timeout_ms = 30000\nread_timeout_ms = 30000\n{connections}\
         [network]\nclient_hosts = {hosts}\ntcp_capacity = {cap}\nlatency_ms = [1, 5]\n\
         [heal]\nduration_ms = {heal}\n",
        clients = t.clients,
        calls = t.calls,
        chunks = t.chunks,
        ci = t.chunk_interval_ms,
        think = t.think_ms,
        connections = connections_key(t),
        hosts = t.hosts,
        cap = (t.clients as usize * 3).max(1024),
        heal = heal_ms(t),
    );
    crate::check::parse(&text).map_err(|e| e.to_string())
}

/// Time enough for every client to make its calls (twice a call's think
/// time and events, at least ten minutes): the run ends when they finish,
/// so the bound costs nothing, and a soak of ten times the calls gets ten
/// times the time.
fn heal_ms(t: Traffic) -> u64 {
    let call = t.think_ms + u64::from(t.chunks) * t.chunk_interval_ms + 100;
    (u64::from(t.calls) * call * 2).max(600_000)
}

/// The client-group line that asks for `t`'s connections, always written
/// out: a row that says per-exchange must not follow the loader's default.
fn connections_key(t: Traffic) -> String {
    format!("connections = \"{}\"\n", t.connections())
}

fn chaos(t: Traffic) -> Result<(f64, u64), String> {
    let s = scenario(t)?;
    let r = run::run_arm_streaming(&s, 0, Arm::BuiltIn(Variant::Unguarded), &Options::default())
        .map_err(|e| e.0)?;
    if !r.clients_finished {
        return Err("mcp-chaos: the clients did not finish".into());
    }
    Ok((r.sim_ms as f64 / 1e3, r.metrics.operations))
}

/// A fleet's scenario with `t`'s connections in every client group.
fn fleet_scenario(text: &str, t: Traffic) -> Result<Scenario, String> {
    let with = text.replace(
        "[[clients]]\n",
        &format!("[[clients]]\n{}", connections_key(t)),
    );
    crate::check::parse(&with).map_err(|e| e.to_string())
}

fn mixed_fleet(text: &str, t: Traffic) -> Result<(f64, u64), String> {
    let s = fleet_scenario(text, t)?;
    let r = run::run_arm_streaming(&s, 0, Arm::BuiltIn(Variant::Guarded), &Options::default())
        .map_err(|e| e.0)?;
    Ok((r.sim_ms as f64 / 1e3, r.metrics.operations))
}

/// The mixed fleet's first [`JOBS_SEEDS`] seeds under the guarded arm on
/// `workers` threads: the simulated time is the sum over the runs.
fn jobs(workers: usize, t: Traffic) -> Result<(f64, u64), String> {
    let s = std::sync::Arc::new(fleet_scenario(FLEETS[0].1, t)?);
    let list: Vec<crate::sweep::Job> = (0..JOBS_SEEDS)
        .map(|seed| crate::sweep::Job {
            path: "sims/mixed-fleet.toml".into(),
            scenario: s.clone(),
            seed,
            variant: Variant::Guarded.into(),
            opts: Options::default(),
        })
        .collect();
    let runs = crate::sweep::run_all(&list, workers, Default::default(), &|_, _, _, _| {});
    let (mut sim_ms, mut ops) = (0u64, 0u64);
    for r in runs {
        let r = r.ok_or("a run did not start")??;
        sim_ms += r.sim_ms;
        ops += r.metrics.operations;
    }
    Ok((sim_ms as f64 / 1e3, ops))
}

/// CPU time this process has used, user and system, s (Linux
/// `/proc/self/stat`, in the kernel's 1/100 s ticks; 0 elsewhere).
pub fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command's closing parenthesis: state is the
            // first, utime the 12th, stime the 13th.
            let rest = &s[s.rfind(')')? + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 / 100.0)
        })
        .unwrap_or(0.0)
}

/// Peak resident memory of this process, MB (Linux `VmHWM`; 0 elsewhere).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// What `scale` measures beyond the sizes.
#[derive(Clone, Debug)]
pub struct Parts {
    /// Connection modes (`keep_alive`), in order: the first is the one the
    /// fleets, the soak and the sweep run with.
    pub modes: Vec<bool>,
    /// Runs of each mixed fleet (the median is reported; 0: no fleets).
    pub fleet_runs: u32,
    /// Clients of the soak (0: no soak); its small run makes `soak_calls`
    /// calls each, its large run ten times as many.
    pub soak_clients: u32,
    /// Calls per client of the soak's small run.
    pub soak_calls: u32,
    /// Measure a sweep on one worker against two.
    pub jobs: bool,
}

/// Everything `scale` measured, for the table.
pub struct Measurements {
    /// The traffic of the sizes (clients 0).
    pub base: Traffic,
    /// Per connection mode (`keep_alive`): per size, baseline and
    /// mcp-chaos.
    pub sizes: Vec<(bool, SizeRows)>,
    /// Per fleet: every run (the table reports the median wall time).
    pub fleets: Vec<(&'static str, Vec<Measured>)>,
    /// The bare program carrying the largest fleet's traffic (no faults).
    pub fleet_baseline: Option<Measured>,
    /// The soak's small and large run.
    pub soak: Option<(Traffic, Measured, Measured)>,
    /// The sweep on one worker and on two.
    pub jobs: Option<(Measured, Measured)>,
}

/// `scale`: every measurement in a child process; the table printed and,
/// with `out`, written with the machine (notes below the marker kept).
/// With `one`, this process is such a child: it runs that side and prints
/// its figures as JSON.
pub fn command(
    sizes: &[u32],
    base: Traffic,
    parts: Parts,
    out: Option<&Path>,
    one: Option<&str>,
) -> anyhow::Result<u8> {
    if base.hosts == 0 {
        bail!("--hosts must be at least 1");
    }
    if let Some(side) = one {
        let t = Traffic {
            clients: *sizes.first().context("--clients names no size")?,
            ..base
        };
        let f = measure(side, t).map_err(anyhow::Error::msg)?;
        outln!("{}", serde_json::to_string(&f)?);
        return Ok(0);
    }
    let modes = &parts.modes;
    let Some(&first) = modes.first() else {
        bail!("--connections names no mode: use keep-alive, per-exchange or both");
    };
    check_sizes(sizes, base)?;
    let exe = std::env::current_exe().context("finding this program to run each side")?;
    let side = |name: &str, t: Traffic| side_figures(&exe, name, t);
    let mut m = Measurements {
        base,
        sizes: Vec::new(),
        fleets: Vec::new(),
        fleet_baseline: None,
        soak: None,
        jobs: None,
    };
    for &keep_alive in modes {
        let mut rows = Vec::new();
        for &n in sizes {
            let t = Traffic {
                clients: n,
                keep_alive,
                ..base
            };
            rows.push((n, side("baseline", t), side("mcp-chaos", t)));
        }
        m.sizes.push((keep_alive, rows));
    }
    let fleet_traffic = Traffic {
        clients: 0,
        keep_alive: first,
        ..base
    };
    for (name, _) in FLEETS.iter().filter(|_| parts.fleet_runs > 0) {
        let runs = (0..parts.fleet_runs)
            .map(|_| side(name, fleet_traffic))
            .collect();
        m.fleets.push((name, runs));
    }
    if parts.fleet_runs > 0 {
        m.fleet_baseline = Some(side(FLEET_BASELINE, fleet_traffic));
    }
    if parts.soak_clients > 0 {
        let small = Traffic {
            clients: parts.soak_clients,
            calls: parts.soak_calls,
            keep_alive: first,
            ..base
        };
        let large = Traffic {
            calls: parts.soak_calls * 10,
            ..small
        };
        m.soak = Some((small, side("mcp-chaos", small), side("mcp-chaos", large)));
    }
    if parts.jobs {
        m.jobs = Some((side("jobs-1", fleet_traffic), side("jobs-2", fleet_traffic)));
    }
    let text = table::table(&m);
    outln!("{text}");
    if let Some(p) = out {
        table::write_perf(p, &text)?;
    }
    Ok(0)
}

/// Every size checked before the first side runs: the baseline would run
/// what the simulator's loader refuses.
fn check_sizes(sizes: &[u32], base: Traffic) -> anyhow::Result<()> {
    if sizes.is_empty() || sizes.contains(&0) {
        bail!("--clients needs sizes of at least 1, e.g. --clients 1000,10000");
    }
    let smallest = sizes.iter().copied().min().unwrap_or(1);
    if base.hosts > smallest {
        bail!(
            "--hosts {} is above the smallest --clients size {smallest}: a host without a \
             client runs nothing; use at most {smallest} hosts",
            base.hosts
        );
    }
    for &n in sizes {
        scenario(Traffic { clients: n, ..base })
            .map_err(|e| anyhow::anyhow!("scale --clients {n}: {e}"))?;
    }
    Ok(())
}

/// Runs one side of the scale bench in a child process (so that its peak
/// memory is its own) and reads its figures; a child that fails gives its
/// error, for its row.
fn side_figures(exe: &Path, name: &str, t: Traffic) -> Measured {
    if name == FLEET_BASELINE {
        errln!(
            "mcp-chaos scale: baseline, mixed-fleet-10k's traffic, {}",
            t.connections()
        );
    } else if t.clients == 0 {
        errln!(
            "mcp-chaos scale: {name}, its own clients, {}",
            t.connections()
        );
    } else {
        errln!(
            "mcp-chaos scale: {name}, {} clients x {} calls, {}",
            t.clients,
            t.calls,
            t.connections()
        );
    }
    let o = std::process::Command::new(exe)
        // A fleet runs its own clients (clients 0); --clients still takes
        // a valid size.
        .args([
            "scale",
            "--one",
            name,
            "--clients",
            &t.clients.max(1).to_string(),
        ])
        .args(["--hosts", &t.hosts.to_string()])
        .args(["--calls", &t.calls.to_string()])
        .args(["--chunks", &t.chunks.to_string()])
        .args(["--chunk-interval-ms", &t.chunk_interval_ms.to_string()])
        .args(["--think-ms", &t.think_ms.to_string()])
        .args(["--connections", t.connections()])
        .output()
        .map_err(|e| format!("running the {name} side: {e}"))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        return Err(err
            .trim()
            .lines()
            .last()
            .unwrap_or("no message")
            .to_string());
    }
    serde_json::from_slice(&o.stdout).map_err(|e| format!("reading the {name} side's figures: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ten_thousand_client_fleet_loads() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/scale/ten-thousand.toml");
        let s = Scenario::load(&p).expect("it validates");
        assert_eq!(s.client_count(), 10_000);
        assert_eq!(s.network.client_hosts, 4);
    }

    #[test]
    fn the_scaled_fleets_keep_the_fleets_shape() {
        let fleet = |i: usize| {
            crate::check::parse(FLEETS[i].1).unwrap_or_else(|e| panic!("{}: {e}", FLEETS[i].0))
        };
        let small = fleet(0);
        for (i, n) in [(1, 1_000), (2, 3_000), (3, 10_000)] {
            let k = fleet(i);
            assert_eq!(k.client_count(), n, "{}", FLEETS[i].0);
            assert_eq!(k.network.client_hosts, 4);
            assert_eq!(k.network.tcp_capacity, 3 * n as usize);
            assert_eq!(k.clients.len(), small.clients.len());
            assert_eq!(k.faults, small.faults);
            assert_eq!(k.server, small.server);
            for (a, b) in k.clients.iter().zip(&small.clients) {
                assert_eq!((a.behaviour, a.calls), (b.behaviour, b.calls));
            }
        }
    }
}

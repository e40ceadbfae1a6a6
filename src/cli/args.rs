//! The command line as clap reads it: one struct of flags per command
//! ([`Cmd`]), the flags several commands share ([`RunArgs`],
//! [`ControlArgs`]), the list parsers, and the help texts' `{arms}` filled
//! from [`Arm::NAMES`].

use crate::base::flags;
use crate::commands::one_run::Format;
use crate::hosts::sut::Arm;
use crate::run::{self, Options};
use crate::scenario::RegressionKind;
use anyhow::bail;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub use super::batch::{ControlArgs, GateArgs};
pub use super::serve_args::ServeArgs;

/// Deterministic network simulator for MCP streamable-HTTP servers: virtual
/// clients under seeded faults against the server arms {arms}, each judged
/// by what its clients received.
#[derive(Parser, Debug)]
#[command(name = "mcp-chaos", version)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CursorOverride {
    /// Every client presents cursors on POST (= `--clients cursors`).
    All,
}

/// What a run may change beyond the scenario file.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Client profile for every client: plain, keys, cursors, keys+cursors,
    /// tasks or tasks+keys (the last two: 2026-07-28 only) (default: as the
    /// scenario says).
    #[arg(long, value_parser = parse_profile)]
    pub clients: Option<run::Profile>,
    /// Override a server setting for the run (repeatable), e.g.
    /// `--set server.store_capacity=64`, or how every client holds its
    /// connections: `--set client.connections=per-exchange` (a group that
    /// writes no `connections` keeps them alive), `--set client.pool_idle_ms=4000`,
    /// or the deployment: `--set deployment.replicas=3 --set deployment.balancer=sticky`.
    #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = run::Options::parse_set_checked)]
    pub sets: Vec<(String, String)>,
    /// Old spelling of `--clients cursors`.
    #[arg(long, value_enum, hide = true)]
    pub cursor_on_post: Option<CursorOverride>,
    /// The revision of the MCP wire to run in, 2025-11-25 or 2026-07-28
    /// (default: the scenario's `era`); the same as `--set era=ERA`.
    #[arg(long, value_name = "ERA", value_parser = |s: &str| s.parse::<crate::settings::Era>())]
    pub era: Option<crate::settings::Era>,
}

impl RunArgs {
    /// The run options these flags make, or why they contradict.
    pub fn options(&self) -> anyhow::Result<Options> {
        if self.clients.is_some() && self.cursor_on_post.is_some() {
            bail!("--cursor-on-post all is --clients cursors: give one of them");
        }
        Ok(Options {
            clients: self
                .clients
                .or(self.cursor_on_post.map(|_| run::Profile::Cursors)),
            sets: self
                .era
                .map(|e| ("era".to_string(), e.as_str().to_string()))
                .into_iter()
                .chain(self.sets.iter().cloned())
                .collect(),
            deployment: String::new(),
        })
    }
}

fn parse_profile(s: &str) -> Result<run::Profile, String> {
    s.parse()
}

/// Server arms from `--servers` (one argument, comma-separated).
#[derive(Clone, Debug)]
pub struct Arms(pub Vec<Arm>);

/// Client profiles from `--clients` (one argument, comma-separated).
#[derive(Clone, Debug)]
pub struct Profiles(pub Vec<Option<run::Profile>>);

/// Deployments from `--deployments` (one argument, `;`-separated sets).
#[derive(Clone, Debug)]
pub struct Deployments(pub Vec<crate::run::deployments::DeploymentSet>);

fn parse_deployments(s: &str) -> Result<Deployments, String> {
    crate::run::deployments::parse(s).map(Deployments)
}

fn parse_arms(s: &str) -> Result<Arms, String> {
    parse_list(
        s,
        str::parse,
        "--servers needs at least one arm, e.g. guarded,unguarded",
    )
    .map(Arms)
}

fn parse_profiles(s: &str) -> Result<Profiles, String> {
    // `scenario` names the clients as the scenario writes them.
    let item = |p: &str| {
        if p == run::AS_WRITTEN {
            Ok(None)
        } else {
            p.parse().map(Some)
        }
    };
    parse_list(
        s,
        item,
        "--clients needs at least one profile, e.g. scenario,plain",
    )
    .map(Profiles)
}

/// A comma-separated list, each item parsed by `item`, repeats dropped,
/// never empty.
fn parse_list<T: PartialEq>(
    s: &str,
    item: impl Fn(&str) -> Result<T, String>,
    empty: &str,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v = item(part)?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err(empty.into());
    }
    Ok(out)
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run every scenario in sims/ x seeds x server arms ({arms}) x client
    /// profiles in parallel; write summary.json, report.md (with the mechanism matrix)
    /// and report.html; print the headline.
    #[command(
        after_help = "Examples:\n  mcp-chaos compare\n  mcp-chaos compare --seeds 0..20 --servers guarded,unguarded --scenario half-open --out target/cmp\n  MCP_CHAOS_SEEDS=3 mcp-chaos compare --fail-fast --timeout 60 --shrink --out target/cmp"
    )]
    Compare(CompareArgs),
    /// Run one scenario over a seed range (or one shard of it) under every
    /// server arm ({arms}; --servers picks some); write the summary JSON.
    #[command(
        after_help = "Examples:\n  mcp-chaos sweep --scenario sims/half-open.toml --seeds 0..100 --shard 1/4 --out target/shard1.json\n  mcp-chaos merge target/shard*.json --out target/merged.json"
    )]
    Sweep(SweepArgs),
    /// Write the calibration of a model arm against a real SDK's server
    /// from a comparison's summary: every scenario side by side, metric by
    /// metric. Hand-written notes below the file's notes marker are kept.
    #[command(
        after_help = "Example:\n  mcp-chaos calibrate results/summary.json --out results/calibration.md"
    )]
    Calibrate(CalibrateArgs),
    /// Measure mcp-chaos against a bare turmoil + hyper program carrying
    /// the same connections and SSE events, at each client count: wall
    /// time, simulated seconds per wall second, peak memory, the ratio,
    /// and the wall-time exponent between sizes. Each side runs in its own
    /// child process.
    #[command(
        after_help = "Example:\n  mcp-chaos scale --clients 1000,3000,10000 --out results/perf.md"
    )]
    Scale(ScaleArgs),
    /// Merge summary files (shards) into one, recomputing aggregates.
    /// Refuses summaries of another schema version and a run two files
    /// both hold.
    #[command(
        after_help = "Example:\n  mcp-chaos merge target/shard1.json target/shard2.json --out target/merged.json"
    )]
    Merge(MergeArgs),
    /// Print a run's every derived option and its whole fault plan, then run
    /// it with the trace on.
    #[command(
        after_help = "Example:\n  mcp-chaos repro --scenario sims/flaky-mobile.toml --seed 3 --server unguarded --emit-scenario target/flaky-3.toml\n  mcp-chaos run --scenario target/flaky-3.toml --seed 3 --server unguarded   # same trace"
    )]
    Repro(ReproArgs),
    /// Delta-debug a run's fault plan (and clients) to a minimal one that
    /// still fails the same way, or still shows the metrics named by
    /// --until; write it as a scenario for sims/regressions/ whose
    /// [regression] table says whether it pins a hazard (passes while it
    /// reproduces) or a bug (fails until fixed).
    #[command(
        after_help = "Examples:\n  mcp-chaos shrink --until duplicate_side_effects --scenario sims/half-open.toml --seed 0 --server unguarded --out target/dups.toml\n  mcp-chaos run --scenario target/dups.toml --server unguarded   # passes while the duplicates reproduce"
    )]
    Shrink(ShrinkArgs),
    /// Print Rule M, the guard's decision table, as the guard computes it.
    #[command(after_help = "Example:\n  mcp-chaos rules")]
    Rules,
    /// List the scenarios of a directory: name, file, clients, faults, and
    /// the first line of the description.
    #[command(after_help = "Example:\n  mcp-chaos list sims/regressions")]
    List(ListArgs),
    /// Load scenario files (or every *.toml of a directory) and check them:
    /// schema, bounds, metric names in [expect.*], and names shared by two
    /// files. Exit 3 on the first problem.
    #[command(
        after_help = "Examples:\n  mcp-chaos validate sims\n  mcp-chaos validate sims/half-open.toml target/dups.toml"
    )]
    Validate(ValidateArgs),
    /// Print one operation's timeline from a trace written by `repro` (or
    /// `run --trace`): every record touching it, with simulated time, side
    /// and what happened, then the oracle's verdict and cause.
    #[command(
        after_help = "Example:\n  mcp-chaos repro --scenario sims/eviction.toml --seed 0 --server unguarded\n  mcp-chaos explain --trace target/repro/eviction-0-unguarded.jsonl --op c3-op1"
    )]
    Explain(ExplainArgs),
    /// Run every placement of one fault, and of every pair (--depth 2), at
    /// the protocol boundaries of a small scenario, instead of a sample of
    /// seeds; report the failing placements by cause, or that none fails.
    #[command(
        after_help = "Exit: 0 no placement fails, 1 one or more fail, 3 usage or I/O error.\n\nExamples:\n  mcp-chaos explore --scenario sims/explore/seed-000-retry-by-post.toml --server unguarded\n  mcp-chaos explore --scenario sims/explore/seed-000-retry-by-post.toml --server guarded --clients keys+cursors --set server.durable_dedup=true --set server.effects=transactional --format json"
    )]
    Explore(ExploreArgs),
    /// Run one scenario under one seed against one server.
    #[command(
        after_help = "Examples:\n  mcp-chaos run --scenario sims/half-open.toml --seed 0 --server unguarded\n  mcp-chaos run --scenario sims/half-open.toml --server guarded --clients keys+cursors --format json"
    )]
    Run(RunOneArgs),
    /// Run the MCP server on a real socket (simulated time becomes real time).
    #[command(after_help = "Example:\n  mcp-chaos serve --server guarded --addr 127.0.0.1:8080")]
    Serve(ServeArgs),
    /// Try the transport hazards against a live MCP server over real TCP
    /// (real time, not simulated); one verdict per hazard.
    #[command(
        after_help = "Exit: 0 no hazard present, 1 one or more present, 3 usage or connection error, the budget ran out before every hazard was tried, or a read limit (--max-*) was reached.\n\nProbe follows no redirect and connects only to loopback addresses (--url, --legacy-url, a legacy endpoint event) unless --allow-remote.\n\nExamples:\n  mcp-chaos serve --server unguarded --addr 127.0.0.1:8080 &\n  mcp-chaos probe --url http://127.0.0.1:8080/mcp\n  mcp-chaos probe --url http://127.0.0.1:3000/mcp --header 'Authorization: Bearer TOKEN' --format markdown\n  mcp-chaos probe --url http://127.0.0.1:8080/mcp --profile keys --format json --only retry-new-id"
    )]
    Probe(crate::probe::ProbeArgs),
}

// `compare`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Directory of scenarios.
    #[arg(long, default_value = "sims")]
    pub sims: PathBuf,
    /// Seeds: A..B (B exclusive) or N for 0..N (default: $MCP_CHAOS_SEEDS, else 0..6).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Only this scenario: its name in --sims (`mcp-chaos list` shows the
    /// names) or a file's path (repeatable).
    #[arg(long = "scenario", value_name = "NAME|FILE")]
    pub only: Vec<String>,
    /// After the sweep, shrink the lowest failing seed of each
    /// scenario x arm x profile to OUT/shrunk/NAME.toml (pinned as a bug:
    /// it fails until fixed).
    #[arg(long)]
    pub shrink: bool,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub gate: GateArgs,
    /// Parallel simulations (default: the core count).
    #[arg(long, allow_negative_numbers = true, value_parser = flags::jobs)]
    pub jobs: Option<usize>,
    /// Output directory (`--out results` regenerates the committed
    /// results).
    #[arg(long, default_value = crate::compare::DEFAULT_OUT)]
    pub out: PathBuf,
    /// Also write JUnit XML here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Server arms to run, comma-separated, of {arms} (default: every arm
    /// this build runs).
    #[arg(long, value_parser = parse_arms)]
    pub servers: Option<Arms>,
    /// Client profiles to run, comma-separated: scenario (as written),
    /// plain, keys, cursors, keys+cursors, tasks, tasks+keys (default: scenario).
    #[arg(long, value_parser = parse_profiles)]
    pub clients: Option<Profiles>,
    /// Override a server setting in every run (repeatable); also
    /// `client.connections`, `client.pool_idle_ms` and any `deployment.KEY`.
    #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = run::Options::parse_set_checked)]
    pub sets: Vec<(String, String)>,
    /// Deployments to run side by side on the same seeds: override sets of
    /// [deployment] keys, ';' between sets, ',' between a set's
    /// KEY=VALUE pairs, each on top of every scenario's own [deployment]
    /// (`as-written`: the scenario's own), e.g.
    /// 'store=local;store=shared,on_dead_upstream=repin' (default: each
    /// scenario's own, unlabelled).
    #[arg(long, value_name = "KEY=VALUE,…;…", value_parser = parse_deployments)]
    pub deployments: Option<Deployments>,
    /// Run the comparison once per era, comma-separated, e.g.
    /// 2025-11-25,2026-07-28: each into a directory of --out named for it,
    /// and --out/eras.md sets them side by side (failed per 1,000 by cause
    /// for era x client profile x arm, what to deploy in each). Default:
    /// once, each scenario in its own era.
    #[arg(long, value_name = "ERA,…", value_parser = parse_eras)]
    pub eras: Option<Eras>,
    /// Swarm seeds: each seed draws which fault kinds are on and at what
    /// rates from its own child seed, within the scenario's
    /// `[faults.swarm]` (default: each generator kind on with p = 0.5, its
    /// rate in [0, 2×] the scenario's); the same as `--set swarm=on`.
    #[arg(long)]
    pub swarm: bool,
    /// Also print the coverage: which cause × arm × client profile cells
    /// the runs reached (× era and deployment where the runs differ in
    /// them), which they never reached, and the seed that first reached
    /// each; written to --out/coverage.md.
    #[arg(long)]
    pub coverage: bool,
}

/// `--eras`' value: distinct eras, in the order given.
#[derive(Clone, Debug)]
pub struct Eras(pub Vec<crate::settings::Era>);

fn parse_eras(s: &str) -> Result<Eras, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let e: crate::settings::Era = part.parse()?;
        if out.contains(&e) {
            return Err(format!("{part} twice: name each era once"));
        }
        out.push(e);
    }
    Ok(Eras(out))
}

// `sweep`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The scenario: a file's path, or the name of one in sims/.
    /// Required; checked after the numeric flags, so a bad `--seeds` is
    /// named even when it is missing.
    #[arg(long, value_name = "NAME|FILE")]
    pub scenario: Option<String>,
    /// Seeds: A..B (B exclusive) or N for 0..N (default: $MCP_CHAOS_SEEDS).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Shard K/N (1-based) of the range.
    #[arg(long)]
    pub shard: Option<String>,
    /// Summary file to write.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub gate: GateArgs,
    /// Parallel simulations (default: the core count).
    #[arg(long, allow_negative_numbers = true, value_parser = flags::jobs)]
    pub jobs: Option<usize>,
    /// Also write JUnit XML here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Server arms to run, comma-separated, of {arms} (default: every arm
    /// this build runs).
    #[arg(long, value_parser = parse_arms)]
    pub servers: Option<Arms>,
    /// Swarm seeds (see `compare --swarm`); the same as `--set swarm=on`.
    #[arg(long)]
    pub swarm: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

// `calibrate`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// A summary.json from `compare` (or a merged sweep) that ran the
    /// --model and the --sdk arm.
    #[arg(default_value = "results/summary.json")]
    pub summary: PathBuf,
    /// Where to write it.
    #[arg(long, default_value = "target/calibration.md")]
    pub out: PathBuf,
    /// The model arm, one of {arms}.
    #[arg(long, default_value = "unguarded")]
    pub model: Arm,
    /// The SDK's arm (with `rmcp`, a third column runs the model with
    /// rmcp's quirks on: `--set server.sdk=rmcp`).
    #[arg(long, default_value = "rmcp")]
    pub sdk: Arm,
    /// The scenario directory the summary's scenarios come from.
    #[arg(long, default_value = "sims")]
    pub sims: PathBuf,
}

// `scale`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ScaleArgs {
    /// Client counts, comma-separated, each 1 to 20000.
    #[arg(long, value_delimiter = ',', default_value = "1000,3000,10000",
          value_parser = flags::whole32("--clients", 1, crate::scenario::MAX_CLIENTS as u32))]
    pub clients: Vec<u32>,
    /// Client hosts the clients are spread over, 1 to the smallest
    /// client count.
    #[arg(long, default_value_t = 4, value_parser = flags::whole32("--hosts", 1, crate::scenario::MAX_CLIENTS as u32))]
    pub hosts: u32,
    /// Calls per client, 1 to 1000 (the default 20, 3 s apart, make
    /// about a minute of simulated traffic).
    #[arg(long, default_value_t = 20, value_parser = flags::whole32("--calls", 1, flags::MAX_SCALE_PER_CLIENT as u32))]
    pub calls: u32,
    /// SSE events per call, 1 to 1000.
    #[arg(long, default_value_t = 4, value_parser = flags::whole32("--chunks", 1, flags::MAX_SCALE_PER_CLIENT as u32))]
    pub chunks: u32,
    /// Time between a call's events, ms, 0 to 3600000.
    #[arg(long, default_value_t = 20, value_parser = flags::whole("--chunk-interval-ms", 0, crate::server::MAX_CHUNK_INTERVAL_MS))]
    pub chunk_interval_ms: u64,
    /// Pause between calls, ms, 0 to 86400000.
    #[arg(long, default_value_t = 3000, value_parser = flags::whole("--think-ms", 0, crate::scenario::MAX_MS))]
    pub think_ms: u64,
    /// Connection modes, comma-separated: keep-alive, per-exchange (the
    /// first is the one the fleets, the soak and the sweep run with).
    #[arg(long, value_delimiter = ',', default_value = "keep-alive,per-exchange",
          value_parser = flags::connections)]
    pub connections: Vec<bool>,
    /// Runs of each mixed fleet, 0 (no fleets) to 9 (the table reports
    /// the median).
    #[arg(long, default_value_t = 3, value_parser = flags::whole32("--fleet-runs", 0, 9))]
    pub fleet_runs: u32,
    /// Clients of the soak, 0 (no soak) to 20000: its small run makes
    /// 100,000 operations at the default 1,000 clients, its large run
    /// 1,000,000.
    #[arg(long, default_value_t = 1000, value_parser = flags::whole32("--soak-clients", 0, crate::scenario::MAX_CLIENTS as u32))]
    pub soak_clients: u32,
    /// Calls per client of the soak's small run, 1 to 100 (its large run
    /// makes ten times as many).
    #[arg(long, default_value_t = 100, value_parser = flags::whole32("--soak-calls", 1, (flags::MAX_SCALE_PER_CLIENT / 10) as u32))]
    pub soak_calls: u32,
    /// Leave out the sweep on one worker against two.
    #[arg(long)]
    pub no_jobs: bool,
    /// Also write the table (with the machine) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run one side here and print its figures as JSON (what the
    /// parent runs in each child).
    #[arg(long, hide = true)]
    pub one: Option<String>,
}

// `merge`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Summary files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged summary here (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write report.md and report.html of the merged summary into this
    /// directory (as `compare` does, without timelines: those need the
    /// runs' histories).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

// `repro`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ReproArgs {
    /// The scenario: a file's path, or the name of one in sims/.
    #[arg(long, value_name = "NAME|FILE")]
    pub scenario: String,
    /// Root seed (0 to 18446744073709551615).
    #[arg(long, allow_negative_numbers = true, value_parser = flags::seed)]
    pub seed: u64,
    /// Which server arm: {arms}.
    #[arg(long)]
    pub server: Arm,
    #[command(flatten)]
    pub run: RunArgs,
    /// Trace file (default: target/repro/SCENARIO-SEED-SERVER.jsonl).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Also write the scenario exactly as run (profile and overrides
    /// applied, the whole fault plan as explicit faults, generators off)
    /// here: `run --scenario FILE` with the same seed and server
    /// replays the same trace.
    #[arg(long, value_name = "FILE")]
    pub emit_scenario: Option<PathBuf>,
}

// `shrink`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ShrinkArgs {
    /// The scenario: a file's path, or the name of one in sims/.
    #[arg(long, value_name = "NAME|FILE")]
    pub scenario: String,
    /// Root seed of the failing run (0 to 18446744073709551615).
    #[arg(long, allow_negative_numbers = true, value_parser = flags::seed)]
    pub seed: u64,
    /// The server arm that fails: {arms}.
    #[arg(long)]
    pub server: Arm,
    #[command(flatten)]
    pub run: RunArgs,
    /// Keep the runs that show this metric above 0 (repeatable), e.g.
    /// duplicate_side_effects, whatever the scenario expects (default:
    /// keep the run's failed expectations).
    #[arg(long, value_name = "METRIC")]
    pub until: Vec<String>,
    /// Keep the runs in which at least one operation failed with this
    /// cause (metrics.failures_by_cause), e.g. gave_up, whatever the
    /// scenario expects.
    #[arg(long, value_name = "CAUSE")]
    pub until_cause: Vec<String>,
    /// Most simulations the reductions may run; the shrink prints how
    /// many it spent and keeps the smallest plan found so far when
    /// the budget runs out.
    #[arg(long, value_name = "N", default_value_t = crate::shrink::DEFAULT_MAX_RUNS,
          value_parser = flags::whole("--max-runs", 1, flags::MAX_SHRINK_RUNS))]
    pub max_runs: u64,
    /// How the file pins it: hazard (an arm expected to fail: passes
    /// while it reproduces) or bug (fails until fixed).
    #[arg(long, default_value = "hazard")]
    pub kind: RegressionKind,
    /// Where to write the shrunk scenario (default: target/shrunk/NAME.toml;
    /// move it into sims/regressions/ for the test suite to run it).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

// `list`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Directory of scenarios.
    #[arg(default_value = "sims")]
    pub dir: PathBuf,
}

// `validate`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// Files or directories.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

// `explain`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// Trace file (JSON lines).
    #[arg(long)]
    pub trace: PathBuf,
    /// Operation tag, `cCLIENT-opN` (e.g. c3-op1).
    #[arg(long)]
    pub op: String,
}

// `run`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct RunOneArgs {
    /// The scenario: a file's path, or the name of one in sims/.
    #[arg(long, value_name = "NAME|FILE")]
    pub scenario: String,
    /// Root seed (0 to 18446744073709551615).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = flags::seed)]
    pub seed: u64,
    /// Which server arm: {arms}.
    #[arg(long)]
    pub server: Arm,
    /// Write the trace as JSON lines here.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also fail (exit 1) when an operation failed, whatever the
    /// scenario's expectations allow: `ops`.
    #[arg(long, value_enum, value_name = "ops")]
    pub fail_on: Option<crate::run::gate::FailOn>,
    /// Run a scenario whose written faults start after its workload ends
    /// (a warning instead of exit 3).
    #[arg(long)]
    pub allow_late_faults: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

// `explore`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    /// The scenario: a file's path, or the name of one in sims/ (keep it
    /// small: 1-3 clients, 2-4 calls).
    #[arg(long, value_name = "NAME|FILE")]
    pub scenario: String,
    /// Which server arm: {arms}.
    #[arg(long)]
    pub server: Arm,
    /// 1: every single placement; 2: and every pair.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub depth: u8,
    /// Fault kinds to place, comma-separated, of drop, partition, restart,
    /// latency, switch, replica_crash (default: the kinds the scenario's
    /// [faults] names, else drop,partition,restart).
    #[arg(long, value_parser = crate::explore::parse_kinds)]
    pub kinds: Option<crate::explore::Kinds>,
    /// The root seed every run uses.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = flags::seed)]
    pub seed: u64,
    /// Parallel simulations (default: the core count).
    #[arg(long, allow_negative_numbers = true, value_parser = flags::jobs)]
    pub jobs: Option<usize>,
    /// Shard K/N (1-based) of the placements; `merge` joins the shards'
    /// explore.json files.
    #[arg(long)]
    pub shard: Option<String>,
    /// Refuse a space larger than this many placements (counted over
    /// every shard), found after the run without faults.
    #[arg(long, default_value_t = 100_000)]
    pub max_space: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Directory for explore.json, explore.md, explore.html and every
    /// failing placement's regression (default:
    /// target/explore/SCENARIO-SERVER).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where the smallest failing placement of each cause goes as a
    /// regression scenario (`-` for nowhere; name sims/regressions to add
    /// them to the test suite).
    #[arg(long, default_value = "target/regressions")]
    pub regressions: PathBuf,
    /// Write every failing placement's regression to --out, not only
    /// those the pages show (the first 10 of each cause).
    #[arg(long)]
    pub all_regressions: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The placeholder help texts write for the arms' names, filled from
/// [`Arm::NAMES`] so no help can name fewer arms than there are.
const ARMS: &str = "{arms}";

/// `cmd` with every help text's [`ARMS`] replaced by the arms' names,
/// subcommands included.
pub fn with_arm_names(mut cmd: clap::Command) -> clap::Command {
    let names = Arm::NAMES.join(", ");
    let fill = |s: Option<&clap::builder::StyledStr>| {
        s.map(|t| t.to_string())
            .filter(|t| t.contains(ARMS))
            .map(|t| t.replace(ARMS, &names))
    };
    if let Some(t) = fill(cmd.get_about()) {
        cmd = cmd.about(t);
    }
    if let Some(t) = fill(cmd.get_long_about()) {
        cmd = cmd.long_about(t);
    }
    let ids: Vec<clap::Id> = cmd.get_arguments().map(|a| a.get_id().clone()).collect();
    for id in ids {
        cmd = cmd.mut_arg(id, |mut a| {
            if let Some(t) = fill(a.get_help()) {
                a = a.help(t);
            }
            if let Some(t) = fill(a.get_long_help()) {
                a = a.long_help(t);
            }
            a
        });
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, with_arm_names);
    }
    cmd
}

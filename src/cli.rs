//! The command line: arguments are parsed, validated into a configuration,
//! then run; `main` maps the outcome to an exit code: 0 when every
//! expectation holds, 1 on a safety violation, 2 on a liveness failure, 3 on
//! a usage or I/O error.

use crate::flags;
use crate::guard::{Limits, PostFacts, Reason, SessionGuard, Verdict};
use crate::history::History;
use crate::ledger::Ledger;
use crate::report;
use crate::run::{self, Options, RunReport};
use crate::scenario::RegressionKind;
use crate::scenario::Scenario;
use crate::seed;
use crate::server::{self, Delivery, Exposure, Pacing, Server, ServerConfig, Variant};
use crate::sut::Arm;
use crate::sweep::{self, Control, Job, Seeds, Summary};
use anyhow::{bail, Context};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Writes to standard output; a closed pipe (`| head`) ends the program
/// quietly with 141 (as a shell reports SIGPIPE), never a panic.
macro_rules! outln {
    () => { say("\n") };
    ($($t:tt)*) => { say(&format!("{}\n", format_args!($($t)*))) };
}

/// `print!` through [`say`].
macro_rules! out {
    ($($t:tt)*) => { say(&format!($($t)*)) };
}

/// Writes to standard error, ignoring a closed one (`eprintln!` would panic).
macro_rules! errln {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}

/// Writes `text` to standard output; exits quietly (141) when the reader
/// has gone, with a one-line message (3) on any other write error.
fn say(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        errln!("mcp-chaos: cannot write to standard output: {e}");
        std::process::exit(3);
    }
}

/// Deterministic network simulator for MCP streamable-HTTP servers: virtual
/// clients under seeded faults against the server arms {arms}, each judged
/// by what its clients received.
#[derive(Parser, Debug)]
#[command(name = "mcp-chaos", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum CursorOverride {
    /// Every client presents cursors on POST (= `--clients cursors`).
    All,
}

/// What a run may change beyond the scenario file.
#[derive(clap::Args, Debug, Clone)]
struct RunArgs {
    /// Client profile for every client: plain, keys, cursors or
    /// keys+cursors (default: as the scenario says).
    #[arg(long, value_parser = parse_profile)]
    clients: Option<run::Profile>,
    /// Override a server setting for the run (repeatable), e.g.
    /// `--set server.store_capacity=64`.
    #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = run::Options::parse_set_checked)]
    sets: Vec<(String, String)>,
    /// Old spelling of `--clients cursors`.
    #[arg(long, value_enum, hide = true)]
    cursor_on_post: Option<CursorOverride>,
}

impl RunArgs {
    fn options(&self) -> anyhow::Result<Options> {
        if self.clients.is_some() && self.cursor_on_post.is_some() {
            bail!("--cursor-on-post all is --clients cursors: give one of them");
        }
        Ok(Options {
            clients: self
                .clients
                .or(self.cursor_on_post.map(|_| run::Profile::Cursors)),
            sets: self.sets.clone(),
        })
    }
}

/// How a batch is scheduled: `--fail-fast` and `--timeout`.
#[derive(clap::Args, Debug, Clone)]
struct ControlArgs {
    /// Stop scheduling new runs after the first failing run (runs already
    /// going finish; the summary holds the runs made).
    #[arg(long)]
    fail_fast: bool,
    /// Longest wall-clock time one run may take, seconds; a run past it is
    /// reported as failed with verdict "timeout" and its repro command.
    #[arg(long, value_name = "SECS", value_parser = flags::timeout)]
    timeout: Option<std::time::Duration>,
}

impl ControlArgs {
    fn control(&self) -> Control {
        Control {
            fail_fast: self.fail_fast,
            timeout: self.timeout,
        }
    }
}

fn parse_profile(s: &str) -> Result<run::Profile, String> {
    s.parse()
}

/// Server arms from `--servers` (one argument, comma-separated).
#[derive(Clone, Debug)]
struct Arms(Vec<Arm>);

/// Client profiles from `--clients` (one argument, comma-separated).
#[derive(Clone, Debug)]
struct Profiles(Vec<Option<run::Profile>>);

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
enum Cmd {
    /// Run every scenario in sims/ x seeds x server arms ({arms}) x client
    /// profiles in parallel; write summary.json, report.md (with the mechanism matrix)
    /// and report.html; print the headline.
    #[command(
        after_help = "Examples:\n  mcp-chaos compare\n  mcp-chaos compare --seeds 0..20 --servers guarded,unguarded --scenario half-open --out target/cmp\n  MCP_CHAOS_SEEDS=3 mcp-chaos compare --fail-fast --timeout 60 --shrink --out target/cmp"
    )]
    Compare {
        /// Directory of scenarios.
        #[arg(long, default_value = "sims")]
        sims: PathBuf,
        /// Seeds: A..B (B exclusive) or N for 0..N (default: $MCP_CHAOS_SEEDS, else 0..6).
        #[arg(long)]
        seeds: Option<String>,
        /// Only this scenario: its name in --sims (`mcp-chaos list` shows the
        /// names) or a file's path (repeatable).
        #[arg(long = "scenario", value_name = "NAME|FILE")]
        only: Vec<String>,
        /// After the sweep, shrink the lowest failing seed of each
        /// scenario x arm x profile to OUT/shrunk/NAME.toml (pinned as a bug:
        /// it fails until fixed).
        #[arg(long)]
        shrink: bool,
        #[command(flatten)]
        control: ControlArgs,
        /// Parallel simulations (default: the core count).
        #[arg(long, allow_negative_numbers = true, value_parser = flags::jobs)]
        jobs: Option<usize>,
        /// Output directory.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Also write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Server arms to run, comma-separated, of {arms} (default: every arm
        /// this build runs).
        #[arg(long, value_parser = parse_arms)]
        servers: Option<Arms>,
        /// Client profiles to run, comma-separated: scenario (as written),
        /// plain, keys, cursors, keys+cursors (default: scenario).
        #[arg(long, value_parser = parse_profiles)]
        clients: Option<Profiles>,
        /// Override a server setting in every run (repeatable).
        #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = run::Options::parse_set_checked)]
        sets: Vec<(String, String)>,
    },
    /// Run one scenario over a seed range (or one shard of it) under every
    /// server arm ({arms}; --servers picks some); write the summary JSON.
    #[command(
        after_help = "Examples:\n  mcp-chaos sweep --scenario sims/half-open.toml --seeds 0..100 --shard 1/4 --out target/shard1.json\n  mcp-chaos merge target/shard*.json --out target/merged.json"
    )]
    Sweep {
        /// The scenario: a file's path, or the name of one in sims/.
        /// Required; checked after the numeric flags, so a bad `--seeds` is
        /// named even when it is missing.
        #[arg(long, value_name = "NAME|FILE")]
        scenario: Option<String>,
        /// Seeds: A..B (B exclusive) or N for 0..N (default: $MCP_CHAOS_SEEDS).
        #[arg(long)]
        seeds: Option<String>,
        /// Shard K/N (1-based) of the range.
        #[arg(long)]
        shard: Option<String>,
        /// Summary file to write.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        control: ControlArgs,
        /// Parallel simulations (default: the core count).
        #[arg(long, allow_negative_numbers = true, value_parser = flags::jobs)]
        jobs: Option<usize>,
        /// Also write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Server arms to run, comma-separated, of {arms} (default: every arm
        /// this build runs).
        #[arg(long, value_parser = parse_arms)]
        servers: Option<Arms>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Write the calibration of a model arm against a real SDK's server
    /// from a comparison's summary: every scenario side by side, metric by
    /// metric. Hand-written notes below the file's notes marker are kept.
    #[command(
        after_help = "Example:\n  mcp-chaos calibrate results/summary.json --out results/calibration.md"
    )]
    Calibrate {
        /// A summary.json from `compare` (or a merged sweep) that ran the
        /// --model and the --sdk arm.
        #[arg(default_value = "results/summary.json")]
        summary: PathBuf,
        /// Where to write it.
        #[arg(long, default_value = "results/calibration.md")]
        out: PathBuf,
        /// The model arm, one of {arms}.
        #[arg(long, default_value = "unguarded")]
        model: Arm,
        /// The SDK's arm (with `rmcp`, a third column runs the model with
        /// rmcp's quirks on: `--set server.sdk=rmcp`).
        #[arg(long, default_value = "rmcp")]
        sdk: Arm,
        /// The scenario directory the summary's scenarios come from.
        #[arg(long, default_value = "sims")]
        sims: PathBuf,
    },
    /// Measure mcp-chaos against a bare turmoil + hyper program carrying
    /// the same connections and SSE events, at each client count: wall
    /// time, simulated seconds per wall second, peak memory, the ratio,
    /// and the wall-time exponent between sizes. Each side runs in its own
    /// child process.
    #[command(
        after_help = "Example:\n  mcp-chaos scale --clients 1000,10000 --out results/perf.md"
    )]
    Scale {
        /// Client counts, comma-separated, each 1 to 20000.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000",
              value_parser = flags::whole32("--clients", 1, crate::scenario::MAX_CLIENTS as u32))]
        clients: Vec<u32>,
        /// Client hosts the clients are spread over, 1 to the smallest
        /// client count.
        #[arg(long, default_value_t = 4, value_parser = flags::whole32("--hosts", 1, crate::scenario::MAX_CLIENTS as u32))]
        hosts: u32,
        /// Calls per client, 1 to 1000 (the default 20, 3 s apart, make
        /// about a minute of simulated traffic).
        #[arg(long, default_value_t = 20, value_parser = flags::whole32("--calls", 1, flags::MAX_SCALE_PER_CLIENT as u32))]
        calls: u32,
        /// SSE events per call, 1 to 1000.
        #[arg(long, default_value_t = 4, value_parser = flags::whole32("--chunks", 1, flags::MAX_SCALE_PER_CLIENT as u32))]
        chunks: u32,
        /// Time between a call's events, ms, 0 to 3600000.
        #[arg(long, default_value_t = 20, value_parser = flags::whole("--chunk-interval-ms", 0, crate::server::MAX_CHUNK_INTERVAL_MS))]
        chunk_interval_ms: u64,
        /// Pause between calls, ms, 0 to 86400000.
        #[arg(long, default_value_t = 3000, value_parser = flags::whole("--think-ms", 0, crate::scenario::MAX_MS))]
        think_ms: u64,
        /// Also write the table (with the machine) to this file.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run one side here and print its figures as JSON (what the
        /// parent runs in each child).
        #[arg(long, hide = true)]
        one: Option<String>,
    },
    /// Merge summary files (shards) into one, recomputing aggregates.
    /// Refuses summaries of another schema version and a run two files
    /// both hold.
    #[command(
        after_help = "Example:\n  mcp-chaos merge target/shard1.json target/shard2.json --out target/merged.json"
    )]
    Merge {
        /// Summary files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write the merged summary here (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print a run's every derived option and its whole fault plan, then run
    /// it with the trace on.
    #[command(
        after_help = "Example:\n  mcp-chaos repro --scenario sims/flaky-mobile.toml --seed 3 --server unguarded --emit-scenario target/flaky-3.toml\n  mcp-chaos run --scenario target/flaky-3.toml --seed 3 --server unguarded   # same trace"
    )]
    Repro {
        /// The scenario: a file's path, or the name of one in sims/.
        #[arg(long, value_name = "NAME|FILE")]
        scenario: String,
        /// Root seed (0 to 18446744073709551615).
        #[arg(long, allow_negative_numbers = true, value_parser = flags::seed)]
        seed: u64,
        /// Which server arm: {arms}.
        #[arg(long)]
        server: Arm,
        #[command(flatten)]
        run: RunArgs,
        /// Trace file (default: target/repro/SCENARIO-SEED-SERVER.jsonl).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Also write the scenario exactly as run (profile and overrides
        /// applied, the whole fault plan as explicit faults, generators off)
        /// here: `run --scenario FILE` with the same seed and server
        /// replays the same trace.
        #[arg(long, value_name = "FILE")]
        emit_scenario: Option<PathBuf>,
    },
    /// Delta-debug a run's fault plan (and clients) to a minimal one that
    /// still fails the same way, or still shows the metrics named by
    /// --until; write it as a scenario for sims/regressions/ whose
    /// [regression] table says whether it pins a hazard (passes while it
    /// reproduces) or a bug (fails until fixed).
    #[command(
        after_help = "Examples:\n  mcp-chaos shrink --until duplicate_side_effects --scenario sims/half-open.toml --seed 0 --server unguarded --out target/dups.toml\n  mcp-chaos run --scenario target/dups.toml --server unguarded   # passes while the duplicates reproduce"
    )]
    Shrink {
        /// The scenario: a file's path, or the name of one in sims/.
        #[arg(long, value_name = "NAME|FILE")]
        scenario: String,
        /// Root seed of the failing run (0 to 18446744073709551615).
        #[arg(long, allow_negative_numbers = true, value_parser = flags::seed)]
        seed: u64,
        /// The server arm that fails: {arms}.
        #[arg(long)]
        server: Arm,
        #[command(flatten)]
        run: RunArgs,
        /// Keep the runs that show this metric above 0 (repeatable), e.g.
        /// duplicate_side_effects, whatever the scenario expects (default:
        /// keep the run's failed expectations).
        #[arg(long, value_name = "METRIC")]
        until: Vec<String>,
        /// Keep the runs in which at least one operation failed with this
        /// cause (metrics.failures_by_cause), e.g. gave_up, whatever the
        /// scenario expects.
        #[arg(long, value_name = "CAUSE")]
        until_cause: Vec<String>,
        /// Most simulations the reductions may run; the shrink prints how
        /// many it spent and keeps the smallest plan found so far when
        /// the budget runs out.
        #[arg(long, value_name = "N", default_value_t = crate::shrink::DEFAULT_MAX_RUNS,
              value_parser = flags::whole("--max-runs", 1, flags::MAX_SHRINK_RUNS))]
        max_runs: u64,
        /// How the file pins it: hazard (an arm expected to fail: passes
        /// while it reproduces) or bug (fails until fixed).
        #[arg(long, default_value = "hazard")]
        kind: RegressionKind,
        /// Where to write the shrunk scenario (default: sims/regressions/NAME.toml).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print Rule M, the guard's decision table, as the guard computes it.
    #[command(after_help = "Example:\n  mcp-chaos rules")]
    Rules,
    /// List the scenarios of a directory: name, file, clients, faults, and
    /// the first line of the description.
    #[command(after_help = "Example:\n  mcp-chaos list sims/regressions")]
    List {
        /// Directory of scenarios.
        #[arg(default_value = "sims")]
        dir: PathBuf,
    },
    /// Load scenario files (or every *.toml of a directory) and check them:
    /// schema, bounds, metric names in [expect.*], and names shared by two
    /// files. Exit 3 on the first problem.
    #[command(
        after_help = "Examples:\n  mcp-chaos validate sims\n  mcp-chaos validate sims/half-open.toml target/dups.toml"
    )]
    Validate {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Print one operation's timeline from a trace written by `repro` (or
    /// `run --trace`): every record touching it, with simulated time, side
    /// and what happened, then the oracle's verdict and cause.
    #[command(
        after_help = "Example:\n  mcp-chaos repro --scenario sims/eviction.toml --seed 0 --server unguarded\n  mcp-chaos explain --trace target/repro/eviction-0-unguarded.jsonl --op c3-op1"
    )]
    Explain {
        /// Trace file (JSON lines).
        #[arg(long)]
        trace: PathBuf,
        /// Operation tag, `cCLIENT-opN` (e.g. c3-op1).
        #[arg(long)]
        op: String,
    },
    /// Run one scenario under one seed against one server.
    #[command(
        after_help = "Examples:\n  mcp-chaos run --scenario sims/half-open.toml --seed 0 --server unguarded\n  mcp-chaos run --scenario sims/half-open.toml --server guarded --clients keys+cursors --format json"
    )]
    Run {
        /// The scenario: a file's path, or the name of one in sims/.
        #[arg(long, value_name = "NAME|FILE")]
        scenario: String,
        /// Root seed (0 to 18446744073709551615).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = flags::seed)]
        seed: u64,
        /// Which server arm: {arms}.
        #[arg(long)]
        server: Arm,
        /// Write the trace as JSON lines here.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run the MCP server on a real socket (simulated time becomes real time).
    #[command(after_help = "Example:\n  mcp-chaos serve --server guarded --addr 127.0.0.1:8080")]
    Serve {
        /// Which server arm: {arms}.
        #[arg(long, default_value = "guarded")]
        server: Arm,
        /// Address to listen on, HOST:PORT (a host name is resolved:
        /// localhost:8080; port 0 to 65535, 0 picks a free one). Loopback
        /// by default: anything else exposes the server beyond this machine.
        #[arg(long, default_value = "127.0.0.1:8080", value_parser = flags::addr)]
        addr: String,
        /// Where tool-call responses go: post-stream or session-stream.
        #[arg(long, default_value = "post-stream", value_parser = parse_delivery)]
        delivery: Delivery,
        /// A browser origin allowed besides the loopback ones
        /// (scheme://host[:port]; repeatable). Requests with any other
        /// Origin get 403; requests without one are served.
        #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = server::parse_origin)]
        allow_origin: Vec<String>,
        /// A host name requests may name in `Host` besides localhost,
        /// 127.0.0.1, [::1] and the --addr host (any port; repeatable).
        /// Requests naming any other get 403 (DNS rebinding).
        #[arg(long = "allow-host", value_name = "NAME", value_parser = server::parse_host)]
        allow_host: Vec<String>,
        /// Most connections held at once, 1 to 1048576 (default: 1024, or
        /// fewer when the file-descriptor limit is lower); past it the
        /// oldest idle connection is closed, or the new one gets 503.
        #[arg(long, value_parser = flags::whole("--max-connections", 1, flags::MAX_CONNECTIONS))]
        max_connections: Option<u64>,
        /// Longest a client may take to send a request head, ms, 1 to
        /// 3600000 (also how long an idle connection is kept).
        #[arg(long, default_value_t = 10_000, value_parser = flags::whole("--header-timeout-ms", 1, flags::MAX_SERVE_TIMEOUT_MS))]
        header_timeout_ms: u64,
        /// Longest a client may take to send a request body, ms, 1 to
        /// 3600000 (past it: 408 and the connection is closed).
        #[arg(long, default_value_t = 10_000, value_parser = flags::whole("--body-timeout-ms", 1, flags::MAX_SERVE_TIMEOUT_MS))]
        body_timeout_ms: u64,
        /// A session unused this long, with no stream open, ends, seconds,
        /// 1 to 86400.
        #[arg(long, default_value_t = 600, value_parser = flags::whole("--session-idle-secs", 1, flags::MAX_SESSION_IDLE_SECS))]
        session_idle_secs: u64,
        /// Offer test fixtures beside the ledger tools: `conformance` adds
        /// what the official MCP conformance suite's server scenarios call
        /// (its test tools, resources, prompts, completion; built-in arms
        /// only). Without it: the ledger tools alone.
        #[arg(long, value_name = "SET", value_parser = |s: &str| s.parse::<server::Fixtures>())]
        fixtures: Option<server::Fixtures>,
    },
    /// Try the transport hazards against a live MCP server over real TCP
    /// (real time, not simulated); one verdict per hazard.
    #[command(
        after_help = "Exit: 0 no hazard present, 1 one or more present, 3 usage or connection error, the budget ran out before every hazard was tried, or a read limit (--max-*) was reached.\n\nProbe follows no redirect and connects only to loopback addresses (--url, --legacy-url, a legacy endpoint event) unless --allow-remote.\n\nExamples:\n  mcp-chaos serve --server unguarded --addr 127.0.0.1:8080 &\n  mcp-chaos probe --url http://127.0.0.1:8080/mcp\n  mcp-chaos probe --url http://127.0.0.1:3000/mcp --header 'Authorization: Bearer TOKEN' --format markdown\n  mcp-chaos probe --url http://127.0.0.1:8080/mcp --profile keys --format json --only retry-new-id"
    )]
    Probe(crate::probe::ProbeArgs),
}

fn parse_delivery(s: &str) -> Result<Delivery, String> {
    match s {
        "post-stream" => Ok(Delivery::PostStream),
        "session-stream" => Ok(Delivery::SessionStream),
        other => Err(format!(
            "unknown delivery {other:?}: use post-stream or session-stream"
        )),
    }
}

/// Runs the command line; returns the process exit code.
/// The placeholder help texts write for the arms' names, filled from
/// [`Arm::NAMES`] so no help can name fewer arms than there are.
const ARMS: &str = "{arms}";

/// `cmd` with every help text's [`ARMS`] replaced by the arms' names,
/// subcommands included.
fn with_arm_names(mut cmd: clap::Command) -> clap::Command {
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

/// The command line as clap reads it, help texts filled in.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    with_arm_names(Cli::command())
}

pub fn main() -> ExitCode {
    use clap::FromArgMatches;
    let parsed = command()
        .try_get_matches()
        .and_then(|mut m| Cli::from_arg_matches_mut(&mut m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // A bad value (`--jobs 0`, `--seeds` for a timeout): its one line.
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            let text = e.render().to_string();
            errln!(
                "mcp-chaos: {}",
                text.lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ")
            );
            return ExitCode::from(3);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(3);
        }
    };
    let result = match cli.cmd {
        Cmd::Compare {
            sims,
            seeds,
            only,
            shrink,
            control,
            jobs,
            out,
            junit,
            servers,
            clients,
            sets,
        } => Seeds::from_flag_or_env(seeds.as_deref(), None, Some("0..6"))
            .map_err(anyhow::Error::msg)
            .and_then(|seeds| {
                compare(
                    &sims,
                    &seeds,
                    jobs,
                    &out,
                    junit.as_deref(),
                    &Matrix {
                        arms: servers.map_or_else(Arm::all, |a| a.0),
                        profiles: clients.map_or_else(|| vec![None], |p| p.0),
                        sets,
                    },
                    &Select {
                        only,
                        control: control.control(),
                        shrink,
                    },
                )
            }),
        Cmd::Sweep {
            scenario,
            seeds,
            shard,
            out,
            control,
            jobs,
            junit,
            servers,
            run,
        } => run.options().and_then(|o| {
            let seeds = Seeds::from_flag_or_env(seeds.as_deref(), shard.as_deref(), None)
                .map_err(anyhow::Error::msg)?;
            let scenario = scenario.ok_or_else(|| {
                anyhow::anyhow!(
                    "sweep needs --scenario NAME|FILE: one scenario, by its name in sims/ or a \
                     file's path (compare runs a directory)"
                )
            })?;
            let scenario = scenario_arg(&scenario)?;
            sweep_cmd(
                &scenario,
                &seeds,
                &out,
                jobs,
                control.control(),
                junit.as_deref(),
                &Matrix {
                    arms: servers.map_or_else(Arm::all, |a| a.0),
                    profiles: vec![o.clients],
                    sets: o.sets,
                },
            )
        }),
        Cmd::Merge { files, out } => merge(&files, out.as_deref()),
        Cmd::Scale {
            clients,
            hosts,
            calls,
            chunks,
            chunk_interval_ms,
            think_ms,
            out,
            one,
        } => scale(
            &clients,
            crate::scale::Traffic {
                clients: 0,
                hosts,
                calls,
                chunks,
                chunk_interval_ms,
                think_ms,
            },
            out.as_deref(),
            one.as_deref(),
        ),
        Cmd::Calibrate {
            summary,
            out,
            model,
            sdk,
            sims,
        } => calibrate(&summary, &sims, &out, model, sdk),
        Cmd::Repro {
            scenario,
            seed,
            server,
            run,
            trace,
            emit_scenario,
        } => run.options().and_then(|o| {
            repro(
                &scenario_arg(&scenario)?,
                seed,
                server,
                &o,
                trace,
                emit_scenario.as_deref(),
            )
        }),
        Cmd::Shrink {
            scenario,
            seed,
            server,
            run,
            until,
            until_cause,
            max_runs,
            kind,
            out,
        } => run.options().and_then(|o| {
            let mut until = until;
            until.extend(until_cause.iter().map(|c| format!("failures_by_cause.{c}")));
            shrink(
                &scenario_arg(&scenario)?,
                seed,
                server,
                &o,
                &crate::shrink::Goal {
                    until,
                    kind,
                    max_runs,
                },
                out,
            )
        }),
        Cmd::Rules => {
            out!("{}", decision_table());
            Ok(0)
        }
        Cmd::List { dir } => list(&dir),
        Cmd::Validate { paths } => validate(&paths),
        Cmd::Explain { trace, op } => explain(&trace, &op),
        Cmd::Run {
            scenario,
            seed,
            server,
            trace,
            format,
            run,
        } => run.options().and_then(|o| {
            run_one(
                &scenario_arg(&scenario)?,
                seed,
                server,
                trace.as_deref(),
                format,
                &o,
            )
        }),
        Cmd::Serve {
            server,
            addr,
            delivery,
            allow_origin,
            allow_host,
            max_connections,
            header_timeout_ms,
            body_timeout_ms,
            session_idle_secs,
            fixtures,
        } => {
            let mut exposure = Exposure::served();
            exposure.fixtures = fixtures.unwrap_or_default();
            exposure.allowed_origins = Some(allow_origin);
            exposure.allowed_hosts = Some(allow_host);
            exposure.max_connections =
                Some(max_connections.map_or_else(default_max_connections, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }));
            exposure.header_timeout = Some(Duration::from_millis(header_timeout_ms));
            exposure.body_timeout = Some(Duration::from_millis(body_timeout_ms));
            exposure.session_idle = Some(Duration::from_secs(session_idle_secs));
            serve(server, &addr, delivery, exposure).map(|()| 0)
        }
        Cmd::Probe(args) => crate::probe::main(&args).map(|(report, code, warning)| {
            outln!("{report}");
            if let Some(w) = warning {
                errln!("mcp-chaos: {w}");
            }
            code
        }),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            errln!("mcp-chaos: {e:#}");
            ExitCode::from(3)
        }
    }
}

/// The file a `--scenario` value names (a path, or a name in sims/).
fn scenario_arg(value: &str) -> anyhow::Result<PathBuf> {
    crate::locate::scenario(value, Path::new("sims")).map_err(anyhow::Error::msg)
}

fn load(path: &Path) -> anyhow::Result<Scenario> {
    Ok(crate::check::load(path)?)
}

/// Every scenario of a directory, loaded, as (file, scenario); two files
/// with one name are refused (a name identifies a scenario's runs in
/// summaries, reports and JUnit).
fn load_dir(dir: &Path) -> anyhow::Result<Vec<(String, Scenario)>> {
    let mut files = Vec::new();
    for p in scenario_files(dir)? {
        files.push((p.display().to_string(), load(&p)?));
    }
    refuse_shared_names(&files)?;
    Ok(files)
}

fn refuse_shared_names(files: &[(String, Scenario)]) -> anyhow::Result<()> {
    let mut seen: std::collections::BTreeMap<&str, &str> = Default::default();
    for (path, s) in files {
        if let Some(first) = seen.insert(&s.name, path) {
            bail!(
                "{first} and {path} both name their scenario {:?}: names identify runs in \
                 summaries and reports, rename one",
                s.name
            );
        }
    }
    Ok(())
}

/// `list DIR`: one line per scenario.
fn list(dir: &Path) -> anyhow::Result<u8> {
    let files = load_dir(dir)?;
    let rows: Vec<[String; 5]> = files
        .iter()
        .map(|(path, s)| {
            [
                s.name.clone(),
                path.clone(),
                s.client_count().to_string(),
                faults_summary(s),
                s.description.lines().next().unwrap_or("").to_string(),
            ]
        })
        .collect();
    let head = ["name", "file", "clients", "faults", "description"];
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 4 {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        l.trim_end().to_string()
    };
    outln!("{}", line(head));
    for r in &rows {
        outln!("{}", line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    Ok(0)
}

/// A scenario's faults in a few words: generators and explicit faults by kind.
fn faults_summary(s: &Scenario) -> String {
    let f = &s.faults;
    let mut parts = Vec::new();
    if f.drop_rate > 0.0 {
        parts.push(format!("drop_rate {}", f.drop_rate));
    }
    for (n, what) in [
        (f.partitions, "partitions"),
        (f.restarts, "restarts"),
        (f.latency_spikes, "latency spikes"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let mut explicit: std::collections::BTreeMap<&str, u32> = Default::default();
    for x in &f.explicit {
        *explicit.entry(crate::fault::kind_name(x)).or_insert(0) += 1;
    }
    for (k, n) in explicit {
        parts.push(format!("explicit {k} x{n}"));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// `validate FILES|DIR`: load each (schema, bounds, metric names), refuse
/// shared names.
fn validate(paths: &[PathBuf]) -> anyhow::Result<u8> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            for f in scenario_files(p)? {
                files.push((f.display().to_string(), load(&f)?));
            }
        } else {
            files.push((p.display().to_string(), load(p)?));
        }
    }
    refuse_shared_names(&files)?;
    for (path, s) in &files {
        let pin = s.regression.as_ref().map_or(String::new(), |r| {
            format!(
                " (regression: {} on {}: {})",
                r.kind.as_str(),
                r.server,
                r.metrics.join(", ")
            )
        });
        outln!("ok {path}: {}{pin}", s.name);
    }
    outln!("{} scenario(s) valid", files.len());
    Ok(0)
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}: check the --out path", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write {}: check the path and permissions",
            path.display()
        )
    })
}

/// Runs one scenario; returns the run's exit code.
fn run_one(
    path: &Path,
    seed: u64,
    variant: Arm,
    trace: Option<&Path>,
    format: Format,
    opts: &Options,
) -> anyhow::Result<u8> {
    let scenario = load(path)?;
    check_options(&path.display().to_string(), &scenario, opts)?;
    let repro = run::repro_command(&path.display().to_string(), seed, variant, opts);
    let (report, history) = run::run_arm(&scenario, seed, variant, opts)
        .map_err(|e| anyhow::anyhow!("{e}\nreproduce with: {repro}"))?;
    if let Some(t) = trace {
        if let Some(dir) = t.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let f = std::fs::File::create(t)
            .with_context(|| format!("cannot write --trace {}", t.display()))?;
        crate::explain::write_trace(
            std::io::BufWriter::new(f),
            &history,
            &report.operations,
            &report.verdict,
        )
        .with_context(|| format!("writing --trace {}", t.display()))?;
    }
    match format {
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serializes")
        ),
        Format::Text => out!("{}", text_report(&report, &scenario)),
    }
    // A fault the file writes and the run ended before is a plan that
    // tests less than it says: said on stderr whatever the format.
    for n in &report.faults.not_applied {
        if scenario.faults.explicit.contains(&n.fault) {
            if let Some(said) = crate::never_applied::sentence(n, report.sim_ms, Some(&scenario)) {
                errln!("mcp-chaos: warning: {said}");
            }
        }
    }
    if let Some(line) = regression_line(&scenario, &report) {
        errln!("{line}");
    }
    if report.failed() {
        errln!(
            "mcp-chaos: {} ({}) for {} on the {} server, seed {seed}:",
            if report.verdict == "safety" {
                "safety violation"
            } else {
                "liveness failure"
            },
            report.failed_expectations.len(),
            report.scenario,
            report.server
        );
        for f in &report.failed_expectations {
            errln!("  - {f}");
        }
        if !report.clients_finished {
            errln!("  - clients still running when the heal phase ended");
        }
        errln!("reproduce with: {repro}");
    }
    Ok(report.exit_code())
}

/// For a run of a regression file on its arm: whether what it pins still
/// reproduces, and what that means for its kind.
fn regression_line(s: &Scenario, r: &RunReport) -> Option<String> {
    let reg = s.regression.as_ref().filter(|g| g.server == r.server)?;
    let shows = reg
        .metrics
        .iter()
        .all(|m| r.metrics.get(m).is_some_and(|v| v > 0));
    let what = reg.metrics.join(", ");
    Some(match (reg.kind, shows) {
        (RegressionKind::Hazard, true) => {
            format!("regression (hazard): {what} still reproduces: passes, as a hazard should")
        }
        (RegressionKind::Hazard, false) => format!(
            "regression (hazard): {what} no longer reproduces: its expectations break (the arm changed? re-shrink or retire the file)"
        ),
        (RegressionKind::Bug, true) => {
            format!("regression (bug): {what} still reproduces: its expectations break until fixed")
        }
        (RegressionKind::Bug, false) => {
            format!("regression (bug): {what} no longer reproduces: fixed, passes")
        }
    })
}

/// The run in one sentence of the report's words: a run passes when its
/// expectations hold; its operations are ok, degraded or failed.
fn run_outcome(r: &RunReport) -> String {
    let m = &r.metrics;
    let verdict = match r.verdict.as_str() {
        "pass" => "the run passes: its expectations hold".to_string(),
        run::NOT_APPLICABLE => {
            "not applicable: the arm could serve none of its clients".to_string()
        }
        kind => format!(
            "its expectations break ({kind}): {}",
            r.failed_expectations.join("; ")
        ),
    };
    format!(
        "{verdict}; operations: {} ok, {} degraded, {} failed of {}",
        m.ops_ok, m.ops_degraded, m.ops_failed, m.operations
    )
}

fn text_report(r: &RunReport, scenario: &Scenario) -> String {
    let mut out = format!(
        "{} · seed {} · {} server · {} ms simulated · {} records · trace {}\n{}\n",
        r.scenario,
        r.seed,
        r.server,
        r.sim_ms,
        r.records,
        &r.trace_sha256[..16],
        run_outcome(r)
    );
    for name in crate::report::SHOWN {
        if let Some(v) = r.metrics.get(name) {
            out.push_str(&format!("  {name:<24} {v}\n"));
        }
    }
    out.push_str(&format!(
        "  {:<24} {}\n",
        "failed by cause",
        crate::report::causes_line(&r.metrics)
    ));
    let l = &r.metrics.migration_latency_us;
    out.push_str(&format!(
        "  {:<24} n={} p50={} p90={} p99={} max={}\n",
        "migration_latency_us", l.count, l.p50, l.p90, l.p99, l.max
    ));
    out.push_str(&format!(
        "  faults planned {:?} applied {:?}\n",
        r.faults.planned, r.faults.applied
    ));
    // A large fleet can leave thousands unapplied: the text shows the first
    // few; `--format json` lists them all.
    const SHOWN: usize = 20;
    for n in r.faults.not_applied.iter().take(SHOWN) {
        match crate::never_applied::sentence(n, r.sim_ms, Some(scenario)) {
            Some(said) => out.push_str(&format!("  not applied: {said}\n")),
            None => {
                let fault = serde_json::to_string(&n.fault).expect("faults serialize");
                out.push_str(&format!("  not applied: {fault}: {}\n", n.reason));
            }
        }
    }
    if r.faults.not_applied.len() > SHOWN {
        out.push_str(&format!(
            "  not applied: {} more (all of them with --format json)\n",
            r.faults.not_applied.len() - SHOWN
        ));
    }
    out
}

/// The scenario files of a directory (not its subdirectories), by name.
pub fn scenario_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).with_context(|| {
        format!(
            "cannot read scenario directory {}: pass --sims DIR",
            dir.display()
        )
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "no scenarios (*.toml) in {}: add one or pass --sims DIR",
            dir.display()
        );
    }
    Ok(files)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs jobs with a progress bar on a terminal, plain lines otherwise.
fn execute(jobs: &[Job], workers: usize, control: Control) -> anyhow::Result<Summary> {
    let tty = std::io::stderr().is_terminal();
    let bar = tty.then(|| {
        let b = indicatif::ProgressBar::new(jobs.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
                .expect("a valid template"),
        );
        b
    });
    let progress = |done: usize, total: usize, job: &Job, r: &Result<RunReport, String>| {
        let verdict = match r {
            Ok(r) if r.verdict == "pass" => "passes".to_string(),
            Ok(r) if r.verdict == run::NOT_APPLICABLE => r.verdict.clone(),
            Ok(r) => format!("expectations break ({})", r.verdict),
            Err(_) => "error".into(),
        };
        let line = format!(
            "{} seed {} {}: {verdict}",
            job.scenario.name,
            job.seed,
            job.variant.as_str()
        );
        match &bar {
            Some(b) => {
                b.set_position(done as u64);
                b.set_message(line);
            }
            None => errln!("[{done}/{total}] {line}"),
        }
    };
    let results = sweep::run_all(jobs, workers, control, &progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let made = results.iter().filter(|r| r.is_some()).count();
    if made < jobs.len() {
        errln!(
            "mcp-chaos: --fail-fast: stopped after the first failing run: {made} of {} runs made, \
             the summary holds only those",
            jobs.len()
        );
    }
    let mut runs = Vec::new();
    for r in results.into_iter().flatten() {
        runs.push(r.map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    Ok(Summary::from_runs(runs))
}

/// The runs a comparison or sweep makes of each scenario and seed: every
/// arm under every client profile, with the same overrides.
struct Matrix {
    arms: Vec<Arm>,
    profiles: Vec<Option<run::Profile>>,
    sets: Vec<(String, String)>,
}

impl Matrix {
    /// The jobs of one scenario file over `seeds`.
    fn jobs(&self, path: &str, scenario: &Scenario, seeds: &[u64]) -> Vec<Job> {
        let mut out = Vec::new();
        let (path, scenario) = (
            std::sync::Arc::<str>::from(path),
            std::sync::Arc::new(scenario.clone()),
        );
        for &seed in seeds {
            for &profile in &self.profiles {
                for &variant in &self.arms {
                    out.push(Job {
                        path: path.clone(),
                        scenario: scenario.clone(),
                        seed,
                        variant,
                        opts: Options {
                            clients: profile,
                            sets: self.sets.clone(),
                        },
                    });
                }
            }
        }
        out
    }

    /// Refuses, before anything runs, a profile or override that does not
    /// apply to `scenario` (e.g. `--set server.write_deadline_ms=0`): one
    /// line naming the file and the setting.
    fn check(&self, path: &str, scenario: &Scenario) -> anyhow::Result<()> {
        for &clients in &self.profiles {
            let opts = Options {
                clients,
                sets: self.sets.clone(),
            };
            check_options(path, scenario, &opts)?;
        }
        Ok(())
    }

    /// The provenance of this matrix run over `seeds` of `files`, with
    /// this process's command line.
    fn provenance(&self, seeds: &Seeds, files: &[(String, Scenario)]) -> sweep::Provenance {
        report::provenance(
            std::env::args().collect(),
            (seeds.start, seeds.end),
            self.arms.iter().map(|a| a.as_str().to_string()).collect(),
            self.profile_names(),
            files,
        )
    }

    /// The client profiles' names (`scenario`: as written).
    fn profile_names(&self) -> Vec<String> {
        self.profiles
            .iter()
            .map(|p| p.map_or(run::AS_WRITTEN, run::Profile::as_str).to_string())
            .collect()
    }

    /// "3 arms x 2 profiles" for progress lines.
    fn describe(&self) -> String {
        format!(
            "{} arm(s) ({}) x {} client profile(s) ({})",
            self.arms.len(),
            self.arms
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(","),
            self.profiles.len(),
            self.profiles
                .iter()
                .map(|p| p.map_or(run::AS_WRITTEN, run::Profile::as_str))
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

/// The scenario at `path` as `opts` make it, or why they do not apply.
fn check_options(path: &str, scenario: &Scenario, opts: &Options) -> anyhow::Result<()> {
    let flags = opts.flags();
    let with = if flags.is_empty() { "" } else { " with" };
    run::effective(scenario, opts)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("scenario {path}{with}{flags}: {e}"))
}

fn repro_for(files: &[(String, Scenario)]) -> impl Fn(&RunReport) -> String + '_ {
    move |r: &RunReport| {
        let path = files
            .iter()
            .find(|(_, s)| s.name == r.scenario)
            .map_or("sims/?.toml", |(p, _)| p.as_str());
        let v = r.server.parse().unwrap_or(Arm::BuiltIn(Variant::Guarded));
        run::repro_command(path, r.seed, v, &r.options())
    }
}

fn finish(
    summary: &Summary,
    files: &[(String, Scenario)],
    junit: Option<&Path>,
) -> anyhow::Result<u8> {
    if let Some(j) = junit {
        write(j, &report::junit(summary, &repro_for(files)))?;
    }
    let repro = repro_for(files);
    for r in summary.runs.iter().filter(|r| r.failed()) {
        let pinned = files
            .iter()
            .find(|(_, s)| s.name == r.scenario)
            .and_then(|(_, s)| regression_line(s, r))
            .map_or(String::new(), |l| format!("\n  {l}"));
        errln!(
            "mcp-chaos: {} {} (clients: {}) seed {}: expectations break ({}): {}{pinned}\n  reproduce with: {}",
            r.scenario,
            r.server,
            r.clients,
            r.seed,
            r.verdict,
            r.failed_expectations.join("; "),
            repro(r)
        );
    }
    Ok(summary.exit_code())
}

/// Which scenarios a comparison runs and how: `--scenario`, `--fail-fast`,
/// `--timeout`, `--shrink`.
struct Select {
    only: Vec<String>,
    control: Control,
    shrink: bool,
}

#[allow(clippy::too_many_arguments)]
fn compare(
    dir: &Path,
    seeds: &Seeds,
    jobs: Option<usize>,
    out: &Path,
    junit: Option<&Path>,
    matrix: &Matrix,
    select: &Select,
) -> anyhow::Result<u8> {
    // The whole directory loads first, as without --scenario: a name two
    // of its files share is refused whichever is asked for.
    let all = load_dir(dir)?;
    let files = if select.only.is_empty() {
        all
    } else {
        // Each a name in `dir` or a file's path; a file named twice runs once.
        let mut paths: Vec<PathBuf> = Vec::new();
        let mut seen = Vec::new();
        for value in &select.only {
            let p = crate::locate::scenario(value, dir).map_err(anyhow::Error::msg)?;
            let same = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
            if !seen.contains(&same) {
                seen.push(same);
                paths.push(p);
            }
        }
        let mut files = Vec::new();
        for p in paths {
            files.push((p.display().to_string(), load(&p)?));
        }
        refuse_shared_names(&files)?;
        files
    };
    for (path, scenario) in &files {
        matrix.check(path, scenario)?;
    }
    let seed_list = seeds.list();
    let mut work = Vec::new();
    for (path, scenario) in &files {
        work.extend(matrix.jobs(path, scenario, &seed_list));
    }
    let workers = jobs.unwrap_or_else(cores);
    errln!(
        "mcp-chaos compare: {} scenarios x seeds {} x {} = {} runs on {workers} workers",
        files.len(),
        seeds.range(),
        matrix.describe(),
        work.len()
    );
    let started = std::time::Instant::now();
    let mut summary = execute(&work, workers, select.control)?;
    summary.provenance = matrix.provenance(seeds, &files);
    // What differs between two runs of the same comparison (the command's
    // spelling, the commit, wall-clock times) goes to an ignored file, so
    // the committed outputs stay byte for byte what the options make.
    let mut meta = report::Meta::take(
        &mut summary,
        std::env::args().collect(),
        canonical_compare(dir, seeds, out, matrix, select),
    );
    if select.shrink {
        shrink_failures(&summary, &files, out)?;
    }
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    report::write_reports(out, &summary, &files)?;
    meta.wall_s = started.elapsed().as_secs_f64();
    let meta_path = out.join("compare-meta.json");
    write(
        &meta_path,
        &serde_json::to_string_pretty(&meta).expect("meta serializes"),
    )?;
    outln!(
        "{}",
        report::recommend::text(&summary, &report::Beside::under(out))
    );
    outln!("{}", report::headline(&summary));
    warn_uncovered(&summary, &files);
    outln!(
        "wrote {}, {} and {} in {:.0} s (command, commit and timings: {}, not committed)",
        out.join("summary.json").display(),
        out.join("report.md").display(),
        out.join("report.html").display(),
        meta.wall_s,
        meta_path.display()
    );
    finish(&summary, &files, junit)
}

/// The comparison's command with every choice spelled out the one way
/// (`--seeds A..B`, arms and profiles only when not the defaults), so two
/// spellings of one comparison record the same provenance.
fn canonical_compare(
    dir: &Path,
    seeds: &Seeds,
    out: &Path,
    matrix: &Matrix,
    select: &Select,
) -> Vec<String> {
    let mut c: Vec<String> = vec!["mcp-chaos".into(), "compare".into()];
    let mut flag = |k: &str, v: String| {
        c.push(k.to_string());
        c.push(v);
    };
    if dir != Path::new("sims") {
        flag("--sims", dir.display().to_string());
    }
    flag("--seeds", seeds.range());
    for name in &select.only {
        flag("--scenario", name.clone());
    }
    if matrix.arms != Arm::all() {
        flag(
            "--servers",
            matrix
                .arms
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    if matrix.profiles != [None] {
        flag("--clients", matrix.profile_names().join(","));
    }
    for (k, v) in &matrix.sets {
        flag("--set", format!("{k}={v}"));
    }
    if out != Path::new("results") {
        flag("--out", out.display().to_string());
    }
    if select.shrink {
        c.push("--shrink".into());
    }
    c
}

/// Flags scenarios whose declared hazards no run exercised, saying when
/// the runs ended before the faults meant to exercise them.
fn warn_uncovered(summary: &Summary, files: &[(String, Scenario)]) {
    let scenario = |name: &str| {
        files
            .iter()
            .find(|(_, s)| s.name == name)
            .map(|(_, s)| s.clone())
    };
    for w in crate::never_applied::uncovered_warnings(summary, scenario) {
        errln!("warning: {w}");
    }
}

fn sweep_cmd(
    path: &Path,
    seeds: &Seeds,
    out: &Path,
    jobs: Option<usize>,
    control: Control,
    junit: Option<&Path>,
    matrix: &Matrix,
) -> anyhow::Result<u8> {
    let scenario = load(path)?;
    matrix.check(&path.display().to_string(), &scenario)?;
    let files = vec![(path.display().to_string(), scenario.clone())];
    let work = matrix.jobs(&path.display().to_string(), &scenario, &seeds.list());
    let mut summary = execute(&work, jobs.unwrap_or_else(cores), control)?;
    // What `merge` checks shards against: the scenario file's hash, the
    // range, the arms and profiles.
    summary.provenance = matrix.provenance(seeds, &files);
    write(
        out,
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    outln!("{}", report::headline(&summary));
    warn_uncovered(&summary, &files);
    finish(&summary, &files, junit)
}

fn calibrate(summary: &Path, sims: &Path, out: &Path, model: Arm, sdk: Arm) -> anyhow::Result<u8> {
    let s = read_summary(summary, "mcp-chaos compare")?;
    // The model with the SDK's quirks on (the `sdk = "rmcp"` preset), on
    // the summary's scenarios and seeds, for the third column.
    let quirks = if sdk == Arm::Rmcp {
        let seeds: Vec<u64> = {
            let mut v: Vec<u64> = s.runs.iter().map(|r| r.seed).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let matrix = Matrix {
            arms: vec![model],
            profiles: vec![None],
            sets: vec![("server.sdk".to_string(), "rmcp".to_string())],
        };
        let mut work = Vec::new();
        for (p, sc) in load_dir(sims)? {
            if s.runs.iter().any(|r| r.scenario == sc.name) {
                work.extend(matrix.jobs(&p, &sc, &seeds));
            }
        }
        errln!(
            "mcp-chaos calibrate: {} runs of {model} with sdk = \"rmcp\"",
            work.len()
        );
        Some(execute(&work, cores(), Control::default())?)
    } else {
        None
    };
    let old = std::fs::read_to_string(out).unwrap_or_default();
    let notes = report::calibration_notes(&old);
    let Some(text) = report::calibration(
        &s,
        model.as_str(),
        sdk.as_str(),
        quirks.as_ref().map(|q| ("sdk = \"rmcp\"", q)),
        notes,
    ) else {
        bail!(
            "{} has no runs of both {model} and {sdk}: run `mcp-chaos compare --servers {model},{sdk}`",
            summary.display()
        );
    };
    write(out, &text)?;
    errln!("mcp-chaos: wrote {}", out.display());
    Ok(0)
}

fn scale(
    sizes: &[u32],
    base: crate::scale::Traffic,
    out: Option<&Path>,
    one: Option<&str>,
) -> anyhow::Result<u8> {
    use crate::scale::{measure, Figures, Traffic};
    if base.hosts == 0 {
        bail!("--hosts must be at least 1");
    }
    if let Some(side) = one {
        let t = Traffic {
            clients: *sizes.first().context("--clients names no size")?,
            ..base
        };
        let f = measure(side, t).map_err(anyhow::Error::msg)?;
        outln!("{}", serde_json::to_string(&f).expect("figures serialize"));
        return Ok(0);
    }
    if sizes.is_empty() || sizes.contains(&0) {
        bail!("--clients needs sizes of at least 1, e.g. --clients 1000,10000");
    }
    // Every size checked before the first side runs: the baseline would
    // run what the simulator's loader refuses.
    let smallest = sizes.iter().copied().min().unwrap_or(1);
    if base.hosts > smallest {
        bail!(
            "--hosts {} is above the smallest --clients size {smallest}: a host without a \
             client runs nothing; use at most {smallest} hosts",
            base.hosts
        );
    }
    for &n in sizes {
        crate::scale::scenario(Traffic { clients: n, ..base })
            .map_err(|e| anyhow::anyhow!("scale --clients {n}: {e}"))?;
    }
    let exe = std::env::current_exe().context("finding this program to run each side")?;
    let mut rows: Vec<(u32, Figures, Figures)> = Vec::new();
    for &n in sizes {
        let b = side_figures(&exe, "baseline", n, base)?;
        let c = side_figures(&exe, "mcp-chaos", n, base)?;
        rows.push((n, b, c));
    }
    let mut table = format!(
        "{} client hosts, {} calls per client of {} SSE events {} ms apart, {} ms think time, \
         no faults; one connection per exchange.\n\n\
         | clients | side | wall s | simulated s | sim s / wall s | peak MB | wall ratio | memory ratio |\n\
         |---|---|---|---|---|---|---|---|\n",
        base.hosts, base.calls, base.chunks, base.chunk_interval_ms, base.think_ms
    );
    for (n, b, c) in &rows {
        for f in [b, c] {
            let (wr, mr) = if f.side == "baseline" {
                ("1".to_string(), "1".to_string())
            } else {
                (
                    format!("{:.2}", f.wall_s / b.wall_s.max(1e-9)),
                    format!("{:.2}", f.peak_mb / b.peak_mb.max(1e-9)),
                )
            };
            table.push_str(&format!(
                "| {n} | {} | {:.2} | {:.1} | {:.1} | {:.0} | {wr} | {mr} |\n",
                f.side,
                f.wall_s,
                f.sim_s,
                f.speed(),
                f.peak_mb
            ));
        }
    }
    let fleet = side_figures(&exe, "mixed-fleet", 0, base)?;
    table.push_str(&format!(
        "\nmixed-fleet (sims/mixed-fleet.toml, guarded, seed 0: {} operations, faults on): \
         {:.1} simulated s in {:.2} s wall, {:.0}x real time, peak {:.0} MB.\n",
        fleet.work,
        fleet.sim_s,
        fleet.wall_s,
        fleet.speed(),
        fleet.peak_mb
    ));
    let mut exponent = None;
    if let [(n1, b1, c1), .., (n2, b2, c2)] = rows.as_slice() {
        let k = |w1: f64, w2: f64| (w2 / w1).ln() / (f64::from(*n2) / f64::from(*n1)).ln();
        exponent = Some(k(c1.wall_s, c2.wall_s));
        table.push_str(&format!(
            "\nWall-time exponent from {n1} to {n2} clients: baseline {:.2}, mcp-chaos {:.2}.\n",
            k(b1.wall_s, b2.wall_s),
            k(c1.wall_s, c2.wall_s)
        ));
    }
    if let Some((n, b, c)) = rows.last() {
        table.push_str(&format!(
            "\nTargets ({n} clients for the sizes):\n\n| what | target | measured | met |\n|---|---|---|---|\n"
        ));
        for t in crate::scale::targets((b, c), exponent, &fleet) {
            table.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                t.what,
                t.target,
                t.measured,
                if t.met { "yes" } else { "**no**" }
            ));
        }
    }
    outln!("{table}");
    if let Some(p) = out {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let notes = std::fs::read_to_string(p)
            .ok()
            .and_then(|old| report::calibration_notes(&old).map(str::to_string));
        let notes = notes.unwrap_or_else(|| report::NOTES_MARKER.to_string());
        write(
            p,
            &format!(
                "# Scale: mcp-chaos against a bare turmoil + hyper program\n\n\
                 Machine: {cpu}, {} cores visible (each side runs on one). Written by \
                 `mcp-chaos scale`; one run, wall-clock figures on a shared machine.\n\n{table}\n{notes}\n",
                cores()
            ),
        )?;
    }
    Ok(0)
}

/// Runs one side of the scale bench in a child process (so that its peak
/// memory is its own) and reads its figures.
fn side_figures(
    exe: &Path,
    name: &str,
    n: u32,
    base: crate::scale::Traffic,
) -> anyhow::Result<crate::scale::Figures> {
    errln!("mcp-chaos scale: {n} clients, {name}");
    let o = std::process::Command::new(exe)
        // The mixed-fleet side runs its own 264 clients (n = 0); --clients
        // still takes a valid size.
        .args(["scale", "--one", name, "--clients", &n.max(1).to_string()])
        .args(["--hosts", &base.hosts.to_string()])
        .args(["--calls", &base.calls.to_string()])
        .args(["--chunks", &base.chunks.to_string()])
        .args(["--chunk-interval-ms", &base.chunk_interval_ms.to_string()])
        .args(["--think-ms", &base.think_ms.to_string()])
        .output()
        .context("running a side")?;
    if !o.status.success() {
        bail!(
            "the {name} side at {n} clients failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    serde_json::from_slice(&o.stdout).context("reading a side's figures")
}

/// A summary file, or an error naming it and the command (`how`) that
/// writes one.
fn read_summary(path: &Path, how: &str) -> anyhow::Result<Summary> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read summary {}: write one with `{how}`",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a mcp-chaos summary (write one with `{how}`)",
            path.display()
        )
    })
}

fn merge(files: &[PathBuf], out: Option<&Path>) -> anyhow::Result<u8> {
    let mut parts = Vec::new();
    for f in files {
        parts.push(read_summary(f, "mcp-chaos sweep --out FILE")?);
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut merged = Summary::merge(parts, &names).map_err(anyhow::Error::msg)?;
    if !merged.provenance.scenarios.is_empty() {
        merged.provenance.command = std::env::args().collect();
    }
    let text = serde_json::to_string_pretty(&merged).expect("summary serializes");
    match out {
        Some(p) => {
            write(p, &text)?;
            outln!("{}", report::headline(&merged));
        }
        None => outln!("{text}"),
    }
    Ok(merged.exit_code())
}

fn repro(
    path: &Path,
    seed: u64,
    variant: Arm,
    opts: &Options,
    trace: Option<PathBuf>,
    emit: Option<&Path>,
) -> anyhow::Result<u8> {
    let scenario = load(path)?;
    let effective = run::effective(&scenario, opts).map_err(anyhow::Error::msg)?;
    let as_run = crate::shrink::as_run(&effective, seed);
    outln!(
        "# mcp-chaos repro: {} seed {seed} server {} clients {}{}",
        scenario.name,
        variant.as_str(),
        opts.clients_label(),
        opts.flags()
    );
    outln!(
        "# child seeds: faults={} turmoil={} client-start={} server-sessions/0={}",
        seed::child(seed, "faults"),
        seed::child(seed, "turmoil"),
        seed::child(seed, "client-start"),
        seed::child(seed, "server-sessions/0")
    );
    let text = toml::to_string(&as_run).context("printing the scenario")?;
    outln!(
        "# the scenario as run (every derived option; the whole fault plan, {} faults, \
         as explicit faults with the generators off):\n",
        as_run.faults.explicit.len()
    );
    outln!("{text}");
    if let Some(f) = emit {
        let header = format!(
            "# {}\n# Written by `mcp-chaos repro --scenario {} --seed {seed} --server {}{} \
             --emit-scenario {}`:\n# the scenario as run, its fault plan explicit; replay with \
             `mcp-chaos run --scenario {} --seed {seed} --server {}`.\n",
            as_run.description.lines().next().unwrap_or(""),
            path.display(),
            variant.as_str(),
            opts.flags(),
            f.display(),
            f.display(),
            variant.as_str()
        );
        write(f, &format!("{header}{text}"))?;
        errln!("mcp-chaos: wrote {}", f.display());
    }
    let trace = trace.unwrap_or_else(|| {
        PathBuf::from(format!(
            "target/repro/{}-{seed}-{}.jsonl",
            scenario.name,
            variant.as_str()
        ))
    });
    let code = run_one(path, seed, variant, Some(&trace), Format::Text, opts)?;
    outln!("trace: {}", trace.display());
    Ok(code)
}

/// What a shrunk scenario's `[regression]` promises, one line.
fn promise(s: &Scenario, seed: u64) -> String {
    match &s.regression {
        Some(r) => match r.kind {
            RegressionKind::Hazard => format!(
                "a hazard: seed {seed} on {} passes while it still shows {} (and its expectations break once it no longer does)",
                r.server,
                r.metrics.join(", ")
            ),
            RegressionKind::Bug => format!(
                "a bug: seed {seed} on {}: its expectations break while it shows {} (until fixed)",
                r.server,
                r.metrics.join(", ")
            ),
        },
        None => format!("seed {seed}: its expectations pin the failure"),
    }
}

/// `explain`: one operation's timeline from a trace.
fn explain(trace: &Path, op: &str) -> anyhow::Result<u8> {
    out!(
        "{}",
        crate::explain::explain(trace, op).map_err(anyhow::Error::msg)?
    );
    Ok(0)
}

fn shrink(
    path: &Path,
    seed: u64,
    variant: Arm,
    opts: &Options,
    goal: &crate::shrink::Goal,
    out: Option<PathBuf>,
) -> anyhow::Result<u8> {
    // The profile and overrides are baked into the shrunk scenario, so it
    // replays alone.
    let scenario = run::effective(&load(path)?, opts).map_err(anyhow::Error::msg)?;
    let mut flags = opts.flags();
    for m in &goal.until {
        flags.push_str(&format!(" --until {m}"));
    }
    flags.push_str(&format!(" --kind {}", goal.kind.as_str()));
    if goal.max_runs != crate::shrink::DEFAULT_MAX_RUNS {
        flags.push_str(&format!(" --max-runs {}", goal.max_runs));
    }
    let command = format!(
        "mcp-chaos shrink --scenario {} --seed {seed} --server {}{flags}",
        path.display(),
        variant.as_str()
    );
    let (out, found) = shrink_one(&scenario, seed, variant, goal, out, &command, None)?;
    outln!(
        "shrunk {} faults to {}, {} clients to {} and {} calls to {} in {} runs (budget {}{}), \
         preserving {:?}; wrote {} ({}; check with `mcp-chaos run --scenario {} --seed {seed} \
         --server {}`)",
        found.faults_before,
        found.faults_after,
        found.clients.0,
        found.clients.1,
        found.calls.0,
        found.calls.1,
        found.runs,
        found.max_runs,
        if found.exhausted {
            ", spent: a larger --max-runs may shrink further"
        } else {
            ""
        },
        found.metrics,
        out.display(),
        promise(&found.scenario, seed),
        out.display(),
        variant.as_str()
    );
    Ok(0)
}

/// Shrinks one run and writes the scenario (default:
/// sims/regressions/NAME.toml); notes dropped bounds on stderr.
fn shrink_one(
    scenario: &Scenario,
    seed: u64,
    variant: Arm,
    goal: &crate::shrink::Goal,
    out: Option<PathBuf>,
    command: &str,
    name: Option<String>,
) -> anyhow::Result<(PathBuf, crate::shrink::Shrunk)> {
    let mut found =
        crate::shrink::shrink_to(scenario, seed, variant, goal).map_err(anyhow::Error::msg)?;
    if let Some(n) = name {
        found.scenario.name = n;
    }
    let out = out
        .unwrap_or_else(|| PathBuf::from(format!("sims/regressions/{}.toml", found.scenario.name)));
    let text = format!(
        "# {}\n# Written by `{command}`.\n# Pins {}.\n{}",
        found.scenario.description,
        promise(&found.scenario, seed),
        toml::to_string(&found.scenario).context("printing the scenario")?
    );
    write(&out, &text)?;
    for p in &found.pruned {
        errln!(
            "mcp-chaos: {}: dropped a bound that fails on the shrunk scenario: {p}",
            out.display()
        );
    }
    Ok((out, found))
}

/// `compare --shrink`: the lowest failing seed of each scenario x arm x
/// profile (overrides included), shrunk to OUT/shrunk/NAME.toml and pinned
/// as a bug (the comparison expected it to pass).
fn shrink_failures(
    summary: &Summary,
    files: &[(String, Scenario)],
    out: &Path,
) -> anyhow::Result<()> {
    let mut first: std::collections::BTreeMap<(&str, &str, &str, &[String]), &RunReport> =
        Default::default();
    for r in summary.runs.iter().filter(|r| r.failed()) {
        first
            .entry((&r.scenario, &r.server, &r.clients, &r.overrides))
            .or_insert(r);
    }
    if first.is_empty() {
        errln!("mcp-chaos: --shrink: no failing run to shrink");
    }
    for r in first.into_values() {
        let what = format!(
            "{} {} (clients {}) seed {}",
            r.scenario, r.server, r.clients, r.seed
        );
        if r.verdict == sweep::TIMEOUT {
            errln!("mcp-chaos: --shrink: {what} timed out: not shrunk");
            continue;
        }
        let Some((path, sc)) = files.iter().find(|(_, s)| s.name == r.scenario) else {
            continue;
        };
        let Ok(arm) = r.server.parse::<Arm>() else {
            continue;
        };
        let opts = r.options();
        let effective = run::effective(sc, &opts).map_err(anyhow::Error::msg)?;
        let goal = crate::shrink::Goal {
            kind: RegressionKind::Bug,
            ..Default::default()
        };
        let mut name = format!("{}-seed{}-{}", r.scenario, r.seed, r.server);
        if let Some(p) = opts.clients {
            name.push_str(&format!("-{}", p.as_str().replace('+', "-")));
        }
        for (k, v) in &opts.sets {
            let part: String = format!("{}-{v}", k.trim_start_matches("server."))
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            name.push_str(&format!("-{part}"));
        }
        let name = crate::scenario::fit_name(&name);
        let file = out.join("shrunk").join(format!("{name}.toml"));
        let command = format!(
            "mcp-chaos shrink --scenario {path} --seed {} --server {}{} --kind bug",
            r.seed,
            r.server,
            opts.flags()
        );
        match shrink_one(
            &effective,
            r.seed,
            arm,
            &goal,
            Some(file),
            &command,
            Some(name),
        ) {
            Ok((file, found)) => errln!(
                "mcp-chaos: --shrink: {what}: {} of {} faults, {} of {} clients: wrote {}",
                found.faults_after,
                found.faults_before,
                found.clients.1,
                found.clients.0,
                file.display()
            ),
            Err(e) => errln!("mcp-chaos: --shrink: {what}: not shrunk: {e:#}"),
        }
    }
    Ok(())
}

/// The connection cap when `--max-connections` is not given: 1024, or the
/// file-descriptor limit less a reserve for the server's own files when
/// that is lower (Linux: read from /proc/self/limits).
fn default_max_connections() -> usize {
    const CAP: usize = 1024;
    const RESERVE: usize = 32;
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|n| n.parse::<usize>().ok())
        });
    soft.map_or(CAP, |n| CAP.min(n.saturating_sub(RESERVE).max(1)))
}

/// `serve`'s server settings: the defaults, bounded for a real socket
/// (sims/README.md names each).
fn served_config(delivery: Delivery) -> ServerConfig {
    ServerConfig {
        delivery,
        max_body_bytes: 64 * 1024,
        max_chunks: 1_000,
        max_sessions: 10_000,
        store_capacity: 256,
        dedup_capacity: 4_096,
        session_seed: rand::random(),
        ..ServerConfig::default()
    }
}

fn serve(arm: Arm, addr: &str, delivery: Delivery, exposure: Exposure) -> anyhow::Result<()> {
    // The settings are held to the loader's rules before the socket opens.
    if arm.variant().is_none() && exposure.fixtures.offered() {
        anyhow::bail!("--fixtures is offered by the built-in arms (guarded, unguarded, keys, cancel), not by {arm}: drop --fixtures or pick a built-in --server");
    }
    let cfg = served_config(delivery);
    crate::scenario::check_server(&cfg).map_err(|e| anyhow::anyhow!("serve: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
            format!("cannot listen on --addr {addr}: give HOST:PORT with a free port, e.g. 127.0.0.1:8080")
        })?;
        let bound = listener
            .local_addr()
            .context("reading the bound address")?;
        let mut exposure = exposure;
        exposure.allow_bound_host(addr, bound);
        let history = History::off();
        let ledger = Ledger::new(history.clone());
        let Some(variant) = arm.variant() else {
            return serve_sdk(arm, cfg, listener, history, ledger, exposure).await;
        };
        let origins = exposure
            .allowed_origins
            .iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>();
        errln!(
            "mcp-chaos: {} server on http://{bound}/mcp ({}; session ids from the OS; origins: loopback{}{}; at most {} connections{})",
            variant.as_str(),
            variant.delivery(delivery).as_str(),
            if origins.is_empty() { "" } else { ", " },
            origins.join(", "),
            exposure.max_connections.unwrap_or(usize::MAX),
            if exposure.fixtures.offered() { "; with the conformance fixtures" } else { "" },
        );
        Server::exposed(variant, cfg, history, ledger, Pacing::Timer, exposure)
            .serve(listener)
            .await
            .context("accepting connections")
    })
}

/// `serve --server rmcp|rmcp-es`: the official SDK's server with the
/// ledger tools, on a real socket.
#[cfg(feature = "rmcp")]
async fn serve_sdk(
    arm: Arm,
    cfg: ServerConfig,
    listener: tokio::net::TcpListener,
    history: History,
    ledger: Ledger,
    exposure: Exposure,
) -> anyhow::Result<()> {
    use crate::sut::{Host, SystemUnderTest};
    let seed = cfg.session_seed;
    errln!(
        "mcp-chaos: {arm} server (rmcp) on http://{}/mcp (post-stream)",
        listener.local_addr().context("reading the bound address")?
    );
    let sut = crate::sdk::Rmcp {
        event_store: arm == Arm::RmcpEs,
        cfg,
        exposure,
    };
    sut.serve(Host {
        listener,
        seed,
        incarnation: 0,
        ledger,
        history,
    })
    .await
    .context("accepting connections")
}

#[cfg(not(feature = "rmcp"))]
async fn serve_sdk(
    arm: Arm,
    _: ServerConfig,
    _: tokio::net::TcpListener,
    _: History,
    _: Ledger,
    _: Exposure,
) -> anyhow::Result<()> {
    anyhow::bail!("server {arm} needs the rmcp feature: build without --no-default-features")
}

/// Rule M's rows, each shown with the verdict the guard gives on a session
/// built to that situation (computed, not transcribed).
pub fn decision_table() -> String {
    let limits = Limits { queue_capacity: 1 };
    let non_idem = PostFacts::default();
    let deduped = PostFacts {
        idempotent: false,
        dedup_honored: true,
    };
    let mut rows: Vec<(&str, &str, Verdict)> = Vec::new();
    // Row 0.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.produced(s, 2);
    g.close_seen(s);
    g.resumed(s, Some(1), 1);
    rows.push((
        "0",
        "replay backlog pending, queue has room",
        g.check(non_idem, limits).verdict,
    ));
    let d = g.check(non_idem, limits);
    g.apply(&d);
    rows.push((
        "0",
        "replay backlog pending, queue full",
        g.check(non_idem, limits).verdict,
    ));
    // Row 1.
    let mut g = SessionGuard::new();
    g.open_stream(1);
    rows.push(("1", "no dropped stream", g.check(non_idem, limits).verdict));
    // Row 2.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.request_started(s);
    g.produced(s, 2);
    g.close_seen(s);
    rows.push((
        "2",
        "dropped stream, watermark < last produced",
        g.check(deduped, limits).verdict,
    ));
    // Row 3.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.request_started(s);
    g.close_seen(s);
    rows.push((
        "3",
        "dropped stream drained, request still producing",
        g.check(deduped, limits).verdict,
    ));
    // Rows 4 and 5.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.close_seen(s);
    rows.push((
        "4",
        "drained, non-idempotent, no honored token",
        g.check(non_idem, limits).verdict,
    ));
    rows.push((
        "5",
        "drained, honored dedup token",
        g.check(deduped, limits).verdict,
    ));
    let mut out =
        String::from("Rule M (guarded server), evaluated in row order for every POST:\n\n");
    out.push_str(&format!("{:<4} {:<50} {}\n", "row", "situation", "verdict"));
    for (row, what, v) in rows {
        let verdict = match v {
            Verdict::Reject(r) => {
                let status = match r {
                    Reason::StreamLost => "410",
                    Reason::ReplayInProgress => "409",
                    _ => "409 + Last-Event-ID hint",
                };
                format!("reject ({}) -> {status}", r.as_str())
            }
            other => format!("{other:?}").to_lowercase(),
        };
        out.push_str(&format!("{row:<4} {what:<50} {verdict}\n"));
    }
    out.push_str("\n`mcp-chaos compare` runs these rules under faults against the other arms.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table_shows_each_verdict() {
        let t = decision_table();
        for needle in [
            "queue",
            "replay_in_progress",
            "fresh",
            "not_drained",
            "in_flight",
            "non_idempotent",
            "allow",
        ] {
            assert!(t.contains(needle), "{needle} missing from:\n{t}");
        }
    }
}

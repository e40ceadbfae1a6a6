//! The command line: arguments are parsed, validated into a configuration,
//! then run; `main` maps the outcome to an exit code: 0 when every
//! expectation holds, 1 on a safety violation, 2 on a liveness failure, 3 on
//! a usage or I/O error.

use crate::fault::FaultPlan;
use crate::guard::{Limits, PostFacts, Reason, SessionGuard, Verdict};
use crate::history::History;
use crate::ledger::Ledger;
use crate::report;
use crate::run::{self, Options, RunReport};
use crate::scenario::Scenario;
use crate::seed;
use crate::server::{self, Delivery, Exposure, Pacing, Server, ServerConfig, Variant};
use crate::sut::Arm;
use crate::sweep::{self, Job, Seeds, Summary};
use anyhow::{bail, Context};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Deterministic network simulator for MCP streamable-HTTP servers.
#[derive(Parser, Debug)]
#[command(name = "mcp-chaos", version, about)]
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
    #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = run::Options::parse_set)]
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
    /// Run every scenario in sims/ x seeds x server arms x client profiles in
    /// parallel; write summary.json, report.md (with the mechanism matrix)
    /// and report.html; print the headline.
    Compare {
        /// Directory of scenarios.
        #[arg(long, default_value = "sims")]
        sims: PathBuf,
        /// Seeds per scenario (0..N).
        #[arg(long, default_value_t = 6)]
        seeds: u64,
        /// Parallel simulations (default: the core count).
        #[arg(long)]
        jobs: Option<usize>,
        /// Output directory.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Also write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Server arms to run, comma-separated (default: every built-in arm).
        #[arg(long, value_parser = parse_arms)]
        servers: Option<Arms>,
        /// Client profiles to run, comma-separated: scenario (as written),
        /// plain, keys, cursors, keys+cursors (default: scenario).
        #[arg(long, value_parser = parse_profiles)]
        clients: Option<Profiles>,
        /// Override a server setting in every run (repeatable).
        #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = run::Options::parse_set)]
        sets: Vec<(String, String)>,
    },
    /// Run one scenario over a seed range (or one shard of it) under both
    /// servers; write the summary JSON.
    Sweep {
        /// Scenario file (TOML).
        #[arg(long)]
        scenario: PathBuf,
        /// Seed range A..B (B exclusive).
        #[arg(long)]
        seeds: String,
        /// Shard K/N (1-based) of the range.
        #[arg(long)]
        shard: Option<String>,
        /// Summary file to write.
        #[arg(long)]
        out: PathBuf,
        /// Parallel simulations (default: the core count).
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write JUnit XML here.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Server arms to run, comma-separated (default: every built-in arm).
        #[arg(long, value_parser = parse_arms)]
        servers: Option<Arms>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Write the calibration of a model arm against a real SDK's server
    /// from a comparison's summary: every scenario side by side, metric by
    /// metric. Hand-written notes below the file's notes marker are kept.
    ///
    /// Example: mcp-chaos calibrate results/summary.json --out results/calibration.md
    Calibrate {
        /// A summary.json from `compare` (or a merged sweep) that ran both arms.
        #[arg(default_value = "results/summary.json")]
        summary: PathBuf,
        /// Where to write it.
        #[arg(long, default_value = "results/calibration.md")]
        out: PathBuf,
        /// The model arm.
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
    ///
    /// Example: mcp-chaos scale --clients 1000,10000 --out results/perf.md
    Scale {
        /// Client counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        clients: Vec<u32>,
        /// Client hosts the clients are spread over.
        #[arg(long, default_value_t = 4)]
        hosts: u32,
        /// Calls per client (the default 20, 3 s apart, make about a
        /// minute of simulated traffic).
        #[arg(long, default_value_t = 20)]
        calls: u32,
        /// SSE events per call.
        #[arg(long, default_value_t = 4)]
        chunks: u32,
        /// Time between a call's events, ms.
        #[arg(long, default_value_t = 20)]
        chunk_interval_ms: u64,
        /// Pause between calls, ms.
        #[arg(long, default_value_t = 3000)]
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
    Repro {
        /// Scenario file (TOML).
        #[arg(long)]
        scenario: PathBuf,
        /// Root seed.
        #[arg(long)]
        seed: u64,
        /// Which server arm: guarded, unguarded, keys, cancel, rmcp or rmcp-es.
        #[arg(long)]
        server: Arm,
        #[command(flatten)]
        run: RunArgs,
        /// Trace file (default: target/repro/SCENARIO-SEED-SERVER.jsonl).
        #[arg(long)]
        trace: Option<PathBuf>,
    },
    /// Delta-debug a failing run's fault plan to a minimal one that fails
    /// the same way; write it as a scenario for sims/regressions/.
    Shrink {
        /// Scenario file (TOML).
        #[arg(long)]
        scenario: PathBuf,
        /// Root seed of the failing run.
        #[arg(long)]
        seed: u64,
        /// The server arm that fails.
        #[arg(long)]
        server: Arm,
        #[command(flatten)]
        run: RunArgs,
        /// Where to write the shrunk scenario (default: sims/regressions/NAME.toml).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print Rule M, the guard's decision table, as the guard computes it.
    Rules,
    /// Run one scenario under one seed against one server.
    Run {
        /// Scenario file (TOML).
        #[arg(long)]
        scenario: PathBuf,
        /// Root seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Which server arm: guarded, unguarded, keys, cancel, rmcp or rmcp-es.
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
    Serve {
        /// Which server arm: guarded, unguarded, keys, cancel, rmcp or rmcp-es.
        #[arg(long, default_value = "guarded")]
        server: Arm,
        /// Address to listen on, HOST:PORT (a host name is resolved:
        /// localhost:8080). Loopback by default: anything else exposes the
        /// server beyond this machine.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: String,
        /// Where tool-call responses go: post-stream or session-stream.
        #[arg(long, default_value = "post-stream", value_parser = parse_delivery)]
        delivery: Delivery,
        /// A browser origin allowed besides the loopback ones
        /// (scheme://host[:port]; repeatable). Requests with any other
        /// Origin get 403; requests without one are served.
        #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = server::parse_origin)]
        allow_origin: Vec<String>,
        /// Most connections held at once (default: 1024, or fewer when the
        /// file-descriptor limit is lower); past it the oldest idle
        /// connection is closed, or the new one gets 503.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        max_connections: Option<u64>,
        /// Longest a client may take to send a request head, ms (also how
        /// long an idle connection is kept).
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
        header_timeout_ms: u64,
        /// Longest a client may take to send a request body, ms (past it:
        /// 408 and the connection is closed).
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
        body_timeout_ms: u64,
        /// A session unused this long, with no stream open, ends, seconds.
        #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
        session_idle_secs: u64,
    },
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
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(3);
        }
    };
    let result = match cli.cmd {
        Cmd::Compare {
            sims,
            seeds,
            jobs,
            out,
            junit,
            servers,
            clients,
            sets,
        } => compare(
            &sims,
            seeds,
            jobs,
            &out,
            junit.as_deref(),
            &Matrix {
                arms: servers.map_or_else(Arm::all, |a| a.0),
                profiles: clients.map_or_else(|| vec![None], |p| p.0),
                sets,
            },
        ),
        Cmd::Sweep {
            scenario,
            seeds,
            shard,
            out,
            jobs,
            junit,
            servers,
            run,
        } => run.options().and_then(|o| {
            sweep_cmd(
                &scenario,
                &seeds,
                shard.as_deref(),
                &out,
                jobs,
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
        } => run
            .options()
            .and_then(|o| repro(&scenario, seed, server, &o, trace)),
        Cmd::Shrink {
            scenario,
            seed,
            server,
            run,
            out,
        } => run
            .options()
            .and_then(|o| shrink(&scenario, seed, server, &o, out)),
        Cmd::Rules => {
            print!("{}", decision_table());
            Ok(0)
        }
        Cmd::Run {
            scenario,
            seed,
            server,
            trace,
            format,
            run,
        } => run
            .options()
            .and_then(|o| run_one(&scenario, seed, server, trace.as_deref(), format, &o)),
        Cmd::Serve {
            server,
            addr,
            delivery,
            allow_origin,
            max_connections,
            header_timeout_ms,
            body_timeout_ms,
            session_idle_secs,
        } => {
            let mut exposure = Exposure::served();
            exposure.allowed_origins = Some(allow_origin);
            exposure.max_connections =
                Some(max_connections.map_or_else(default_max_connections, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }));
            exposure.header_timeout = Some(Duration::from_millis(header_timeout_ms));
            exposure.body_timeout = Some(Duration::from_millis(body_timeout_ms));
            exposure.session_idle = Some(Duration::from_secs(session_idle_secs));
            serve(server, &addr, delivery, exposure).map(|()| 0)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("mcp-chaos: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn load(path: &Path) -> anyhow::Result<Scenario> {
    Ok(Scenario::load(path)?)
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
        history
            .write_jsonl(std::io::BufWriter::new(f))
            .with_context(|| format!("writing --trace {}", t.display()))?;
    }
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serializes")
        ),
        Format::Text => print!("{}", text_report(&report)),
    }
    if report.failed() {
        eprintln!(
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
            eprintln!("  - {f}");
        }
        if !report.clients_finished {
            eprintln!("  - clients still running when the heal phase ended");
        }
        eprintln!("reproduce with: {repro}");
    }
    Ok(report.exit_code())
}

fn text_report(r: &RunReport) -> String {
    let mut out = format!(
        "{} · seed {} · {} server · {} ms simulated · {} records · trace {} · {}\n",
        r.scenario,
        r.seed,
        r.server,
        r.sim_ms,
        r.records,
        &r.trace_sha256[..16],
        r.verdict
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
        let fault = serde_json::to_string(&n.fault).expect("faults serialize");
        out.push_str(&format!("  not applied: {fault}: {}\n", n.reason));
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
fn execute(jobs: &[Job], workers: usize) -> anyhow::Result<Summary> {
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
            Ok(r) => r.verdict.clone(),
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
            None => eprintln!("[{done}/{total}] {line}"),
        }
    };
    let results = sweep::run_all(jobs, workers, &progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut runs = Vec::new();
    for r in results {
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
        for &seed in seeds {
            for &profile in &self.profiles {
                for &variant in &self.arms {
                    out.push(Job {
                        path: path.to_string(),
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

/// The options a report was run with (its profile and overrides).
fn options_of(r: &RunReport) -> Options {
    Options {
        clients: r.clients.parse().ok(),
        sets: r
            .overrides
            .iter()
            .filter_map(|s| Options::parse_set(s).ok())
            .collect(),
    }
}

fn repro_for(files: &[(String, Scenario)]) -> impl Fn(&RunReport) -> String + '_ {
    move |r: &RunReport| {
        let path = files
            .iter()
            .find(|(_, s)| s.name == r.scenario)
            .map_or("sims/?.toml", |(p, _)| p.as_str());
        let v = r.server.parse().unwrap_or(Arm::BuiltIn(Variant::Guarded));
        run::repro_command(path, r.seed, v, &options_of(r))
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
        eprintln!(
            "mcp-chaos: {} {} (clients: {}) seed {} ({}): {}\n  reproduce with: {}",
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

fn compare(
    dir: &Path,
    seeds: u64,
    jobs: Option<usize>,
    out: &Path,
    junit: Option<&Path>,
    matrix: &Matrix,
) -> anyhow::Result<u8> {
    if seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let mut files = Vec::new();
    for p in scenario_files(dir)? {
        files.push((p.display().to_string(), load(&p)?));
    }
    let seed_list: Vec<u64> = (0..seeds).collect();
    let mut work = Vec::new();
    for (path, scenario) in &files {
        work.extend(matrix.jobs(path, scenario, &seed_list));
    }
    let workers = jobs.unwrap_or_else(cores);
    eprintln!(
        "mcp-chaos compare: {} scenarios x {seeds} seeds x {} = {} runs on {workers} workers",
        files.len(),
        matrix.describe(),
        work.len()
    );
    let summary = execute(&work, workers)?;
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    write(&out.join("report.md"), &report::markdown(&summary))?;
    // The timeline shows the unguarded run with the most duplicate side
    // effects (ties: first scenario, lowest seed), run again for its trace.
    let pick = summary
        .runs
        .iter()
        .filter(|r| r.server == "unguarded")
        .max_by_key(|r| {
            (
                r.metrics.duplicate_side_effects,
                std::cmp::Reverse((&r.scenario, r.seed)),
            )
        });
    let timeline = match pick.and_then(|r| {
        files
            .iter()
            .find(|(_, s)| s.name == r.scenario)
            .map(|(_, s)| (r, s))
    }) {
        Some((r, sc)) => {
            let (_, history) = run::run(sc, r.seed, Variant::Unguarded, &options_of(r))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Some(report::Timeline::of(
                format!("{} seed {} unguarded", r.scenario, r.seed),
                &history,
            ))
        }
        None => None,
    };
    write(
        &out.join("report.html"),
        &report::html(&summary, timeline.as_ref()),
    )?;
    println!("{}", report::headline(&summary));
    warn_uncovered(&summary);
    println!(
        "wrote {}, {} and {}",
        out.join("summary.json").display(),
        out.join("report.md").display(),
        out.join("report.html").display()
    );
    finish(&summary, &files, junit)
}

/// Flags scenarios whose declared hazards no run exercised.
fn warn_uncovered(summary: &Summary) {
    for (sc, hz) in &summary.uncovered_hazards {
        eprintln!(
            "warning: scenario {sc} declares hazards no seed exercised: {} (its fault plan tests nothing there: add faults or seeds)",
            hz.join(", ")
        );
    }
}

fn sweep_cmd(
    path: &Path,
    seeds: &str,
    shard: Option<&str>,
    out: &Path,
    jobs: Option<usize>,
    junit: Option<&Path>,
    matrix: &Matrix,
) -> anyhow::Result<u8> {
    let seeds = Seeds::parse(seeds, shard).map_err(anyhow::Error::msg)?;
    let scenario = load(path)?;
    let files = vec![(path.display().to_string(), scenario.clone())];
    let work = matrix.jobs(&path.display().to_string(), &scenario, &seeds.list());
    let summary = execute(&work, jobs.unwrap_or_else(cores))?;
    write(
        out,
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    println!("{}", report::headline(&summary));
    warn_uncovered(&summary);
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
        for p in scenario_files(sims)? {
            let sc = load(&p)?;
            if s.runs.iter().any(|r| r.scenario == sc.name) {
                work.extend(matrix.jobs(&p.display().to_string(), &sc, &seeds));
            }
        }
        eprintln!(
            "mcp-chaos calibrate: {} runs of {model} with sdk = \"rmcp\"",
            work.len()
        );
        Some(execute(&work, cores())?)
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
    eprintln!("mcp-chaos: wrote {}", out.display());
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
        println!("{}", serde_json::to_string(&f).expect("figures serialize"));
        return Ok(0);
    }
    if sizes.is_empty() || sizes.contains(&0) {
        bail!("--clients needs sizes of at least 1, e.g. --clients 1000,10000");
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
    println!("{table}");
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
    eprintln!("mcp-chaos scale: {n} clients, {name}");
    let o = std::process::Command::new(exe)
        .args(["scale", "--one", name, "--clients", &n.to_string()])
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
    let merged = Summary::merge(parts);
    let text = serde_json::to_string_pretty(&merged).expect("summary serializes");
    match out {
        Some(p) => {
            write(p, &text)?;
            println!("{}", report::headline(&merged));
        }
        None => println!("{text}"),
    }
    Ok(merged.exit_code())
}

fn repro(
    path: &Path,
    seed: u64,
    variant: Arm,
    opts: &Options,
    trace: Option<PathBuf>,
) -> anyhow::Result<u8> {
    let scenario = load(path)?;
    let effective = run::effective(&scenario, opts).map_err(anyhow::Error::msg)?;
    let plan = FaultPlan::draw(&effective, seed);
    println!(
        "# mcp-chaos repro: {} seed {seed} server {} clients {}{}",
        scenario.name,
        variant.as_str(),
        opts.clients_label(),
        opts.flags()
    );
    println!(
        "# child seeds: faults={} turmoil={} client-start={} server-sessions/0={}",
        seed::child(seed, "faults"),
        seed::child(seed, "turmoil"),
        seed::child(seed, "client-start"),
        seed::child(seed, "server-sessions/0")
    );
    println!("# the scenario as run (every derived option), then the whole fault plan:\n");
    let mut shown = effective.clone();
    shown.faults.explicit = Vec::new();
    println!(
        "{}",
        toml::to_string(&shown).context("printing the scenario")?
    );
    println!(
        "# fault plan ({} faults)\n[faults]\n{}",
        plan.faults.len(),
        plan.to_toml()
            .replace("[[explicit]]", "[[faults.explicit]]")
    );
    let trace = trace.unwrap_or_else(|| {
        PathBuf::from(format!(
            "target/repro/{}-{seed}-{}.jsonl",
            scenario.name,
            variant.as_str()
        ))
    });
    let code = run_one(path, seed, variant, Some(&trace), Format::Text, opts)?;
    println!("trace: {}", trace.display());
    Ok(code)
}

fn shrink(
    path: &Path,
    seed: u64,
    variant: Arm,
    opts: &Options,
    out: Option<PathBuf>,
) -> anyhow::Result<u8> {
    // The profile and overrides are baked into the shrunk scenario, so it
    // replays alone.
    let scenario = run::effective(&load(path)?, opts).map_err(anyhow::Error::msg)?;
    let found = crate::shrink::shrink(&scenario, seed, variant).map_err(anyhow::Error::msg)?;
    let out = out
        .unwrap_or_else(|| PathBuf::from(format!("sims/regressions/{}.toml", found.scenario.name)));
    let text = format!(
        "# {}\n# Written by `mcp-chaos shrink --scenario {} --seed {seed} --server {}{}`.\n{}",
        found.scenario.description,
        path.display(),
        variant.as_str(),
        opts.flags(),
        toml::to_string(&found.scenario).context("printing the scenario")?
    );
    write(&out, &text)?;
    println!(
        "shrunk {} faults to {} and {} clients to {} in {} runs, preserving {:?}; wrote {}",
        found.faults_before,
        found.faults_after,
        found.clients.0,
        found.clients.1,
        found.runs,
        found.metrics,
        out.display()
    );
    Ok(0)
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
        let history = History::off();
        let ledger = Ledger::new(history.clone());
        let cfg = served_config(delivery);
        let Some(variant) = arm.variant() else {
            return serve_sdk(arm, cfg, listener, history, ledger).await;
        };
        let origins = exposure
            .allowed_origins
            .iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>();
        eprintln!(
            "mcp-chaos: {} server on http://{bound}/mcp ({}; session ids from the OS; origins: loopback{}{}; at most {} connections)",
            variant.as_str(),
            variant.delivery(delivery).as_str(),
            if origins.is_empty() { "" } else { ", " },
            origins.join(", "),
            exposure.max_connections.unwrap_or(usize::MAX),
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
) -> anyhow::Result<()> {
    use crate::sut::{Host, SystemUnderTest};
    let seed = cfg.session_seed;
    eprintln!(
        "mcp-chaos: {arm} server (rmcp) on http://{}/mcp (post-stream)",
        listener.local_addr().context("reading the bound address")?
    );
    let sut = crate::sdk::Rmcp {
        event_store: arm == Arm::RmcpEs,
        cfg,
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

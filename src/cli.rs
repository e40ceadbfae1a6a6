//! The command line: arguments are parsed, validated into a configuration,
//! then run; `main` maps the outcome to an exit code.

use crate::guard::{Limits, PostFacts, Reason, SessionGuard, Verdict};
use crate::history::{History, Ledger};
use crate::run::{self, Options, RunReport};
use crate::scenario::Scenario;
use crate::server::{Delivery, Pacing, Server, ServerConfig, Variant};
use anyhow::{bail, Context};
use clap::{Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Every client presents cursors on POST.
    All,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run every scenario in sims/ under both servers over a few seeds and
    /// print guarded vs unguarded, per metric.
    Compare {
        /// Directory of scenarios.
        #[arg(long, default_value = "sims")]
        sims: PathBuf,
        /// Seeds per scenario (0..N).
        #[arg(long, default_value_t = 3)]
        seeds: u64,
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
        /// Which server: guarded or unguarded.
        #[arg(long)]
        server: Variant,
        /// Write the trace as JSON lines here.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Override every client's cursor_on_post.
        #[arg(long, value_enum)]
        cursor_on_post: Option<CursorOverride>,
    },
    /// Run the MCP server on a real socket (simulated time becomes real time).
    Serve {
        /// Which server: guarded or unguarded.
        #[arg(long, default_value = "guarded")]
        server: Variant,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: SocketAddr,
        /// Where tool-call responses go: post-stream or session-stream.
        #[arg(long, default_value = "post-stream", value_parser = parse_delivery)]
        delivery: Delivery,
        /// Seed of the session-id generator.
        #[arg(long, default_value_t = 0)]
        seed: u64,
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
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Compare { sims, seeds } => compare(&sims, seeds),
        Cmd::Rules => {
            print!("{}", decision_table());
            Ok(true)
        }
        Cmd::Run {
            scenario,
            seed,
            server,
            trace,
            format,
            cursor_on_post,
        } => run_one(
            &scenario,
            seed,
            server,
            trace.as_deref(),
            format,
            cursor_on_post.is_some(),
        ),
        Cmd::Serve {
            server,
            addr,
            delivery,
            seed,
        } => serve(server, addr, delivery, seed).map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("mcp-chaos: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn load(path: &Path) -> anyhow::Result<Scenario> {
    Ok(Scenario::load(path)?)
}

/// Runs one scenario; `Ok(false)` when an expectation failed.
fn run_one(
    path: &Path,
    seed: u64,
    variant: Variant,
    trace: Option<&Path>,
    format: Format,
    cursor_all: bool,
) -> anyhow::Result<bool> {
    let scenario = load(path)?;
    let opts = Options {
        cursor_on_post_all: cursor_all,
    };
    let (report, history) = run::run(&scenario, seed, variant, opts).map_err(|e| {
        anyhow::anyhow!(
            "{e}\nreproduce with: {}",
            run::repro_command(&path.display().to_string(), seed, variant, opts)
        )
    })?;
    if let Some(t) = trace {
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
    let ok = report.failed_expectations.is_empty();
    if !ok {
        eprintln!(
            "mcp-chaos: {} expectation(s) failed for {} on the {} server, seed {seed}:",
            report.failed_expectations.len(),
            report.scenario,
            report.server
        );
        for f in &report.failed_expectations {
            eprintln!("  - {f}");
        }
        eprintln!(
            "reproduce with: {}",
            run::repro_command(&path.display().to_string(), seed, variant, opts)
        );
    }
    Ok(ok)
}

/// The metrics a comparison shows, in order.
const SHOWN: &[&str] = &[
    "operations",
    "duplicate_side_effects",
    "orphaned_events",
    "silent_losses",
    "truncated_responses",
    "order_violations",
    "lost_operations",
    "blind_spots",
    "guard_bugs",
    "rejections",
];

fn text_report(r: &RunReport) -> String {
    let mut out = format!(
        "{} · seed {} · {} server · {} ms simulated · {} records · trace {}\n",
        r.scenario,
        r.seed,
        r.server,
        r.sim_ms,
        r.records,
        &r.trace_sha256[..16]
    );
    for name in SHOWN {
        if let Some(v) = r.metrics.get(name) {
            out.push_str(&format!("  {name:<24} {v}\n"));
        }
    }
    let l = &r.metrics.migration_latency_us;
    out.push_str(&format!(
        "  {:<24} n={} p50={} p90={} p99={} max={}\n",
        "migration_latency_us", l.count, l.p50, l.p90, l.p99, l.max
    ));
    out.push_str(&format!(
        "  faults planned {:?} applied {:?}\n",
        r.faults.planned, r.faults.applied
    ));
    out
}

/// The scenario files of a directory, sorted by name.
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

fn compare(dir: &Path, seeds: u64) -> anyhow::Result<bool> {
    if seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let files = scenario_files(dir)?;
    let mut all_ok = true;
    println!(
        "mcp-chaos compare: {} scenarios x seeds 0..{seeds} x both servers (totals over seeds)\n",
        files.len()
    );
    for path in &files {
        let scenario = load(path)?;
        let mut totals: Vec<Vec<u64>> = vec![vec![0; SHOWN.len()]; 2];
        let mut lat: Vec<Vec<u64>> = vec![Vec::new(); 2];
        let mut failures = Vec::new();
        for seed in 0..seeds {
            for (i, v) in Variant::BOTH.into_iter().enumerate() {
                let (r, _) = run::run(&scenario, seed, v, Options::default())
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                for (k, name) in SHOWN.iter().enumerate() {
                    totals[i][k] += r.metrics.get(name).unwrap_or(0);
                }
                lat[i].push(r.metrics.migration_latency_us.p50);
                if !r.failed_expectations.is_empty() {
                    failures.push(format!(
                        "  FAILED {}: {}\n    reproduce: {}",
                        v.as_str(),
                        r.failed_expectations.join("; "),
                        run::repro_command(
                            &path.display().to_string(),
                            seed,
                            v,
                            Options::default()
                        )
                    ));
                }
            }
        }
        println!("{} — {}", scenario.name, scenario.description);
        println!("  {:<24} {:>10} {:>10}", "metric", "guarded", "unguarded");
        for (k, name) in SHOWN.iter().enumerate() {
            let g = totals[0][k].to_string();
            let u = if *name == "guard_bugs" || *name == "blind_spots" {
                "-".to_string()
            } else {
                totals[1][k].to_string()
            };
            println!("  {name:<24} {g:>10} {u:>10}");
        }
        let median = |v: &mut Vec<u64>| {
            v.sort();
            v[v.len() / 2]
        };
        println!(
            "  {:<24} {:>10} {:>10}",
            "migration p50 (median)",
            median(&mut lat[0]),
            median(&mut lat[1])
        );
        for f in &failures {
            println!("{f}");
        }
        all_ok &= failures.is_empty();
        println!();
    }
    println!(
        "{}",
        if all_ok {
            "all expectations hold"
        } else {
            "some expectations FAILED (see above)"
        }
    );
    Ok(all_ok)
}

fn serve(variant: Variant, addr: SocketAddr, delivery: Delivery, seed: u64) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on --addr {addr}: pick a free port"))?;
        let history = History::tokio_clock();
        let ledger = Ledger::new(history.clone());
        let cfg = ServerConfig {
            delivery,
            session_seed: seed,
            ..ServerConfig::default()
        };
        eprintln!(
            "mcp-chaos: {} server on http://{addr}/mcp ({}, session seed {seed})",
            variant.as_str(),
            delivery.as_str()
        );
        Server::new(variant, cfg, history, ledger, Pacing::Timer)
            .serve(listener)
            .await
            .context("accepting connections")
    })
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
    g.resumed(s, 1, 1);
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
    out.push_str(
        "\nThe simulator that compares both servers under faults arrives with the next issue.\n",
    );
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

//! The command line: arguments are parsed, validated into a configuration,
//! then run; `main` maps the outcome to an exit code.

use crate::guard::{Limits, PostFacts, Reason, SessionGuard, Verdict};
use crate::history::{History, Ledger};
use crate::server::{Delivery, Pacing, Server, ServerConfig, Variant};
use anyhow::Context;
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::process::ExitCode;

/// Deterministic network simulator for MCP streamable-HTTP servers.
#[derive(Parser, Debug)]
#[command(name = "mcp-chaos", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Compare the guarded and the unguarded server.
    Compare,
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
        Cmd::Compare => {
            print!("{}", decision_table());
            Ok(())
        }
        Cmd::Serve {
            server,
            addr,
            delivery,
            seed,
        } => serve(server, addr, delivery, seed),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-chaos: {e:#}");
            ExitCode::from(3)
        }
    }
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

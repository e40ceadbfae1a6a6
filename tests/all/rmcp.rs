//! The official Rust SDK (rmcp) in the simulation: it runs the scenarios,
//! deterministically, is judged black-box like every arm, and its legacy
//! clients are reported not applicable.

use mcp_chaos::history::{ClientRecord, Rec};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{run_arm, Options, RunReport, NOT_APPLICABLE};
use mcp_chaos::scenario::Scenario;
use std::path::Path;
use std::process::Command;

fn scenario(name: &str) -> Scenario {
    Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("sims/{name}.toml")))
        .unwrap()
}

fn run(name: &str, seed: u64, arm: Arm) -> (RunReport, mcp_chaos::history::History) {
    run_arm(&scenario(name), seed, arm, &Options::default())
        .unwrap_or_else(|e| panic!("{name} seed {seed} {arm}: {e}"))
}

/// docs/guide.md's line: the retried call runs twice on rmcp, and the same
/// command gives the same trace bytes.
#[test]
fn the_retry_runs_twice_on_rmcp_with_the_same_trace_every_time() {
    let json = |_: ()| {
        let o = Command::new(env!("CARGO_BIN_EXE_mcp-chaos"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "run",
                "--scenario",
                "sims/seed-000-retry-by-post.toml",
                "--server",
                "rmcp",
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<RunReport>(&o.stdout).unwrap()
    };
    let (a, b) = (json(()), json(()));
    assert_eq!(a.server, "rmcp");
    assert_eq!(a.metrics.ops_duplicated, 1, "{:?}", a.operations);
    assert_eq!(a.metrics.duplicate_side_effects, 1);
    assert_eq!(a.trace_sha256, b.trace_sha256);
}

/// Both rmcp arms give the same bytes for the same seed on every scenario
/// (seed 1: not the committed results' seed 0), and the clients only ever
/// see session ids drawn from the seed, never rmcp's own UUIDs.
#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn rmcp_arms_are_deterministic_on_every_scenario_and_hide_their_uuids() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in mcp_chaos::cli::scenario_files(&root.join("sims")).unwrap() {
        let s = Scenario::load(&f).unwrap();
        for arm in [Arm::Rmcp, Arm::RmcpEs] {
            let (a, history) = run_arm(&s, 1, arm, &Options::default()).unwrap();
            let (b, _) = run_arm(&s, 1, arm, &Options::default()).unwrap();
            assert_eq!(a.trace_sha256, b.trace_sha256, "{} {arm}", s.name);
            assert_eq!(a.metrics, b.metrics, "{} {arm}", s.name);
            for e in history.entries().iter() {
                if let Rec::Client(ClientRecord::Session { session, .. }) = &e.record {
                    assert!(
                        session.starts_with("rmcp-") && session.len() == 21,
                        "{} {arm}: a session id clients saw: {session}",
                        s.name
                    );
                }
            }
        }
    }
}

/// A scenario of legacy clients alone is not applicable to rmcp (it has no
/// HTTP+SSE transport); in a mixed fleet only its legacy clients are left
/// out, and they are counted.
#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn legacy_clients_are_not_applicable_to_rmcp() {
    let (r, _) = run("seed-004-cross-transport", 0, Arm::Rmcp);
    assert_eq!(r.verdict, NOT_APPLICABLE);
    assert_eq!(r.not_applicable_clients, 1);
    assert_eq!(r.metrics.operations, 0);
    assert_eq!(r.exit_code(), 0);
    assert!(!r.failed());

    let fleet = scenario("mixed-fleet");
    let legacy: u32 = fleet
        .clients
        .iter()
        .filter(|g| g.behaviour.is_legacy())
        .map(|g| g.count)
        .sum();
    let (m, _) = run("mixed-fleet", 0, Arm::RmcpEs);
    assert_eq!(m.not_applicable_clients, legacy);
    let (u, _) = run(
        "mixed-fleet",
        0,
        Arm::BuiltIn(mcp_chaos::server::Variant::Unguarded),
    );
    assert_eq!(u.not_applicable_clients, 0);
    let owed = |r: &RunReport| r.metrics.operations;
    let per_legacy = fleet
        .clients
        .iter()
        .find(|g| g.behaviour.is_legacy())
        .unwrap()
        .calls;
    assert_eq!(owed(&u) - owed(&m), u64::from(legacy * per_legacy));
}

/// The rmcp arms run the same tools: a clean run has every operation ok
/// and exactly one execution per operation in the ledger.
#[test]
fn rmcp_serves_the_ledger_tools_like_the_built_in_server() {
    for arm in [Arm::Rmcp, Arm::RmcpEs] {
        let mut s = scenario("flaky-mobile");
        s.faults = Default::default();
        let (r, history) = run_arm(&s, 0, arm, &Options::default()).unwrap();
        assert_eq!(
            r.metrics.ops_ok, r.metrics.operations,
            "{arm}: {:?}",
            r.operations
        );
        let executions = history
            .entries()
            .iter()
            .filter(|e| {
                matches!(
                    e.record,
                    Rec::Ledger(mcp_chaos::history::LedgerRecord::Execution { .. })
                )
            })
            .count() as u64;
        assert_eq!(executions, r.metrics.operations, "{arm}");
    }
}

/// results/calibration.md sets the model beside rmcp on every scenario in
/// sims/, and carries the notes that say why they differ.
#[test]
fn calibration_covers_every_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("results/calibration.md")).unwrap();
    for f in mcp_chaos::cli::scenario_files(&root.join("sims")).unwrap() {
        let s = Scenario::load(&f).unwrap();
        assert!(
            text.contains(&format!("\n## {}\n", s.name)),
            "results/calibration.md lacks {}: run `cargo run --release -- calibrate`",
            s.name
        );
    }
    let notes = mcp_chaos::report::calibration_notes(&text).expect("the notes marker");
    assert!(notes.contains("## Why they differ"));
}

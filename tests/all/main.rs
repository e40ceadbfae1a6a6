//! One integration-test binary (faster to build than many), with modules.
//!
//! The slow sweeps (every scenario twice for determinism, the zero on
//! every scenario, the committed fleet run, twenty seeds of the fleet,
//! 1,200 clients on one host, sharded sweeps, the soaks, `scale`) are
//! `#[ignore = "slow: ..."]`, so the
//! README's `cargo test --release` stays within minutes; `cargo test
//! --release -- --ignored` runs them, and `.ci/run` runs both.

mod architecture;
mod bad_input;
mod budgets;
mod build;
mod cancel;
mod causes;
mod charts;
mod cli;
mod deploy;
mod deploy_matrix;
mod deploy_store;
mod docs;
mod eras;
mod events;
mod events_faults;
mod explore;
mod fault_accounting;
mod faults;
mod field;
mod first_contact;
mod fleet;
mod gate;
mod idempotency_keys;
mod intermediaries;
mod join;
mod keepalive;
mod liveness;
mod loopback;
mod no_fault;
mod oracle;
mod own_server;
mod printed;
mod probe;
mod probe_bounds;
mod refusals;
mod regressions;
mod replay;
mod report;
mod resuming_clients;
mod reused_ids;
mod rmcp;
#[cfg(feature = "rmcp")]
mod rmcp_alone;
mod rule_m;
mod scenario_files;
mod seed_cases;
mod serve;
mod serve_2026;
mod serve_edges;
mod serve_events;
mod serve_fixtures;
mod serve_memory;
mod shrink_loop;
mod simulate;
mod soak;
mod sweeps;
mod tasks;
mod transport;
mod turmoil_patch;
mod zero;
mod zero_matrix;

/// Runs scenario `s` (the file `label`, as a repro command names it) at
/// seed 0 under arm `v` and asserts that its expectations hold; the
/// report, and the command that reproduces the run.
fn run_expecting(
    label: &str,
    s: &mcp_chaos::scenario::Scenario,
    v: mcp_chaos::server::Variant,
) -> (mcp_chaos::run::RunReport, String) {
    use mcp_chaos::run::{self, Options};
    let (r, _) = run::run(s, 0, v, &Options::default()).unwrap_or_else(|e| panic!("{label}: {e}"));
    let repro = run::repro_command(label, 0, v, &Options::default());
    assert!(
        r.failed_expectations.is_empty(),
        "{label} under {}: {:?}\nreproduce: {repro}",
        r.server,
        r.failed_expectations
    );
    (r, repro)
}

//! One integration-test binary (faster to build than many), with modules.
//!
//! The slow sweeps (every scenario twice for determinism, the zero on
//! every scenario, the committed fleet run, twenty seeds of the fleet,
//! 1,200 clients on one host, sharded sweeps, the soaks, `scale`) are
//! `#[ignore = "slow: ..."]`, so the
//! README's `cargo test --release` stays within minutes; `cargo test
//! --release -- --ignored` runs them, and `.ci/run` runs both.

mod bad_input;
mod build;
mod causes;
mod charts;
mod cli;
mod cli_loop;
mod deploy;
mod deploy_matrix;
mod eras;
mod explore;
mod faults;
mod first_contact;
mod intermediaries;
mod keepalive;
mod loopback;
mod oracle;
mod own_server;
mod probe;
mod report;
mod rmcp;
mod serve;
mod serve_2026;
mod serve_edges;
mod serve_fixtures;
mod shrink_loop;
mod sim;
mod soak;
mod tasks;
mod turmoil_patch;

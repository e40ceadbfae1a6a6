//! No fault, no loss: with no fault planned, every operation on every arm
//! where the combination can succeed by design is ok (no failed, no
//! degraded operation), whatever wings run together. A property test
//! draws the combinations: era, deployment and store, polling closes,
//! intermediaries that do not alter delivery, kept-alive or per-exchange
//! connections, tasks, input-required tools, keys, big calls at interval
//! 0 into a smaller store, and events readers (poll, push, or webhook
//! receivers under either sender) beside the calls, every occurrence owed
//! to them delivered once.
//!
//! Excluded, by design (each is its own cause, shown by its minimal
//! scenario in sims/causes/):
//! - guarded on 2026-07-28 with keyless clients: refused 400
//!   (`key_required`);
//! - unguarded, keys and cancel with input-required tools: the retry that
//!   answers runs the tool again (`mrtr_reexecution`);
//! - not applicable: tasks and input-required tools on the 2025-11-25
//!   wire (the profile has no such client there), polling closes and the
//!   cancel arm on the 2026-07-28 wire (no SSE stream to close; every
//!   arm cancels on close there), a balancer's round robin without a
//!   shared store on 2025-11-25 (another replica answers 404:
//!   `wrong_replica`), so deployments here share a durable store;
//! - the rmcp arms: they speak 2025-11-25 only, with no keys, tasks or
//!   polling of ours; `tests/all/rmcp.rs` holds their no-fault runs.

use crate::simulate::inline;
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{self, run_arm, Options, NOT_APPLICABLE};
use mcp_chaos::scenario::Scenario;
use proptest::prelude::*;

/// One drawn combination of the wings.
#[derive(Clone, Debug)]
struct Wings {
    era_2026: bool,
    /// 3 replicas round robin on a shared durable store (repin).
    deployed: bool,
    polling: bool,
    /// 0: none; 1: a buffering proxy; 2: rechunking; 3: a forward proxy
    /// that drops the Events control messages (with no fault no stream
    /// is truncated, so it drops only what announces nothing).
    intermediary: u8,
    keep_alive: bool,
    tasks: bool,
    asks_input: bool,
    keys: bool,
    big_fast: bool,
    resume: bool,
    transactional: bool,
    /// 0: none; 1: readers that poll events; 2: readers of a push stream;
    /// 3: webhook receivers, the draft's sender (or the durable one, by
    /// `durable`); 4: webhook receivers, the naive sender (2026-07-28
    /// only).
    events: u8,
    /// With webhook receivers and the draft's sender: the durable one
    /// (an outbox beside the ledger) instead.
    durable: bool,
}

fn wings() -> impl Strategy<Value = Wings> {
    (any::<[bool; 11]>(), 0u8..4, 0u8..5).prop_map(|(b, intermediary, events)| Wings {
        era_2026: b[0],
        deployed: b[1],
        polling: b[2] && !b[0],
        intermediary,
        keep_alive: b[3],
        tasks: b[4] && b[0],
        asks_input: b[5] && b[0] && !b[4],
        keys: b[6],
        big_fast: b[7],
        resume: b[8],
        transactional: b[9],
        events: if b[0] { events } else { 0 },
        durable: b[10],
    })
}

/// The scenario of `w`, with no fault.
fn scenario(w: &Wings) -> Scenario {
    let mut t = String::from(
        "name = \"no-fault\"\ndescription = \"drawn wings, no fault\"\nduration_ms = 60000\nhazards = []\n",
    );
    if w.era_2026 {
        t.push_str("era = \"2026-07-28\"\n");
    }
    t.push_str("\n[server]\nstore_capacity = 256\n");
    if w.polling {
        t.push_str("poll_after = 3\npoll_retry_ms = 200\n");
    }
    if w.transactional {
        t.push_str("effects = \"transactional\"\ndurable_dedup = true\n");
    }
    if w.events > 0 {
        // A webhook delivery is a connection of its own: a slower tick
        // keeps the webhook draws as cheap as the poll and push ones.
        let tick = if w.events >= 3 { 500 } else { 100 };
        t.push_str(&format!("events_tick_ms = {tick}\nevents_poll_ms = 500\n"));
    }
    match w.events {
        3 if w.durable => t.push_str("events_sender = \"durable\"\n"),
        4 => t.push_str("events_sender = \"naive\"\n"),
        _ => {}
    }
    let (chunks, interval) = if w.big_fast { (300, 0) } else { (4, 20) };
    t.push_str(&format!(
        "\n[[clients]]\nbehaviour = \"{}\"\ncount = 2\ncalls = 2\nchunks = {chunks}\nchunk_interval_ms = {interval}\nthink_ms = 20\nconnections = \"{}\"\n",
        if w.resume { "resume" } else { "retry-by-post" },
        if w.keep_alive { "keep-alive" } else { "per-exchange" },
    ));
    match w.events {
        1 => t.push_str("events = \"poll\"\n"),
        2 => t.push_str("events = \"push\"\n"),
        3 | 4 => t.push_str("events = \"webhook\"\n"),
        _ => {}
    }
    for (on, key) in [
        (w.keys, "keys"),
        (w.tasks, "tasks"),
        (w.asks_input, "asks_input"),
    ] {
        if on {
            t.push_str(&format!("{key} = true\n"));
        }
    }
    t.push_str(
        "\n[network]\nlatency_ms = [1, 5]\nclient_hosts = 1\n\n[heal]\nduration_ms = 60000\n",
    );
    match w.intermediary {
        1 => t.push_str("\n[intermediary]\nbuffer = true\n"),
        2 => t.push_str("\n[intermediary]\nrechunk = true\n"),
        3 => t.push_str("\n[intermediary]\ndrop_control = true\n"),
        _ => {}
    }
    if w.deployed {
        t.push_str("\n[deployment]\nreplicas = 3\nbalancer = \"round-robin\"\nstore = \"shared\"\nstore_durable = true\non_dead_upstream = \"repin\"\n");
    }
    Scenario::parse(&t).unwrap_or_else(|e| panic!("{w:?}: {e}\n{t}"))
}

/// The arms `w` can succeed on by design (the exclusions above).
fn arms(w: &Wings) -> Vec<&'static str> {
    let mut arms = vec!["guarded", "unguarded", "keys"];
    if !w.era_2026 {
        arms.push("cancel");
    }
    arms.retain(|a| !(w.era_2026 && !w.keys && *a == "guarded"));
    arms.retain(|a| !(w.asks_input && *a != "guarded"));
    arms
}

/// Runs `w` on each of its arms: the failed and degraded operations, with
/// the command that reproduces each run.
fn check(w: &Wings) -> Result<(), TestCaseError> {
    let s = scenario(w);
    for arm in arms(w) {
        let a: Arm = arm.parse().unwrap();
        let (r, _) = run_arm(&s, 0, a, &Options::default()).unwrap();
        if r.verdict == NOT_APPLICABLE {
            continue;
        }
        prop_assert!(
            r.metrics.ops_failed == 0 && r.metrics.ops_degraded == 0 && r.metrics.operations > 0,
            "{arm} under {w:?}: {} failed, {} degraded of {} ({:?})",
            r.metrics.ops_failed,
            r.metrics.ops_degraded,
            r.metrics.operations,
            r.metrics.failures_by_cause
        );
        let m = &r.metrics;
        prop_assert!(
            w.events == 0
                || (m.deliveries > 0
                    && m.deliveries_ok == m.deliveries
                    && m.deliveries_failed == 0
                    && m.deliveries_announced_lost == 0),
            "{arm} under {w:?}: {} deliveries, {} ok, {} failed ({:?}), {} announced lost",
            m.deliveries,
            m.deliveries_ok,
            m.deliveries_failed,
            m.failures_by_cause,
            m.deliveries_announced_lost
        );
    }
    Ok(())
}

/// `n` cases drawn from a fixed seed (same cases every run; a failure
/// prints its case) and no failure files written.
fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases(64))]
    #[test]
    fn with_no_fault_no_arm_loses_anything(w in wings()) {
        check(&w)?;
    }
}

proptest! {
    #![proptest_config(cases(1000))]
    #[test]
    #[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
    fn with_no_fault_no_arm_loses_anything_1000(w in wings()) {
        check(&w)?;
    }
}

/// A tool that outruns its event store on healthy connections (more chunks
/// than the store holds, produced without pause) waits for its writer
/// instead of evicting what the writer has not sent yet: with no fault,
/// no event is lost or announced, on every arm and in both delivery modes.
#[test]
fn a_tool_that_outruns_its_store_loses_nothing_without_faults() {
    for delivery in ["post-stream", "session-stream"] {
        let text = format!(
            r#"
name = "outrun"
description = "calls of more chunks than the store holds, at interval 0, no faults"
duration_ms = 20000
[server]
delivery = "{delivery}"
store_capacity = 64
[[clients]]
behaviour = "resume"
count = 4
calls = 3
chunks = 300
chunk_interval_ms = 0
think_ms = 50
[network]
latency_ms = [1, 5]
client_hosts = 1
[heal]
duration_ms = 10000
"#
        );
        let sc = inline(&text);
        for arm in mcp_chaos::hosts::sut::Arm::all() {
            let (r, _) = run::run_arm(&sc, 0, arm, &Options::default()).unwrap();
            let m = &r.metrics;
            let what = format!("{arm} with {delivery} delivery (seed 0)");
            assert_eq!(m.operations, 12, "{what}");
            assert_eq!(m.ops_ok, 12, "{what}: {:?}", m.failures_by_cause);
            assert_eq!(m.ops_degraded, 0, "{what}");
            assert_eq!(m.announced_losses, 0, "{what}");
            assert_eq!(m.silent_losses, 0, "{what}");
        }
    }
}

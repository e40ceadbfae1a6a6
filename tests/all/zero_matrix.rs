//! The zero over the cross product (tests/zero-matrix/run writes the whole
//! of it to results/zero-matrix/): the cells it found failing, each fixed
//! and pinned here at the seed that showed it, and the residuals it lists
//! (sims/residuals/README.md), held to what the README says of them, so
//! that a change that removes one says so.

use mcp_chaos::base::profile::Profile;
use mcp_chaos::run::{self, Options, RunReport};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::path::PathBuf;

fn scenario(rel: &str) -> Scenario {
    Scenario::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// The zero of 2025-11-25 (guarded, keys and cursors, durable keys,
/// transactional effects), with `extra` on top.
fn zero(extra: &[(&str, &str)]) -> Options {
    let mut sets: Vec<(String, String)> = [
        ("server.durable_dedup", "true"),
        ("server.effects", "transactional"),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    sets.sort();
    Options {
        sets,
        clients: Some(Profile::KeysCursors),
        ..Options::default()
    }
}

/// The matrix's second deployment: 3 replicas round robin on a shared
/// durable store.
const ROUND_ROBIN: [(&str, &str); 4] = [
    ("deployment.replicas", "3"),
    ("deployment.balancer", "round-robin"),
    ("deployment.store", "shared"),
    ("deployment.store_durable", "true"),
];

fn run_zero(rel: &str, seed: u64, extra: &[(&str, &str)]) -> RunReport {
    let (r, _) = run::run(&scenario(rel), seed, Variant::Guarded, &zero(extra)).unwrap();
    r
}

/// The zero with `extra` fails nothing on `rel` at each of `seeds`, and
/// every client finishes; a failure names the command that reproduces it.
fn holds_zero(rel: &str, seeds: &[u64], extra: &[(&str, &str)]) {
    for &seed in seeds {
        let r = run_zero(rel, seed, extra);
        let repro = run::repro_command(rel, seed, Variant::Guarded, &zero(extra));
        assert_eq!(
            r.metrics.ops_failed, 0,
            "{:?}\nreproduce: {repro}",
            r.metrics.failures_by_cause
        );
        assert!(r.clients_finished, "reproduce: {repro}");
    }
}

/// A replica withdraws its published dropped stream once the client
/// resumed it; two of its view writes, sent 36 ms apart on two store
/// connections, reached the store in the other order, so the stream came
/// back and every other replica refused the client's next call 409 until
/// it gave up (`gave_up`, flaky-mobile seeds 25 and 38). The store now
/// keeps each replica's latest view by sequence number.
#[test]
fn round_robin_flaky_mobile_loses_nothing_when_view_writes_cross() {
    holds_zero("sims/flaky-mobile.toml", &[25, 38], &ROUND_ROBIN);
}

/// 1,200 clients resume at once behind round robin: a replica's
/// publisher, one store round trip per session, took longer to withdraw a
/// resumed stream than a client took to spend its attempts on 409s (25
/// `gave_up` at seed 0). A local resume now withdraws the stream at once.
#[test]
#[ignore = "slow: 1,200 clients on 3 replicas (about 5 s)"]
fn round_robin_thundering_herd_loses_nothing() {
    holds_zero("sims/thundering-herd.toml", &[0], &ROUND_ROBIN);
}

/// Residual: legacy HTTP+SSE behind any balancer (the legacy POSTs carry
/// no Mcp-Session-Id to route by): every operation `wrong_replica`, as
/// sims/residuals/README.md says.
#[test]
fn residual_legacy_behind_a_balancer_fails_as_listed() {
    for balancer in ["round-robin", "sticky", "hash"] {
        let r = run_zero(
            "sims/residuals/legacy-round-robin.toml",
            0,
            &[("deployment.balancer", balancer)],
        );
        assert_eq!(
            (r.metrics.operations, r.metrics.ops_failed),
            (4, 4),
            "{balancer}: if this changed, update sims/residuals/README.md"
        );
        assert_eq!(
            r.metrics.failures_by_cause.get("wrong_replica"),
            Some(&4),
            "{balancer}"
        );
    }
}

/// Residual: a buffering proxy holds a stream that never ends
/// (`run_ended`); `no_buffering` removes it, as the README says.
#[test]
fn residual_buffered_stream_fails_as_listed_and_no_buffering_removes_it() {
    let r = run_zero("sims/residuals/buffered-stream.toml", 0, &[]);
    assert_eq!(r.metrics.ops_failed, 1);
    assert_eq!(r.metrics.failures_by_cause.get("run_ended"), Some(&1));
    let r = run_zero(
        "sims/residuals/buffered-stream.toml",
        0,
        &[("server.no_buffering", "true")],
    );
    assert_eq!(r.metrics.ops_failed, 0, "{:?}", r.metrics.failures_by_cause);
}

/// The `go` preset is a server without the header (go-sdk's says none):
/// the same residual with the file's `no_buffering = false` taken out
/// fails with the preset and holds without it.
#[test]
fn the_go_preset_is_a_server_without_the_buffering_header() {
    let mut s = scenario("sims/residuals/buffered-stream.toml");
    s.server.no_buffering = None;
    let failed = |extra: &[(&str, &str)]| {
        let (r, _) = run::run(&s, 0, Variant::Guarded, &zero(extra)).unwrap();
        r.metrics.failures_by_cause
    };
    let run_ended = std::collections::BTreeMap::from([("run_ended".to_string(), 1)]);
    assert_eq!(failed(&[("server.sdk", "go")]), run_ended);
    assert_eq!(failed(&[]), Default::default());
}

/// Polling behind round robin: the client lost a paused stream (its
/// resume was cut) and said so on its next call, at another replica. The
/// stream's holder, still waiting for the advised resume, had published
/// nothing, so that replica ran the call at once: the client then handled
/// the new call's result before the older one it was still owed
/// (`out_of_order`, `fin_race` at 21 of 50 seeds of eviction). The holder
/// now reads the session's record while it holds a paused stream, and the
/// deciding replica waits for it to publish the stream the client lost.
#[test]
fn round_robin_polling_holds_a_call_until_the_lost_paused_stream_is_drained() {
    let polling = [("server.poll_after", "3"), ("server.poll_retry_ms", "100")];
    let extra: Vec<(&str, &str)> = ROUND_ROBIN.iter().chain(&polling).copied().collect();
    holds_zero("sims/eviction.toml", &[0, 37, 48], &extra);
}

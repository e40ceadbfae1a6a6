//! The zero and what each mechanism buys: durable keys and transactional
//! effects leave restarts only latency, the zero holds on every scenario,
//! and in half-open the guard with keys and cursors leaves every operation
//! ok while in eviction the guarded arm announces what it lost.

use crate::simulate::{path, scenario};
use mcp_chaos::history::{History, LedgerRecord, Rec};
use mcp_chaos::run::{self, Options, RunReport};
use mcp_chaos::server::Variant;

/// server-restarts, guarded, every client with keys and cursors: with the
/// default immediate effects a restart mid-execution followed by the
/// re-issue is a duplicate (cause `restart_mid_execution`); with durable
/// keys and transactional effects a restart costs latency, never a
/// duplicate or a lost operation. The white box agrees on commits.
#[test]
fn durable_keys_and_transactional_effects_leave_restarts_only_latency() {
    use mcp_chaos::oracle::whitebox;
    use mcp_chaos::run::Profile;
    let s = scenario("server-restarts.toml");
    let opts = |sets: &[(&str, &str)]| Options {
        clients: Some(Profile::KeysCursors),
        sets: sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Options::default()
    };
    let both = opts(&[
        ("server.durable_dedup", "true"),
        ("server.effects", "transactional"),
    ]);
    let agree = |r: &RunReport, h: &History, at: &str| {
        assert_eq!(
            whitebox::recount(&h.entries()),
            whitebox::Recount::of_black_box(&r.metrics),
            "white box vs black box: {at}"
        );
    };
    let mut deferred_killed = 0;
    for seed in 0..3 {
        let repro = run::repro_command("sims/server-restarts.toml", seed, Variant::Guarded, &both);
        let (r, h) = run::run(&s, seed, Variant::Guarded, &both).unwrap();
        let m = &r.metrics;
        assert_eq!((m.ops_failed, m.ops_lost), (0, 0), "{repro}\n{m:#?}");
        assert_eq!(m.duplicate_side_effects, 0, "{repro}");
        assert!(r.clients_finished, "{repro}");
        agree(&r, &h, &repro);
        // Executions started and never committed (the restart killed them).
        let (mut started, mut committed) = (0, 0);
        for e in h.entries().iter() {
            match &e.record {
                Rec::Ledger(LedgerRecord::Execution { deferred, .. }) => {
                    assert!(*deferred, "{repro}");
                    started += 1;
                }
                Rec::Ledger(LedgerRecord::Commit { .. }) => committed += 1,
                _ => {}
            }
        }
        deferred_killed += started - committed;
    }
    assert!(deferred_killed > 0, "some restart killed an execution");
    // The default: the same runs show the duplicates nothing prevents.
    let mut dup = 0;
    for seed in 0..3 {
        let (r, h) = run::run(&s, seed, Variant::Guarded, &opts(&[])).unwrap();
        let m = &r.metrics;
        assert_eq!(
            m.failures_by_cause.get("restart_mid_execution").copied(),
            (m.ops_failed > 0).then_some(m.ops_failed),
            "seed {seed}: {m:#?}"
        );
        dup += m.ops_duplicated;
        agree(&r, &h, &format!("default, seed {seed}"));
    }
    assert!(dup > 0, "the default shows duplicates");
    // The white box agrees on transactional runs with other faults, under
    // every arm.
    let tx = opts(&[("server.effects", "transactional")]);
    for name in ["partition-storm.toml", "flaky-mobile.toml", "eviction.toml"] {
        let s = scenario(name);
        for v in Variant::ALL {
            for o in [&tx, &Options::default()] {
                let o = Options {
                    clients: None,
                    sets: o.sets.clone(),
                    ..Options::default()
                };
                let (r, h) = run::run(&s, 0, v, &o).unwrap();
                agree(
                    &r,
                    &h,
                    &run::repro_command(&format!("sims/{name}"), 0, v, &o),
                );
            }
        }
    }
}

/// The zero, a few seeds of it (results/zero/ holds 100): on every
/// scenario in `sims/`, the guarded arm with clients that send keys and
/// cursors, durable keys and transactional effects fails no operation.
#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn the_zero_holds_on_every_scenario() {
    use mcp_chaos::run::Profile;
    let zero = Options {
        clients: Some(Profile::KeysCursors),
        sets: vec![
            ("server.durable_dedup".into(), "true".into()),
            ("server.effects".into(), "transactional".into()),
        ],
        ..Options::default()
    };
    let files = mcp_chaos::cli::scenario_files(&path("")).unwrap();
    assert!(files.len() >= 10, "every scenario is there");
    for f in files {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        let s = scenario(&name);
        for seed in 0..2 {
            let repro = run::repro_command(&format!("sims/{name}"), seed, Variant::Guarded, &zero);
            let (r, _) = run::run(&s, seed, Variant::Guarded, &zero).unwrap();
            let m = &r.metrics;
            assert_eq!(
                m.ops_failed, 0,
                "{name} seed {seed}: {:?}\nreproduce with: {repro}",
                m.failures_by_cause
            );
            assert_eq!(m.ops_ok + m.ops_degraded, m.operations, "{repro}");
            assert_eq!(m.guard_bugs, Some(0), "{repro}");
        }
    }
}

/// What each mechanism buys, on two scenarios: in half-open the guard with
/// clients that send keys and cursors leaves every operation ok; in
/// eviction the guarded arm announces what it lost (a gap) instead of
/// duplicating or losing it silently, where the unguarded arm loses it
/// silently.
#[test]
fn half_open_all_ok_and_eviction_announced() {
    use mcp_chaos::run::Profile;
    let with = |p| Options {
        clients: Some(p),
        ..Options::default()
    };
    let kc = with(Profile::KeysCursors);
    let (r, _) = run::run(&scenario("half-open.toml"), 0, Variant::Guarded, &kc).unwrap();
    let m = &r.metrics;
    assert!(m.operations > 0);
    assert_eq!(
        m.ops_ok,
        m.operations,
        "{}",
        run::repro_command("sims/half-open.toml", 0, Variant::Guarded, &kc)
    );
    let keys = with(Profile::Keys);
    let ev = scenario("eviction.toml");
    let (g, _) = run::run(&ev, 0, Variant::Guarded, &keys).unwrap();
    let (u, _) = run::run(&ev, 0, Variant::Unguarded, &keys).unwrap();
    let repro = run::repro_command("sims/eviction.toml", 0, Variant::Guarded, &keys);
    let m = &g.metrics;
    assert_eq!((m.ops_duplicated, m.ops_silent_loss), (0, 0), "{repro}");
    assert!(m.ops_announced_loss > 0, "{repro}");
    assert!(
        u.metrics.ops_silent_loss > 0,
        "the unguarded arm loses silently"
    );
}

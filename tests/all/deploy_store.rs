//! Deployments on a shared store (`store = "shared"`): sessions carried
//! across round robin, the gateway case failing nothing, replica churn
//! losing nothing on the guarded arm, where resumes land, a store restart
//! that keeps nothing, determinism with store faults, the SDK's server
//! keeping its own memory, and Rule M on every replica's dropped streams.

use crate::deploy::{fleet, gateway, seen, sets, wrong_replica};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;

/// The settings under which the zero across replicas is claimed: the
/// guarded arm's clients send keys and cursors, completed keys are
/// durable, effects commit with their key.
fn zero_settings(extra: &[(&str, &str)]) -> Options {
    let mut pairs = vec![
        ("server.durable_dedup", "true"),
        ("server.effects", "transactional"),
        ("deployment.store", "shared"),
        ("deployment.on_dead_upstream", "repin"),
    ];
    pairs.extend_from_slice(extra);
    Options {
        clients: Some(run::Profile::KeysCursors),
        ..sets(&pairs)
    }
}

fn count(
    h: &mcp_chaos::history::History,
    pick: impl Fn(&mcp_chaos::history::Rec) -> bool,
) -> usize {
    h.entries().iter().filter(|e| pick(&e.record)).count()
}

/// Round robin over a shared store: every replica loads the session it
/// lacks from the store, so nobody meets a wrong replica (no 404, no
/// re-initialization), on every built-in arm; the one that ignores keys
/// still runs dedup-retry's retries twice.
#[test]
fn a_shared_store_carries_sessions_across_round_robin() {
    use mcp_chaos::history::{Rec, Record};
    let s = fleet("[deployment]\nreplicas = 3\nbalancer = \"round-robin\"\nstore = \"shared\"\n");
    for v in Variant::ALL {
        let (r, h) = run::run(&s, 0, v, &Options::default()).unwrap();
        assert_eq!(
            wrong_replica(&r),
            0,
            "{}: {:?}",
            r.server,
            r.metrics.failures_by_cause
        );
        assert_eq!(r.metrics.reinitializations, 0, "{}", r.server);
        let adopted = count(&h, |r| {
            matches!(r, Rec::Server(Record::SessionAdopted { .. }))
        });
        assert!(
            adopted > 0,
            "{}: sessions were loaded from the store",
            r.server
        );
        if v.guards() {
            assert_eq!(
                r.metrics.guard_bugs,
                Some(0),
                "the audit judges each replica's view"
            );
        }
    }
}

/// The gateway case on a shared store, repinning: the guarded arm fails
/// no operation, and the moved clients stall at most one forward timeout.
#[test]
fn the_gateway_case_on_a_shared_store_fails_nothing_and_stalls_once() {
    let s = gateway("repin");
    let (r, h) = run::run(&s, 0, Variant::Guarded, &zero_settings(&[])).unwrap();
    assert_eq!(r.metrics.ops_failed, 0, "{:?}", r.metrics.failures_by_cause);
    assert_eq!(
        r.metrics.reinitializations, 0,
        "the session moved, not its client"
    );
    let m = &r.metrics.migration_latency_us;
    assert!(m.count > 0, "sessions moved off the hung replica");
    assert!(
        m.max < 5_000_000 + 2_000_000,
        "one forward timeout (5 s) at most: {m:?}"
    );
    for c in 0..4 {
        assert!(seen(&h, c).refused.is_empty(), "client {c} got a 404");
    }
}

/// A rolling deploy and a scale-down with executions in flight: on a
/// shared store the guarded arm's resumes reach the store, a stream whose
/// replica exited ends (410, its lease ran out) and the call is re-issued
/// under its key, which the store lets run again once the dead runner's
/// lease ran out: no operation fails. With local stores the same deploy
/// fails operations with `owner_dead`.
#[test]
fn replica_churn_on_a_shared_store_loses_nothing_on_the_guarded_arm() {
    for name in ["rolling-deploy", "hash-scale-down"] {
        let path = format!("{}/sims/deploy/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let s = Scenario::load(std::path::Path::new(&path)).unwrap();
        let (r, _) = run::run(&s, 0, Variant::Guarded, &zero_settings(&[])).unwrap();
        assert_eq!(
            r.metrics.ops_failed, 0,
            "{name}: {:?}",
            r.metrics.failures_by_cause
        );
        assert_eq!(r.metrics.guard_bugs, Some(0), "{name}");
        assert_eq!(r.metrics.duplicate_side_effects, 0, "{name}");
    }
}

/// Which resume routing the balancer uses decides where a resume lands:
/// `pin-owner` sends it to the replica that gave its event id (served
/// there, from memory), `move-owner` wherever the balancer's turn goes
/// (served from the store when that is another replica).
#[test]
fn pin_owner_sends_resumes_home_and_move_owner_does_not() {
    use mcp_chaos::history::{Rec, Record};
    let s = fleet("[deployment]\nreplicas = 3\nbalancer = \"round-robin\"\nstore = \"shared\"\n");
    let elsewhere = |h: &mcp_chaos::history::History| {
        count(h, |r| {
            matches!(r, Rec::Server(Record::ResumedElsewhere { .. }))
        })
    };
    let home = |h: &mcp_chaos::history::History| {
        count(h, |r| matches!(r, Rec::Server(Record::Resumed { .. })))
    };
    let (_, pinned) = run::run(
        &s,
        0,
        Variant::Guarded,
        &sets(&[("deployment.resume", "pin-owner")]),
    )
    .unwrap();
    let (_, moved) = run::run(
        &s,
        0,
        Variant::Guarded,
        &sets(&[("deployment.resume", "move-owner")]),
    )
    .unwrap();
    assert!(home(&pinned) > 0, "resumes happened");
    assert_eq!(
        elsewhere(&pinned),
        0,
        "every owner was alive: every resume went home"
    );
    assert!(
        elsewhere(&moved) > 0,
        "round robin sent some resumes elsewhere"
    );
}

/// A store that restarts without keeping its contents (the cause's
/// minimal scenario): a resume on the other replica finds its cursor
/// nowhere, replays nothing, and the call fails with `cold_resume`; the
/// same run on a durable store has no cold resume.
#[test]
fn a_store_restart_that_keeps_nothing_makes_resumes_cold() {
    use mcp_chaos::history::{EmptyResume, Rec, Record};
    let path = format!(
        "{}/sims/causes/cold_resume.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut s = Scenario::load(std::path::Path::new(&path)).unwrap();
    let cold = |h: &mcp_chaos::history::History| {
        count(h, |r| {
            matches!(
                r,
                Rec::Server(Record::ResumedEmpty {
                    why: EmptyResume::Cold,
                    ..
                })
            )
        })
    };
    let (r, h) = run::run(&s, 0, Variant::Unguarded, &Options::default()).unwrap();
    assert!(cold(&h) > 0, "the resume found a cold store");
    assert!(r.metrics.failures_by_cause.contains_key("cold_resume"));
    s.set("deployment.store_durable", "true").unwrap();
    let (r, h) = run::run(&s, 0, Variant::Unguarded, &Options::default()).unwrap();
    assert_eq!(cold(&h), 0, "a durable store keeps every cursor");
    assert!(
        !r.metrics.failures_by_cause.contains_key("cold_resume"),
        "{:?}",
        r.metrics.failures_by_cause
    );
}

/// Same seed, same bytes on a shared store, store faults included, for a
/// built-in arm and the SDK's server.
#[test]
fn a_shared_store_and_its_faults_are_deterministic() {
    let s = fleet(
        "[deployment]\nreplicas = 3\nbalancer = \"sticky\"\nstore = \"shared\"\n\
         store_lag_ms = 20\n\
         [[faults.explicit]]\nkind = \"store_partition\"\nat_ms = 1000\nduration_ms = 800\n\
         [[faults.explicit]]\nkind = \"store_lag_window\"\nat_ms = 2000\nduration_ms = 500\nlag_ms = 300\n",
    );
    for arm in [
        Arm::BuiltIn(Variant::Guarded),
        Arm::BuiltIn(Variant::Keys),
        Arm::Rmcp,
    ] {
        let (a, _) = run::run_arm(&s, 5, arm, &Options::default()).unwrap();
        let (b, _) = run::run_arm(&s, 5, arm, &Options::default()).unwrap();
        assert_eq!(a.trace_sha256, b.trace_sha256, "{}", a.server);
    }
}

/// The SDK's server keeps its own memory on every replica, as shipped:
/// on a deployment that asks for a shared store, no store is hosted for
/// it, its store faults are not applied (with why), and the oracle is not
/// told of a store.
#[test]
fn the_sdk_server_keeps_its_own_memory_on_a_shared_store() {
    use mcp_chaos::history::{Rec, WorldRecord};
    let path = format!(
        "{}/sims/deploy/store-outage.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let s = Scenario::load(std::path::Path::new(&path)).unwrap();
    let (r, h) = run::run_arm(&s, 0, Arm::Rmcp, &Options::default()).unwrap();
    assert_eq!(r.faults.not_applied.len(), 2, "{:?}", r.faults.not_applied);
    for n in &r.faults.not_applied {
        assert!(n.reason.contains("no shared store"), "{}", n.reason);
    }
    let told = count(&h, |r| {
        matches!(
            r,
            Rec::World(WorldRecord::Deployed {
                shared_store: Some(_),
                ..
            })
        )
    });
    assert_eq!(told, 0);
    let (r, _) = run::run(&s, 0, Variant::Guarded, &Options::default()).unwrap();
    assert!(
        r.faults.not_applied.is_empty(),
        "{:?}",
        r.faults.not_applied
    );
}

/// Rule M across replicas: on a shared store a replica decides on the
/// dropped streams every replica published, so a POST that reaches
/// another replica than the one holding a dropped stream is refused as
/// the holder would refuse it; the audit judges each replica's own
/// streams from its records and the rule on the whole view, and finds
/// nothing to dispute. With resumes served elsewhere, the holder learns
/// of them through the store (`StoreWord`).
#[test]
fn rule_m_decides_on_every_replicas_dropped_streams() {
    use mcp_chaos::history::{LoggedVerdict, Rec, Record};
    use std::collections::BTreeMap;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sims/deploy/round-robin-shared.toml");
    let s = Scenario::load(&path).unwrap();
    for resume in ["pin-owner", "move-owner"] {
        let opts = zero_settings(&[("deployment.resume", resume)]);
        let (r, h) = run::run(&s, 0, Variant::Guarded, &opts).unwrap();
        let mut opened_on = BTreeMap::new();
        let (mut foreign_views, mut foreign_refusals, mut words, mut elsewhere) = (0, 0, 0, 0);
        for e in h.entries().iter() {
            match &e.record {
                Rec::Server(Record::StreamOpened { stream, conn, .. }) => {
                    opened_on.insert(*stream, mcp_chaos::history::replica_of_conn(*conn));
                }
                Rec::Server(Record::Decision {
                    decision,
                    view,
                    replica,
                    ..
                }) => {
                    let foreign = view
                        .dropped
                        .iter()
                        .any(|d| opened_on.get(&d.stream) != replica.as_ref());
                    if foreign {
                        foreign_views += 1;
                        if decision.verdict == LoggedVerdict::Reject {
                            foreign_refusals += 1;
                        }
                    }
                }
                Rec::Server(Record::StoreWord { .. }) => words += 1,
                Rec::Server(Record::ResumedElsewhere { .. }) => elsewhere += 1,
                _ => {}
            }
        }
        assert!(
            foreign_views > 0 && foreign_refusals > 0,
            "{resume}: some decision saw another replica's dropped stream ({foreign_views}) and refused on it ({foreign_refusals})"
        );
        assert_eq!(r.metrics.guard_bugs, Some(0), "{resume}");
        if resume == "move-owner" {
            assert!(
                elsewhere > 0 && words > 0,
                "resumes elsewhere ({elsewhere}) reached the holder ({words})"
            );
        } else {
            assert_eq!(r.metrics.ops_failed, 0, "{:?}", r.metrics.failures_by_cause);
        }
    }
}

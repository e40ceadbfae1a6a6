//! Deployments: replicas behind a balancer (`[deployment]`). One replica
//! without a balancer is the world it always was, byte for byte; replicas
//! are deterministic like everything else; the balancer's routing decides
//! whether a session meets a replica that does not hold it.

use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use mcp_chaos::sut::Arm;

/// A small fleet: resume and dedup-retry clients, a few drops.
fn fleet(deployment: &str) -> Scenario {
    Scenario::parse(&format!(
        r#"
name = "deploy-test"
duration_ms = 4000
[[clients]]
behaviour = "resume"
count = 6
calls = 3
chunks = 3
[[clients]]
behaviour = "dedup-retry"
count = 3
calls = 3
chunks = 3
[faults]
drop_rate = 0.1
[network]
client_hosts = 2
[heal]
duration_ms = 10000
{deployment}
"#
    ))
    .unwrap()
}

fn sets(pairs: &[(&str, &str)]) -> Options {
    Options {
        sets: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Options::default()
    }
}

fn wrong_replica(r: &run::RunReport) -> u64 {
    r.metrics
        .failures_by_cause
        .get("wrong_replica")
        .copied()
        .unwrap_or(0)
}

/// `[deployment]` at its defaults (one replica, no balancer) is the world
/// without the table: the same records, the same hash.
#[test]
fn one_replica_without_a_balancer_is_the_old_world_byte_for_byte() {
    let plain = fleet("");
    let table = fleet("[deployment]\nreplicas = 1\nbalancer = \"none\"\n");
    for v in Variant::BOTH {
        let (a, _) = run::run(&plain, 3, v, &Options::default()).unwrap();
        let (b, _) = run::run(&table, 3, v, &Options::default()).unwrap();
        assert_eq!(a.trace_sha256, b.trace_sha256, "{}", v.as_str());
        assert_eq!(a.metrics, b.metrics, "{}", v.as_str());
    }
}

/// Same seed, same bytes behind a balancer, for a built-in arm and the
/// SDK's server; another seed, another run.
#[test]
fn replicas_behind_a_balancer_are_deterministic() {
    let s = fleet("[deployment]\nreplicas = 3\nbalancer = \"round-robin\"\n");
    for arm in [Arm::BuiltIn(Variant::Guarded), Arm::Rmcp] {
        let (a, _) = run::run_arm(&s, 7, arm, &Options::default()).unwrap();
        let (b, _) = run::run_arm(&s, 7, arm, &Options::default()).unwrap();
        let (c, _) = run::run_arm(&s, 8, arm, &Options::default()).unwrap();
        assert_eq!(a.trace_sha256, b.trace_sha256, "{}", a.server);
        assert_ne!(a.trace_sha256, c.trace_sha256, "{}", a.server);
    }
}

/// Round robin over local stores sends requests to replicas without the
/// session: operations fail with `wrong_replica` on every arm. A sticky
/// balancer (by session or by client) and a hash balancer whose replicas
/// mint ring-owned ids send every request home: none does.
#[test]
fn routing_decides_whether_a_request_meets_a_wrong_replica() {
    let s = fleet("[deployment]\nreplicas = 3\nbalancer = \"round-robin\"\n");
    for v in Variant::BOTH {
        let (r, _) = run::run(&s, 0, v, &Options::default()).unwrap();
        assert!(
            wrong_replica(&r) > 0,
            "round-robin, {}: {:?}",
            r.server,
            r.metrics.failures_by_cause
        );
        assert!(r.metrics.reinitializations > 0, "{}", r.server);
        for home in [
            sets(&[("deployment.balancer", "sticky")]),
            sets(&[("deployment.balancer", "hash")]),
        ] {
            let (r, _) = run::run(&s, 0, v, &home).unwrap();
            assert_eq!(wrong_replica(&r), 0, "{} {:?}", r.server, home.sets);
            assert_eq!(
                r.metrics.reinitializations, 0,
                "{} {:?}",
                r.server, home.sets
            );
        }
    }
}

/// A sticky pin by client token needs a token; the fleet's clients send
/// one each, so they stay home too.
#[test]
fn a_sticky_pin_by_client_keeps_each_client_on_one_replica() {
    let s = fleet("[deployment]\nreplicas = 2\nbalancer = \"sticky\"\npin_key = \"client\"\n");
    let (r, _) = run::run(&s, 1, Variant::Unguarded, &Options::default()).unwrap();
    assert_eq!(wrong_replica(&r), 0, "{:?}", r.metrics.failures_by_cause);
    assert_eq!(r.metrics.reinitializations, 0);
}

/// A deployment the file gets wrong is refused with one line naming the
/// key and the fix.
#[test]
fn bad_deployments_name_the_fix() {
    for (table, says) in [
        ("replicas = 3", "needs a balancer"),
        (
            "replicas = 0\nbalancer = \"sticky\"",
            "deployment.replicas = 0",
        ),
        (
            "replicas = 2\nbalancer = \"hash\"\nstore = \"shared\"",
            "not available yet",
        ),
        ("replicas = 2\nbalancer = \"sideways\"", "unknown variant"),
        ("replica = 2", "unknown field"),
    ] {
        let text = format!(
            "name = \"t\"\nduration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\n[deployment]\n{table}\n"
        );
        let err = match Scenario::parse(&text) {
            Ok(s) => s.validate().unwrap_err(),
            Err(e) => e,
        };
        assert!(err.contains(says), "{table:?}: {err}");
    }
    let mut s = fleet("");
    let err = s.set("deployment.replica", "2").unwrap_err();
    assert!(err.contains("did you mean deployment.replicas"), "{err}");
    // Replicas and their balancer may be set in either order.
    s.set("deployment.replicas", "2").unwrap();
    s.set("deployment.balancer", "sticky").unwrap();
    s.validate().unwrap();
}

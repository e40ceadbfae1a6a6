//! Deployments: replicas behind a balancer (`[deployment]`). One replica
//! without a balancer is the world it always was, byte for byte; replicas
//! are deterministic like everything else; the balancer's routing decides
//! whether a session meets a replica that does not hold it.

use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;

/// A small fleet named `name`: resume and dedup-retry clients, a few
/// drops, the `[deployment]` table given; no expectations.
pub(super) fn fleet_toml(name: &str, deployment: &str) -> String {
    format!(
        r#"
name = "{name}"
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
    )
}

/// [`fleet_toml`] as the tests here run it.
pub(super) fn fleet(deployment: &str) -> Scenario {
    Scenario::parse(&fleet_toml("deploy-test", deployment)).unwrap()
}

pub(super) fn sets(pairs: &[(&str, &str)]) -> Options {
    Options {
        sets: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Options::default()
    }
}

pub(super) fn wrong_replica(r: &run::RunReport) -> u64 {
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
            "replicas = 1\nstore = \"shared\"",
            "for replicas behind a balancer",
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
    // A store fault needs the shared store it acts on.
    let text = "name = \"t\"\nduration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\n\
        [deployment]\nreplicas = 2\nbalancer = \"sticky\"\n\
        [[faults.explicit]]\nkind = \"store_restart\"\nat_ms = 10\n";
    let err = Scenario::parse(text)
        .and_then(|s| s.validate())
        .unwrap_err();
    assert!(err.contains("deployment.store = \"shared\""), "{err}");
    let mut s = fleet("");
    let err = s.set("deployment.replica", "2").unwrap_err();
    assert!(err.contains("did you mean deployment.replicas"), "{err}");
    // Replicas and their balancer may be set in either order.
    s.set("deployment.replicas", "2").unwrap();
    s.set("deployment.balancer", "sticky").unwrap();
    s.validate().unwrap();
}

/// The gateway case, small: a sticky balancer pinned by client token, a
/// 60 s pin, a 5 s forward timeout; replica 0 hangs for good at 3 s.
pub(super) fn gateway(on_dead: &str) -> Scenario {
    Scenario::parse(&format!(
        r#"
name = "gateway"
duration_ms = 20000
[[clients]]
behaviour = "resume"
count = 4
calls = 6
chunks = 2
chunk_interval_ms = 50
think_ms = 1000
read_timeout_ms = 8000
backoff_ms = 200
[network]
client_hosts = 1
[deployment]
replicas = 2
balancer = "sticky"
pin_key = "client"
affinity_ttl_ms = 60000
forward_timeout_ms = 5000
on_dead_upstream = "{on_dead}"
[[faults.explicit]]
kind = "replica_crash"
replica = 0
at_ms = 3000
duration_ms = 0
mode = "hang"
[heal]
duration_ms = 120000
"#
    ))
    .unwrap()
}

/// What one client did, µs: its requests sent, its initializes, the 404s
/// it got, and the sessions it was given.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) sent: Vec<u64>,
    pub(super) inits: Vec<u64>,
    pub(super) refused: Vec<u64>,
    pub(super) sessions: Vec<u64>,
}

pub(super) fn seen(h: &mcp_chaos::history::History, client: u32) -> Seen {
    use mcp_chaos::history::{ClientRecord, Rec, Sent};
    let mut out = Seen::default();
    for e in h.entries().iter() {
        let Rec::Client(r) = &e.record else { continue };
        match r {
            ClientRecord::Sent {
                client: c, what, ..
            } if *c == client => {
                out.sent.push(e.t_us);
                if *what == Sent::Initialize {
                    out.inits.push(e.t_us);
                }
            }
            ClientRecord::Status {
                client: c,
                status: 404,
                ..
            } if *c == client => out.refused.push(e.t_us),
            ClientRecord::Session { client: c, .. } if *c == client => out.sessions.push(e.t_us),
            _ => {}
        }
    }
    out
}

/// `on_dead_upstream = "wait"`: every request of a client pinned to the
/// hung replica stalls the whole forward timeout and gets 404 (its call),
/// then every initialize it retries stalls the same, until the pin
/// expires (60 s); the session then moves, and its migration latency is
/// about the pin's lifetime. On every arm.
#[test]
fn a_gateway_waiting_on_a_hung_owner_stalls_each_request_until_the_pin_expires() {
    let s = gateway("wait");
    for arm in [
        Arm::BuiltIn(Variant::Guarded),
        Arm::BuiltIn(Variant::Unguarded),
        Arm::Rmcp,
    ] {
        let (r, h) = run::run_arm(&s, 0, arm, &Options::default()).unwrap();
        let mut stalled = 0;
        for c in 0..4 {
            let v = seen(&h, c);
            let Some(&first) = v.refused.first() else {
                continue;
            };
            stalled += 1;
            let asked = v.sent.iter().rev().find(|&&x| x < first).copied().unwrap();
            assert!(
                first - asked >= 5_000_000,
                "{} client {c}: 404 after {} µs",
                r.server,
                first - asked
            );
            // Its next session comes once the pin made at the start expired.
            let next = v.sessions.iter().find(|&&t| t > first).copied().unwrap();
            assert!(
                next >= 60_000_000,
                "{} client {c}: a session at {next} µs",
                r.server
            );
            // Every initialize in between stalled a whole forward timeout.
            let inits: Vec<u64> = v
                .inits
                .iter()
                .copied()
                .filter(|&t| t >= first && t < next)
                .collect();
            assert!(inits.len() >= 5, "{} client {c}: {inits:?}", r.server);
            for w in inits.windows(2) {
                assert!(
                    w[1] - w[0] >= 5_000_000,
                    "{} client {c}: {inits:?}",
                    r.server
                );
            }
        }
        assert!(
            stalled > 0,
            "{}: some client was pinned to the hung replica",
            r.server
        );
        let m = &r.metrics.migration_latency_us;
        assert!(m.count > 0 && m.p50 >= 50_000_000, "{}: {m:?}", r.server);
    }
}

/// `on_dead_upstream = "repin"`: the first request to the hung replica
/// stalls one forward timeout, the pin moves, and the session is
/// re-established on the live replica at once.
#[test]
fn a_gateway_that_repins_stalls_at_most_one_forward_timeout() {
    let s = gateway("repin");
    let (r, h) = run::run(&s, 0, Variant::Guarded, &Options::default()).unwrap();
    let mut moved = 0;
    for c in 0..4 {
        let v = seen(&h, c);
        let Some(&first) = v.refused.first() else {
            continue;
        };
        moved += 1;
        let asked = v.sent.iter().rev().find(|&&x| x < first).copied().unwrap();
        // The moved request reaches the live replica after one timeout,
        // which answers 404 at once (a local store does not know it).
        assert!(
            (5_000_000..5_100_000).contains(&(first - asked)),
            "client {c}: {}",
            first - asked
        );
        let next = v.sessions.iter().find(|&&t| t > first).copied().unwrap();
        assert!(
            next - first < 1_000_000,
            "client {c}: a session {} µs later",
            next - first
        );
        assert_eq!(v.refused.len(), 1, "client {c}: {:?}", v.refused);
    }
    assert!(moved > 0, "some client was pinned to the hung replica");
    let m = &r.metrics.migration_latency_us;
    assert!(m.count > 0 && m.max < 12_000_000, "{m:?}");
    assert_eq!(r.metrics.ops_failed, 0, "{:?}", r.metrics.failures_by_cause);
}

/// A draining replica takes no new session while it drains (the
/// balancer sends every initialize elsewhere) and starts afresh when its
/// grace ends; its replica restart is recorded.
#[test]
fn a_draining_replica_takes_no_new_session_and_restarts_afresh() {
    use mcp_chaos::history::{Rec, Record, WorldRecord};
    // Replica 0 dies while replica 1 drains: its clients re-initialize,
    // and every one of them must land on replica 2.
    let s = Scenario::parse(
        r#"
name = "drain"
duration_ms = 4000
[[clients]]
behaviour = "resume"
count = 9
calls = 10
chunks = 3
think_ms = 300
[network]
client_hosts = 1
[deployment]
replicas = 3
balancer = "sticky"
forward_timeout_ms = 200
on_dead_upstream = "repin"
[[faults.explicit]]
kind = "replica_drain"
replica = 1
at_ms = 1000
grace_ms = 1500
[[faults.explicit]]
kind = "replica_crash"
replica = 0
at_ms = 1100
duration_ms = 0
"#,
    )
    .unwrap();
    let (r, h) = run::run(&s, 2, Variant::Guarded, &Options::default()).unwrap();
    let (mut inits_on_1, mut inits_elsewhere, mut restarted) = (0, 0, None);
    for e in h.entries().iter() {
        match &e.record {
            // A session issued: initialize answered 200.
            Rec::Server(Record::Responded {
                rpc_id: Some(id),
                status: 200,
                conn,
                ..
            }) if id.to_string().contains("-init#") => {
                let during = (1_000_000..2_500_000).contains(&e.t_us);
                match (conn >> 40, during) {
                    (1, true) => inits_on_1 += 1,
                    (_, true) => inits_elsewhere += 1,
                    _ => {}
                }
            }
            Rec::World(WorldRecord::ReplicaRestarted { replica }) => {
                restarted = Some((*replica, e.t_us));
            }
            _ => {}
        }
    }
    assert_eq!(inits_on_1, 0, "replica 1 took a session while draining");
    assert!(
        inits_elsewhere > 0,
        "replica 0's clients initialized again during the drain"
    );
    assert_eq!(restarted, Some((1, 2_500_000)));
    assert_eq!(
        r.faults.applied.get("replica_drain"),
        Some(&1),
        "{:?}",
        r.faults
    );
}

/// A balancer restart loses a sticky balancer's pins: sessions land on
/// replicas that do not hold them (`affinity_lost`). A hash balancer
/// keeps no table: after its restart every session goes home, and the
/// guarded arm loses nothing.
#[test]
fn a_balancer_restart_loses_pins_but_not_a_ring() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sims/deploy/balancer-restart.toml"
    );
    let s = Scenario::load(std::path::Path::new(path)).unwrap();
    let (sticky, _) = run::run(&s, 0, Variant::Guarded, &Options::default()).unwrap();
    let lost = sticky
        .metrics
        .failures_by_cause
        .get("affinity_lost")
        .copied();
    assert!(
        lost.is_some_and(|n| n > 0),
        "{:?}",
        sticky.metrics.failures_by_cause
    );
    let hash = sets(&[("deployment.balancer", "hash")]);
    let (ring, _) = run::run(&s, 0, Variant::Guarded, &hash).unwrap();
    assert_eq!(
        ring.metrics.ops_failed, 0,
        "{:?}",
        ring.metrics.failures_by_cause
    );
    assert_eq!(ring.metrics.reinitializations, 0);
}

/// Behind a hash balancer, removing a replica moves only its own
/// sessions: every client refused (404) between the removal and the next
/// membership change had its calls running on the removed replica.
#[test]
fn a_hash_ring_moves_only_the_removed_replicas_sessions() {
    use mcp_chaos::history::{ClientRecord, LedgerRecord, Rec};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sims/deploy/hash-scale-down.toml"
    );
    let s = Scenario::load(std::path::Path::new(path)).unwrap();
    let (r, h) = run::run(&s, 0, Variant::Guarded, &Options::default()).unwrap();
    let (removed_at, added_at) = (4_000_000, 7_000_000);
    let mut home = std::collections::BTreeMap::new();
    let mut refused = std::collections::BTreeSet::new();
    for e in h.entries().iter() {
        match &e.record {
            Rec::Ledger(LedgerRecord::Execution { tag, replica, .. }) if e.t_us < removed_at => {
                let client: u32 = tag[1..tag.find('-').unwrap()].parse().unwrap();
                home.insert(client, replica.unwrap());
            }
            Rec::Client(ClientRecord::Status {
                client,
                status: 404,
                ..
            }) if (removed_at..added_at).contains(&e.t_us) => {
                refused.insert(*client);
            }
            _ => {}
        }
    }
    assert!(!refused.is_empty(), "the removal moved some session");
    for c in &refused {
        assert_eq!(
            home.get(c),
            Some(&3),
            "client {c} was refused, but lived on {:?}",
            home.get(c)
        );
    }
    let moved_by_3 = home.values().filter(|&&r| r == 3).count();
    assert!(refused.len() <= moved_by_3, "{refused:?}");
    assert_eq!(
        r.faults.applied.get("replica_add"),
        Some(&1),
        "{:?}",
        r.faults
    );
}

/// Every scenario of `sims/deploy/`, seed 0, holds its expectations on
/// the arms they name (the built-in ones and the SDK's server).
#[test]
fn every_deployment_scenario_holds_its_expectations() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/deploy");
    let mut n = 0;
    for path in mcp_chaos::cli::scenario_files(&dir).unwrap() {
        let s = Scenario::load(&path).unwrap();
        let f = path.display();
        for arm in [
            Arm::BuiltIn(Variant::Guarded),
            Arm::BuiltIn(Variant::Unguarded),
            Arm::Rmcp,
        ] {
            let (r, _) = run::run_arm(&s, 0, arm, &Options::default()).unwrap();
            assert!(
                r.failed_expectations.is_empty(),
                "{f} under {}: {:?}\nreproduce: cargo run --release -- run --scenario {f} --seed 0 --server {}",
                r.server,
                r.failed_expectations,
                r.server
            );
            // The guard audit holds across replicas.
            assert!(
                r.metrics.guard_bugs.is_none_or(|b| b == 0),
                "{f} under {}",
                r.server
            );
        }
        n += 1;
    }
    assert!(n >= 6, "{n} deployment scenarios");
}

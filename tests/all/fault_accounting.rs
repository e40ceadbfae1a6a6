//! Every planned fault is applied or not applied with its reason: per
//! kind, planned = applied + not applied, each kind of unapplied fault
//! says why, and a run cut short accounts for its clients' faults.

use crate::simulate::{simulate, simulate_scenario, Run};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::collections::BTreeSet;

/// Every planned fault is either applied or not applied with a reason:
/// per kind, planned = applied + not_applied, and no fault goes unexplained.
fn assert_faults_add_up(r: &Run) {
    let f = &r.report.faults;
    let not_applied = f.not_applied_counts();
    let kinds: BTreeSet<&String> = f
        .planned
        .keys()
        .chain(f.applied.keys())
        .chain(not_applied.keys())
        .collect();
    for k in kinds {
        let get = |m: &std::collections::BTreeMap<String, u64>| m.get(k).copied().unwrap_or(0);
        r.check(
            get(&f.planned) == get(&f.applied) + get(&not_applied),
            &format!(
                "{k}: planned {} = applied {} + not applied {} ({:?})",
                get(&f.planned),
                get(&f.applied),
                get(&not_applied),
                f.not_applied
            ),
        );
    }
    for n in &f.not_applied {
        r.check(
            !n.reason.is_empty() && !n.reason.contains("gave no account"),
            &format!("{:?} is explained", n),
        );
    }
    let mut sorted = f.not_applied.clone();
    sorted.sort();
    r.check(sorted == f.not_applied, "not_applied is sorted");
}

#[test]
fn planned_faults_are_applied_or_explained() {
    for (name, seeds) in [
        ("server-restarts.toml", 0..4),
        ("partition-storm.toml", 0..1),
        ("flaky-mobile.toml", 0..1),
        ("seed-004-cross-transport.toml", 0..1),
        ("half-open.toml", 0..1),
    ] {
        for seed in seeds {
            for v in [Variant::Guarded, Variant::Unguarded] {
                assert_faults_add_up(&simulate(name, seed, v, false));
            }
        }
    }
    // server-restarts: the workload ends after about 9.5 s of a 20 s fault
    // phase, and restarts are drawn over 2..18 s: the later ones never come.
    let r = simulate("server-restarts.toml", 0, Variant::Guarded, false);
    r.check(
        r.report.faults.not_applied.iter().any(|n| {
            matches!(n.fault, mcp_chaos::fault::Fault::Restart { .. })
                && n.reason.contains("the run ended at")
                && n.reason.contains("every client had finished")
        }),
        "a restart past the end of the run says so",
    );
}

#[test]
fn each_kind_of_unapplied_fault_has_its_reason() {
    let text = r#"
name = "unapplied"
duration_ms = 8000
[[clients]]            # clients 0, 1 (hosts 0, 1)
behaviour = "resume"
count = 2
calls = 2
chunks = 4
[[clients]]            # clients 2, 3 (hosts 2, 3)
behaviour = "transport-switch"
count = 2
calls = 3
chunks = 4
think_ms = 50
read_timeout_ms = 5000
[[clients]]            # client 4 (host 4), alone behind a partition
behaviour = "dedup-retry"
calls = 1
chunks = 4
chunk_interval_ms = 100
read_timeout_ms = 300
max_attempts = 20
[[faults.explicit]]
kind = "drop"
client = 0
call = 5
after_event = 1
[[faults.explicit]]
kind = "drop"
client = 0
call = 1
after_event = 9
[[faults.explicit]]
kind = "drop"
client = 1
call = 0
after_event = 2
[[faults.explicit]]
kind = "drop"
client = 4
call = 0
after_event = 4
[[faults.explicit]]
kind = "switch"
client = 0
after_call = 0
[[faults.explicit]]
kind = "switch"
client = 2
after_call = 0
[[faults.explicit]]
kind = "switch"
client = 2
after_call = 1
[[faults.explicit]]
kind = "switch"
client = 3
after_call = 2
[[faults.explicit]]
kind = "partition"
host = 4
at_ms = 150
duration_ms = 1000
[[faults.explicit]]
kind = "restart"
at_ms = 9000
[[faults.explicit]]
kind = "latency"
host = 0
at_ms = 7900
duration_ms = 50
max_ms = 10
[network]
client_hosts = 5
[heal]
duration_ms = 30000
"#;
    let s = Scenario::parse(text).unwrap();
    let r = simulate_scenario(&s, "unapplied", 0, Variant::Guarded, false);
    assert_faults_add_up(&r);
    let reasons: Vec<String> = r
        .report
        .faults
        .not_applied
        .iter()
        .map(|n| format!("{}: {}", serde_json::to_string(&n.fault).unwrap(), n.reason))
        .collect();
    let expect = [
        (r#""client":0,"call":5"#, "client 0 makes only 2 calls"),
        (
            r#""client":0,"call":1"#,
            "ended after 4 counted events, before event 9 (a call has 4)",
        ),
        (
            r#""client":4,"call":0"#,
            "got its result as a JSON response (no events)",
        ),
        (
            r#""switch","client":0"#,
            "is a resume client: only transport-switch clients switch",
        ),
        (r#""client":2,"after_call":1"#, "a client switches once"),
        (
            r#""client":3,"after_call":2"#,
            "the client's last: it finished before switching",
        ),
        (
            r#""restart","at_ms":9000"#,
            "not before the fault phase ends at 8000 ms",
        ),
        (r#""latency","host":0"#, "; the run ended at"),
    ];
    for (fault, why) in expect {
        r.check(
            reasons.iter().any(|l| l.contains(fault) && l.contains(why)),
            &format!("{fault} not applied because {why:?}: {reasons:#?}"),
        );
    }
    r.check(
        reasons.len() == expect.len(),
        &format!("only those: {reasons:#?}"),
    );
    let applied = &r.report.faults.applied;
    r.check(
        applied.get("drop") == Some(&1)
            && applied.get("switch") == Some(&1)
            && applied.get("partition") == Some(&1),
        &format!("client 1's drop, client 2's first switch and host 4's partition: {applied:?}"),
    );
    // A host without clients: the loader refuses a written client_hosts
    // above the clients, but the default 4 hosts leave host 3 empty here.
    let text = r#"
name = "empty-host"
duration_ms = 2000
[[clients]]
behaviour = "resume"
calls = 1
count = 2
[[faults.explicit]]
kind = "partition"
host = 3
at_ms = 100
duration_ms = 100
"#;
    let s = Scenario::parse(text).unwrap();
    let r = simulate_scenario(&s, "empty-host", 0, Variant::Guarded, false);
    let n = &r.report.faults.not_applied;
    r.check(
        n.len() == 1
            && n[0]
                .reason
                .contains("client host 3 has no clients (2 clients over 4 hosts)"),
        &format!("host 3's partition not applied: {n:?}"),
    );
}

#[test]
fn a_run_cut_short_accounts_for_its_clients_faults() {
    // The heal phase ends before the client reaches its last call.
    let text = r#"
name = "cut-short"
duration_ms = 100
[[clients]]
behaviour = "resume"
calls = 3
chunks = 8
chunk_interval_ms = 50
[[faults.explicit]]
kind = "drop"
client = 0
call = 2
after_event = 1
[heal]
duration_ms = 100
"#;
    let s = Scenario::parse(text).unwrap();
    let r = simulate_scenario(&s, "cut-short", 0, Variant::Guarded, false);
    assert_faults_add_up(&r);
    r.check(!r.report.clients_finished, "the run was cut short");
    let n = &r.report.faults.not_applied;
    r.check(
        n.len() == 1
            && n[0]
                .reason
                .contains("with client 0 still running (call 2 not started)"),
        &format!("{n:?}"),
    );
}

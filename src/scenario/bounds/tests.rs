//! The loader's refusals: what no run can finish or would panic on is
//! refused at load, one line naming the key.

use super::*;

/// One resume client group with `extra` keys.
fn group(extra: &str) -> String {
    format!("[[clients]]\nbehaviour = \"resume\"\n{extra}")
}

/// A scenario of 1 s with `body` after its top-level keys.
fn t(body: String) -> String {
    format!("name = \"t\"\nduration_ms = 1000\n{body}")
}

/// Scenarios that used to pass validation and then panic, abort,
/// overflow, or lose every operation without a fault: each is refused
/// at load with one line naming the key.
fn refused(cases: Vec<(String, &str)>) {
    for (text, needle) in cases {
        let err = match Scenario::parse(&text) {
            Ok(_) => panic!("accepted, expected {needle:?}:\n{text}"),
            Err(e) => e,
        };
        assert!(err.contains(needle), "{needle:?} not in {err:?}");
        assert!(!err.contains('\n'), "one line: {err:?}");
    }
}

#[test]
fn the_loader_refuses_workloads_too_large_to_hold() {
    refused(vec![
        (
            t(format!(
                "{}{}[network]\ntcp_capacity = 100000\n",
                group("count = 4294967295\n"),
                group("count = 2\n")
            )),
            "4294967297 clients",
        ),
        (
            t(format!("{}[faults]\npartitions = 4294967295\n", group(""))),
            "faults.partitions",
        ),
        (
            t(format!(
                "{}[faults]\nrestarts = 4294967295\nlatency_spikes = 4294967295\n",
                group("")
            )),
            "8589934590",
        ),
        (
            t(format!(
                "{}[network]\nclient_hosts = 20\ntcp_capacity = 300000\n",
                group("count = 100000\n")
            )),
            "100000 clients",
        ),
    ]);
}

/// There is no cap on operations or events: 10,000 clients of 1,000
/// calls of 1,000 chunks (ten million operations, ten billion events)
/// load.
#[test]
fn a_workload_of_any_length_loads() {
    let text = t(format!(
        "{}[network]\nclient_hosts = 4\ntcp_capacity = 30000\n",
        group("count = 10000\ncalls = 1000\nchunks = 1000\n")
    ));
    let s = Scenario::parse(&text).expect("loads");
    assert_eq!(s.total_clients(), 10_000);
    assert_eq!(s.clients[0].calls, 1000);
}

/// Workloads no run can finish, fault plans past the fault limit or
/// with nothing left to serve, settings that contradict each other:
/// each used to load and then abort, panic or be ignored.
#[test]
fn the_loader_refuses_what_no_run_can_do() {
    let dep = "[deployment]\nreplicas = 2\nbalancer = \"round-robin\"\n";
    let remove = |r: u32| {
        format!("[[faults.explicit]]\nkind = \"replica_remove\"\nreplica = {r}\nat_ms = 100\n")
    };
    refused(vec![
        (
            t(group("calls = 4294967295\n")),
            "[[clients]] count x calls adds up to 4294967295 calls, above the limit of 1000000000",
        ),
        (
            t(group("count = 2000\ncalls = 600000\nthink_ms = 0\n")),
            "adds up to 1200000000 calls",
        ),
        (
            t(group("calls = 1000000\nthink_ms = 1001\n")),
            "clients[0]: calls = 1000000 x think_ms = 1001",
        ),
        (
            t(format!("{}[faults.swarm]\nrestarts = [0, 100000]\n", group(""))),
            "faults.swarm: the partitions, restarts and latency_spikes ranges may draw up to 100000",
        ),
        (
            t(format!("{}[faults.swarm]\npartitions = [0, 4000000000]\n", group(""))),
            "above the limit of 10000",
        ),
        (
            t(format!("{}[faults]\npartitions = 6000\n[faults.swarm]\n", group(""))),
            "up to 12000 faults",
        ),
        (
            t(format!("{}[faults.swarm]\npartitions = [1, 2, 3]\n", group(""))),
            "faults.swarm.partitions has 3 values: a range is [lo, hi]",
        ),
        (
            t(format!("{}[deployment]\nstore_lag_ms = 50\n", group(""))),
            "deployment.store_lag_ms = 50 is the shared store's lag",
        ),
        (
            t(format!("{}{dep}{}{}", group(""), remove(0), remove(1))),
            "remove all 2 replicas",
        ),
        (
            t(format!("{}{dep}replicas = 3\n{}{}", group(""), remove(1), remove(1)).replace("replicas = 2\n", "")),
            "faults.explicit[1]: replica_remove removes replica 1 a second time",
        ),
        (
            t(format!("[server]\ntask_poll_ms = 5000\ntask_ttl_ms = 1000\n{}", group(""))),
            "server.task_poll_ms = 5000 is above server.task_ttl_ms = 1000",
        ),
        (
            t(format!("[server]\npoll_retry_ms = 0\n{}", group(""))),
            "server.poll_retry_ms must be at least 1",
        ),
    ]);
    // At the bound, and a swarm within the limit, load.
    assert!(Scenario::parse(&t(group("calls = 1000000000\nthink_ms = 0\n"))).is_ok());
    let sw = Scenario::parse(&t(format!(
        "{}[faults]\npartitions = 2\n[faults.swarm]\nrestarts = [0, 9996]\n",
        group("")
    )))
    .expect("4 + 9996 faults fit");
    assert_eq!(sw.faults.swarm_most(), Some(10_000));
}

#[test]
fn the_loader_refuses_ranges_and_bounds_written_backwards() {
    refused(vec![
        (
            t(format!(
                "{}[faults]\npartition_ms = [2500, 500]\n",
                group("")
            )),
            "faults.partition_ms = [2500, 500]",
        ),
        (
            t(format!(
                "{}[faults]\nlatency_spike_ms = [9, 1]\n",
                group("")
            )),
            "faults.latency_spike_ms",
        ),
        (
            t(format!("{}[network]\nlatency_ms = [9, 1]\n", group(""))),
            "network.latency_ms = [9, 1]",
        ),
        (
            t(group("backoff_ms = 5000\nbackoff_max_ms = 100\n")),
            "clients[0]: backoff_ms 5000",
        ),
        (
            t(format!(
                "{}[expect.guarded.min]\nguard_bugs = 2\n[expect.guarded.max]\nguard_bugs = 1\n",
                group("")
            )),
            "guard_bugs min 2 is above its max 1",
        ),
    ]);
}

#[test]
fn the_loader_refuses_numbers_that_would_overflow() {
    refused(vec![
        (
            t(format!(
                "[heal]\nduration_ms = 9223372036854775807\n{}",
                group("")
            )),
            "heal.duration_ms",
        ),
        (
            t(format!(
                "[server]\nfirst_event_id = 9223372036854775807\n{}",
                group("")
            )),
            "server.first_event_id",
        ),
        (
            t(format!(
                "{}[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 1\nduration_ms = 9223372036854775807\n",
                group("")
            )),
            "faults.explicit[0].duration_ms",
        ),
        (
            t(format!(
                "{}[network]\ntcp_capacity = 9223372036854775807\n",
                group("")
            )),
            "network.tcp_capacity",
        ),
    ]);
}

#[test]
fn the_loader_refuses_server_settings_no_workload_can_use() {
    refused(vec![
        (
            t(format!("[server]\nstore_capacity = 0\n{}", group(""))),
            "server.store_capacity",
        ),
        (
            t(format!(
                "[server]\nmax_chunks = 3\n{}",
                group("chunks = 4\n")
            )),
            "clients[0].chunks = 4 is above server.max_chunks = 3",
        ),
        (
            t(format!(
                "[server]\nmax_sessions = 1\n{}",
                group("count = 2\n")
            )),
            "server.max_sessions = 1",
        ),
    ]);
}

/// 20,000 clients fit one host's ports only while nothing cuts it off:
/// a partition may leave every connection half-open.
#[test]
fn the_loader_refuses_a_host_short_of_ports() {
    refused(vec![(
        format!(
            "name = \"t\"\nduration_ms = 30000\n{}[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 100\nduration_ms = 25000\n[network]\nclient_hosts = 1\ntcp_capacity = 60000\n",
            group("count = 20000\n")
        ),
        "network.client_hosts = 1: client host 0 would need",
    )]);
}

#[test]
fn ports_scale_with_hosts_and_cut_off_time() {
    let text = |count: u32, hosts: u32, partition_ms: u64| {
        format!(
            "name = \"t\"\nduration_ms = 30000\n[[clients]]\nbehaviour = \"resume\"\ncount = {count}\n\
             [[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 100\nduration_ms = {partition_ms}\n\
             [network]\nclient_hosts = {hosts}\ntcp_capacity = 60000\n"
        )
    };
    // One partition of host 0: each client may hold its 3 ports twice
    // (open, and half-open on the server): 10,000 clients fit one host,
    // 11,000 do not; spread over more hosts, host 0 has fewer.
    assert!(Scenario::parse(&text(10_000, 1, 25_000)).is_ok());
    assert!(Scenario::parse(&text(11_000, 1, 25_000)).is_err());
    assert!(Scenario::parse(&text(11_000, 2, 25_000)).is_ok());
}

//! Connections as clients hold them (`connections = "keep-alive"`): one
//! connection for sequential calls, the stale connection a fault or the
//! server's idle close leaves in the pool and the cause it leads to, the
//! server's idle close, and determinism with keep-alive on.

use mcp_chaos::history::{ClientRecord, History, LedgerRecord, Rec, Record};
use mcp_chaos::run::{self, Options, RunReport};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::collections::BTreeSet;

fn options(connections: &str) -> Options {
    Options {
        sets: vec![("client.connections".into(), connections.into())],
        ..Options::default()
    }
}

fn simulate(s: &Scenario, v: Variant, opts: &Options) -> (RunReport, History) {
    run::run(s, 0, v, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn clients(h: &History) -> Vec<(u64, ClientRecord)> {
    h.entries()
        .iter()
        .filter_map(|e| match &e.record {
            Rec::Client(c) => Some((e.t_us, c.clone())),
            _ => None,
        })
        .collect()
}

/// The server connections that answered a request (its accepts that
/// carried something).
fn connections(h: &History) -> BTreeSet<u64> {
    h.entries()
        .iter()
        .filter_map(|e| match &e.record {
            Rec::Server(Record::Responded { conn, .. }) => Some(*conn),
            _ => None,
        })
        .collect()
}

fn count(h: &History, pick: impl Fn(&ClientRecord) -> bool) -> usize {
    clients(h).iter().filter(|(_, c)| pick(c)).count()
}

const HEALTHY: &str = r#"
name = "keepalive-healthy"
duration_ms = 3000

[[clients]]
behaviour = "retry-by-post"
calls = 5
chunks = 3
think_ms = 50

[network]
latency_ms = [5, 5]
client_hosts = 1
"#;

#[test]
fn keep_alive_carries_sequential_calls_on_one_connection() {
    let s = Scenario::parse(HEALTHY).unwrap();
    for v in Variant::BOTH {
        let (r, h) = simulate(&s, v, &options("keep-alive"));
        assert_eq!(r.metrics.ops_ok, 5, "{}", v.as_str());
        let sent = count(&h, |c| matches!(c, ClientRecord::Sent { .. }));
        assert_eq!(sent, 6, "initialize and five calls");
        assert_eq!(connections(&h).len(), 1, "keep-alive: one connection");
        let reused = count(&h, |c| matches!(c, ClientRecord::Reused { .. }));
        assert_eq!(reused, 5, "every exchange after the first reuses it");
        assert_eq!(count(&h, |c| matches!(c, ClientRecord::Stale { .. })), 0);

        let (r, h) = simulate(&s, v, &options("per-exchange"));
        assert_eq!(r.metrics.ops_ok, 5);
        assert_eq!(connections(&h).len(), 6, "per-exchange: one per exchange");
        assert_eq!(count(&h, |c| matches!(c, ClientRecord::Reused { .. })), 0);
    }
}

/// Whether any execution or request of `tag` reached the server's side.
fn ran(h: &History, tag: &str) -> bool {
    h.entries().iter().any(|e| match &e.record {
        Rec::Ledger(LedgerRecord::Execution { tag: t, .. }) => &**t == tag,
        _ => false,
    })
}

fn verdict_cause(r: &RunReport, tag: &str) -> Option<String> {
    r.operations
        .iter()
        .find(|o| o.tag == tag)
        .and_then(|o| o.cause.clone())
}

/// The minimal scenario: the server's idle close is swallowed by a
/// partition, the second call goes out on the dead connection after the
/// partition and fails on the reset; a fresh connection would have worked.
#[test]
fn a_close_lost_in_a_partition_leaves_a_stale_connection() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/causes/stale_connection.toml");
    let s = Scenario::load(&path).unwrap();
    for v in Variant::BOTH {
        let (r, h) = simulate(&s, v, &Options::default());
        let recs = clients(&h);
        let reused = recs.iter().position(
            |(_, c)| matches!(c, ClientRecord::Reused { tag: Some(t), .. } if &**t == "c0-op1"),
        );
        let stale = recs.iter().position(
            |(_, c)| matches!(c, ClientRecord::Stale { tag: Some(t), .. } if &**t == "c0-op1"),
        );
        assert!(reused.is_some() && stale > reused, "reused, then stale");
        assert!(!ran(&h, "c0-op1"), "the dead connection swallowed the call");
        assert_eq!(r.metrics.hazards.get("stale_connection"), Some(&1));
        assert_eq!(
            verdict_cause(&r, "c0-op1").as_deref(),
            Some("stale_connection")
        );
        // The same plan with a connection per exchange loses nothing.
        let (r, _) = simulate(&s, v, &options("per-exchange"));
        assert_eq!(r.metrics.ops_failed, 0, "{}", v.as_str());
        assert!(!r.metrics.hazards.contains_key("stale_connection"));
    }
}

/// A call sent on the pooled connection during a partition: the bytes go
/// into the void and turmoil never delivers them after the repair, so the
/// call waits out its read timeout (a new connection would be refused at
/// once, and the operation would be given up, not stale).
#[test]
fn a_call_sent_into_a_partition_waits_out_its_read_timeout() {
    let text = r#"
name = "keepalive-partitioned-send"
duration_ms = 3000
hazards = ["partition"]

[[clients]]
behaviour = "retry-by-post"
calls = 2
chunks = 1
think_ms = 1000
read_timeout_ms = 400
connect_timeout_ms = 400
max_attempts = 1

[[faults.explicit]]
kind = "partition"
host = 0
at_ms = 500
duration_ms = 1000

[network]
latency_ms = [10, 10]
client_hosts = 1
"#;
    let s = Scenario::parse(text).unwrap();
    for v in Variant::BOTH {
        let (r, h) = simulate(&s, v, &options("keep-alive"));
        let recs = clients(&h);
        let t = |pick: &dyn Fn(&ClientRecord) -> bool| {
            recs.iter().find(|(_, c)| pick(c)).map(|(t, _)| *t)
        };
        let reused =
            t(&|c| matches!(c, ClientRecord::Reused { tag: Some(t), .. } if &**t == "c0-op1"))
                .expect("the second call reuses the connection");
        let stale =
            t(&|c| matches!(c, ClientRecord::Stale { tag: Some(t), .. } if &**t == "c0-op1"))
                .expect("and fails on it");
        assert!(stale - reused >= 400_000, "it waited its read timeout");
        assert_eq!(
            verdict_cause(&r, "c0-op1").as_deref(),
            Some("stale_connection")
        );
        let (r, _) = simulate(&s, v, &options("per-exchange"));
        assert_eq!(verdict_cause(&r, "c0-op1").as_deref(), Some("gave_up"));
    }
}

const IDLE: &str = r#"
name = "keepalive-idle"
duration_ms = 3000

[server]
server_idle_ms = 500

[[clients]]
behaviour = "retry-by-post"
connections = "keep-alive"
calls = 2
chunks = 1
think_ms = 1000

[network]
latency_ms = [10, 10]
client_hosts = 1
"#;

#[test]
fn the_server_closes_an_idle_connection_and_the_client_connects_afresh() {
    let s = Scenario::parse(IDLE).unwrap();
    let (r, h) = simulate(&s, Variant::Guarded, &Options::default());
    assert_eq!(r.metrics.ops_ok, 2);
    let closed: Vec<u64> = h
        .entries()
        .iter()
        .filter(|e| matches!(e.record, Rec::Server(Record::IdleClosed { .. })))
        .map(|e| e.t_us)
        .collect();
    // The first call's stream ends on the server at 60 ms (init 0–20 ms,
    // the client's call out at 30 ms, one chunk at 20 ms): closed 500 ms on.
    assert_eq!(
        closed,
        vec![560_000],
        "one idle close, server_idle_ms after"
    );
    assert_eq!(
        connections(&h).len(),
        2,
        "the second call on a new connection"
    );
    assert_eq!(count(&h, |c| matches!(c, ClientRecord::Reused { .. })), 1);
    assert_eq!(count(&h, |c| matches!(c, ClientRecord::Stale { .. })), 0);

    // A pool that retires connections first: the client closes, the
    // server has nothing idle to close.
    let mut s = s;
    s.set("client.pool_idle_ms", "300").unwrap();
    let (r, h) = simulate(&s, Variant::Guarded, &Options::default());
    assert_eq!(r.metrics.ops_ok, 2);
    assert!(!h
        .entries()
        .iter()
        .any(|e| matches!(e.record, Rec::Server(Record::IdleClosed { .. }))));
    assert_eq!(connections(&h).len(), 2);
}

#[test]
fn keep_alive_runs_are_deterministic() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/half-open.toml");
    let s = Scenario::load(&path).unwrap();
    let opts = options("keep-alive");
    for v in Variant::BOTH {
        let (a, ha) = simulate(&s, v, &opts);
        let (b, _) = simulate(&s, v, &opts);
        assert_eq!(a.trace_sha256, b.trace_sha256, "{}", v.as_str());
        assert_eq!(a.operations, b.operations);
        assert!(
            count(&ha, |c| matches!(c, ClientRecord::Reused { .. })) > 0,
            "keep-alive was on"
        );
    }
}

#[test]
fn bad_client_settings_name_the_fix() {
    let mut s = Scenario::parse(HEALTHY).unwrap();
    let e = s.set("client.conections", "keep-alive").unwrap_err();
    assert!(e.contains("did you mean client.connections"), "{e}");
    let e = s.set("client.connections", "sometimes").unwrap_err();
    assert!(e.contains("keep-alive") && !e.contains('\n'), "{e}");
    let e = s.set("client.calls", "3").unwrap_err();
    assert!(
        e.contains("client.connections or client.pool_idle_ms"),
        "{e}"
    );
    let e = s.set("client.pool_idle_ms", "soon").unwrap_err();
    assert!(e.contains("a whole number"), "{e}");
    s.set("client.pool_idle_ms", "700").unwrap();
    assert_eq!(s.clients[0].pool_idle_ms, 700);
}

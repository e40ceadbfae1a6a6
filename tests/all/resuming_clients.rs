//! Clients that resume, in the simulator: a stale standalone resume does
//! not stall the workload, resumes are bounded attempts and giving up is
//! recorded, sessions whose event ids start at zero deliver, and transport
//! switchers after a mapped resume lose nothing.

use crate::simulate::{inline, simulate_scenario};
use mcp_chaos::history::{ClientRecord, Record, Sent};
use mcp_chaos::server::Variant;
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn a_stale_standalone_resume_does_not_stall_the_workload() {
    // Session-stream delivery: each call's result rides the GET stream, and
    // the connection drops right after calls 0 and 1 deliver their results.
    // After the first drop the client opens a new GET stream; the guarded
    // server refuses call 1 (`non_idempotent`, naming the old stream), the
    // client resumes the old stream, and call 1 runs on the new one. After
    // the second drop the resume of the old stream is still open: the
    // client must still open a standalone stream and send call 2.
    let mut text = String::from(
        r#"
name = "stale-standalone-resume"
description = "drops right after the results of calls 0 and 1, session-stream delivery"
duration_ms = 3000

[server]
delivery = "session-stream"
"#,
    );
    let behaviours = ["resume", "resume-then-post", "retry-by-post", "dedup-retry"];
    for b in behaviours {
        text.push_str(&format!(
            "\n[[clients]]\nbehaviour = \"{b}\"\ncalls = 3\nchunks = 4\nchunk_interval_ms = 20\nthink_ms = 50\nmax_attempts = 6\n"
        ));
    }
    for client in 0..behaviours.len() {
        for call in 0..2 {
            text.push_str(&format!(
                "\n[[faults.explicit]]\nkind = \"drop\"\nclient = {client}\ncall = {call}\nafter_event = 4\n"
            ));
        }
    }
    text.push_str(
        "\n[network]\nlatency_ms = [1, 5]\nclient_hosts = 1\ntcp_capacity = 64\n\n[heal]\nduration_ms = 10000\n",
    );
    let s = inline(&text);
    for seed in 0..3 {
        let g = simulate_scenario(&s, "stale-standalone-resume", seed, Variant::Guarded, false);
        let drops = g.report.faults.applied.get("drop").copied().unwrap_or(0);
        g.check(drops == 8, "both drops of every client applied");
        let refused = g.client_records().iter().any(|r| {
            matches!(
                r,
                ClientRecord::Status {
                    status: 409,
                    hint: Some(_),
                    ..
                }
            )
        });
        g.check(refused, "the guarded server refused a call after a drop");
        g.check(g.metric("operations") == 12, "every call began");
        g.check(g.metric("lost_operations") == 0, "no operation lost");
        g.check(g.report.clients_finished, "every client finished");
    }
}

#[test]
fn resumes_are_bounded_attempts_and_giving_up_is_recorded() {
    // Client 0 (host 0) is dropped early in call 0 and its host is then
    // partitioned for longer than its attempts last: every resume fails.
    // Client 1 (host 1) is partitioned from the start: initialize fails.
    let s = inline(
        r#"
name = "resume-bound"
description = "resumes and initialize keep failing behind partitions"
duration_ms = 20000

[[clients]]
behaviour = "resume"
count = 2
calls = 2
chunks = 4
chunk_interval_ms = 20
think_ms = 50
read_timeout_ms = 500
connect_timeout_ms = 300
backoff_ms = 100
backoff_max_ms = 400
max_attempts = 4

[[faults.explicit]]
kind = "drop"
client = 0
call = 0
after_event = 1

[[faults.explicit]]
kind = "partition"
host = 0
at_ms = 60
duration_ms = 15000

[[faults.explicit]]
kind = "partition"
host = 1
at_ms = 0
duration_ms = 15000

[network]
latency_ms = [1, 5]
client_hosts = 2
tcp_capacity = 64

[heal]
duration_ms = 10000
"#,
    );
    let max = s.clients[0].max_attempts as usize;
    for v in Variant::BOTH {
        let r = simulate_scenario(&s, "resume-bound", 0, v, false);
        let cr = r.client_records();
        let mut tries: BTreeMap<String, usize> = BTreeMap::new();
        let mut resumes = 0;
        for rec in &cr {
            if let ClientRecord::Sent {
                what: what @ (Sent::Call | Sent::Resume),
                tag: Some(tag),
                ..
            } = rec
            {
                *tries.entry(tag.to_string()).or_default() += 1;
                resumes += usize::from(*what == Sent::Resume);
            }
        }
        r.check(resumes > 0, "the client resumed");
        for (tag, n) in &tries {
            r.check(
                *n <= max,
                &format!("{tag}: {n} calls and resumes, max_attempts {max}"),
            );
        }
        let outcomes: Vec<(String, mcp_chaos::history::Outcome, u32)> = cr
            .iter()
            .filter_map(|rec| match rec {
                ClientRecord::Outcome {
                    tag,
                    outcome,
                    attempts,
                    ..
                } => Some((tag.to_string(), *outcome, *attempts)),
                _ => None,
            })
            .collect();
        for (tag, _, attempts) in &outcomes {
            r.check(
                *attempts as usize <= max,
                &format!("{tag}: {attempts} attempts recorded"),
            );
        }
        let handled: BTreeSet<String> = cr
            .iter()
            .filter_map(|rec| match rec {
                ClientRecord::Handled { tag, .. } => Some(tag.to_string()),
                _ => None,
            })
            .collect();
        let abandoned: BTreeSet<String> = outcomes
            .iter()
            .filter(|(_, o, _)| *o == mcp_chaos::history::Outcome::Abandoned)
            .map(|(t, _, _)| t.clone())
            .collect();
        // Every operation of both clients ends: handled, or given up on
        // the record (both of client 1's by its initialize give-up).
        for c in 0..2 {
            for n in 0..2 {
                let tag = format!("c{c}-op{n}");
                r.check(
                    handled.contains(&tag) || abandoned.contains(&tag),
                    &format!("{tag}: handled or recorded abandoned"),
                );
            }
        }
        r.check(
            abandoned.contains("c0-op0"),
            "the resumed operation was given up",
        );
        r.check(
            abandoned.contains("c1-op0") && abandoned.contains("c1-op1"),
            "initialize gave up: both operations abandoned",
        );
        r.check(r.report.clients_finished, "every client finished");
    }
}

#[test]
fn sessions_whose_event_ids_start_at_zero_deliver() {
    for delivery in ["post-stream", "session-stream"] {
        let s = inline(&format!(
            r#"
name = "first-event-id-zero"
description = "event ids from 0"
duration_ms = 3000

[server]
delivery = "{delivery}"
first_event_id = 0

[[clients]]
behaviour = "resume"
calls = 2

[[clients]]
behaviour = "retry-by-post"
calls = 2

[[clients]]
behaviour = "transport-switch"
calls = 2

[[faults.explicit]]
kind = "switch"
client = 2
after_call = 0

[network]
latency_ms = [1, 5]
client_hosts = 1
tcp_capacity = 64

[heal]
duration_ms = 10000
"#
        ));
        for v in Variant::BOTH {
            let r = simulate_scenario(&s, "first-event-id-zero", 0, v, false);
            let zero_written = r
                .server_records()
                .iter()
                .any(|rec| matches!(rec, Record::Written { event: 0, .. }));
            r.check(zero_written, &format!("{delivery}: event 0 was written"));
            r.check(
                r.metric("operations") == 6 && r.metric("lost_operations") == 0,
                &format!("{delivery}: every call done"),
            );
            r.check(r.report.clients_finished, "every client finished");
        }
    }
}

#[test]
fn transport_switchers_after_a_mapped_resume_lose_nothing() {
    // Transport switchers whose host is partitioned early: calls fail
    // before they reach the server, the legacy stream breaks (the network
    // change), and the switch resumes it over streamable HTTP through the
    // registered mapping. A later call is refused naming the legacy stream
    // by its streamable first event id: the client must know it as its own
    // legacy stream, not take it for the stream of one of its lost POSTs.
    // The clients open a connection per exchange: the calls behind the
    // partition fail at connect, at once. Kept alive, the first one waits
    // out its read timeout on the pooled connection the partition killed
    // (`stale`), every retry comes a second later, and in seeds 0 to 11 no
    // call lands while the resumed stream is dropped, so nothing is refused.
    let s = inline(
        r#"
name = "mapped-switch"
description = "transport switchers behind a partition, with a cross-transport mapping"
duration_ms = 6000

[server]
first_event_id = 1000
cross_transport_mapping = true
resource_interval_ms = 1000
replay_interval_ms = 5

[[clients]]
behaviour = "transport-switch"
count = 8
calls = 6
chunks = 5
chunk_interval_ms = 30
think_ms = 1000
start_jitter_ms = 2000
read_timeout_ms = 1000
backoff_ms = 250
max_attempts = 12
connections = "per-exchange"

[[faults.explicit]]
kind = "partition"
host = 0
at_ms = 75
duration_ms = 2400

[network]
latency_ms = [1, 10]
client_hosts = 1
tcp_capacity = 1024

[heal]
duration_ms = 30000
"#,
    );
    let mut legacy_named = 0;
    for seed in 0..6 {
        let g = simulate_scenario(&s, "mapped-switch", seed, Variant::Guarded, false);
        let records = g.server_records();
        let mapped = records
            .iter()
            .any(|r| matches!(r, Record::MappingApplied { .. }));
        g.check(mapped, "the mapping translated a legacy cursor");
        // The legacy streams' first event ids (their streamable names).
        let legacy: BTreeSet<(String, u32)> = records
            .iter()
            .filter_map(|r| match r {
                Record::StreamOpened {
                    session,
                    stream,
                    kind: mcp_chaos::history::StreamKind::Legacy,
                    ..
                } => Some((session.to_string(), *stream)),
                _ => None,
            })
            .collect();
        let mut first_of: BTreeMap<(String, u32), u64> = BTreeMap::new();
        for r in &records {
            if let Record::Produced {
                session,
                stream,
                event,
                ..
            } = r
            {
                let key = (session.to_string(), *stream);
                if legacy.contains(&key) {
                    first_of.entry(key).or_insert(*event);
                }
            }
        }
        let firsts: BTreeSet<u64> = first_of.into_values().collect();
        legacy_named += g
            .client_records()
            .iter()
            .filter(|r| {
                matches!(r, ClientRecord::Status { status: 409, stream_first: Some(f), .. }
                    if firsts.contains(f))
            })
            .count();
        g.check(g.metric("operations") == 48, "every call began");
        g.check(g.metric("lost_operations") == 0, "no operation lost");
        g.check(g.metric("guard_bugs") == 0, "no guard bugs");
        g.check(g.report.clients_finished, "every client finished");
    }
    assert!(
        legacy_named > 0,
        "some refusal named a legacy stream after the switch"
    );
}

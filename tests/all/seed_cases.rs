//! The seed's observed cases, exactly, in the simulator: a retry by POST
//! (case one), a POST after a resume (case two), a transport switch (case
//! four, and with a registered mapping), and half-open partitions. Every
//! failure names its seed and the command that reproduces it.

use crate::simulate::{scenario, simulate, simulate_scenario};
use mcp_chaos::history::{ClientRecord, Record, Sent};
use mcp_chaos::server::Variant;

#[test]
fn seed_case_one_exactly() {
    let file = "seed-000-retry-by-post.toml";
    // Unguarded: the tool ran twice; R's other 7 events are orphaned; after
    // the drop the client saw only the new invocation's events.
    let u = simulate(file, 0, Variant::Unguarded, false);
    let first = u.events_of("c0-op0#1");
    let second = u.events_of("c0-op0#2");
    u.check(
        first.len() == 8 && second.len() == 8,
        "both executions stream 8 chunks",
    );
    u.check(u.executions("c0-op0") == 2, "unguarded: the tool ran twice");
    let got = u.received();
    let orphans: Vec<u64> = first.iter().copied().filter(|e| !got.contains(e)).collect();
    u.check(
        orphans == first[1..].to_vec(),
        "exactly R's 7 remaining events are orphaned",
    );
    u.check(
        second.iter().all(|e| got.contains(e)),
        "the retry's events all arrived",
    );
    u.check(u.metric("orphaned_events") == 7, "orphaned_events = 7");
    u.check(
        u.metric("duplicate_side_effects") == 1,
        "one duplicate side effect",
    );
    u.check(u.report.failed_expectations.is_empty(), "expectations hold");

    // Guarded: 409 with the hint, resume by GET, the whole tail, one run.
    let g = simulate(file, 0, Variant::Guarded, false);
    let first = g.events_of("c0-op0#1");
    let cr = g.client_records();
    let hint = cr.iter().find_map(|r| match r {
        ClientRecord::Status {
            status: 409, hint, ..
        } => Some(*hint),
        _ => None,
    });
    g.check(
        hint == Some(Some(first[0])),
        "the retry got 409 naming the first chunk as the resume point",
    );
    let resumed_from = cr.iter().find_map(|r| match r {
        ClientRecord::Sent {
            what: Sent::Resume,
            cursor,
            ..
        } => cursor.clone(),
        _ => None,
    });
    g.check(
        resumed_from == Some(first[0].to_string()),
        "the client resumed by GET from its last seen id",
    );
    let got = g.received();
    g.check(
        first.iter().all(|e| got.contains(e)),
        "the whole tail arrived",
    );
    g.check(g.executions("c0-op0") == 1, "guarded: the tool ran once");
    g.check(g.metric("orphaned_events") == 0, "nothing orphaned");
    g.check(g.metric("guard_bugs") == 0, "no guard bugs");
}

#[test]
fn seed_case_two() {
    let file = "seed-000-resume-then-post.toml";
    let u = simulate(file, 0, Variant::Unguarded, false);
    u.check(
        u.metric("order_violations") == 1,
        "unguarded: R'' handled before R's replayed completion",
    );
    let g = simulate(file, 0, Variant::Guarded, false);
    g.check(
        g.metric("order_violations") == 0,
        "guarded: no order violation",
    );
    let queued = g.server_records().iter().any(
        |r| matches!(r, Record::Decision { decision, .. } if decision.verdict.as_str() == "queue"),
    );
    g.check(queued, "guarded: R'' queued behind the replay");
    let marker = g
        .server_records()
        .iter()
        .any(|r| matches!(r, Record::ReplayEnd { .. }));
    g.check(marker, "guarded: the replay ended with replay-end");
    for r in [&u, &g] {
        r.check(
            r.metric("lost_operations") == 0 && r.metric("duplicate_side_effects") == 0,
            "both calls done once",
        );
    }
}

#[test]
fn seed_case_four_cross_transport() {
    let file = "seed-004-cross-transport.toml";
    let u = simulate(file, 0, Variant::Unguarded, false);
    u.check(
        u.metric("capability_violations") > 0,
        "unguarded serves the new transport under the old negotiation",
    );
    u.check(
        u.metric("foreign_cursor_replays") > 0,
        "unguarded replays from a cursor of another namespace",
    );
    let g = simulate(file, 0, Variant::Guarded, false);
    let switches = g.report.faults.applied.get("switch").copied().unwrap_or(0);
    g.check(switches == 1, "the planned switch was applied");
    g.check(
        g.metric("capability_violations") == 0,
        "guarded: no capability violations",
    );
    g.check(
        g.metric("foreign_cursor_replays") == 0,
        "guarded: no foreign-cursor replays",
    );
    g.check(
        g.metric("reinitializations") == switches,
        "guarded: one re-initialization per switch",
    );
    let ops = g.metric("operations");
    let interrupted = g
        .client_records()
        .iter()
        .filter(|r| matches!(r, ClientRecord::Interrupted { .. }))
        .count() as u64;
    g.check(
        g.report.metrics.migration_latency_us.count == interrupted + switches
            && g.report.metrics.migration_latency_us.max > 0,
        "the switch's cost shows in migration latency (one sample per switch)",
    );
    g.check(
        ops == 4 && g.metric("lost_operations") == 0,
        "every call done",
    );
}

#[test]
fn a_registered_mapping_resumes_across_transports_exactly() {
    let mut s = scenario("seed-004-cross-transport.toml");
    s.server.cross_transport_mapping = true;
    let g = simulate_scenario(
        &s,
        "seed-004-cross-transport.toml",
        0,
        Variant::Guarded,
        false,
    );
    let mapped = g
        .server_records()
        .iter()
        .any(|r| matches!(r, Record::MappingApplied { .. }));
    g.check(mapped, "the mapping translated the legacy cursor");
    for name in [
        "reinitializations",
        "capability_violations",
        "foreign_cursor_replays",
        "orphaned_events",
        "duplicate_side_effects",
        "lost_operations",
        "guard_bugs",
    ] {
        g.check(g.metric(name) == 0, &format!("mapped resume: {name} = 0"));
    }
}

#[test]
fn half_open_partitions() {
    let file = "half-open.toml";
    let u = simulate(file, 0, Variant::Unguarded, false);
    u.check(
        u.metric("duplicate_side_effects") > 0,
        "unguarded: retries across half-open streams run tools again",
    );
    let g = simulate(file, 0, Variant::Guarded, false);
    g.check(g.metric("guard_bugs") == 0, "guarded: zero guard bugs");
    let m = &g.report.metrics;
    g.check(
        m.ops_failed > 0,
        "without cursors the half-open view is inexact somewhere",
    );
    g.check(
        m.failures_by_cause.values().sum::<u64>() == m.ops_failed + m.deliveries_failed,
        "every failed operation has one cause",
    );
    let c = simulate(file, 0, Variant::Guarded, true);
    for name in [
        "duplicate_side_effects",
        "orphaned_events",
        "silent_losses",
        "truncated_responses",
        "order_violations",
        "lost_operations",
        "guard_bugs",
    ] {
        c.check(
            c.metric(name) == 0,
            &format!("guarded --cursor-on-post all: {name} = 0"),
        );
    }
}

//! The Events extension in the simulation (docs/events.md): readers that
//! poll or hold a push stream beside their calls, over the server's
//! clock-tick source.

use mcp_chaos::history::{ClientRecord, History, LedgerRecord, Rec};
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::collections::BTreeMap;
use std::path::Path;

fn scenario(rel: &str) -> Scenario {
    Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// Per reader: when it started, the ticks it applied (event id, count),
/// and when its drain went out.
struct Seen {
    occurred: Vec<(String, u64)>,
    started: BTreeMap<u32, u64>,
    applied: BTreeMap<u32, BTreeMap<String, u32>>,
    /// Per reader, per tick: when it was applied.
    at: BTreeMap<u32, BTreeMap<String, u64>>,
    drained: BTreeMap<u32, u64>,
    truncated: u32,
}

fn seen(h: &History) -> Seen {
    let mut s = Seen {
        occurred: Vec::new(),
        started: BTreeMap::new(),
        applied: BTreeMap::new(),
        at: BTreeMap::new(),
        drained: BTreeMap::new(),
        truncated: 0,
    };
    for e in h.entries().iter() {
        match &e.record {
            Rec::Ledger(LedgerRecord::Occurred { name, seq, at_us }) => {
                s.occurred.push((format!("{name}-{seq}"), *at_us));
            }
            Rec::Client(ClientRecord::EventsStarted { client }) => {
                s.started.insert(*client, e.t_us);
            }
            Rec::Client(ClientRecord::EventApplied {
                client, event_id, ..
            }) => {
                s.at.entry(*client)
                    .or_default()
                    .insert(event_id.to_string(), e.t_us);
                *s.applied
                    .entry(*client)
                    .or_default()
                    .entry(event_id.to_string())
                    .or_default() += 1;
            }
            Rec::Client(ClientRecord::EventsDrained { client, sent_us }) => {
                s.drained.insert(*client, *sent_us);
            }
            Rec::Client(ClientRecord::EventsTruncated { .. }) => s.truncated += 1,
            _ => {}
        }
    }
    s
}

/// With no fault, on every arm and both deliveries, each reader applies
/// every tick produced between its start and its drain, once, and as the
/// delivery paces it: a poll within its `nextPollMs` (200 ms) and a
/// network round trip, a push within a network trip, a webhook within a
/// connection's handshake and its request.
#[test]
fn with_no_fault_every_reader_applies_every_tick_once() {
    for (rel, within_us) in [
        ("sims/events/poll.toml", 200_000 + 60_000),
        ("sims/events/push.toml", 30_000),
        ("sims/events/webhook.toml", 60_000),
    ] {
        let s = scenario(rel);
        for v in [Variant::Unguarded, Variant::Keys, Variant::Guarded] {
            let (r, h) = run::run(&s, 0, v, &Options::default()).unwrap();
            assert_eq!(r.metrics.ops_failed, 0, "{rel} {v:?}");
            let seen = seen(&h);
            assert_eq!(seen.truncated, 0, "{rel} {v:?}");
            assert_eq!(seen.started.len(), 2, "{rel} {v:?}: both readers began");
            for (client, start) in &seen.started {
                let end = seen.drained[client];
                let applied = &seen.applied[client];
                let owed: Vec<&String> = seen
                    .occurred
                    .iter()
                    .filter(|(_, at)| at >= start && *at < end)
                    .map(|(id, _)| id)
                    .collect();
                assert!(owed.len() > 50, "{rel} {v:?}: {} owed", owed.len());
                for id in owed {
                    assert_eq!(
                        applied.get(id),
                        Some(&1),
                        "{rel} {v:?} client {client}: {id}"
                    );
                }
                // Read before the reader stops (half the heal phase in).
                let stop = (s.duration_ms + s.heal.duration_ms / 2) * 1_000;
                for (id, occurred) in seen
                    .occurred
                    .iter()
                    .filter(|(_, at)| at >= start && *at < stop)
                {
                    let late = seen.at[client][id] - occurred;
                    assert!(
                        late <= within_us,
                        "{rel} {v:?} client {client}: {id} applied {late} µs late"
                    );
                }
            }
        }
    }
}

/// The oracle's deliveries: with no fault every owed occurrence is ok;
/// across a partition longer than the retention the ticks in between are
/// lost, announced by `truncated`, or, from a server that resets the
/// cursor silently, failed as `cursor_truncated_silently`.
#[test]
fn the_oracle_counts_each_delivery_once_with_its_fate() {
    let naive = Options {
        sets: vec![("server.events_sender".into(), "naive".into())],
        ..Options::default()
    };
    for (rel, opts) in [
        ("sims/events/poll.toml", &Options::default()),
        ("sims/events/push.toml", &Options::default()),
        ("sims/events/webhook.toml", &Options::default()),
        ("sims/events/webhook.toml", &naive),
    ] {
        let (r, _) = run::run(&scenario(rel), 0, Variant::Unguarded, opts).unwrap();
        let m = &r.metrics;
        assert!(m.deliveries > 100, "{rel}: {}", m.deliveries);
        assert_eq!(m.deliveries_ok, m.deliveries, "{rel}");
        let l = &m.delivery_latency_us;
        assert_eq!(
            l.count, m.deliveries_ok,
            "{rel}: one latency per delivery ok"
        );
        assert!(
            l.p50 > 0 && l.p50 <= l.p99 && l.p99 <= l.max,
            "{rel}: {l:?}"
        );
        assert_eq!(
            (m.deliveries_failed, m.deliveries_announced_lost),
            (0, 0),
            "{rel}"
        );
    }
    for rel in [
        "sims/events/poll-partition.toml",
        "sims/events/push-partition.toml",
    ] {
        let s = scenario(rel);
        let (r, _) = run::run(&s, 0, Variant::Unguarded, &Options::default()).unwrap();
        let m = &r.metrics;
        assert_eq!(m.deliveries_failed, 0, "{rel}");
        assert!(m.deliveries_announced_lost >= 20, "{rel}: {m:?}");
        assert_eq!(
            m.deliveries,
            m.deliveries_ok + m.deliveries_announced_lost,
            "{rel}"
        );
        let silent = Options {
            sets: vec![("server.events_truncation".into(), "silent".into())],
            ..Options::default()
        };
        let (q, _) = run::run(&s, 0, Variant::Unguarded, &silent).unwrap();
        let by = &q.metrics.failures_by_cause;
        let n = by.get("cursor_truncated_silently").copied();
        assert_eq!(
            n,
            Some(m.deliveries_announced_lost),
            "{rel}: the same ticks, unwarned"
        );
        assert_eq!(q.metrics.deliveries_announced_lost, 0, "{rel}");
    }
}

/// A webhook receiver's answers lost: the naive sender's retries carry
/// new ids and are applied again; the draft's sender keeps the id, and a
/// receiver deduplicating on it takes each tick once, until its window is
/// shorter than the sender's wait; one deduplicating on `eventId` takes
/// the naive sender's retries once too.
#[test]
fn a_lost_webhook_answer_duplicates_unless_one_id_meets_a_window_that_remembers() {
    let failed = |rel: &str, edit: &dyn Fn(&mut Scenario)| {
        let mut s = scenario(rel);
        edit(&mut s);
        let (r, _) = run::run(&s, 0, Variant::Guarded, &Options::default()).unwrap();
        assert!(r.metrics.deliveries > 50, "{rel}");
        r.metrics.failures_by_cause
    };
    let naive = failed("sims/events/webhook-lost-response.toml", &|_| {});
    let dups = naive.get("webhook_duplicate").copied().unwrap_or(0);
    assert!(dups >= 1, "{naive:?}");
    assert_eq!(naive.len(), 1, "{naive:?}");
    let dedup = "sims/events/webhook-lost-response-dedup.toml";
    assert!(failed(dedup, &|_| {}).is_empty());
    let forgets = failed(dedup, &|s| s.clients[0].receiver.dedup_window_ms = 300);
    assert_eq!(forgets.get("dedup_window_lost"), Some(&dups), "{forgets:?}");
    // The same answers lost, then the receiver restarts before the
    // retries: it forgot the ids it took and applies them again; without
    // the restart nothing fails.
    let restart = "sims/events/webhook-receiver-restart.toml";
    let restarted = failed(restart, &|_| {});
    assert_eq!(
        restarted.get("dedup_window_lost"),
        Some(&dups),
        "{restarted:?}"
    );
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    let unrestarted = failed(restart, &|s| {
        s.faults
            .explicit
            .retain(|f| !matches!(f, mcp_chaos::fault::Fault::ReceiverRestart { .. }))
    });
    assert!(unrestarted.is_empty(), "{unrestarted:?}");
    let by_event = failed("sims/events/webhook-lost-response.toml", &|s| {
        s.clients[0].receiver.dedup = mcp_chaos::scenario::Dedup::EventId
    });
    assert!(by_event.is_empty(), "{by_event:?}");
    // A slow receiver: it applies, then answers after the sender's
    // timeout. The naive sender's retries are applied again; the draft's
    // are recognised, and none is applied twice. (Every answer late, each
    // delivery stays in flight through all its attempts: the sender's 64
    // in flight fill, it reads no further, and what it never sent ends
    // with the run.)
    let slow = |s: &mut Scenario| s.clients[0].receiver.delay_ms = 2_500;
    let naive_slow = failed("sims/events/webhook-lost-response.toml", &slow);
    assert!(
        naive_slow.get("webhook_duplicate").copied().unwrap_or(0) > dups,
        "{naive_slow:?}"
    );
    let spec_slow = failed(dedup, &slow);
    assert_eq!(
        spec_slow.keys().collect::<Vec<_>>(),
        ["run_ended"],
        "{spec_slow:?}"
    );
}

/// The durable sender: its subscriptions live in an outbox beside the
/// ledger. A replica holding one killed for good, the draft's sender
/// loses every tick from the crash on (no refresh comes before the
/// client stops); the durable one is taken over by the other replica once
/// the dead holder's lease ran out, and resumes from the watermark. A
/// restarted one-server resumes at once (its later incarnation succeeds
/// the holder).
#[test]
fn the_durable_sender_survives_a_replica_crash_and_a_restart() {
    let run = |s: &Scenario, sender: &str| {
        let o = Options {
            sets: vec![("server.events_sender".into(), sender.into())],
            ..Options::default()
        };
        run::run(s, 0, Variant::Guarded, &o).unwrap().0.metrics
    };
    let crash = scenario("sims/events/webhook-replica-crash.toml");
    let spec = run(&crash, "spec");
    let lost = spec.failures_by_cause.get("run_ended").copied();
    assert!(lost.unwrap_or(0) >= 40, "{:?}", spec.failures_by_cause);
    assert_eq!(lost, Some(spec.deliveries_failed));
    let durable = run(&crash, "durable");
    assert_eq!(
        durable.deliveries_failed, 0,
        "{:?}",
        durable.failures_by_cause
    );
    assert_eq!(durable.deliveries_ok, durable.deliveries);
    assert!(durable.deliveries >= spec.deliveries);
    // The ticks nobody sent while the lease ran out came late, not lost.
    let late = durable.delivery_latency_us.max;
    assert!((1_000_000..4_000_000).contains(&late), "{late} µs");
    let durable_file = scenario("sims/events/webhook-replica-crash-durable.toml");
    assert_eq!(run(&durable_file, "durable").deliveries_failed, 0);
    // The same replicas on a shared store (sessions and keys on it): the
    // outbox still resumes, and the draft's sender still loses the ticks.
    let mut shared = crash.clone();
    shared.deployment.store = mcp_chaos::scenario::StoreKind::Shared;
    shared.deployment.store_durable = true;
    let on_store = run(&shared, "durable");
    assert_eq!(
        on_store.deliveries_failed, 0,
        "{:?}",
        on_store.failures_by_cause
    );
    assert!(on_store.deliveries >= durable.deliveries);
    assert!(run(&shared, "spec").deliveries_failed >= 40);

    // One server restarted (no replicas): the next incarnation resumes
    // the row at once.
    let mut restart = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/events/webhook-replica-crash.toml"),
    )
    .unwrap();
    for (from, to) in [
        (
            "[deployment]\nreplicas = 2\nbalancer = \"round-robin\"\n",
            "",
        ),
        (
            "kind = \"replica_crash\"\nreplica = 0\n",
            "kind = \"restart\"\n",
        ),
        ("duration_ms = 0\nmode = \"kill\"\n", ""),
        (
            "\n[[faults.explicit]]\nkind = \"replica_crash\"\nreplica = 1\nat_ms = 1500\nduration_ms = 300\nmode = \"kill\"\n",
            "",
        ),
    ] {
        assert!(restart.contains(from), "{from}");
        restart = restart.replace(from, to);
    }
    let restart = Scenario::parse(&restart).unwrap();
    assert!(run(&restart, "spec").deliveries_failed >= 40);
    let resumed = run(&restart, "durable");
    assert_eq!(resumed.deliveries_failed, 0);
    assert!(resumed.delivery_latency_us.max < 100_000, "{resumed:?}");

    // The storm's seed 5 (six attempts a delivery, as the events zero)
    // resumes a row whose watermark fell behind the
    // retention: the gap holds the watermark before what it lost until it
    // is delivered (else the occurrences racing ahead of it carry a
    // watermark past the loss, and the receiver hears of an empty gap);
    // and a read's positions are in flight before the watermark is
    // written (else a crash between the two skips them).
    let storm = scenario("sims/events/storm.toml");
    let six = Options {
        sets: vec![
            ("server.events_sender".into(), "durable".into()),
            ("server.events_attempts".into(), "6".into()),
        ],
        ..Options::default()
    };
    let m = run::run(&storm, 5, Variant::Guarded, &six)
        .unwrap()
        .0
        .metrics;
    assert!(m.deliveries > 2_000);
    assert_eq!(m.deliveries_failed, 0, "{:?}", m.failures_by_cause);
    assert!(m.deliveries_announced_lost > 0, "a gap was announced");
}

/// `compare --sims sims/events` opens with what to deploy for events: the
/// events section first, its answer, a row per scenario; a comparison
/// without events has no such section (results/report.md).
#[test]
fn compare_over_the_events_scenarios_opens_with_the_events_answer() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("events-compare");
    // The naive sender over the same scenarios beside it: a candidate of
    // the decision table.
    let naive = crate::cli::bin()
        .args(["compare", "--sims", "sims/events", "--servers", "guarded"])
        .args([
            "--set",
            "server.events_sender=naive",
            "--seeds",
            "1",
            "--out",
        ])
        .arg(out.join("events/naive"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    // The durable scenario's expectations break under the naive sender:
    // exit 1, the summary written.
    assert_eq!(
        naive.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&naive.stderr)
    );
    let o = crate::cli::bin()
        .args([
            "compare",
            "--sims",
            "sims/events",
            "--servers",
            "guarded,unguarded",
        ])
        .args(["--seeds", "2", "--out"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let first = md.find("\n## ").map(|i| &md[i + 1..]).unwrap_or_default();
    assert!(first.starts_with("## Events: deliveries"), "{}", &md[..400]);
    assert!(
        md.contains("**For events, the arm is not what decides**: `guarded`, `unguarded`"),
        "the arms deliver events alike: {}",
        &md[..1200]
    );
    assert!(md.contains("| events-webhook-lost-response | guarded |"));
    // The decision table: a row per kind of reader, a column per sender.
    let row = |start: &str| {
        md.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no row {start:?}: {md}"))
            .to_string()
    };
    assert!(md.contains("### What to deploy, by delivery and receiver"));
    assert!(
        row("| poll |").contains("| any sender: 0 "),
        "{}",
        row("| poll |")
    );
    let webhook = row("| webhook, dedup on webhook-id |");
    let cells: Vec<&str> = webhook.split(" | ").collect();
    assert!(cells[3].contains("events/naive)"), "{webhook}");
    assert!(!cells[3].starts_with("0 "), "naive duplicates: {webhook}");
    assert!(cells[2].starts_with("**"), "{webhook}");
    assert!(!cells[2].starts_with("**`naive`**"), "{webhook}");
    assert!(row("| webhook, dedup on webhook-id, restarts |")
        .contains("events-webhook-receiver-restart"));
    assert!(
        md.contains("`webhook_duplicate` "),
        "the naive sender's scenario"
    );
    // A row of the answer reproduces over the same scenarios.
    assert!(
        md.contains(": `mcp-chaos compare --sims sims/events --servers "),
        "{}",
        &md[md.find("To reproduce a row").unwrap_or(0)..][..400]
    );
    // Delivery latency is merged across the seeds: each configuration's
    // histogram holds every ok delivery of its runs, and the table shows it.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let mut merged = 0;
    for a in summary["aggregates"].as_array().unwrap() {
        let m = &a["metrics"];
        let count = m["delivery_latency_us"]["count"].as_u64().unwrap_or(0);
        assert_eq!(
            Some(count),
            m["deliveries_ok"].as_u64(),
            "{}",
            a["scenario"]
        );
        let of_runs: u64 = summary["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["scenario"] == a["scenario"] && r["server"] == a["server"])
            .map(|r| {
                r["metrics"]["delivery_latency_us"]["count"]
                    .as_u64()
                    .unwrap_or(0)
            })
            .sum();
        assert_eq!(count, of_runs, "{}", a["scenario"]);
        merged += u64::from(a["runs"].as_u64() == Some(2) && count > 0);
    }
    assert!(
        merged >= 10,
        "{merged} configurations merged two runs' latency"
    );
    assert!(md.contains("latency p50 / p99 (over all seeds)"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Events: deliveries"));
    let main =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("results/report.md"))
            .unwrap();
    assert!(!main.contains("## Events: deliveries"));
}

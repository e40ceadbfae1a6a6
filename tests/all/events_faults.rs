//! The Events extension's own faults (docs/events.md): a proxy that drops
//! a push stream's control messages, a wall clock skewed past the
//! signatures' tolerance, and lost subscription refreshes.

use mcp_chaos::fault::{Fault, SkewOn};
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::collections::BTreeMap;
use std::path::Path;

fn scenario(rel: &str) -> Scenario {
    Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// A run's deliveries (owed, ok, announced) and failures by cause.
fn judged(s: &Scenario, sets: &[(&str, &str)]) -> ((u64, u64, u64), BTreeMap<String, u64>) {
    let o = Options {
        sets: sets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Options::default()
    };
    let (r, _) = run::run(s, 0, Variant::Guarded, &o).unwrap();
    let m = r.metrics;
    let counts = (m.deliveries, m.deliveries_ok, m.deliveries_announced_lost);
    (counts, m.failures_by_cause)
}

/// The server tells the push reader of its truncation; with the proxy
/// passing it on the loss is announced, with the proxy dropping it the
/// same ticks fail as envelope_dropped (the server said it, the path lost
/// it), and with the server silent they fail as cursor_truncated_silently
/// whatever the proxy does.
#[test]
fn a_dropped_truncation_is_the_proxys_and_an_unsent_one_the_servers() {
    let dropped = scenario("sims/causes/envelope_dropped.toml");
    let ((owed, ok, announced), by_cause) = judged(&dropped, &[]);
    let lost = by_cause.get("envelope_dropped").copied().unwrap_or(0);
    assert!(lost >= 1 && announced == 0, "{by_cause:?}");
    assert_eq!(by_cause.len(), 1, "{by_cause:?}");
    assert_eq!(owed, ok + lost);
    let mut passed = dropped.clone();
    passed.intermediary.drop_control = false;
    passed.intermediary.rechunk = true;
    let ((_, _, announced), by_cause) = judged(&passed, &[]);
    assert!(by_cause.is_empty(), "{by_cause:?}");
    assert_eq!(announced, lost);
    let silent = [("server.events_truncation", "silent")];
    let (_, by_cause) = judged(&dropped, &silent);
    let skipped = by_cause.get("cursor_truncated_silently").copied();
    assert_eq!(skipped, Some(lost), "{by_cause:?}");
}

/// Clock skew on signatures: the server's wall clock six minutes ahead
/// for 1.5 s. Its retries carry fresh timestamps, so four attempts
/// outlast the skew and lose nothing; two do not (retry_exhausted). The
/// same skew on the receiver's host refuses the same deliveries (too
/// old, not too new); a skew inside the five-minute tolerance refuses
/// none, and deliveries keep their pace.
#[test]
fn a_wall_clock_past_the_tolerance_refuses_deliveries_until_it_is_corrected() {
    let skewed = scenario("sims/events/webhook-clock-skew.toml");
    let ((owed, ok, _), by_cause) = judged(&skewed, &[]);
    assert!(
        by_cause.is_empty() && owed == ok && owed > 100,
        "{by_cause:?}"
    );
    let short = [("server.events_attempts", "2")];
    let (_, by_cause) = judged(&skewed, &short);
    let given_up = by_cause.get("retry_exhausted").copied().unwrap_or(0);
    assert!(given_up >= 1, "{by_cause:?}");
    let with = |on: SkewOn, ms: i64| {
        let mut s = skewed.clone();
        for f in &mut s.faults.explicit {
            if let Fault::Skew {
                on: o, offset_ms, ..
            } = f
            {
                *o = on;
                *offset_ms = offset_ms.signum() * ms;
            }
        }
        s
    };
    let (_, by_cause) = judged(&with(SkewOn::Client, 360_000), &short);
    assert_eq!(by_cause.get("retry_exhausted"), Some(&given_up));
    let (_, by_cause) = judged(&with(SkewOn::Server, 240_000), &short);
    assert!(by_cause.is_empty(), "{by_cause:?}");
}

/// Refreshes lost past the TTL: the subscription lapses (the server's
/// record says so), and the client's next refresh subscribes anew from
/// the watermark, so the source replays what was pending and nothing is
/// lost. Without the fault nothing lapses.
#[test]
fn a_lapse_from_lost_refreshes_is_recovered_from_the_watermark() {
    let s = scenario("sims/events/webhook-refresh-lost.toml");
    let lapses = |s: &Scenario| {
        let (r, h) = run::run(s, 0, Variant::Guarded, &Options::default()).unwrap();
        let n = h
            .entries()
            .iter()
            .filter(|e| {
                matches!(
                    e.record,
                    mcp_chaos::history::Rec::Server(
                        mcp_chaos::history::Record::SubscriptionLapsed { .. }
                    )
                )
            })
            .count();
        (n, r.metrics.deliveries_failed, r.metrics.deliveries)
    };
    let (n, failed, owed) = lapses(&s);
    assert!(n >= 1 && failed == 0 && owed > 100, "{n} {failed} {owed}");
    let mut calm = s.clone();
    calm.faults.explicit.clear();
    let (n, failed, _) = lapses(&calm);
    assert_eq!((n, failed), (0, 0));
}

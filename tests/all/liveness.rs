//! Liveness: a server that closes streams on purpose after `retry:`
//! (polling), the clients that come back exactly when told, and a client
//! that never stops coming back (rmcp's reconnect policy, the
//! `reconnect_loop` cause).

use mcp_chaos::history::{ClientRecord, History, Rec, Record, Sent};
use mcp_chaos::run::{self, Options, RunReport};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;

const POLLING: &str = "sims/liveness/polling.toml";

fn load(path: &str) -> Scenario {
    Scenario::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn simulate(s: &Scenario, v: Variant, opts: &Options) -> (RunReport, History) {
    run::run(s, 0, v, opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Each pause a client recorded, with the resume it sent next: (client,
/// paused at, advised wait, resumed at), µs.
fn pauses_and_resumes(h: &History) -> Vec<(u32, u64, u64, Option<u64>)> {
    let entries = h.entries();
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Rec::Client(ClientRecord::Paused {
            client, retry_ms, ..
        }) = &e.record
        else {
            continue;
        };
        let resumed = entries[i + 1..].iter().find_map(|n| match &n.record {
            Rec::Client(ClientRecord::Sent {
                client: c,
                what: Sent::Resume,
                ..
            }) if c == client => Some(n.t_us),
            _ => None,
        });
        out.push((*client, e.t_us, retry_ms * 1_000, resumed));
    }
    out
}

fn server_count(h: &History, pick: impl Fn(&Record) -> bool) -> usize {
    h.entries()
        .iter()
        .filter(|e| matches!(&e.record, Rec::Server(r) if pick(r)))
        .count()
}

fn statuses(h: &History, status: u16) -> usize {
    h.entries()
        .iter()
        .filter(|e| {
            matches!(&e.record, Rec::Client(ClientRecord::Status { status: s, .. }) if *s == status)
        })
        .count()
}

/// Guarded decisions made while a stream of the POST's session was
/// paused (closed by the server after `retry:`, not resumed yet).
fn decided_while_paused(h: &History) -> usize {
    let mut paused = std::collections::BTreeSet::new();
    let mut n = 0;
    for e in h.entries().iter() {
        match &e.record {
            Rec::Server(Record::StreamPaused {
                session, stream, ..
            }) => {
                paused.insert((session.clone(), *stream));
            }
            Rec::Server(Record::Resumed {
                session, stream, ..
            }) => {
                paused.remove(&(session.clone(), *stream));
            }
            Rec::Server(Record::Decision { session, .. })
                if paused.iter().any(|(s, _)| s == session) =>
            {
                n += 1
            }
            _ => {}
        }
    }
    n
}

/// The server closes the session stream after every 4 messages with
/// `retry: 300`: every client resumes exactly 300 ms later (no backoff, no
/// jitter, no attempt spent), nothing fails, and guarded serves the POSTs
/// that go out while the stream is paused (a pause is no drop: no 409;
/// the guard's tests show the same close seen as the client's refused).
#[test]
fn clients_resume_a_polled_stream_exactly_when_told() {
    let s = load(POLLING);
    for v in Variant::BOTH {
        let (r, h) = simulate(&s, v, &Options::default());
        let at = format!("{POLLING} under {}", v.as_str());
        assert!(
            r.failed_expectations.is_empty(),
            "{at}: {:?}",
            r.failed_expectations
        );
        assert_eq!(r.metrics.ops_ok, 8, "{at}");
        let paused = server_count(&h, |r| matches!(r, Record::StreamPaused { .. }));
        assert!(
            paused >= 6,
            "{at}: the server paused the streams ({paused})"
        );
        let seen = pauses_and_resumes(&h);
        let resumed: Vec<_> = seen.iter().filter(|p| p.3.is_some()).collect();
        assert!(resumed.len() >= 4, "{at}: the clients came back ({seen:?})");
        for (client, t, wait, back) in resumed {
            assert_eq!(
                *back,
                Some(t + wait),
                "{at}: client {client} paused at {t} µs resumes exactly {wait} µs later"
            );
        }
        assert_eq!(
            server_count(&h, |r| matches!(r, Record::PauseExpired { .. })),
            0,
            "{at}: every pause was resumed in time"
        );
        assert_eq!(
            statuses(&h, 409),
            0,
            "{at}: a POST while paused is no migration"
        );
        if v == Variant::Guarded {
            assert!(
                decided_while_paused(&h) > 0,
                "{at}: Rule M met a paused stream"
            );
        }
    }
}

/// Unresumed past its grace (here 1 ms after a `retry:` longer than the
/// run's remaining calls need), a pause expires into a drop: the server
/// says so in the trace, and the guard audit agrees with the view.
#[test]
fn a_pause_unresumed_past_its_grace_expires() {
    let s = load(POLLING);
    let opts = Options {
        sets: vec![
            ("server.poll_retry_ms".into(), "5000".into()),
            ("server.poll_grace_ms".into(), "1".into()),
        ],
        ..Options::default()
    };
    let (r, h) = simulate(&s, Variant::Guarded, &opts);
    assert!(server_count(&h, |r| matches!(r, Record::PauseExpired { .. })) > 0);
    assert_eq!(r.metrics.guard_bugs, Some(0));
}

/// rmcp's reconnect policy against rmcp's quirk (a resume of a stream
/// whose result was routed gets 200 and nothing): the same resume every
/// second, through the whole heal phase; the oracle names the loop.
#[test]
fn rmcps_reconnect_policy_loops_and_the_oracle_names_it() {
    let path = "sims/causes/reconnect_loop.toml";
    let s = load(path);
    let (r, h) = simulate(&s, Variant::Unguarded, &Options::default());
    assert_eq!(r.metrics.failures_by_cause.get("reconnect_loop"), Some(&1));
    let resumes: Vec<u64> = h
        .entries()
        .iter()
        .filter_map(|e| match &e.record {
            Rec::Client(ClientRecord::Sent {
                what: Sent::Resume, ..
            }) => Some(e.t_us),
            _ => None,
        })
        .collect();
    assert!(
        resumes.len() >= 8,
        "one a second through the heal: {}",
        resumes.len()
    );
    // A second after each empty answer (plus the round trip, a few ms
    // here), never growing as a backoff would.
    let gaps: Vec<u64> = resumes[1..].windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|g| (1_000_000..1_020_000).contains(g)),
        "{gaps:?}"
    );
    // The same clients with the default policy re-issue after the empty
    // resume instead: a duplicate (the tool ran again), not a loop.
    let opts = Options {
        sets: vec![("client.reconnect".into(), "backoff".into())],
        ..Options::default()
    };
    let (r, _) = simulate(&s, Variant::Unguarded, &opts);
    assert_eq!(r.metrics.failures_by_cause.get("reconnect_loop"), None);
    // guarded replays the tail: nothing loops, nothing fails.
    let (r, _) = simulate(&s, Variant::Guarded, &Options::default());
    assert_eq!(r.metrics.ops_failed, 0);
}

/// The polling case with no fault, in the simulator: 300-chunk calls at
/// interval 0 into a store of 256, a polling close every 3 messages. A
/// paused stream holds its tool back until its pause expires, and its
/// resume continues it in order, so nothing is lost or degraded on any
/// arm that polls.
#[test]
fn a_paused_stream_holds_its_tool_back_and_loses_nothing() {
    let s = load("sims/liveness/polling-fast.toml");
    for v in [Variant::Unguarded, Variant::Keys, Variant::Guarded] {
        let (r, h) = simulate(&s, v, &Options::default());
        assert_eq!(
            r.metrics.ops_failed, 0,
            "{}: {:?}",
            r.server, r.metrics.failures_by_cause
        );
        assert_eq!(r.metrics.ops_degraded, 0, "{}", r.server);
        let paused = h
            .entries()
            .iter()
            .filter(|e| matches!(e.record, Rec::Server(Record::StreamPaused { .. })))
            .count();
        assert!(
            paused >= 300,
            "{}: the streams polled ({paused} pauses)",
            r.server
        );
        assert_eq!(r.metrics.silent_losses, 0, "{}", r.server);
        assert_eq!(r.metrics.announced_losses, 0, "{}", r.server);
    }
}

/// `serve --poll-after 3` on a real socket: a client that resumes exactly
/// as told gets every chunk of a 300-chunk call made at interval 0 (the
/// store holds 256), on every arm that polls. (`retry: 20`, so that the
/// hundred rounds take seconds; 200 behaves the same, only slower.)
#[test]
fn a_polling_server_delivers_a_fast_big_call_whole() {
    use crate::serve::{initialize, Served};
    use crate::serve_memory::{call_at_once, progress_in};
    for arm in ["unguarded", "keys", "guarded"] {
        let s = Served::start(&[
            "--server",
            arm,
            "--poll-after",
            "3",
            "--poll-retry-ms",
            "20",
        ]);
        let mut c = s.connect();
        let sid = initialize(&mut c, &[]);
        let r = call_at_once(&mut c, &sid, "fast", 300);
        assert_eq!(r.status, 200, "{arm}: {r:?}");
        let mut body = r.body;
        let mut rounds = 0;
        while !progress_in(&body).1 {
            rounds += 1;
            assert!(rounds <= 200, "{arm}: the result never came: {body}");
            assert!(
                body.contains("retry: 20"),
                "{arm}: a stream ended without retry:"
            );
            let last = body
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("id:"))
                .map(|id| id.trim().to_string())
                .expect("an event id to resume from");
            std::thread::sleep(std::time::Duration::from_millis(20));
            let r = c.send(
                "GET",
                &[
                    ("mcp-session-id", sid.as_str()),
                    ("last-event-id", last.as_str()),
                    ("accept", "text/event-stream"),
                ],
                "",
            );
            assert_eq!(r.status, 200, "{arm}: {r:?}");
            body.push_str(&r.body);
        }
        let (progress, _, gap) = progress_in(&body);
        assert!(!gap, "{arm}: a gap with no fault");
        assert_eq!(
            progress,
            (1..=299).collect::<Vec<u32>>(),
            "{arm}: every chunk, in order"
        );
    }
}

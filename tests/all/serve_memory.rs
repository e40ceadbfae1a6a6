//! What `mcp-chaos serve` keeps, as a user measures it on the release
//! binary: memory that returns once sessions end, the event store's
//! backpressure on a tool that outruns it, and finished streams replayed
//! while stored and released after, so that a long session keeps no memory
//! per finished call.

use crate::serve::{call, initialize, Conn, Resp, Served};

/// Rounds of `calls` tool calls over fresh sessions, each deleted after its
/// calls; the server's RSS after each round, KiB.
fn rss_rounds(s: &Served, rounds: usize, calls: usize) -> Vec<u64> {
    const PER_SESSION: usize = 50;
    let mut rss = Vec::new();
    let mut n = 0u64;
    for _ in 0..rounds {
        for _ in 0..calls / PER_SESSION {
            let mut c = s.connect();
            let sid = initialize(&mut c, &[]);
            for _ in 0..PER_SESSION {
                n += 1;
                let r = call(&mut c, &sid, n, &format!("tag-{n}"));
                assert_eq!(r.status, 200);
            }
            let r = c.send("DELETE", &[("mcp-session-id", &sid)], "");
            assert_eq!(r.status, 200);
        }
        rss.push(s.rss_kib());
    }
    rss
}

/// The issue's figure: 3 x 5,000 tool calls over fresh sessions, each
/// deleted after its calls; RSS growth over the first round under 5 MB
/// (`--nocapture` prints the figures; about a second in release).
#[test]
fn memory_returns_after_sessions_end() {
    let s = Served::start(&[]);
    let start = s.rss_kib();
    let rss = rss_rounds(&s, 3, 5_000);
    let growth = rss[2].saturating_sub(rss[0]);
    eprintln!("RSS at start {start} KiB, after each round of 5,000 calls: {rss:?} KiB; growth over round 1: {growth} KiB");
    assert!(growth < 5 * 1024, "RSS grew {growth} KiB: {rss:?}");
}

/// A `ledger_append` of `chunks` chunks at interval 0 (id 2) on session
/// `sid`: the store's backpressure cases.
pub(crate) fn call_at_once(c: &mut Conn, sid: &str, tag: &str, chunks: u32) -> Resp {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"ledger_append","arguments":{{"tag":"{tag}","chunks":{chunks},"chunk_interval_ms":0}}}}}}"#
    );
    c.send("POST", &[("mcp-session-id", sid)], &body)
}

/// The `progress` numbers of a call's SSE body, in arrival order, whether
/// the body ended with the call's result, and whether a `gap` came.
pub(crate) fn progress_in(body: &str) -> (Vec<u32>, bool, bool) {
    let mut progress = Vec::new();
    let mut result = false;
    for data in body.lines().filter_map(|l| l.strip_prefix("data:")) {
        if let Some(rest) = data.split(r#""progress":"#).nth(1) {
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            progress.push(n.parse().expect("a progress number"));
        } else if data.contains(r#""result""#) {
            result = true;
        }
    }
    (progress, result, body.contains("event: gap"))
}

/// A 1000-chunk call produced without pause outruns the 256-event store;
/// on a healthy connection it still arrives whole, on every built-in arm:
/// the tool waits for its writer instead of evicting unsent events.
#[test]
fn a_call_of_more_chunks_than_the_store_holds_arrives_whole() {
    for arm in ["unguarded", "keys", "guarded", "cancel"] {
        let s = Served::start(&["--server", arm]);
        let mut c = s.connect();
        let sid = initialize(&mut c, &[]);
        let r = call_at_once(&mut c, &sid, "long", 1000);
        assert_eq!(r.status, 200, "{arm}: {r:?}");
        let (progress, result, gap) = progress_in(&r.body);
        assert!(!gap, "{arm}: a gap on a healthy connection");
        assert_eq!(progress, (1..=999).collect::<Vec<u32>>(), "{arm}");
        assert!(result, "{arm}: the result arrived");
        // The next call on the session is served, not refused.
        let r = call(&mut c, &sid, 3, "after");
        assert_eq!(r.status, 200, "{arm}: {r:?}");
    }
}

/// The first `id:` of an SSE body: a call stream's priming event.
fn first_event_id(body: &str) -> String {
    body.lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_string())
        .unwrap_or_else(|| panic!("no event id in {body:?}"))
}

/// A finished call's stream is kept while any of its events is stored (a
/// resume after completion replays its tail, result included) and
/// forgotten once none is: a resume then gets 410 on the guarded arm and
/// an empty stream on the others, as for an evicted tail.
#[test]
fn a_finished_stream_replays_while_stored_and_is_released_after() {
    for arm in ["guarded", "unguarded"] {
        let s = Served::start(&["--server", arm]);
        let mut c = s.connect();
        let sid = initialize(&mut c, &[]);
        let r = call(&mut c, &sid, 2, "first");
        assert_eq!(r.status, 200, "{arm}: {r:?}");
        let priming = first_event_id(&r.body);
        let resume = |c: &mut Conn| {
            c.send(
                "GET",
                &[
                    ("mcp-session-id", sid.as_str()),
                    ("last-event-id", priming.as_str()),
                    ("accept", "text/event-stream"),
                ],
                "",
            )
        };
        let r = resume(&mut c);
        assert_eq!(r.status, 200, "{arm}: {r:?}");
        assert!(
            r.body.contains(r#""result""#),
            "{arm}: the tail replays: {r:?}"
        );
        // 3 events a call: 100 calls push the first call's events out of
        // the 256-event store.
        for n in 3..103 {
            assert_eq!(call(&mut c, &sid, n, "more").status, 200);
        }
        let r = resume(&mut c);
        if arm == "guarded" {
            assert_eq!(r.status, 410, "{arm}: {r:?}");
            assert!(r.body.contains("re-issue"), "{arm}: {r:?}");
        } else {
            assert_eq!(r.status, 200, "{arm}: {r:?}");
            assert!(!r.body.contains("data:"), "{arm}: nothing to replay: {r:?}");
        }
        assert_eq!(call(&mut c, &sid, 200, "after").status, 200, "{arm}");
    }
}

/// What a live session keeps follows what it holds, not how many calls it
/// made: 15,000 calls on one session (past the 10,000 streams a session
/// may hold at once) are all served, and RSS grows less than 1.5 MB over
/// the last 10,000 (each stream kept ~660 B before streams were released).
#[test]
fn a_long_session_keeps_no_memory_per_finished_call() {
    let s = Served::start(&[]);
    let mut c = s.connect();
    let sid = initialize(&mut c, &[]);
    let mut rss = Vec::new();
    for round in 0..3u64 {
        for n in 0..5_000 {
            let r = call(&mut c, &sid, 2 + round * 5_000 + n, "same");
            assert_eq!(r.status, 200, "call {n} of round {round}: {r:?}");
        }
        rss.push(s.rss_kib());
    }
    let growth = rss[2].saturating_sub(rss[0]);
    eprintln!("RSS after each round of 5,000 calls on one session: {rss:?} KiB; growth over round 1: {growth} KiB");
    assert!(growth < 1536, "RSS grew {growth} KiB: {rss:?}");
}

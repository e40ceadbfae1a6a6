//! Rule M, row by row: each row's positive space (it fires) and negative
//! space (the next row is reached), and the words at their edges.

use super::*;

const LIMITS: Limits = Limits { queue_capacity: 2 };
const NON_IDEMPOTENT: PostFacts = PostFacts {
    idempotent: false,
    dedup_honored: false,
};
const IDEMPOTENT: PostFacts = PostFacts {
    idempotent: true,
    dedup_honored: false,
};
const DEDUPED: PostFacts = PostFacts {
    idempotent: false,
    dedup_honored: true,
};

/// A session with one stream primed at event 1, a request producing
/// `produced` more events of which the first `written` reached the wire.
fn session(produced: u64, written: u64) -> (SessionGuard, StreamIdx) {
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.request_started(s);
    for id in 2..2 + produced {
        g.produced(s, id);
        if id < 2 + written {
            g.written(s, id);
        }
    }
    (g, s)
}

fn check(g: &SessionGuard, post: PostFacts, verdict: Verdict, hint: Option<EventId>) {
    let d = g.check(post, LIMITS);
    assert_eq!(d.verdict, verdict, "view: {:?}", g.view());
    assert_eq!(d.hint, hint, "hint for {verdict:?}");
}

#[test]
fn row1_no_dropped_stream_is_fresh() {
    let (g, _) = session(8, 8);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    // Negative: even with every event produced but unwritten, a live
    // connection is not a drop.
    let (g, _) = session(8, 0);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    assert!(!g.has_dropped());
}

#[test]
fn row2_owed_events_reject_not_drained_with_the_watermark() {
    // The seed: 8 chunks, the first written, then the connection ends.
    let (mut g, s) = session(8, 1);
    g.close_seen(s);
    assert!(g.stream(s).dropped);
    assert_eq!(
        g.stream(s).watermark,
        Some(2),
        "watermark = last written before the close"
    );
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NotDrained),
        Some(2),
    );
    // Row 2 precedes row 4: an idempotent or deduplicated POST is refused too.
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::NotDrained), Some(2));
    check(&g, DEDUPED, Verdict::Reject(Reason::NotDrained), Some(2));
}

#[test]
fn row2_edge_watermark_equal_to_last_produced_is_drained() {
    let (mut g, s) = session(3, 3);
    g.request_ended(s);
    g.close_seen(s);
    assert_eq!(g.stream(s).watermark, g.stream(s).last_produced);
    // Not row 2 and not row 3: row 4 decides.
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NonIdempotent),
        Some(4),
    );
    check(&g, IDEMPOTENT, Verdict::Allow, None);
}

#[test]
fn row3_in_flight_with_nothing_owed_yet_rejects() {
    // The seed's drop between chunk 142 and 143: every produced event was
    // written, but the request will produce more.
    let (mut g, s) = session(2, 2);
    g.close_seen(s);
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::InFlight), Some(3));
    // Negative: the request ends without producing more → row 4 / allow.
    g.request_ended(s);
    check(&g, IDEMPOTENT, Verdict::Allow, None);
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NonIdempotent),
        Some(3),
    );
}

#[test]
fn row4_non_idempotent_needs_an_honored_token() {
    let (mut g, s) = session(2, 2);
    g.request_ended(s);
    g.close_seen(s);
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NonIdempotent),
        Some(3),
    );
    check(&g, DEDUPED, Verdict::Allow, None);
    check(&g, IDEMPOTENT, Verdict::Allow, None);
}

#[test]
fn row0_replay_backlog_queues_then_rejects_past_capacity() {
    let (mut g, s) = session(8, 1);
    g.close_seen(s);
    g.resumed(s, Some(2), 7);
    assert!(!g.stream(s).dropped, "a resume ends the drop");
    assert_eq!(g.replay_backlog(), 7);
    for _ in 0..LIMITS.queue_capacity {
        let d = g.check(NON_IDEMPOTENT, LIMITS);
        assert_eq!(d.verdict, Verdict::Queue);
        g.apply(&d);
    }
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::ReplayInProgress),
        None,
    );
    // The backlog drains; at dequeue the rows are evaluated afresh.
    for _ in 0..7 {
        g.replay_written(s);
    }
    assert_eq!(g.replay_backlog(), 0);
    g.dequeued();
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
}

#[test]
fn row0_precedes_every_other_row() {
    // Stream a is dropped with owed events; stream b is replaying.
    let mut g = SessionGuard::new();
    let a = g.open_stream(1);
    g.produced(a, 2);
    g.close_seen(a);
    let b = g.open_stream(3);
    g.produced(b, 4);
    g.close_seen(b);
    g.resumed(b, Some(3), 1);
    check(&g, IDEMPOTENT, Verdict::Queue, None);
    g.replay_written(b);
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::NotDrained), Some(1));
}

#[test]
fn a_drop_during_replay_ends_the_backlog() {
    let (mut g, s) = session(8, 1);
    g.close_seen(s);
    g.resumed(s, Some(2), 7);
    g.replay_written(s);
    g.written(s, 3);
    g.close_seen(s);
    assert_eq!(g.replay_backlog(), 0, "nothing is being replayed any more");
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::NotDrained), Some(3));
}

#[test]
fn cursor_on_post_plain_raises_and_lost_marks_dropped() {
    // Half-open: the server wrote everything but the client saw only up to 3.
    let (mut g, s) = session(8, 8);
    g.request_ended(s);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    g.cursor(s, 3, true);
    assert!(g.stream(s).dropped, ";lost marks the stream dropped");
    assert_eq!(
        g.stream(s).watermark,
        Some(3),
        "the presented cursor is the watermark"
    );
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NotDrained),
        Some(3),
    );
    // A plain entry never lowers the watermark...
    g.cursor(s, 2, false);
    assert_eq!(g.stream(s).watermark, Some(3));
    // ...and one at the last event, with nothing in flight, finishes it.
    g.cursor(s, 9, false);
    assert!(g.stream(s).finished);
    assert!(!g.stream(s).dropped);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
}

#[test]
fn cursor_at_last_event_does_not_finish_while_in_flight() {
    let (mut g, s) = session(2, 2);
    g.close_seen(s);
    g.cursor(s, 3, false);
    assert!(!g.stream(s).finished, "the request still produces events");
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::InFlight), Some(3));
}

#[test]
fn presented_cursor_beats_last_written_at_close() {
    let (mut g, s) = session(8, 8);
    g.cursor(s, 4, false);
    g.close_seen(s);
    assert_eq!(
        g.stream(s).watermark,
        Some(4),
        "the client's cursor, not the server's last write"
    );
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::NotDrained), Some(4));
}

#[test]
fn a_finished_stream_is_never_dropped() {
    let (mut g, s) = session(3, 3);
    g.request_ended(s);
    g.finished(s);
    g.close_seen(s);
    assert!(!g.stream(s).dropped);
    g.cursor(s, 4, true);
    assert!(!g.stream(s).dropped, "lost at the last event: nothing owed");
    g.cursor(s, 2, false);
    assert!(
        !g.stream(s).dropped,
        "a plain cursor for a finished stream changes nothing"
    );
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
}

#[test]
fn lost_short_of_the_end_reopens_a_finished_stream() {
    // Half-open: the server wrote everything and ended the response; the
    // client saw only up to event 2 and says so.
    let (mut g, s) = session(3, 3);
    g.request_ended(s);
    g.finished(s);
    g.cursor(s, 2, true);
    assert!(g.stream(s).dropped);
    assert!(!g.stream(s).finished);
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NotDrained),
        Some(2),
    );
}

#[test]
fn takeover_close_is_not_a_drop() {
    let (mut g, s) = session(8, 1);
    g.close_seen(s);
    g.resumed(s, Some(2), 0);
    g.taken_over(s);
    assert!(!g.stream(s).dropped);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
}

#[test]
fn a_lost_stream_answers_410_once_then_is_ignored() {
    let (mut g, s) = session(8, 1);
    g.close_seen(s);
    g.evicted_owed(s);
    let d = g.check(NON_IDEMPOTENT, LIMITS);
    assert_eq!(d.verdict, Verdict::Reject(Reason::StreamLost));
    assert_eq!(d.stream, Some(s));
    g.apply(&d);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    assert!(!g.has_dropped());
}

#[test]
fn resume_resets_the_watermark_to_the_cursor() {
    let (mut g, s) = session(8, 5);
    g.cursor(s, 5, true);
    g.resumed(s, Some(3), 5);
    assert_eq!(g.stream(s).watermark, Some(3));
    assert_eq!(g.stream(s).last_written, Some(3));
    assert!(!g.stream(s).cursor_presented);
    // The resumed connection drops after two replayed events.
    g.replay_written(s);
    g.written(s, 4);
    g.replay_written(s);
    g.written(s, 5);
    g.close_seen(s);
    assert_eq!(g.stream(s).watermark, Some(5));
}

#[test]
fn several_dropped_streams_rows_in_order() {
    let mut g = SessionGuard::new();
    let a = g.open_stream(1); // drained, in flight
    g.request_started(a);
    g.close_seen(a);
    let b = g.open_stream(2); // owed
    g.produced(b, 3);
    g.close_seen(b);
    // Row 2 (stream b) outranks row 3 (stream a).
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::NotDrained), Some(2));
    g.resumed(b, Some(2), 0);
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::InFlight), Some(1));
}

#[test]
fn view_lists_the_dropped_streams_it_decided_from() {
    let (mut g, s) = session(8, 1);
    g.close_seen(s);
    let v = g.view();
    assert_eq!(v.dropped.len(), 1);
    assert_eq!(v.dropped[0].0, s);
    assert_eq!(v.dropped[0].1.watermark, Some(2));
    assert_eq!(v.dropped[0].1.last_produced, Some(9));
}

#[test]
fn an_unprimed_stream_owes_its_first_event_even_when_its_id_is_zero() {
    // A legacy stream (no priming event) in a session whose ids start at 0.
    let mut g = SessionGuard::new();
    let s = g.open_unprimed();
    assert_eq!(g.stream(s).delivered(), None, "nothing delivered yet");
    g.request_started(s);
    g.produced(s, 0);
    g.close_seen(s);
    assert_eq!(g.stream(s).watermark, None);
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::NotDrained), None);
    // Once event 0 reached the client, it is drained.
    let mut g = SessionGuard::new();
    let s = g.open_unprimed();
    g.produced(s, 0);
    g.written(s, 0);
    g.close_seen(s);
    assert_eq!(g.stream(s).watermark, Some(0));
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NonIdempotent),
        Some(0),
    );
}

#[test]
fn a_notification_stream_never_makes_a_migration() {
    // A standalone GET stream in post-stream delivery, closed abruptly.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.notifications_only(s);
    g.produced(s, 2);
    g.close_seen(s);
    assert!(g.stream(s).dropped, "its connection did end");
    assert!(!g.has_dropped(), "but Rule M does not consider it");
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    // Nor when a client reports it lost, or after a resume and a new close.
    g.cursor(s, 1, true);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    g.resumed(s, Some(1), 0);
    g.close_seen(s);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    // Negative: the same stream carrying responses is a migration's cause.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.produced(s, 2);
    g.close_seen(s);
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NotDrained),
        Some(1),
    );
}

#[test]
fn a_resume_cursor_at_the_end_retires_the_stream_when_dropped_again() {
    // Every event written, the request done, then the connection ends: the
    // watermark is only the server's estimate, which never retires it.
    let (mut g, s) = session(2, 2);
    g.request_ended(s);
    g.close_seen(s);
    assert_eq!(g.stream(s).watermark, g.stream(s).last_produced);
    assert!(!g.stream(s).finished, "an estimate never retires a stream");
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NonIdempotent),
        Some(3),
    );
    // The client resumes from its own cursor, the last event, and that
    // connection ends before the server finishes the stream.
    g.resumed(s, Some(3), 0);
    assert_eq!(g.stream(s).client_cursor, Some(3));
    g.close_seen(s);
    assert!(g.stream(s).finished, "the client's cursor retires it");
    assert!(!g.has_dropped());
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
}

#[test]
fn a_resume_cursor_short_of_the_end_never_retires_even_when_all_is_written() {
    let (mut g, s) = session(4, 1);
    g.request_ended(s);
    g.close_seen(s);
    g.resumed(s, Some(2), 3);
    for id in 3..=5 {
        g.replay_written(s);
        g.written(s, id);
    }
    // Half-open: the server wrote the whole tail, the client may have none.
    g.close_seen(s);
    assert_eq!(g.stream(s).watermark, Some(5), "the estimate");
    assert_eq!(g.stream(s).client_cursor, Some(2));
    assert!(!g.stream(s).finished);
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NonIdempotent),
        Some(5),
    );
    // The client's own cursor on POST at the last event retires it.
    g.cursor(s, 5, false);
    assert!(g.stream(s).finished);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
}

#[test]
fn a_post_cursor_retires_at_the_close_or_when_the_request_ends() {
    // Presented while the server still thought the connection alive: the
    // close that follows finds the stream caught up and retires it.
    let (mut g, s) = session(2, 2);
    g.request_ended(s);
    g.cursor(s, 3, false);
    assert!(!g.stream(s).dropped);
    g.close_seen(s);
    assert!(g.stream(s).finished);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    // Presented while the request still ran: it retires once the request
    // ends without producing more (cancelled).
    let (mut g, s) = session(2, 2);
    g.close_seen(s);
    g.cursor(s, 3, false);
    check(&g, IDEMPOTENT, Verdict::Reject(Reason::InFlight), Some(3));
    g.request_ended(s);
    assert!(g.stream(s).finished);
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    // Negative: the request produced more after the cursor.
    let (mut g, s) = session(2, 2);
    g.close_seen(s);
    g.cursor(s, 3, false);
    g.produced(s, 4);
    g.request_ended(s);
    assert!(!g.stream(s).finished);
    check(
        &g,
        NON_IDEMPOTENT,
        Verdict::Reject(Reason::NotDrained),
        Some(3),
    );
}

/// A polling close (`retry:` then the server's own close) pauses the
/// stream: a POST meanwhile is no migration, however much is owed.
#[test]
fn a_paused_stream_is_no_migration() {
    let (mut g, s) = session(8, 3);
    g.paused(s);
    assert!(g.stream(s).paused && !g.stream(s).connected);
    assert!(!g.has_dropped());
    check(&g, NON_IDEMPOTENT, Verdict::Fresh, None);
    // Negative: the same close seen as the client's is a drop, and row 2
    // refuses with the last written event as the watermark.
    let (mut g, s) = session(8, 3);
    g.close_seen(s);
    check(&g, DEDUPED, Verdict::Reject(Reason::NotDrained), Some(4));
}

/// Unresumed past its wait, a paused stream becomes dropped with the
/// estimate its close would have given; resumed in time, it never does.
#[test]
fn a_pause_that_runs_out_is_a_drop_and_a_resume_ends_it() {
    let (mut g, s) = session(8, 3);
    g.paused(s);
    g.pause_expired(s);
    assert!(!g.stream(s).paused && g.stream(s).dropped);
    check(&g, DEDUPED, Verdict::Reject(Reason::NotDrained), Some(4));
    let (mut g, s) = session(8, 3);
    g.paused(s);
    g.resumed(s, Some(4), 5);
    assert!(!g.stream(s).paused);
    g.pause_expired(s);
    assert!(
        !g.stream(s).dropped,
        "an expiry after the resume changes nothing"
    );
    // A client that reports the paused stream lost makes it a drop now.
    let (mut g, s) = session(8, 3);
    g.paused(s);
    g.cursor(s, 3, true);
    assert!(g.stream(s).dropped && !g.stream(s).paused);
    check(&g, DEDUPED, Verdict::Reject(Reason::NotDrained), Some(3));
    // A finished stream is never paused.
    let (mut g, s) = session(0, 0);
    g.request_ended(s);
    g.finished(s);
    g.paused(s);
    assert!(!g.stream(s).paused);
}

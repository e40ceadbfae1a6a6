//! The session's unit tests: its bounded event store (what it evicts and
//! what it holds a tool back for), when a stream is released, and the
//! missing ranges a gap names.

use super::*;

fn history() -> History {
    History::new(Rc::new(|| std::time::Duration::ZERO))
}

#[test]
fn store_evicts_oldest_and_records_owed_events() {
    let h = history();
    let mut s = Session::new("s".into(), Transport::Streamable, 100, 3);
    let a = s.open_stream(StreamKind::Post, None, 1, &h);
    assert_eq!(s.stream_of(100), Some(a));
    for _ in 0..3 {
        s.produce(a, EventKind::Progress, "{}", None, None, &h);
    }
    // 4 events, capacity 3: the priming event (written) went, not owed.
    assert_eq!(s.oldest_stored(), 101);
    assert!(s.data(100).is_none());
    assert!(s.data(101).is_some());
    assert!(!s.guard.stream(a).lost);
    s.produce(a, EventKind::Result, "{}", None, None, &h);
    assert!(
        !s.guard.stream(a).lost,
        "event 101 was owed, but a gap announces a progress event: not lost"
    );
    assert_eq!(s.replayable_after(a, Some(100)), (3, true));
    assert_eq!(s.replayable_after(a, Some(101)), (3, false));
    assert_eq!(s.replayable_after(a, Some(104)), (0, false));
    assert_eq!(s.stream_of(99), None);
    assert_eq!(s.stream_of(105), None);
    let evicted: Vec<_> = h
        .entries()
        .iter()
        .filter_map(|e| match &e.record {
            crate::history::Rec::Server(Record::Evicted { event, owed, .. }) => {
                Some((*event, *owed))
            }
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec![(100, false), (101, true)]);
}
#[test]
fn a_shared_budget_evicts_the_storing_sessions_oldest_and_is_released_on_drop() {
    let h = history();
    // Room for 4 events of 10 bytes across all sessions, 100 per store.
    let budget = StoreBudget::new(40);
    let mut a = Session::new("a".into(), Transport::Streamable, 1, 100);
    a.budget = Some(budget.clone());
    let sa = a.open_stream(StreamKind::Post, None, 1, &h); // priming: 0 bytes
    for _ in 0..3 {
        a.produce(sa, EventKind::Progress, "0123456789", None, None, &h);
    }
    assert_eq!(budget.used(), 30);
    let mut b = Session::new("b".into(), Transport::Streamable, 1, 100);
    b.budget = Some(budget.clone());
    let sb = b.open_stream(StreamKind::Post, None, 2, &h);
    b.produce(sb, EventKind::Progress, "0123456789", None, None, &h);
    assert_eq!(budget.used(), 40, "at the limit, nothing evicted");
    b.produce(sb, EventKind::Progress, "0123456789", None, None, &h);
    // Over by 10: b gives up its own oldest (the priming event, 0
    // bytes, then its first progress event); a keeps all it stored.
    assert_eq!(budget.used(), 40);
    assert!(b.data(2).is_none());
    assert!(b.data(3).is_some());
    assert!(a.data(2).is_some() && a.data(4).is_some());
    drop(a);
    assert_eq!(budget.used(), 10, "a's 30 bytes released with it");
    // The newest event always stays, even alone over the budget.
    b.produce(sb, EventKind::Progress, &"x".repeat(100), None, None, &h);
    assert_eq!(budget.used(), 100);
    assert!(b.data(4).is_some());
}

#[test]
fn a_full_store_holds_a_tool_back_only_for_events_a_live_connection_owes() {
    let h = history();
    let mut s = Session::new("s".into(), Transport::Streamable, 1, 3);
    let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1: priming
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 2
    assert!(!s.would_evict_unsent(2), "room for a third event");
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 3
    assert!(
        s.would_evict_unsent(2),
        "full, and the writer has not started: even the priming event is owed"
    );
    s.streams[a].sent.last = Some(1);
    assert!(!s.would_evict_unsent(2), "the oldest (1) is on the wire");
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 4 evicts 1
    assert!(s.would_evict_unsent(2), "2 is next to go and still owed");
    s.streams[a].conn = None;
    assert!(
        !s.would_evict_unsent(2),
        "a connection seen closed holds nothing back"
    );
    // An interleaved replay owes its backlog up to `replay_until` and
    // its live events after `live`.
    s.streams[a].conn = Some(2);
    s.streams[a].sent = Sent {
        last: Some(1),
        interleaved: Some((Some(4), Some(3))),
    };
    assert!(s.would_evict_unsent(2), "backlog event 2 is owed");
    let sent = Sent {
        last: Some(3),
        interleaved: Some((Some(4), Some(3))),
    };
    assert!(!sent.owes(2) && !sent.owes(4) && sent.owes(5));
    let sent = Sent {
        last: Some(1),
        interleaved: Some((Some(5), Some(3))),
    };
    assert!(sent.owes(2) && sent.owes(3) && !sent.owes(4) && sent.owes(6));
}

#[test]
fn a_byte_budget_holds_a_tool_back_for_every_event_it_would_evict() {
    let h = history();
    let budget = StoreBudget::new(20);
    let mut s = Session::new("s".into(), Transport::Streamable, 1, 100);
    s.budget = Some(budget);
    let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1: 0 bytes
    s.produce(a, EventKind::Progress, "0123456789", None, None, &h); // 2
    s.produce(a, EventKind::Progress, "0123456789", None, None, &h); // 3
    s.streams[a].sent.last = Some(2);
    assert!(!s.would_evict_unsent(1), "1 and 2 make room, both written");
    assert!(
        s.would_evict_unsent(11),
        "11 bytes need 3 gone too, and it is owed"
    );
}

/// A POST stream whose response ended, as the writer leaves it.
fn finish(s: &mut Session, a: StreamIdx, h: &History) {
    s.produce(a, EventKind::Result, "{}", None, None, h);
    s.streams[a].done_producing = true;
    s.streams[a].conn = None;
    s.guard.finished(a);
    s.release_if_done(a);
}

#[test]
fn a_finished_stream_is_released_once_none_of_its_events_is_stored() {
    let h = history();
    let mut s = Session::new("s".into(), Transport::Streamable, 1, 3);
    let a = s.open_stream(StreamKind::Post, Some(RequestId::Num(7)), 1, &h); // 1
    finish(&mut s, a, &h); // 2
    assert!(s.streams.get(a).is_some(), "its events 1 and 2 are stored");
    assert_eq!(s.stream_of(1), Some(a));
    let b = s.open_stream(StreamKind::Post, Some(RequestId::Num(8)), 2, &h); // 3
    s.streams[b].sent.last = Some(3);
    s.produce(b, EventKind::Progress, "{}", None, None, &h); // 4 evicts 1
    assert!(s.streams.get(a).is_some(), "event 2 is still stored");
    assert!(!s.released(1), "its stream is still known");
    s.streams[b].sent.last = Some(4);
    s.produce(b, EventKind::Progress, "{}", None, None, &h); // 5 evicts 2
    assert!(s.streams.get(a).is_none(), "released");
    assert!(!s.post_streams.contains_key(&RequestId::Num(7)));
    assert_eq!(s.stream_of(2), None);
    assert!(s.released(2));
    assert!(!s.released(6), "never issued");
    assert!(s.streams.get(b).is_some(), "b is live");
    assert_eq!(s.stream_of(3), Some(b), "a live stream's id");
}

#[test]
fn a_stream_in_flight_or_dropped_is_kept() {
    let h = history();
    let mut s = Session::new("s".into(), Transport::Streamable, 1, 2);
    let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1
    s.guard.request_started(a);
    s.streams[a].sent.last = Some(1);
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 2
                                                             // Dropped before the result: Rule M still needs it.
    s.streams[a].conn = None;
    s.guard.close_seen(a);
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 3 evicts 1
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 4 evicts 2
    s.release_if_done(a);
    assert!(s.streams.get(a).is_some(), "dropped, in flight");
    let st = *s.guard.stream(a);
    assert!(st.dropped && st.in_flight == 1);
}

#[test]
fn missing_ranges_name_exactly_the_streams_evicted_ids() {
    let h = history();
    let mut s = Session::new("s".into(), Transport::Streamable, 1, 4);
    let a = s.open_stream(StreamKind::Post, None, 1, &h); // 1
    let b = s.open_stream(StreamKind::Post, None, 2, &h); // 2
    for _ in 0..3 {
        s.produce(a, EventKind::Progress, "{}", None, None, &h); // 3, 5, 7
        s.produce(b, EventKind::Progress, "{}", None, None, &h); // 4, 6, 8
    }
    s.produce(a, EventKind::Progress, "{}", None, None, &h); // 9
    s.produce(a, EventKind::Result, "{}", None, None, &h); // 10
                                                           // Stored: 7..=10. Stream a: 1, 3, 5, 7, 9, 10.
    assert_eq!(s.oldest_stored(), 7);
    assert_eq!(s.missing_after(a, Some(1)), vec![(3, 3), (5, 5)]);
    assert_eq!(s.missing_after(a, Some(3)), vec![(5, 5)]);
    assert_eq!(s.missing_after(a, Some(7)), vec![]);
    assert_eq!(s.missing_after(b, Some(2)), vec![(4, 4), (6, 6)]);
    assert!(!s.result_evicted_after(a, Some(1)), "10 is stored");
    assert!(!s.guard.stream(a).lost, "only progress was evicted");
    for _ in 0..4 {
        s.produce(b, EventKind::Progress, "{}", None, None, &h); // 11..=14
    }
    assert!(s.result_evicted_after(a, Some(9)));
    assert!(!s.result_evicted_after(a, Some(10)), "the client has it");
    assert!(s.guard.stream(a).lost, "an owed result was evicted");
    assert_eq!(
        s.missing_after(a, Some(1)),
        vec![(3, 3), (5, 5), (7, 7), (9, 10)]
    );
    assert_eq!(s.missing_after(b, Some(8)), vec![]);
}

//! The oracle's definitions, checked on hand-built histories.

use super::*;
use crate::history::{History, LoggedDecision, LoggedView};
use crate::protocol::RequestId;
use std::time::Duration;

fn history() -> History {
    History::new(Rc::new(|| Duration::ZERO))
}

fn sid() -> SessionId {
    "s1".into()
}

fn rid(s: &str) -> RequestId {
    RequestId::Str(s.into())
}

#[test]
fn a_decision_that_contradicts_the_rules_is_an_error() {
    let h = history();
    h.record(Record::StreamOpened {
        session: sid(),
        stream: 0,
        kind: crate::history::StreamKind::Post,
        rpc_id: None,
        conn: 1,
    });
    for (event, kind) in [(1, EventKind::Priming), (2, EventKind::Progress)] {
        h.record(Record::Produced {
            session: sid(),
            stream: 0,
            event,
            kind,
            rpc_id: None,
            tag: None,
        });
    }
    h.record(Record::CloseSeen {
        session: sid(),
        stream: 0,
        conn: 1,
        last_written: 1,
    });
    let rebuilt = LoggedView {
        replay_backlog: 0,
        queued: 0,
        dropped: vec![crate::history::LoggedStream {
            stream: 0,
            last_produced: 2,
            last_written: 1,
            watermark: 1,
            cursor_presented: false,
            lost: false,
            in_flight: 0,
        }],
    };
    let decide = |verdict, reason, view: LoggedView| Record::Decision {
        session: sid(),
        rpc_id: rid("x#1"),
        decision: LoggedDecision {
            verdict,
            reason,
            stream: Some(0),
            hint: Some(1),
        },
        view,
        idempotent: false,
        dedup_honored: false,
    };
    // Right view, right verdict (row 2): no error.
    h.record(decide("reject", Some("not_drained"), rebuilt.clone()));
    assert_eq!(rebuild::decision_errors(&h.entries()).count, 0);
    // Right view, wrong verdict.
    h.record(decide("fresh", None, rebuilt.clone()));
    assert_eq!(rebuild::decision_errors(&h.entries()).count, 1);
    // Wrong view, right verdict.
    h.record(decide("reject", Some("not_drained"), LoggedView::default()));
    let errs = rebuild::decision_errors(&h.entries());
    assert_eq!(errs.count, 2);
    assert!(
        errs.details[1].contains("logged view"),
        "{:?}",
        errs.details
    );
}

/// A client whose op ran twice, with 7 events of the first execution never
/// received: the seed's case 1, unguarded.
#[test]
fn duplicates_orphans_and_coverage() {
    let h = history();
    let tag: Rc<str> = "c0-op0".into();
    h.record(ClientRecord::Session {
        client: 0,
        session: sid(),
    });
    h.record(ClientRecord::OpStarted {
        client: 0,
        tag: tag.clone(),
    });
    h.record(Record::Produced {
        session: sid(),
        stream: 0,
        event: 1,
        kind: EventKind::Priming,
        rpc_id: None,
        tag: None,
    });
    for (n, rpc) in [(1, "c0-op0#1"), (2, "c0-op0#2")] {
        h.record(Record::Execution {
            tag: tag.to_string(),
            n,
            session: sid(),
            rpc_id: rid(rpc),
        });
    }
    for event in 2..=9 {
        h.record(Record::Produced {
            session: sid(),
            stream: 0,
            event,
            kind: if event == 9 {
                EventKind::Result
            } else {
                EventKind::Progress
            },
            rpc_id: Some(rid("c0-op0#1")),
            tag: Some(tag.to_string()),
        });
    }
    h.record(ClientRecord::Received {
        client: 0,
        session: sid(),
        event: 2,
        tag: Some(tag.clone()),
        result: false,
        transport: crate::history::Transport::Streamable,
    });
    h.record(ClientRecord::Handled {
        client: 0,
        tag: tag.clone(),
        rpc_id: rid("c0-op0#2"),
    });
    let j = judge(&h.entries(), &["retry-by-post".to_string()], &[1], false);
    assert_eq!(j.metrics.duplicate_side_effects, 1);
    assert_eq!(j.metrics.orphaned_events, 7);
    assert_eq!(j.metrics.silent_losses, 7, "nothing covered them");
    assert_eq!(j.metrics.truncated_responses, 1);
    assert_eq!(j.metrics.lost_operations, 0);
    assert_eq!(j.metrics.guard_bugs, None, "unguarded runs have no guard");
    let j3 = judge(&h.entries(), &["retry-by-post".to_string()], &[3], false);
    assert_eq!(
        j3.metrics.lost_operations, 2,
        "two calls never begun are lost"
    );
    // A 409 naming stream 0 at event 2 covers events 2.. of it.
    h.record(ClientRecord::Status {
        client: 0,
        tag: Some(tag.clone()),
        session: Some(sid()),
        status: 409,
        hint: Some(2),
        stream_first: Some(1),
    });
    let j = judge(&h.entries(), &["retry-by-post".to_string()], &[1], true);
    assert_eq!(j.metrics.silent_losses, 0);
    assert_eq!(j.metrics.orphaned_events, 7);
    assert_eq!(
        j.metrics.guard_blind_spots.duplicate_side_effects, 1,
        "no disputed decision: a blind spot"
    );
    assert_eq!(j.metrics.guard_bugs, Some(0));
}

#[test]
fn order_violation_needs_causal_order_and_reversed_handling() {
    let h = history();
    let (a, b): (Rc<str>, Rc<str>) = ("c0-op0".into(), "c0-op1".into());
    h.record(ClientRecord::Session {
        client: 0,
        session: sid(),
    });
    for t in [&a, &b] {
        h.record(ClientRecord::OpStarted {
            client: 0,
            tag: t.clone(),
        });
    }
    let produce = |tag: &str, event| Record::Produced {
        session: sid(),
        stream: 0,
        event,
        kind: EventKind::Result,
        rpc_id: Some(rid(&format!("{tag}#1"))),
        tag: Some(tag.to_string()),
    };
    let request = |tag: &str| Record::RequestReceived {
        session: Some(sid()),
        conn: 1,
        rpc_id: rid(&format!("{tag}#1")),
        method: "tools/call".into(),
        tag: Some(tag.to_string()),
        tool: None,
        key: None,
    };
    h.record(request(&a));
    h.record(produce(&a, 1));
    h.record(request(&b));
    h.record(produce(&b, 2));
    let handle = |t: &Rc<str>| ClientRecord::Handled {
        client: 0,
        tag: t.clone(),
        rpc_id: rid("x"),
    };
    h.record(handle(&b));
    h.record(handle(&a));
    let j = judge(&h.entries(), &["resume-then-post".to_string()], &[2], false);
    assert_eq!(j.metrics.order_violations, 1);
    // Handled in causal order: none.
    let h2 = history();
    for e in h.entries().iter().take(h.len() - 2) {
        h2.record(e.record.clone());
    }
    h2.record(handle(&a));
    h2.record(handle(&b));
    assert_eq!(
        judge(
            &h2.entries(),
            &["resume-then-post".to_string()],
            &[2],
            false
        )
        .metrics
        .order_violations,
        0
    );
}

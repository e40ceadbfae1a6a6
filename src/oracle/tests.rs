//! The oracle's definitions, checked on hand-built histories.

use super::*;
use crate::history::{
    ClientRecord, EventKind, FaultKind, History, LedgerRecord, LoggedDecision, LoggedReason,
    LoggedVerdict, LoggedView, Outcome, Rec, Record, Sent, SessionId, Transport, WorldRecord,
};
use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use std::rc::Rc;
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
        decision: Box::new(LoggedDecision {
            verdict,
            reason,
            stream: Some(0),
            hint: Some(1),
        }),
        view: Box::new(view),
        idempotent: false,
        dedup_honored: false,
        replica: None,
    };
    // Right view, right verdict (row 2): no error.
    h.record(decide(
        LoggedVerdict::Reject,
        Some(LoggedReason::NotDrained),
        rebuilt.clone(),
    ));
    assert_eq!(audit::decision_errors(&h.entries()).count, 0);
    // Right view, wrong verdict.
    h.record(decide(LoggedVerdict::Fresh, None, rebuilt.clone()));
    assert_eq!(audit::decision_errors(&h.entries()).count, 1);
    // Wrong view, right verdict.
    h.record(decide(
        LoggedVerdict::Reject,
        Some(LoggedReason::NotDrained),
        LoggedView::default(),
    ));
    let errs = audit::decision_errors(&h.entries());
    assert_eq!(errs.count, 2);
    assert!(
        errs.details[1].contains("logged view"),
        "{:?}",
        errs.details
    );
    // On a shared store each replica's guard holds the streams it opened:
    // replica 1 opened none (connection 1 is replica 0's), so its empty
    // view and `fresh` are right; the same decision by replica 0 is not.
    let mut by = decide(LoggedVerdict::Fresh, None, LoggedView::default());
    let Record::Decision { replica, .. } = &mut by else {
        unreachable!()
    };
    *replica = Some(1);
    h.record(by.clone());
    assert_eq!(audit::decision_errors(&h.entries()).count, 2);
    let Record::Decision { replica, .. } = &mut by else {
        unreachable!()
    };
    *replica = Some(0);
    h.record(by);
    assert_eq!(audit::decision_errors(&h.entries()).count, 3);
}

fn chunk(tag: &Rc<str>, execution: u32, index: u32) -> ChunkRef {
    ChunkRef {
        tag: tag.clone(),
        execution,
        index,
    }
}

/// A black-box history under construction: one client's operations.
struct Hist {
    h: History,
    now: Rc<std::cell::Cell<u64>>,
}

impl Hist {
    fn new() -> Hist {
        let now = Rc::new(std::cell::Cell::new(0u64));
        let n = now.clone();
        let h = History::new(Rc::new(move || Duration::from_micros(n.get())));
        Hist { h, now }
    }
    fn at(&self, us: u64) -> &Self {
        self.now.set(us);
        self
    }
    fn rec(&self, r: impl Into<Rec>) -> &Self {
        self.h.record(r);
        self
    }
    fn start(&self, tag: &Rc<str>) -> &Self {
        self.rec(ClientRecord::OpStarted {
            client: 0,
            tag: tag.clone(),
        })
    }
    fn send(&self, tag: &Rc<str>, attempt: u32, keyed: bool) -> &Self {
        self.rec(ClientRecord::Sent {
            client: 0,
            what: Sent::Call,
            tag: Some(tag.clone()),
            rpc_id: Some(rid(&format!("{tag}#{attempt}"))),
            cursor: None,
            keyed,
        })
    }
    /// Execution `n` of `tag` runs and emits `chunks` chunks.
    fn execute(&self, tag: &Rc<str>, n: u32, chunks: u32) -> &Self {
        self.rec(LedgerRecord::Execution {
            tag: tag.clone(),
            n,
            principal: "p".into(),
            key: None,
            rpc_id: rid(&format!("{tag}#{n}")),
            deferred: false,
            replica: None,
        });
        for index in 1..=chunks {
            self.rec(LedgerRecord::Chunk {
                tag: tag.clone(),
                n,
                index,
                last: index == chunks,
            });
        }
        self
    }
    fn receive(&self, tag: &Rc<str>, n: u32, index: u32, result: bool) -> &Self {
        self.rec(ClientRecord::Received {
            client: 0,
            session: sid(),
            event: u64::from(index),
            tag: Some(tag.clone()),
            chunk: Some(chunk(tag, n, index)),
            result,
            transport: Transport::Streamable,
            stream: 1,
        })
    }
    fn handle(&self, tag: &Rc<str>, n: u32, index: u32, replayed: bool) -> &Self {
        self.rec(ClientRecord::Handled {
            client: 0,
            tag: tag.clone(),
            rpc_id: rid("x"),
            chunk: Some(chunk(tag, n, index)),
            replayed,
        })
        .rec(ClientRecord::Outcome {
            client: 0,
            tag: tag.clone(),
            outcome: Outcome::Done,
            attempts: 1,
        })
    }
    fn judge(&self, calls: u32, finished: bool) -> Judgement {
        judge(
            &self.h.entries(),
            World {
                classes: &["c".to_string()],
                calls: &[calls],
                hosts: &[0],
                clients_finished: finished,
                audited: false,
                built_in: false,
            },
        )
    }
}

/// Transactional effects: the first execution, killed after one chunk,
/// committed nothing; the second committed. One effect: not duplicated,
/// and the dead execution's unreceived chunks are owed to nobody.
#[test]
fn an_execution_that_committed_nothing_is_not_a_duplicate() {
    let t: Rc<str> = "c0-op0".into();
    let h = Hist::new();
    h.start(&t).send(&t, 1, true);
    for n in 1..=2 {
        h.rec(LedgerRecord::Execution {
            tag: t.clone(),
            n,
            principal: "p".into(),
            key: Some("k".into()),
            rpc_id: rid(&format!("{t}#{n}")),
            deferred: true,
            replica: None,
        });
        let chunks = if n == 1 { 2 } else { 4 };
        if n == 2 {
            h.rec(LedgerRecord::Commit { tag: t.clone(), n });
        }
        for index in 1..=chunks {
            h.rec(LedgerRecord::Chunk {
                tag: t.clone(),
                n,
                index,
                last: n == 2 && index == chunks,
            });
        }
        if n == 1 {
            h.receive(&t, 1, 1, false);
            h.send(&t, 2, true);
        }
    }
    for i in 1..=4 {
        h.receive(&t, 2, i, i == 4);
    }
    h.handle(&t, 2, 4, false);
    let m = h.judge(1, true).metrics;
    assert_eq!((m.ops_failed, m.ops_duplicated), (0, 0));
    assert_eq!(m.duplicate_side_effects, 0);
    assert_eq!((m.orphaned_events, m.truncated_responses), (0, 0));
}

/// The seed's case 1, unguarded: the op ran twice, 7 events of the first
/// execution never arrived. One failed operation (duplicated), one cause;
/// the abandoned execution's tail is orphaned, not a silent loss.
#[test]
fn a_retry_without_key_is_one_duplicated_operation() {
    let t: Rc<str> = "c0-op0".into();
    let h = Hist::new();
    h.start(&t).send(&t, 1, false).execute(&t, 1, 8);
    h.receive(&t, 1, 1, false);
    h.send(&t, 2, false).execute(&t, 2, 8);
    for i in 1..=8 {
        h.receive(&t, 2, i, i == 8);
    }
    h.handle(&t, 2, 8, false);
    let m = h.judge(1, true).metrics;
    assert_eq!((m.operations, m.ops_failed, m.ops_duplicated), (1, 1, 1));
    assert_eq!(m.ops_silent_loss, 0, "the handled execution arrived whole");
    assert_eq!(m.duplicate_side_effects, 1);
    assert_eq!(m.orphaned_events, 7, "the first execution's tail");
    assert_eq!(m.silent_losses, 0);
    assert_eq!(m.truncated_responses, 1);
    assert_eq!(
        m.failures_by_cause,
        BTreeMap::from([("retry_without_key".to_string(), 1)])
    );
    assert_eq!(m.guard_bugs, None, "no guard audited");
    // Two more planned calls never begun, with the client finished: an
    // oracle defect (nothing explains them); with time run out: run_ended.
    assert_eq!(h.judge(3, true).defects.len(), 1);
    let j = h.judge(3, false);
    assert!(j.defects.is_empty());
    assert_eq!(j.metrics.ops_lost, 2);
    assert_eq!(j.metrics.operations, 3);
    assert_eq!(j.metrics.failures_by_cause.get("run_ended"), Some(&2));
}

#[test]
fn keyed_retries_run_twice_only_where_keys_are_not_honored() {
    let t: Rc<str> = "c0-op0".into();
    let h = Hist::new();
    h.start(&t).send(&t, 1, true).execute(&t, 1, 2);
    h.send(&t, 2, true).execute(&t, 2, 2);
    h.receive(&t, 2, 1, false).receive(&t, 2, 2, true);
    h.handle(&t, 2, 2, false);
    let m = h.judge(1, true).metrics;
    assert_eq!(m.failures_by_cause.get("key_not_honored"), Some(&1));
}

#[test]
fn a_replayed_result_is_an_announced_loss_and_an_unmarked_one_is_silent() {
    for replayed in [true, false] {
        let t: Rc<str> = "c0-op0".into();
        let h = Hist::new();
        h.start(&t).send(&t, 1, true).execute(&t, 1, 4);
        h.receive(&t, 1, 1, false);
        h.send(&t, 2, true).handle(&t, 1, 4, replayed);
        let j = h.judge(1, true);
        let m = &j.metrics;
        if replayed {
            assert_eq!((m.ops_degraded, m.ops_failed, m.ops_ok), (1, 0, 0));
            assert_eq!((m.announced_losses, m.silent_losses), (3, 0));
            assert_eq!(m.ops_announced_loss, 1);
        } else {
            assert_eq!((m.ops_degraded, m.ops_failed), (0, 1));
            assert_eq!((m.announced_losses, m.silent_losses), (0, 3));
            assert_eq!(m.ops_silent_loss, 1);
            // Nothing in the list explains a silent loss without a hole,
            // a restart or a 410: the oracle says so instead of guessing.
            assert_eq!(j.defects.len(), 1, "{:?}", j.defects);
        }
    }
}

impl Hist {
    /// The client received a gap on `stream` naming `missing`.
    fn gap(&self, stream: u64, missing: &[(u64, u64)]) -> &Self {
        self.rec(ClientRecord::Gap {
            client: 0,
            session: sid(),
            stream,
            missing: missing.to_vec(),
            named: crate::protocol::sse::gap_count(missing),
        })
    }
}

/// A gap that names the missing events, on the stream the result then
/// arrived on, turns them into announced losses: degraded, not failed.
/// Without it (or with it on another stream, or after the result) the
/// same hole is a silent loss; a gap naming fewer ids than are missing
/// announces that many, and the excess stays silent.
#[test]
fn a_gap_before_the_result_announces_the_missing_events() {
    let t: Rc<str> = "c0-op0".into();
    // Chunks 3..=5 of 6 never arrive; `gap` runs between chunk 2 and 6.
    let run = |gap: &dyn Fn(&Hist), after_result: &dyn Fn(&Hist)| {
        let h = Hist::new();
        h.start(&t).send(&t, 1, true).execute(&t, 1, 6);
        h.receive(&t, 1, 1, false).receive(&t, 1, 2, false);
        gap(&h);
        h.receive(&t, 1, 6, true);
        after_result(&h);
        h.handle(&t, 1, 6, false);
        h.judge(1, true)
    };
    let none = |_: &Hist| {};
    let on = |stream: u64, missing: &'static [(u64, u64)]| {
        move |h: &Hist| {
            h.gap(stream, missing);
        }
    };
    let j = run(&on(1, &[(13, 14), (16, 16)]), &none);
    let m = &j.metrics;
    assert_eq!((m.ops_degraded, m.ops_failed, m.ops_ok), (1, 0, 0));
    assert_eq!((m.ops_announced_loss, m.ops_silent_loss), (1, 0));
    assert_eq!((m.announced_losses, m.silent_losses), (3, 0));
    assert_eq!(m.hazards.get("eviction"), Some(&1), "still a hole");
    assert!(j.defects.is_empty(), "{:?}", j.defects);
    for (what, j) in [
        ("no gap", run(&none, &none)),
        ("another stream", run(&on(2, &[(13, 15)]), &none)),
        ("after the result", run(&none, &on(1, &[(13, 15)]))),
    ] {
        let m = &j.metrics;
        assert_eq!((m.ops_degraded, m.ops_failed), (0, 1), "{what}");
        assert_eq!((m.ops_announced_loss, m.ops_silent_loss), (0, 1), "{what}");
        assert_eq!((m.announced_losses, m.silent_losses), (0, 3), "{what}");
        assert_eq!(m.failures_by_cause.get("eviction"), Some(&1), "{what}");
    }
    let j = run(&on(1, &[(13, 14)]), &none);
    let m = &j.metrics;
    assert_eq!((m.ops_failed, m.ops_silent_loss), (1, 1), "one unannounced");
    assert_eq!((m.announced_losses, m.silent_losses), (2, 1));
}

#[test]
fn a_hole_in_the_received_chunks_is_eviction() {
    let t: Rc<str> = "c0-op0".into();
    let h = Hist::new();
    h.start(&t).send(&t, 1, false).execute(&t, 1, 5);
    for i in [1, 4, 5] {
        h.receive(&t, 1, i, i == 5);
    }
    h.handle(&t, 1, 5, false);
    let m = h.judge(1, true).metrics;
    assert_eq!((m.ops_silent_loss, m.silent_losses), (1, 2));
    assert_eq!(m.failures_by_cause.get("eviction"), Some(&1));
    assert_eq!(m.hazards.get("eviction"), Some(&1));
}

#[test]
fn a_result_from_another_execution_or_operation_is_wrong() {
    let (a, b): (Rc<str>, Rc<str>) = ("c0-op0".into(), "c0-op1".into());
    let h = Hist::new();
    h.start(&a).send(&a, 1, false).execute(&a, 1, 1);
    h.start(&b).send(&b, 1, false).execute(&b, 1, 1);
    // a's handler got b's result (cross-wired), b's got a chunk that is
    // not a result.
    h.handle(&a, 1, 1, false);
    h.rec(ClientRecord::Handled {
        client: 0,
        tag: a.clone(),
        rpc_id: rid("x"),
        chunk: None,
        replayed: false,
    });
    let hh = Hist::new();
    hh.start(&a).send(&a, 1, false).execute(&a, 1, 2);
    hh.rec(ClientRecord::Handled {
        client: 0,
        tag: a.clone(),
        rpc_id: rid("x"),
        chunk: Some(chunk(&b, 1, 1)),
        replayed: false,
    });
    assert_eq!(hh.judge(1, true).metrics.ops_wrong_result, 1);
    let hh = Hist::new();
    hh.start(&a).send(&a, 1, false).execute(&a, 1, 2);
    hh.handle(&a, 1, 1, false);
    assert_eq!(
        hh.judge(1, true).metrics.ops_wrong_result,
        1,
        "chunk 1 of 2 is progress, not the result"
    );
}

#[test]
fn a_restart_inside_an_execution_outranks_every_other_cause() {
    let t: Rc<str> = "c0-op0".into();
    let h = Hist::new();
    h.at(10).start(&t).send(&t, 1, false);
    h.rec(LedgerRecord::Execution {
        tag: t.clone(),
        n: 1,
        principal: "p".into(),
        key: None,
        rpc_id: rid("c0-op0#1"),
        deferred: false,
        replica: None,
    });
    h.at(20).rec(WorldRecord::FaultStarted {
        index: 0,
        kind: FaultKind::Restart,
        host: None,
        replica: None,
    });
    h.at(30).send(&t, 2, false).execute(&t, 2, 1);
    h.receive(&t, 2, 1, true).handle(&t, 2, 1, false);
    let m = h.judge(1, true).metrics;
    assert_eq!(m.failures_by_cause.get("restart_mid_execution"), Some(&1));
    assert_eq!(m.hazards.get("restart"), Some(&1));
}

#[test]
fn order_violation_needs_causal_order_and_reversed_handling() {
    let (a, b): (Rc<str>, Rc<str>) = ("c0-op0".into(), "c0-op1".into());
    let run = |reversed: bool, b_first: bool| {
        let h = Hist::new();
        h.start(&a).send(&a, 1, false);
        if b_first {
            h.start(&b).send(&b, 1, false);
        }
        h.execute(&a, 1, 1);
        if !b_first {
            h.start(&b).send(&b, 1, false);
        }
        h.execute(&b, 1, 1);
        h.rec(ClientRecord::Sent {
            client: 0,
            what: Sent::Resume,
            tag: Some(a.clone()),
            rpc_id: None,
            cursor: None,
            keyed: false,
        });
        if reversed {
            h.handle(&b, 1, 1, false).handle(&a, 1, 1, false);
        } else {
            h.handle(&a, 1, 1, false).handle(&b, 1, 1, false);
        }
        h.judge(2, true).metrics
    };
    let m = run(true, false);
    assert_eq!((m.order_violations, m.ops_out_of_order), (1, 1));
    assert_eq!(m.failures_by_cause.get("replay_live_interleave"), Some(&1));
    assert_eq!(run(false, false).order_violations, 0, "handled in order");
    assert_eq!(
        run(true, true).order_violations,
        0,
        "b was sent before a's result: no causal order between them"
    );
}

#[test]
fn order_violations_count_every_pair_once() {
    // Results produced in order 0..4, each op sent after the previous
    // result, handled in reverse: every pair is a violation.
    let tags: Vec<Rc<str>> = (0..5).map(|i| format!("c0-op{i}").into()).collect();
    let h = Hist::new();
    for t in &tags {
        h.start(t).send(t, 1, false).execute(t, 1, 1);
    }
    for t in tags.iter().rev() {
        h.handle(t, 1, 1, false);
    }
    let j = h.judge(5, true);
    assert_eq!(j.metrics.order_violations, 10, "5 choose 2");
    assert_eq!(j.metrics.ops_out_of_order, 4, "all but the last sent");
}

#[test]
fn every_operation_lands_in_exactly_one_bucket() {
    let t: Rc<str> = "c0-op0".into();
    let h = Hist::new();
    h.start(&t).send(&t, 1, false);
    h.rec(ClientRecord::Outcome {
        client: 0,
        tag: t.clone(),
        outcome: Outcome::Abandoned,
        attempts: 4,
    });
    let m = h.judge(1, true).metrics;
    assert_eq!(m.ops_ok + m.ops_degraded + m.ops_failed, m.operations);
    assert_eq!((m.ops_lost, m.lost_operations), (1, 1));
    assert_eq!(m.failures_by_cause.get("gave_up"), Some(&1));
}

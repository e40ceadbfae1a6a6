use super::*;

fn rec(replica: u32) -> SessionRec {
    SessionRec {
        legacy: false,
        protocol_version: Some("2025-11-25".into()),
        capabilities: "{}".into(),
        owner: None,
        replica,
    }
}

fn ev(stream: u32, id: u64, result: bool) -> StoredEvent {
    StoredEvent {
        stream,
        id,
        data: format!("{{\"n\":{id}}}"),
        result,
    }
}

fn get(d: &mut StoreData, sid: &str, now: u64, lag: u64) -> Option<SessionRec> {
    match d.apply(Op::GetSession { sid: sid.into() }, now, lag) {
        Ok(Answer::Session { rec }) => rec,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_lagging_read_sees_the_store_as_it_was_lag_ago() {
    let mut d = StoreData::default();
    let put = Op::PutSession {
        sid: "s".into(),
        rec: rec(0),
    };
    assert_eq!(d.apply(put, 1_000, 0), Ok(Answer::Done));
    assert_eq!(get(&mut d, "s", 1_000, 0), Some(rec(0)));
    assert_eq!(
        get(&mut d, "s", 1_400, 500),
        None,
        "written 400 µs ago, lag 500"
    );
    assert_eq!(get(&mut d, "s", 1_500, 500), Some(rec(0)));
    d.apply(Op::DelSession { sid: "s".into() }, 2_000, 0)
        .unwrap();
    assert_eq!(
        get(&mut d, "s", 2_100, 500),
        Some(rec(0)),
        "the delete not seen yet"
    );
    assert_eq!(get(&mut d, "s", 2_100, 0), None);
}

fn begin(d: &mut StoreData, replica: u32, now: u64) -> Answer {
    let op = Op::KeyBegin {
        scope: "tok".into(),
        key: "k1".into(),
        call: "{\"name\":\"t\"}".into(),
        replica,
        lease_ms: 10,
    };
    d.apply(op, now, 0).unwrap()
}

#[test]
fn two_replicas_never_both_begin_a_key_until_its_lease_runs_out() {
    let mut d = StoreData::default();
    assert_eq!(begin(&mut d, 0, 0), Answer::Began);
    let Answer::Key { rec: Some(r) } = begin(&mut d, 1, 9_999) else {
        panic!("the second begin must see the first");
    };
    assert_eq!(r.runner, Some((0, 10_000)));
    assert_eq!(begin(&mut d, 1, 10_000), Answer::Began, "the lease ended");
    let done = Op::KeyDone {
        scope: "tok".into(),
        key: "k1".into(),
        result: "{\"ok\":1}".into(),
    };
    d.apply(done, 10_500, 0).unwrap();
    let Answer::Key { rec: Some(r) } = begin(&mut d, 0, 1_000_000) else {
        panic!("a completed key is never begun again");
    };
    assert_eq!(r.result.as_deref(), Some("{\"ok\":1}"));
    assert_eq!(r.runner, None);
}

fn tail(d: &mut StoreData, cursor: u64, now: u64, lag: u64) -> Result<Answer, Option<u64>> {
    let op = Op::Tail {
        sid: "s".into(),
        cursor,
        wait_ms: 0,
    };
    d.apply(op, now, lag)
}

#[test]
fn a_tail_gives_the_cursors_stream_after_it_and_says_when_it_ended() {
    let mut d = StoreData::default();
    let append = |events| Op::Append {
        sid: "s".into(),
        events,
    };
    d.apply(
        append(vec![ev(0, 1, false), ev(1, 2, false), ev(0, 3, false)]),
        10,
        0,
    )
    .unwrap();
    assert_eq!(
        tail(&mut d, 1, 10, 0),
        Ok(Answer::Events {
            known: true,
            events: vec![ev(0, 3, false)],
            ended: false,
            orphaned: false
        })
    );
    assert_eq!(tail(&mut d, 3, 10, 0), Err(None), "nothing after it yet");
    d.apply(append(vec![ev(0, 4, true), ev(0, 4, true)]), 20, 0)
        .unwrap();
    assert_eq!(tail(&mut d, 3, 25, 10), Err(Some(30)), "visible from 30");
    let after_3 = Ok(Answer::Events {
        known: true,
        events: vec![ev(0, 4, true)],
        ended: true,
        orphaned: false,
    });
    assert_eq!(
        tail(&mut d, 3, 30, 10),
        after_3,
        "a batch sent twice adds once"
    );
    let at_end = Ok(Answer::Events {
        known: true,
        events: vec![],
        ended: true,
        orphaned: false,
    });
    assert_eq!(tail(&mut d, 4, 30, 0), at_end);
    let cold = Ok(Answer::Events {
        known: false,
        events: vec![],
        ended: false,
        orphaned: false,
    });
    assert_eq!(tail(&mut d, 99, 30, 0), cold, "an id the store never held");
    assert_eq!(tail(&mut d, 4, 25, 10), cold, "an id not visible yet");
}

#[test]
fn ops_and_answers_cross_the_wire_as_one_line_each() {
    let op = Op::Batch {
        ops: vec![Op::Append {
            sid: "s".into(),
            events: vec![ev(0, 1, true)],
        }],
    };
    let line = serde_json::to_string(&op).unwrap();
    assert!(!line.contains('\n'));
    assert_eq!(serde_json::from_str::<Op>(&line).unwrap(), op);
}

#[test]
fn a_stream_whose_runner_stopped_renewing_is_orphaned_until_it_ends() {
    let mut d = StoreData::default();
    let append = |events| Op::Append {
        sid: "s".into(),
        events,
    };
    let lease = || Op::Renew {
        keys: vec![],
        streams: vec![("s".into(), 0)],
        replica: 0,
        lease_ms: 3,
    };
    d.apply(append(vec![ev(0, 1, false), ev(0, 2, false)]), 0, 0)
        .unwrap();
    d.apply(lease(), 0, 0).unwrap();
    assert_eq!(
        tail(&mut d, 2, 2_999, 0),
        Err(None),
        "the lease holds: wait"
    );
    d.apply(lease(), 2_000, 0).unwrap();
    assert_eq!(tail(&mut d, 2, 4_999, 0), Err(None), "renewed until 5 ms");
    let orphaned = Ok(Answer::Events {
        known: true,
        events: vec![],
        ended: false,
        orphaned: true,
    });
    assert_eq!(tail(&mut d, 2, 5_000, 0), orphaned);
    let behind = Ok(Answer::Events {
        known: true,
        events: vec![ev(0, 2, false)],
        ended: false,
        orphaned: true,
    });
    assert_eq!(
        tail(&mut d, 1, 5_000, 0),
        behind,
        "what is stored comes first"
    );
    d.apply(append(vec![ev(0, 3, true)]), 6_000, 0).unwrap();
    let ended = Ok(Answer::Events {
        known: true,
        events: vec![ev(0, 3, true)],
        ended: true,
        orphaned: false,
    });
    assert_eq!(
        tail(&mut d, 2, 6_000, 0),
        ended,
        "a result ends it, late or not"
    );
}

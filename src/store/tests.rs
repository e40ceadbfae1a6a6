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

fn some_state() -> crate::guard::StreamState {
    let mut g = crate::guard::SessionGuard::new();
    let s = g.open_stream(1);
    *g.stream(s)
}

fn guard_put(d: &mut StoreData, replica: u32, expect: Option<u64>, reported: Vec<u32>) -> Answer {
    let op = Op::GuardPut {
        sid: "s".into(),
        write: GuardWrite {
            replica,
            expect,
            view: Some(Vec::new()),
            words: vec![Word {
                event: u64::from(replica),
                kind: WordKind::Cursor,
            }],
            reported,
            lease_ms: 1_000,
            seq: 0,
        },
    };
    d.apply(op, 0, 0).expect("a write answers")
}

#[test]
fn two_replicas_deciding_on_one_version_never_both_write() {
    let mut d = StoreData::default();
    let load = |d: &mut StoreData| match d.apply(Op::GuardLoad { sid: "s".into() }, 0, 0) {
        Ok(Answer::Guard { rec }) => rec,
        other => panic!("a load answers its record: {other:?}"),
    };
    let v = load(&mut d).version;
    assert_eq!(v, 0, "no record yet: version 0");
    let first = guard_put(&mut d, 1, Some(v), vec![7]);
    let second = guard_put(&mut d, 2, Some(v), vec![8]);
    assert_eq!(
        (first, second),
        (
            Answer::GuardPut {
                written: true,
                version: 1
            },
            Answer::GuardPut {
                written: false,
                version: 1
            }
        )
    );
    let rec = load(&mut d);
    assert_eq!(rec.reported.iter().copied().collect::<Vec<_>>(), vec![7]);
    assert_eq!(rec.words.len(), 1, "the refused write left nothing");
    // A publication (no version expected) always lands, and bumps it.
    assert!(matches!(
        guard_put(&mut d, 2, None, Vec::new()),
        Answer::GuardPut {
            written: true,
            version: 2
        }
    ));
    // A view lapses unless renewed: a dead replica stops blocking others.
    let view = |d: &mut StoreData, now: u64| {
        let op = Op::GuardPut {
            sid: "s".into(),
            write: GuardWrite {
                replica: 3,
                expect: None,
                view: Some(vec![Dropped {
                    stream: 9,
                    first: 1,
                    state: some_state(),
                }]),
                words: Vec::new(),
                reported: Vec::new(),
                lease_ms: 1_000,
                seq: 0,
            },
        };
        d.apply(op, now, 0).expect("a write answers")
    };
    view(&mut d, 0);
    let at = |d: &mut StoreData, now: u64| match d.apply(Op::GuardLoad { sid: "s".into() }, now, 0)
    {
        Ok(Answer::Guard { rec }) => rec.views.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!((at(&mut d, 999_999), at(&mut d, 1_000_000)), (1, 0));
    let v = load(&mut d).version;
    assert!(
        matches!(view(&mut d, 1_000_000), Answer::GuardPut { written: true, version } if version == v),
        "a renewal of the same view moves no version"
    );
    d.apply(Op::DelSession { sid: "s".into() }, 0, 0).unwrap();
    assert_eq!(
        load(&mut d),
        GuardRec::default(),
        "the session's record goes with it"
    );
}

#[test]
fn a_guard_record_crosses_the_wire() {
    let mut rec = GuardRec::default();
    rec.views.insert(
        1,
        Published {
            until: 5,
            streams: vec![Dropped {
                stream: 65536,
                first: 1,
                state: some_state(),
            }],
            seq: 7,
        },
    );
    rec.words.push(Word {
        event: 3,
        kind: WordKind::Lost,
    });
    rec.reported.insert(4);
    let a = Answer::Guard { rec };
    let line = serde_json::to_string(&a).unwrap();
    assert_eq!(serde_json::from_str::<Answer>(&line).unwrap(), a, "{line}");
}

#[test]
fn a_view_that_arrives_after_a_newer_one_is_not_applied() {
    let mut d = StoreData::default();
    let mut view = |streams: Vec<Dropped>, seq: u64| {
        let op = Op::GuardPut {
            sid: "s".into(),
            write: GuardWrite {
                replica: 0,
                expect: None,
                view: Some(streams),
                words: Vec::new(),
                reported: Vec::new(),
                lease_ms: 1_000,
                seq,
            },
        };
        d.apply(op, 10, 0).expect("a write answers");
        match d.apply(Op::GuardLoad { sid: "s".into() }, 10, 0) {
            Ok(Answer::Guard { rec }) => rec.views.values().map(|p| p.streams.len()).sum::<usize>(),
            other => panic!("{other:?}"),
        }
    };
    let dropped = vec![Dropped {
        stream: 9,
        first: 1,
        state: some_state(),
    }];
    assert_eq!(view(dropped.clone(), 5), 1, "published");
    // The replica let the stream go (seq 6); its earlier write of the
    // stream (seq 4), delayed on another connection, lands after.
    assert_eq!(view(Vec::new(), 6), 0, "withdrawn");
    assert_eq!(view(dropped.clone(), 4), 0, "the older view stays out");
    assert_eq!(view(dropped.clone(), 7), 1, "a newer one lands");
    assert_eq!(view(Vec::new(), 0), 0, "an unordered write always lands");
}

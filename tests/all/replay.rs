//! Resumption and replay on a real socket: a resume delivers exactly the
//! tail and takes the stream over; past an eviction the unguarded arms
//! resume silently and the guarded arm announces the gap (or answers 410
//! when the result itself is gone); a malformed `Last-Event-ID`, an
//! inclusive replay and a completed stream's empty resume, arm by arm.

use crate::loopback::{
    both, decode, drain, event_id, evict_a_result, last_message, message_ids, next, rpc_error,
    with_server, Harness, PATIENCE,
};
use mcp_chaos::client::http::Outgoing;
use mcp_chaos::history::{EmptyResume, EventKind, Rec, Record};
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message};
use mcp_chaos::protocol::mcp;
use mcp_chaos::server::{CompletedResume, Replay, Sdk, ServerConfig, Variant};
use serde_json::{json, Value};

/// initialize → tools/call (SSE progress + result) → drop after the first
/// chunk → GET with Last-Event-ID → exactly the remaining events, once each.
#[test]
fn drop_then_resume_delivers_exactly_the_tail() {
    both(ServerConfig::default(), |h, variant| {
        Box::pin(async move {
            let sid = h.initialize().await;
            let mut ex = h.call(&sid, "op-1", 8, None).await;
            assert_eq!(ex.status, 200);
            assert!(ex.is_sse());
            let priming = next(&mut ex).await;
            assert_eq!(priming.data, "", "priming event has empty data");
            let mut seen = vec![event_id(&priming).expect("priming id")];
            h.release(1);
            let first = next(&mut ex).await;
            let first_msg = Message::decode(first.data.as_bytes()).unwrap();
            assert_eq!(first_msg.method(), Some(mcp::PROGRESS));
            seen.push(event_id(&first).unwrap());
            drop(ex);
            h.close_seen(1).await;
            h.release(7);
            h.tool_ended(1).await;
            let cursor = *seen.last().unwrap();
            let mut resumed = h.send(Outgoing::get(&sid, Some(cursor))).await;
            assert_eq!(resumed.status, 200);
            let events = drain(&mut resumed).await;
            let ids = message_ids(&events);
            let produced: Vec<u64> = h
                .produced_ids(EventKind::Progress)
                .into_iter()
                .chain(h.produced_ids(EventKind::Result))
                .filter(|&i| i > cursor)
                .collect();
            let mut produced = produced;
            produced.sort();
            assert_eq!(
                ids, produced,
                "{variant:?}: exactly the remaining events, in order"
            );
            assert_eq!(ids.len(), 7);
            for id in &ids {
                assert!(
                    !seen.contains(id),
                    "{variant:?}: event {id} delivered twice"
                );
            }
            let last = Message::decode(last_message(&events).data.as_bytes()).unwrap();
            assert!(
                matches!(last, Message::Result { .. }),
                "the tail ends with the result"
            );
            let markers: Vec<_> = events.iter().filter(|e| e.event == "replay-end").collect();
            let want = usize::from(variant == Variant::Guarded);
            assert_eq!(markers.len(), want, "{variant:?}: replay-end marker count");
            // The marker names the stream's position: the replay's last id.
            for m in markers {
                assert_eq!(
                    event_id(m),
                    ids.last().copied(),
                    "{variant:?}: replay-end's id"
                );
            }
            assert_eq!(h.ledger.executions("op-1"), 1);
        })
    });
}

/// A resume takes the stream over: the older connection is closed by the
/// server, and that is not a drop.
#[test]
fn resume_takes_the_stream_over() {
    with_server(Variant::Guarded, ServerConfig::default(), |h| async move {
        let sid = h.initialize().await;
        let mut ex = h.call(&sid, "op-t", 3, None).await;
        let priming = event_id(&next(&mut ex).await).unwrap();
        let mut resumed = h.send(Outgoing::get(&sid, Some(priming))).await;
        assert_eq!(resumed.status, 200);
        assert!(
            tokio::time::timeout(PATIENCE, ex.next_event())
                .await
                .unwrap()
                .is_err()
                || ex.next_event().await.unwrap().is_none(),
            "the older connection ends"
        );
        h.release(3);
        let events = drain(&mut resumed).await;
        assert_eq!(message_ids(&events).len(), 3);
        assert!(
            !h.history
                .entries()
                .iter()
                .any(|e| matches!(e.record, Rec::Server(Record::CloseSeen { .. }))),
            "a takeover is not a drop"
        );
    });
}

/// The unguarded and keys servers resume from an evicted position silently,
/// from the oldest event they still have (as real SDKs do): no gap event.
#[test]
fn unguarded_resume_past_eviction_is_a_silent_gap() {
    let cfg = ServerConfig {
        store_capacity: 4,
        ..ServerConfig::default()
    };
    for variant in [Variant::Unguarded, Variant::Keys] {
        with_server(variant, cfg.clone(), |h| async move {
            let (sid, priming) = dropped_then_evicted(&h).await;
            let mut resumed = h.send(Outgoing::get(&sid, Some(priming))).await;
            assert_eq!(resumed.status, 200);
            let events = drain(&mut resumed).await;
            assert!(
                events.iter().all(|e| e.event != "gap"),
                "{variant:?}: no gap event: {events:?}"
            );
            let ids = message_ids(&events);
            assert_eq!(ids.len(), 4, "{variant:?}: only what the store kept");
            assert_eq!(
                ids[0],
                priming + 5,
                "{variant:?}: events {}..{} are silently missing",
                priming + 1,
                priming + 4
            );
            assert!(!h
                .history
                .entries()
                .iter()
                .any(|e| matches!(e.record, Rec::Server(Record::GapReplayed { .. }))));
        });
    }
}

/// The guarded server never hides a gap: a resume past evicted events whose
/// result survived gets an id-less `gap` event naming exactly the missing
/// ids, then every survivor (the result last), then `replay-end`.
#[test]
fn guarded_resume_past_eviction_announces_a_gap() {
    let cfg = ServerConfig {
        store_capacity: 4,
        ..ServerConfig::default()
    };
    with_server(Variant::Guarded, cfg, |h| async move {
        let (sid, priming) = dropped_then_evicted(&h).await;
        let mut resumed = h.send(Outgoing::get(&sid, Some(priming))).await;
        assert_eq!(resumed.status, 200);
        let events = drain(&mut resumed).await;
        let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "gap",
                "message",
                "message",
                "message",
                "message",
                "replay-end"
            ],
            "{events:?}"
        );
        let gap = &events[0];
        assert_eq!(gap.id, None, "a gap event has no id");
        let data: Value = serde_json::from_str(&gap.data).unwrap();
        assert_eq!(
            data,
            json!({"missing": [[priming + 1, priming + 4]]}),
            "exactly the evicted ids owed after the cursor"
        );
        let ids = message_ids(&events);
        assert_eq!(ids, (priming + 5..=priming + 8).collect::<Vec<_>>());
        let last = Message::decode(events[4].data.as_bytes()).unwrap();
        assert!(
            matches!(last, Message::Result { .. }),
            "the result survived"
        );
        let replayed: Vec<Vec<(u64, u64)>> = h
            .history
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                Rec::Server(Record::GapReplayed { missing, .. }) => Some(missing.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(replayed, vec![vec![(priming + 1, priming + 4)]]);
        assert_eq!(h.ledger.executions("big"), 1);
    });
}

/// A call of 8 chunks whose stream the client drops right after the
/// priming event; the tool then runs to its end (a store of 4 keeps only
/// the last events). Returns the session and the priming id.
async fn dropped_then_evicted(h: &Harness) -> (String, u64) {
    let sid = h.initialize().await;
    let mut ex = h.call(&sid, "big", 8, None).await;
    let priming = event_id(&next(&mut ex).await).unwrap();
    drop(ex);
    h.close_seen(1).await;
    h.release(8);
    h.tool_ended(1).await;
    (sid, priming)
}

/// The guarded server answers 410 only when the result itself is gone.
#[test]
fn guarded_resume_with_the_result_evicted_is_gone() {
    let cfg = ServerConfig {
        store_capacity: 4,
        ..ServerConfig::default()
    };
    with_server(Variant::Guarded, cfg, |h| async move {
        let sid = h.initialize().await;
        let priming = evict_a_result(&h, &sid, 0).await;
        let ex = h.send(Outgoing::get(&sid, Some(priming))).await;
        assert_eq!(ex.status, 410);
        let body = ex.json().await.unwrap().expect("an error body");
        assert_eq!(rpc_error(&body).code, jsonrpc::GONE);
        assert!(!h
            .history
            .entries()
            .iter()
            .any(|e| matches!(e.record, Rec::Server(Record::GapReplayed { .. }))));
    });
}

/// A `Last-Event-ID` that is no event id: the SDKs answer 200 with an
/// empty `text/event-stream` (unguarded, keys); guarded says 400; cancel
/// refuses every resume with 405.
#[test]
fn a_malformed_last_event_id_is_an_empty_stream_except_guarded() {
    for variant in Variant::ALL {
        with_server(variant, ServerConfig::default(), |h| async move {
            let sid = h.initialize().await;
            let bad = Outgoing::get(&sid, None).header(headers::LAST_EVENT_ID, "abc");
            let mut ex = h.send(bad).await;
            let empties = |h: &Harness| {
                h.history
                    .entries()
                    .iter()
                    .filter(|e| {
                        matches!(
                            e.record,
                            Rec::Server(Record::ResumedEmpty {
                                stream: None,
                                why: EmptyResume::MalformedCursor,
                                ..
                            })
                        )
                    })
                    .count()
            };
            match variant {
                Variant::Guarded | Variant::Cancel => {
                    let want = if variant == Variant::Guarded {
                        400
                    } else {
                        405
                    };
                    assert_eq!(ex.status, want, "{variant:?}");
                    let body = ex.json().await.unwrap().unwrap();
                    assert_eq!(rpc_error(&body).code, jsonrpc::TRANSPORT_ERROR);
                    assert_eq!(empties(&h), 0);
                }
                Variant::Unguarded | Variant::Keys => {
                    assert_eq!(ex.status, 200, "{variant:?}");
                    assert!(ex.is_sse(), "{variant:?}: text/event-stream");
                    assert!(drain(&mut ex).await.is_empty(), "{variant:?}: ends at once");
                    assert_eq!(empties(&h), 1, "{variant:?}");
                    // No stream was opened or taken over: a plain GET
                    // still opens the standalone stream.
                    let mut open = h.send(Outgoing::get(&sid, None)).await;
                    assert_eq!(open.status, 200);
                    next(&mut open).await;
                }
            }
        });
    }
}

/// `replay = "inclusive"` (rmcp; also `sdk = "rmcp"`): a resume re-sends
/// the event `Last-Event-ID` names, then the rest. Exclusive by default;
/// the guarded arm replays exclusively whatever is set.
#[test]
fn inclusive_replay_resends_the_named_event() {
    let inclusive = ServerConfig {
        replay: Some(Replay::Inclusive),
        ..ServerConfig::default()
    };
    let rmcp = ServerConfig {
        sdk: Some(Sdk::Rmcp),
        ..ServerConfig::default()
    };
    let cases = [
        (Variant::Unguarded, ServerConfig::default(), false),
        (Variant::Unguarded, inclusive.clone(), true),
        (Variant::Keys, rmcp, true),
        (Variant::Guarded, inclusive, false),
    ];
    for (variant, cfg, resends) in cases {
        with_server(variant, cfg, |h| async move {
            let sid = h.initialize().await;
            let mut ex = h.call(&sid, "op-i", 4, None).await;
            next(&mut ex).await;
            h.release(1);
            let cursor = event_id(&next(&mut ex).await).unwrap();
            drop(ex);
            h.close_seen(1).await;
            h.release(1);
            h.wait_for("chunk 2", 2, |r| {
                matches!(
                    r,
                    Rec::Server(Record::Produced {
                        kind: EventKind::Progress,
                        ..
                    })
                )
            })
            .await;
            let mut resumed = h.send(Outgoing::get(&sid, Some(cursor))).await;
            assert_eq!(resumed.status, 200);
            let first = next(&mut resumed).await;
            h.release(2);
            let mut events = vec![first];
            events.extend(drain(&mut resumed).await);
            let ids = message_ids(&events);
            let mut want: Vec<u64> = h
                .produced_ids(EventKind::Progress)
                .into_iter()
                .chain(h.produced_ids(EventKind::Result))
                .filter(|&i| if resends { i >= cursor } else { i > cursor })
                .collect();
            want.sort();
            assert_eq!(ids, want, "{variant:?} resends={resends}");
            assert_eq!(ids.first() == Some(&cursor), resends, "{variant:?}");
            assert!(matches!(
                decode(last_message(&events)),
                Message::Result { .. }
            ));
            let from = h.history.entries().iter().find_map(|e| match &e.record {
                Rec::Server(Record::Resumed {
                    from, cursor: c, ..
                }) => Some((*c, *from)),
                _ => None,
            });
            let want_from = if resends { cursor - 1 } else { cursor };
            assert_eq!(from, Some((cursor, want_from)), "{variant:?}");
        });
    }
}

/// `completed_resume = "empty"` (rmcp; also `sdk = "rmcp"`): once a
/// stream's result was produced, a resume gets 200 and an empty stream, so
/// the tail (result included) is lost. By default, and on guarded whatever
/// is set, the resume replays the tail.
#[test]
fn completed_resume_empty_loses_the_tail() {
    let empty = ServerConfig {
        completed_resume: Some(CompletedResume::Empty),
        ..ServerConfig::default()
    };
    let rmcp = ServerConfig {
        sdk: Some(Sdk::Rmcp),
        ..ServerConfig::default()
    };
    let cases = [
        (Variant::Unguarded, ServerConfig::default(), false),
        (Variant::Unguarded, empty.clone(), true),
        (Variant::Unguarded, rmcp, true),
        (Variant::Guarded, empty, false),
    ];
    for (variant, cfg, lost) in cases {
        with_server(variant, cfg, |h| async move {
            let sid = h.initialize().await;
            let mut ex = h.call(&sid, "op-e", 3, None).await;
            let priming = event_id(&next(&mut ex).await).unwrap();
            drop(ex);
            h.close_seen(1).await;
            h.release(3);
            h.tool_ended(1).await;
            let mut resumed = h.send(Outgoing::get(&sid, Some(priming))).await;
            assert_eq!(resumed.status, 200, "{variant:?}");
            assert!(resumed.is_sse());
            let events = drain(&mut resumed).await;
            let ids = message_ids(&events);
            let completed = h
                .history
                .entries()
                .iter()
                .filter(|e| {
                    matches!(
                        e.record,
                        Rec::Server(Record::ResumedEmpty {
                            stream: Some(_),
                            why: EmptyResume::Completed,
                            ..
                        })
                    )
                })
                .count();
            if lost {
                assert!(events.is_empty(), "{variant:?}: {events:?}");
                assert_eq!(completed, 1);
            } else {
                assert_eq!(ids.len(), 3, "{variant:?}: the whole tail");
                assert!(matches!(
                    decode(last_message(&events)),
                    Message::Result { .. }
                ));
                assert_eq!(completed, 0);
            }
        });
    }
}

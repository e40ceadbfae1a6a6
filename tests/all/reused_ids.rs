//! A request id reused while its request is in flight, on a real socket:
//! the SDKs' arms run it again and cross-wire the two streams (the result
//! moves to the latest stream, with the same progress token or another);
//! guarded refuses it; the keys arm sends a keyed one to its key table.

use crate::loopback::{decode, drain, next, rpc_error, with_server, Harness};
use mcp_chaos::client::http::Outgoing;
use mcp_chaos::history::{EventKind, Rec, Record};
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message, RequestId};
use mcp_chaos::protocol::mcp;
use mcp_chaos::protocol::SseEvent;
use mcp_chaos::server::{ServerConfig, Variant};
use serde_json::json;
use std::time::Duration;

/// (execution, index) of a progress notification or result.
fn chunk(e: &SseEvent) -> (u32, u32) {
    let c = mcp::chunk_of(&decode(e)).expect("a chunk");
    (c.execution, c.index)
}

/// The POST streams opened for `id`, in order.
fn post_streams_of(h: &Harness, id: &RequestId) -> Vec<u32> {
    h.history
        .entries()
        .iter()
        .filter_map(|e| match &e.record {
            Rec::Server(Record::StreamOpened {
                stream,
                rpc_id: Some(r),
                ..
            }) if r == id => Some(*stream),
            _ => None,
        })
        .collect()
}

/// A POST reusing the id of a request still in flight, in the same
/// session and with the same progress token, as the SDKs take it
/// (unguarded, and keys and cancel, whose baseline it is): the tool runs
/// again; the id's progress and result are routed to the latest stream, so
/// the first execution's remaining progress and its result arrive on the
/// retry's stream, which then ends; the second execution's result goes
/// nowhere; the first stream gets nothing more and stays open. Guarded
/// refuses the reuse with 409.
#[test]
fn a_reused_in_flight_id_cross_wires_the_two_streams() {
    for variant in Variant::ALL {
        with_server(variant, ServerConfig::default(), |h| async move {
            let sid = h.initialize().await;
            let id = h.id();
            let msg = h.call_msg(id.clone(), "op-x", 3);
            let mut a = h.send(Outgoing::post(Some(&sid), &msg)).await;
            assert_eq!(a.status, 200);
            next(&mut a).await; // priming
            h.release(1);
            assert_eq!(chunk(&next(&mut a).await), (1, 1));
            let mut b = h.send(Outgoing::post(Some(&sid), &msg)).await;
            if variant == Variant::Guarded {
                assert_eq!(b.status, 409);
                let body = b.json().await.unwrap().unwrap();
                assert_eq!(rpc_error(&body).code, jsonrpc::CONFLICT);
                h.release(2);
                let rest = drain(&mut a).await;
                assert_eq!(chunk(rest.last().unwrap()), (1, 3), "its own result");
                assert_eq!(h.ledger.executions("op-x"), 1);
                return;
            }
            assert_eq!(b.status, 200, "{variant:?}: the reused id is run");
            assert!(b.is_sse());
            next(&mut b).await; // priming
            h.release(1); // execution 1, chunk 2: on the retry's stream
            assert_eq!(chunk(&next(&mut b).await), (1, 2), "{variant:?}");
            h.release(1); // execution 2, chunk 1: on its own stream
            assert_eq!(chunk(&next(&mut b).await), (2, 1), "{variant:?}");
            h.release(1); // execution 1's result: on the retry's stream
            let tail = drain(&mut b).await;
            assert_eq!(tail.len(), 1, "{variant:?}: the result, then the end");
            assert!(matches!(decode(&tail[0]), Message::Result { id: ref r, .. } if *r == id));
            assert_eq!(
                chunk(&tail[0]),
                (1, 3),
                "{variant:?}: the FIRST execution's result, on the second stream"
            );
            h.release(2); // execution 2's chunk 2 and result: nowhere
            h.tool_ended(2).await;
            assert!(
                tokio::time::timeout(Duration::from_millis(300), a.next_event())
                    .await
                    .is_err(),
                "{variant:?}: the first stream stays open and gets no result"
            );
            assert_eq!(h.ledger.executions("op-x"), 2, "{variant:?}: ran twice");
            let streams = post_streams_of(&h, &id);
            assert_eq!(streams.len(), 2);
            let (sa, sb) = (streams[0], streams[1]);
            let entries = h.history.entries();
            let crossed: Vec<_> = entries
                .iter()
                .filter_map(|e| match &e.record {
                    Rec::Server(Record::CrossWired {
                        rpc_id,
                        from_stream,
                        to_stream,
                        ..
                    }) => Some((rpc_id.clone(), *from_stream, *to_stream)),
                    _ => None,
                })
                .collect();
            assert_eq!(crossed, vec![(id.clone(), sa, sb)], "{variant:?}");
            let discarded: Vec<_> = entries
                .iter()
                .filter_map(|e| match &e.record {
                    Rec::Server(Record::Discarded { stream, kind, .. }) => Some((*stream, *kind)),
                    _ => None,
                })
                .collect();
            assert_eq!(
                discarded,
                vec![(sb, EventKind::Progress), (sb, EventKind::Result)],
                "{variant:?}: execution 2's events after its stream ended"
            );
            let results: Vec<_> = entries
                .iter()
                .filter_map(|e| match &e.record {
                    Rec::Server(Record::Produced {
                        stream,
                        kind: EventKind::Result,
                        ..
                    }) => Some(*stream),
                    _ => None,
                })
                .collect();
            assert_eq!(results, vec![sb], "{variant:?}: one result stored, on B");
        });
    }
}

/// A reused in-flight id with another progress token (rmcp's case): each
/// execution's progress stays on its own stream, and only the result moves
/// to the retry's.
#[test]
fn a_reused_id_with_another_token_moves_only_the_result() {
    with_server(
        Variant::Unguarded,
        ServerConfig::default(),
        |h| async move {
            let sid = h.initialize().await;
            let id = h.id();
            let first = h.call_msg(id.clone(), "op-y", 3);
            let mut a = h.send(Outgoing::post(Some(&sid), &first)).await;
            next(&mut a).await; // priming
            h.release(1);
            assert_eq!(chunk(&next(&mut a).await), (1, 1));
            let retry = Message::Request {
                id: id.clone(),
                method: mcp::TOOLS_CALL.into(),
                params: Some(
                    json!({
                        "name": mcp::LEDGER_APPEND,
                        "arguments": {"tag": "op-y", "chunks": 3},
                        "_meta": {"progressToken": "op-y-again"},
                    })
                    .into(),
                ),
            };
            let mut b = h.send(Outgoing::post(Some(&sid), &retry)).await;
            assert_eq!(b.status, 200);
            next(&mut b).await; // priming
            h.release(1); // execution 1, chunk 2: its own stream still
            assert_eq!(chunk(&next(&mut a).await), (1, 2));
            h.release(1); // execution 2, chunk 1: its own stream
            assert_eq!(chunk(&next(&mut b).await), (2, 1));
            h.release(1); // execution 1's result: the retry's stream
            let tail = drain(&mut b).await;
            assert_eq!(tail.len(), 1, "the result, then the end");
            assert_eq!(
                chunk(&tail[0]),
                (1, 3),
                "the first execution's result moved"
            );
        },
    );
}

/// The keys arm: a reused in-flight id carrying an `Idempotency-Key` is
/// the key table's (a key in flight: 409, no second run); without a key it
/// cross-wires as unguarded does (above).
#[test]
fn keys_arm_takes_a_keyed_reused_id_to_its_table() {
    with_server(Variant::Keys, ServerConfig::default(), |h| async move {
        let sid = h.initialize().await;
        let id = h.id();
        let msg = h.call_msg(id.clone(), "op-k", 2);
        let post = || Outgoing::post(Some(&sid), &msg).header(headers::IDEMPOTENCY_KEY, "k");
        let mut a = h.send(post()).await;
        assert_eq!(a.status, 200);
        next(&mut a).await;
        let again = h.send(post()).await;
        assert_eq!(again.status, 409, "the key is in flight");
        assert_eq!(again.header(headers::LAST_EVENT_ID), None, "no hint");
        h.release(2);
        let events = drain(&mut a).await;
        assert_eq!(chunk(events.last().unwrap()), (1, 2), "its own result");
        assert_eq!(h.ledger.executions("op-k"), 1);
        assert!(!h
            .history
            .entries()
            .iter()
            .any(|e| matches!(e.record, Rec::Server(Record::CrossWired { .. }))));
    });
}

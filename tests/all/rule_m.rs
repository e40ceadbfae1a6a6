//! Rule M on a real socket: a retried POST after a drop runs twice
//! unguarded and is refused guarded with a 409 whose hint is the server's
//! last write; on the session stream too; closing a stream that carries
//! no response is no migration; a POST queued behind a replay that is
//! abandoned gives its slot back.

use crate::loopback::{both, event_id, next, rpc_error, with_server, Harness};
use mcp_chaos::client::http::Outgoing;
use mcp_chaos::history::{Rec, Record};
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message};
use mcp_chaos::protocol::mcp;
use mcp_chaos::server::{Delivery, ServerConfig, Variant};

/// The 409's `Last-Event-ID` is the server's watermark, and without a
/// cursor from the client that is its last write before the close: it can
/// run ahead of what the client read (docs/wire.md section 4), which is why
/// a client resumes from its own last seen id. Here the client read the
/// first chunk, two more were written to its connection unread, and the
/// 409 names the last of them.
#[test]
fn the_409_hint_is_the_servers_last_write_not_the_clients_cursor() {
    with_server(Variant::Guarded, ServerConfig::default(), |h| async move {
        let sid = h.initialize().await;
        let mut ex = h.call(&sid, "op-h", 8, None).await;
        next(&mut ex).await; // priming
        h.release(1);
        let read = event_id(&next(&mut ex).await).unwrap();
        h.release(2);
        h.wait_for("two more written", 4, |r| {
            matches!(r, Rec::Server(Record::Written { .. }))
        })
        .await;
        drop(ex);
        h.close_seen(1).await;
        let retry = h.call(&sid, "op-h", 8, None).await;
        assert_eq!(retry.status, 409);
        let hint: u64 = retry
            .header(headers::LAST_EVENT_ID)
            .and_then(|v| v.parse().ok())
            .expect("a hint");
        assert_eq!(
            hint,
            read + 2,
            "the last write, two past what the client read"
        );
    });
}

/// The seed's case 1 on a real socket: a retried POST of a non-idempotent
/// call runs twice unguarded and is refused (409 + hint) guarded.
#[test]
fn retried_post_runs_twice_unguarded_and_is_rejected_guarded() {
    both(ServerConfig::default(), |h, variant| {
        Box::pin(async move {
            let sid = h.initialize().await;
            let mut ex = h.call(&sid, "op-r", 8, None).await;
            next(&mut ex).await;
            h.release(1);
            let first = next(&mut ex).await;
            let watermark = event_id(&first).unwrap();
            drop(ex);
            h.close_seen(1).await;
            let retry = h.call(&sid, "op-r", 8, None).await;
            match variant {
                Variant::Keys | Variant::Cancel => {
                    unreachable!("both() runs guarded and unguarded")
                }
                Variant::Unguarded => {
                    assert_eq!(retry.status, 200);
                    assert_eq!(h.ledger.executions("op-r"), 2, "the tool ran twice");
                }
                Variant::Guarded => {
                    assert_eq!(retry.status, 409);
                    assert_eq!(
                        retry.header(headers::LAST_EVENT_ID),
                        Some(watermark.to_string().as_str())
                    );
                    assert_eq!(retry.header(headers::MCP_STREAM_RESUMABLE), Some("true"));
                    let body = retry.json().await.unwrap().unwrap();
                    let err = rpc_error(&body);
                    assert_eq!(err.code, jsonrpc::CONFLICT);
                    let reason = err.data.as_ref().unwrap()["reason"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    assert!(reason == "in_flight" || reason == "not_drained", "{reason}");
                    assert_eq!(h.ledger.executions("op-r"), 1, "the tool ran once");
                    // Rows 2/3 also refuse an idempotent read until resumed.
                    let decisions = h
                        .history
                        .entries()
                        .iter()
                        .filter(|e| matches!(e.record, Rec::Server(Record::Decision { .. })))
                        .count();
                    assert_eq!(decisions, 2, "every POST logs a decision (Fresh included)");
                }
            }
        })
    });
}

/// Session-stream delivery: a POST gets 202 and its events ride the GET
/// stream; the seed's case 1 there.
#[test]
fn session_stream_delivery_and_case_one() {
    let cfg = ServerConfig {
        delivery: Delivery::SessionStream,
        ..ServerConfig::default()
    };
    both(cfg, |h, variant| {
        Box::pin(async move {
            let sid = h.initialize().await;
            let mut stream = h.send(Outgoing::get(&sid, None)).await;
            assert_eq!(stream.status, 200);
            next(&mut stream).await; // priming
            let post = h.call(&sid, "op-s", 8, None).await;
            assert_eq!(post.status, 202, "the response goes on the session stream");
            h.release(1);
            let first = next(&mut stream).await;
            let cursor = event_id(&first).unwrap();
            drop(stream);
            h.close_seen(1).await;
            let retry = h.call(&sid, "op-s", 8, None).await;
            match variant {
                Variant::Keys | Variant::Cancel => {
                    unreachable!("both() runs guarded and unguarded")
                }
                Variant::Unguarded => {
                    // Not attached any more: the retry streams on its POST.
                    assert_eq!(retry.status, 200);
                    assert!(retry.is_sse());
                    assert_eq!(h.ledger.executions("op-s"), 2);
                }
                Variant::Guarded => {
                    assert_eq!(retry.status, 409);
                    assert_eq!(
                        retry.header(headers::LAST_EVENT_ID),
                        Some(cursor.to_string().as_str())
                    );
                    h.release(7);
                    h.tool_ended(1).await;
                    let mut resumed = h.send(Outgoing::get(&sid, Some(cursor))).await;
                    assert_eq!(resumed.status, 200);
                    let mut tail = Vec::new();
                    loop {
                        let e = next(&mut resumed).await;
                        if e.event == "replay-end" {
                            break;
                        }
                        tail.push(e);
                    }
                    assert_eq!(tail.len(), 7, "the whole tail");
                    assert_eq!(h.ledger.executions("op-s"), 1);
                }
            }
        })
    });
}

/// Only response streams take part in Rule M: in post-stream delivery the
/// standalone GET stream carries notifications only, so closing it never
/// makes a later POST a migration. In session-stream delivery it carries
/// responses, and closing it does.
#[test]
fn closing_a_notification_stream_is_no_migration() {
    for delivery in [Delivery::PostStream, Delivery::SessionStream] {
        let cfg = ServerConfig {
            delivery,
            ..ServerConfig::default()
        };
        with_server(Variant::Guarded, cfg, |h| async move {
            let sid = h.initialize().await;
            let mut get = h.send(Outgoing::get(&sid, None)).await;
            assert_eq!(get.status, 200);
            next(&mut get).await; // priming
            drop(get);
            h.close_seen(1).await;
            let post = h.call(&sid, "op-g", 1, None).await;
            match delivery {
                Delivery::PostStream => {
                    assert_eq!(post.status, 200, "not a migration");
                    assert_eq!(post.header(headers::MCP_STREAM_RESUMABLE), None);
                    h.release(1);
                    h.tool_ended(1).await;
                    assert_eq!(h.ledger.executions("op-g"), 1);
                }
                Delivery::SessionStream => {
                    assert_eq!(post.status, 409, "a response stream was dropped");
                    let body = post.json().await.unwrap().unwrap();
                    assert_eq!(
                        rpc_error(&body).data.as_ref().unwrap()["reason"],
                        "non_idempotent"
                    );
                }
            }
        });
    }
}

/// Opens a connection and sends one POST on it without waiting for any
/// response; dropping the stream abandons the request.
async fn post_and_hold(h: &Harness, sid: &str, msg: &Message) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let body = msg.encode();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{}: {sid}\r\n\
         content-length: {}\r\n\r\n",
        headers::MCP_SESSION_ID,
        body.len()
    );
    let mut io = tokio::net::TcpStream::connect(h.addr).await.unwrap();
    io.write_all(head.as_bytes()).await.unwrap();
    io.write_all(body.as_bytes()).await.unwrap();
    io
}

/// Rule M row 0: a POST queued behind a replay whose connection closes
/// while it waits gives its queue slot back, so 16 abandoned POSTs do not
/// turn the next one into an immediate 409 `replay_in_progress`.
#[test]
fn an_abandoned_queued_post_gives_its_slot_back() {
    let cfg = ServerConfig {
        replay_interval_ms: 600_000, // the replay stays pending
        queue_wait_ms: 600_000,
        ..ServerConfig::default()
    };
    let capacity = cfg.queue_capacity as usize;
    with_server(Variant::Guarded, cfg, |h| async move {
        let sid = h.initialize().await;
        let mut ex = h.call(&sid, "op-q", 4, None).await;
        next(&mut ex).await;
        h.release(1);
        let cursor = event_id(&next(&mut ex).await).unwrap();
        drop(ex);
        h.close_seen(1).await;
        h.release(3);
        h.tool_ended(1).await;
        let resumed = h.send(Outgoing::get(&sid, Some(cursor))).await;
        assert_eq!(resumed.status, 200, "a paced replay of 3 events");
        let queued = |n: usize| {
            h.wait_for("queue decisions", n, |r| {
                matches!(r, Rec::Server(Record::Decision { decision, .. }) if decision.verdict.as_str() == "queue")
            })
        };
        let left = |n: usize| {
            h.wait_for("queue left", n, |r| {
                matches!(r, Rec::Server(Record::QueueLeft { .. }))
            })
        };
        let ping = |h: &Harness| Message::Request {
            id: h.id(),
            method: mcp::PING.into(),
            params: None,
        };
        let mut held = Vec::new();
        for _ in 0..capacity {
            held.push(post_and_hold(&h, &sid, &ping(&h)).await);
        }
        queued(capacity).await;
        drop(held);
        left(capacity).await;
        // The queue is empty again: the next POST queues (it is not refused).
        let next_post = post_and_hold(&h, &sid, &ping(&h)).await;
        // The first call's Fresh, the abandoned ones', then this one's.
        h.wait_for("its decision", capacity + 2, |r| {
            matches!(r, Rec::Server(Record::Decision { .. }))
        })
        .await;
        let last = h
            .history
            .entries()
            .iter()
            .rev()
            .find_map(|e| match &e.record {
                Rec::Server(Record::Decision { decision, view, .. }) => {
                    Some((decision.verdict.as_str(), decision.reason, view.queued))
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(last, ("queue", None, 0), "queued behind an empty queue");
        drop(next_post);
        left(capacity + 1).await;
        drop(resumed);
    });
}

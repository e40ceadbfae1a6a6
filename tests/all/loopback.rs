//! The server on a real loopback socket, through the same code the
//! simulator drives. Tools are paced by a gate the test opens chunk by
//! chunk, and the test waits for the server's own records (close seen,
//! tool ended) before acting, so no wall-clock race decides an outcome.

use mcp_chaos::client::http::{self, Exchange, Outgoing};
use mcp_chaos::history::{EmptyResume, EventKind, History, Rec, Record};
use mcp_chaos::ledger::Ledger;
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message, RequestId};
use mcp_chaos::protocol::mcp;
use mcp_chaos::protocol::SseEvent;
use mcp_chaos::server::{
    CompletedResume, Delivery, Pacing, Replay, Sdk, Server, ServerConfig, Variant,
};
use serde_json::{json, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

struct Harness {
    addr: SocketAddr,
    history: History,
    ledger: Ledger,
    gate: Arc<Semaphore>,
    next_id: std::cell::Cell<i64>,
}

/// Runs `f` against a fresh server of `variant` inside a LocalSet.
fn with_server<F, Fut>(variant: Variant, cfg: ServerConfig, f: F)
where
    F: FnOnce(Harness) -> Fut,
    Fut: Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let history = History::tokio_clock();
        let ledger = Ledger::new(history.clone());
        let gate = Arc::new(Semaphore::new(0));
        let server = Server::new(
            variant,
            cfg,
            history.clone(),
            ledger.clone(),
            Pacing::Gate(gate.clone()),
        );
        tokio::task::spawn_local(server.serve(listener));
        f(Harness {
            addr,
            history,
            ledger,
            gate,
            next_id: 1.into(),
        })
        .await;
    });
}

fn both(
    cfg: ServerConfig,
    f: impl Fn(Harness, Variant) -> std::pin::Pin<Box<dyn Future<Output = ()>>>,
) {
    for v in Variant::BOTH {
        with_server(v, cfg.clone(), |h| f(h, v));
    }
}

impl Harness {
    async fn send(&self, out: Outgoing) -> Exchange {
        let io = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        http::send(io, out).await.unwrap()
    }

    fn id(&self) -> RequestId {
        let n = self.next_id.get();
        self.next_id.set(n + 1);
        RequestId::Num(n)
    }

    async fn initialize(&self) -> String {
        self.initialize_as(None).await
    }

    /// A session opened with bearer token `tok` (it answers only that token).
    async fn initialize_as(&self, tok: Option<&str>) -> String {
        let msg = Message::Request {
            id: self.id(),
            method: mcp::INITIALIZE.into(),
            params: Some(mcp::initialize_params("2025-11-25", json!({}), "test")),
        };
        let bearer = |out: Outgoing| match tok {
            Some(t) => out.header("authorization", &format!("Bearer {t}")),
            None => out,
        };
        let ex = self.send(bearer(Outgoing::post(None, &msg))).await;
        assert_eq!(ex.status, 200);
        let sid = ex
            .header(headers::MCP_SESSION_ID)
            .expect("session header")
            .to_string();
        assert_eq!(sid.len(), 32, "128-bit hex session id");
        let body = ex.json().await.unwrap().unwrap();
        assert!(matches!(body, Message::Result { .. }), "{body:?}");
        let note = Message::Notification {
            method: mcp::INITIALIZED.into(),
            params: None,
        };
        assert_eq!(
            self.send(bearer(Outgoing::post(Some(&sid), &note)))
                .await
                .status,
            202
        );
        sid
    }

    fn call_msg(&self, id: RequestId, tag: &str, chunks: u32) -> Message {
        Message::Request {
            id,
            method: mcp::TOOLS_CALL.into(),
            params: Some(
                json!({
                    "name": mcp::LEDGER_APPEND,
                    "arguments": {"tag": tag, "chunks": chunks},
                    "_meta": {"progressToken": tag},
                })
                .into(),
            ),
        }
    }

    async fn call(&self, sid: &str, tag: &str, chunks: u32, key: Option<&str>) -> Exchange {
        let mut out = Outgoing::post(Some(sid), &self.call_msg(self.id(), tag, chunks));
        if let Some(k) = key {
            out = out.header(headers::IDEMPOTENCY_KEY, k);
        }
        self.send(out).await
    }

    fn release(&self, chunks: usize) {
        self.gate.add_permits(chunks);
    }

    /// Waits (bounded) until the server has recorded `n` records matching `pred`.
    async fn wait_for(&self, what: &str, n: usize, pred: impl Fn(&Rec) -> bool) {
        for _ in 0..5_000 {
            if self
                .history
                .entries()
                .iter()
                .filter(|e| pred(&e.record))
                .count()
                >= n
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("timed out waiting for {what}");
    }

    async fn tool_ended(&self, n: usize) {
        self.wait_for("tool end", n, |r| {
            matches!(r, Rec::Server(Record::ToolEnded { .. }))
        })
        .await;
    }

    async fn close_seen(&self, n: usize) {
        self.wait_for("close seen", n, |r| {
            matches!(r, Rec::Server(Record::CloseSeen { .. }))
        })
        .await;
    }

    fn produced_ids(&self, kind: EventKind) -> Vec<u64> {
        self.history
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                Rec::Server(Record::Produced { event, kind: k, .. }) if *k == kind => Some(*event),
                _ => None,
            })
            .collect()
    }
}

fn event_id(e: &SseEvent) -> Option<u64> {
    e.id.as_deref().and_then(|i| i.parse().ok())
}

async fn next(ex: &mut Exchange) -> SseEvent {
    tokio::time::timeout(Duration::from_secs(5), ex.next_event())
        .await
        .expect("an event within 5 s")
        .expect("a readable stream")
        .expect("the stream is still open")
}

/// Reads events until the stream ends; returns them.
async fn drain(ex: &mut Exchange) -> Vec<SseEvent> {
    let mut out = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(5), ex.next_event())
        .await
        .unwrap()
        .unwrap()
    {
        out.push(e);
    }
    out
}

fn rpc_error(msg: &Message) -> &jsonrpc::ErrorObject {
    match msg {
        Message::Error { error, .. } => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

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
            let ids: Vec<u64> = events.iter().filter_map(event_id).collect();
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
            let last = Message::decode(
                events
                    .iter()
                    .rev()
                    .find(|e| e.id.is_some())
                    .unwrap()
                    .data
                    .as_bytes(),
            )
            .unwrap();
            assert!(
                matches!(last, Message::Result { .. }),
                "the tail ends with the result"
            );
            let markers = events.iter().filter(|e| e.event == "replay-end").count();
            let want = usize::from(variant == Variant::Guarded);
            assert_eq!(markers, want, "{variant:?}: replay-end marker count");
            assert_eq!(h.ledger.executions("op-1"), 1);
        })
    });
}

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

/// A retry with the same Idempotency-Key runs once guarded (the stored
/// result answers it); unguarded ignores the key and runs it again.
#[test]
fn idempotency_key_retry_runs_once_guarded() {
    both(ServerConfig::default(), |h, variant| {
        Box::pin(async move {
            let sid = h.initialize().await;
            let mut first = h.call(&sid, "op-k", 2, Some("key-1")).await;
            h.release(2);
            let events = drain(&mut first).await;
            assert_eq!(events.len(), 3, "priming, progress, result");
            h.tool_ended(1).await;
            let mut retry = h.call(&sid, "op-k", 2, Some("key-1")).await;
            match variant {
                Variant::Keys | Variant::Cancel => {
                    unreachable!("both() runs guarded and unguarded")
                }
                Variant::Guarded => {
                    assert_eq!(retry.status, 200);
                    assert!(!retry.is_sse(), "the stored result comes back as JSON");
                    let msg = retry.json().await.unwrap().unwrap();
                    assert!(matches!(msg, Message::Result { .. }), "{msg:?}");
                    assert_eq!(h.ledger.executions("op-k"), 1);
                }
                Variant::Unguarded => {
                    h.release(2);
                    drain(&mut retry).await;
                    assert_eq!(h.ledger.executions("op-k"), 2);
                }
            }
        })
    });
}

/// Dedup edges (guarded): a key in flight → 409 without a hint; the same
/// key with other arguments → 422.
#[test]
fn idempotency_key_in_flight_and_reused() {
    with_server(Variant::Guarded, ServerConfig::default(), |h| async move {
        let sid = h.initialize().await;
        let mut first = h.call(&sid, "op-d", 2, Some("key-d")).await;
        next(&mut first).await;
        let again = h.call(&sid, "op-d", 2, Some("key-d")).await;
        assert_eq!(again.status, 409);
        assert_eq!(
            again.header(headers::LAST_EVENT_ID),
            None,
            "no hint on a dedup 409"
        );
        let other = h.call(&sid, "op-other", 2, Some("key-d")).await;
        assert_eq!(other.status, 422);
        assert_eq!(
            rpc_error(&other.json().await.unwrap().unwrap()).code,
            jsonrpc::KEY_REUSED
        );
        assert_eq!(h.ledger.executions("op-d"), 1);
        assert_eq!(h.ledger.executions("op-other"), 0);
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
            tokio::time::timeout(Duration::from_secs(5), ex.next_event())
                .await
                .unwrap()
                .is_err()
                || ex.next_event().await.unwrap().is_none(),
            "the older connection ends"
        );
        h.release(3);
        let events = drain(&mut resumed).await;
        assert_eq!(events.iter().filter(|e| e.id.is_some()).count(), 3);
        assert!(
            !h.history
                .entries()
                .iter()
                .any(|e| matches!(e.record, Rec::Server(Record::CloseSeen { .. }))),
            "a takeover is not a drop"
        );
    });
}

async fn raw_post(h: &Harness, sid: Option<&str>, body: &str, ct: &str, accept: &str) -> Exchange {
    let msg = Message::Request {
        id: RequestId::Num(999),
        method: "ping".into(),
        params: None,
    };
    let mut out = Outgoing::post(sid, &msg)
        .header("content-type", ct)
        .header("accept", accept);
    out.body = Some(bytes::Bytes::from(body.to_string()));
    h.send(out).await
}

/// Every status code the server documents, each with a JSON-RPC error body.
#[test]
fn status_codes() {
    let cfg = ServerConfig {
        store_capacity: 4,
        max_body_bytes: 256,
        ..ServerConfig::default()
    };
    with_server(Variant::Guarded, cfg, |h| async move {
        let sid = h.initialize().await;
        let ping = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
        let json = "application/json";
        let both = "application/json, text/event-stream";
        let check = |ex: Exchange, status: u16, code: i64| async move {
            assert_eq!(ex.status, status);
            let body = ex.json().await.unwrap().expect("an error body");
            assert_eq!(rpc_error(&body).code, code, "status {status}");
        };
        // 200: a ping.
        let ok = raw_post(&h, Some(&sid), ping, json, both).await;
        assert_eq!(ok.status, 200);
        // 400: missing session header.
        check(
            raw_post(&h, None, ping, json, both).await,
            400,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 400 + parse error: malformed JSON.
        check(
            raw_post(&h, Some(&sid), "{nope", json, both).await,
            400,
            jsonrpc::PARSE_ERROR,
        )
        .await;
        // 400 + invalid request: not JSON-RPC.
        check(
            raw_post(&h, Some(&sid), "[1]", json, both).await,
            400,
            jsonrpc::INVALID_REQUEST,
        )
        .await;
        // 404: unknown session.
        check(
            raw_post(&h, Some("00ff"), ping, json, both).await,
            404,
            jsonrpc::SESSION_ERROR,
        )
        .await;
        // 405: PUT.
        let mut put = Outgoing::get(&sid, None);
        put.method = ::http::Method::PUT;
        let put = h.send(put).await;
        assert_eq!(put.header("allow"), Some("GET, POST, DELETE"));
        check(put, 405, jsonrpc::TRANSPORT_ERROR).await;
        // 406: Accept without text/event-stream.
        check(
            raw_post(&h, Some(&sid), ping, json, json).await,
            406,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 413: body too large.
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#,
            "x".repeat(300)
        );
        check(
            raw_post(&h, Some(&sid), &big, json, both).await,
            413,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 415: bad content type.
        check(
            raw_post(&h, Some(&sid), ping, "text/plain", both).await,
            415,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 400: unsupported protocol version.
        let mut v = Outgoing::post(Some(&sid), &Message::decode(ping.as_bytes()).unwrap());
        v = v.header(headers::MCP_PROTOCOL_VERSION, "1999-01-01");
        check(h.send(v).await, 400, jsonrpc::TRANSPORT_ERROR).await;
        // 409: a second plain GET.
        let mut standalone = h.send(Outgoing::get(&sid, None)).await;
        next(&mut standalone).await;
        check(
            h.send(Outgoing::get(&sid, None)).await,
            409,
            jsonrpc::CONFLICT,
        )
        .await;
        // 422: key reused with other arguments.
        let mut k1 = h.call(&sid, "a", 1, Some("k")).await;
        h.release(1);
        drain(&mut k1).await;
        check(
            h.call(&sid, "b", 1, Some("k")).await,
            422,
            jsonrpc::KEY_REUSED,
        )
        .await;
        // 410: resume from an evicted position whose result was evicted
        // too (store holds 4 events; a gap with the result surviving is a
        // 200, see `guarded_resume_past_eviction_announces_a_gap`).
        let priming = evict_a_result(&h, &sid, 1).await;
        check(
            h.send(Outgoing::get(&sid, Some(priming))).await,
            410,
            jsonrpc::GONE,
        )
        .await;
        // 400: a Last-Event-ID that is not a number.
        let bad = Outgoing::get(&sid, None).header(headers::LAST_EVENT_ID, "abc");
        check(h.send(bad).await, 400, jsonrpc::TRANSPORT_ERROR).await;
        // Unknown tool: a JSON-RPC error, HTTP 200.
        let unknown = Message::Request {
            id: h.id(),
            method: mcp::TOOLS_CALL.into(),
            params: Some(json!({"name": "nope", "arguments": {}}).into()),
        };
        check(
            h.send(Outgoing::post(Some(&sid), &unknown)).await,
            200,
            jsonrpc::INVALID_PARAMS,
        )
        .await;
        // DELETE ends the session; then 404.
        let mut del = Outgoing::get(&sid, None);
        del.method = ::http::Method::DELETE;
        assert_eq!(h.send(del).await.status, 200);
        check(
            raw_post(&h, Some(&sid), ping, json, both).await,
            404,
            jsonrpc::SESSION_ERROR,
        )
        .await;
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
            let ids: Vec<u64> = events.iter().filter_map(event_id).collect();
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
        let ids: Vec<u64> = events.iter().filter_map(event_id).collect();
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

/// Runs `big` (2 chunks) on a stream dropped after its priming event while
/// `filler` (12 chunks, read as they come, so delivered) keeps producing
/// until `big`'s result is evicted (store: 4). Permits go out one at a
/// time and each chunk is awaited, so no burst evicts `filler`'s own
/// unwritten events. `ended` counts tool ends before this. Returns `big`'s
/// priming id.
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

async fn evict_a_result(h: &Harness, sid: &str, ended: usize) -> u64 {
    let mut ex = h.call(sid, "big", 2, None).await;
    let priming = event_id(&next(&mut ex).await).unwrap();
    let mut filler = h.call(sid, "filler", 12, None).await;
    next(&mut filler).await;
    drop(ex);
    h.close_seen(1).await;
    let produced = |r: &Rec| matches!(r, Rec::Server(Record::Produced { .. }));
    let mut filler_left = 12;
    while filler_left > 0 {
        let before = h
            .history
            .entries()
            .iter()
            .filter(|e| produced(&e.record))
            .count();
        h.release(1);
        h.wait_for("a chunk", before + 1, produced).await;
        let last_tag = h
            .history
            .entries()
            .iter()
            .rev()
            .find_map(|e| match &e.record {
                Rec::Server(Record::Produced { tag, .. }) => Some(tag.clone()),
                _ => None,
            });
        if last_tag.flatten().as_deref() == Some("filler") {
            next(&mut filler).await;
            filler_left -= 1;
        }
    }
    h.tool_ended(ended + 2).await;
    let evicted = h.history.entries().iter().any(|e| {
        matches!(
            e.record,
            Rec::Server(Record::Evicted {
                result: true,
                owed: true,
                ..
            })
        )
    });
    assert!(evicted, "big's result was evicted while owed");
    drain(&mut filler).await;
    priming
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

/// POSTs one message to a legacy `/messages` endpoint.
async fn legacy_post(h: &Harness, endpoint: &str, msg: &Message) -> Exchange {
    let mut out = Outgoing::post(None, msg);
    out.path = endpoint.to_string();
    h.send(out).await
}

fn legacy_get() -> Outgoing {
    let mut out = Outgoing::get("unused", None);
    out.path = "/sse".into();
    out.headers.remove(headers::MCP_SESSION_ID);
    out
}

/// The legacy transport on the same server: endpoint event, 202 on POST,
/// answers on the stream numbered by its own counter, 404 for an unknown
/// session; Rule T on /mcp for a legacy session.
#[test]
fn legacy_transport_endpoint_posts_and_stream() {
    both(
        ServerConfig {
            first_event_id: 100,
            ..ServerConfig::default()
        },
        |h, variant| {
            Box::pin(async move {
                let mut stream = h.send(legacy_get()).await;
                assert_eq!(stream.status, 200);
                let endpoint = next(&mut stream).await;
                assert_eq!(endpoint.event, "endpoint");
                let sid = endpoint
                    .data
                    .strip_prefix("/messages?sessionId=")
                    .expect("endpoint names the session")
                    .to_string();
                assert_eq!(sid.len(), 32);
                let init = Message::Request {
                    id: h.id(),
                    method: mcp::INITIALIZE.into(),
                    params: Some(mcp::initialize_params(
                        mcp::LEGACY_VERSION,
                        json!({"sampling": {}}),
                        "legacy",
                    )),
                };
                let ack = legacy_post(&h, &endpoint.data, &init).await;
                assert_eq!(
                    ack.status, 202,
                    "legacy POSTs are accepted, answered on the stream"
                );
                let answer = next(&mut stream).await;
                assert_eq!(
                    answer.id.as_deref(),
                    Some("1"),
                    "the legacy stream counts its own events"
                );
                let msg = Message::decode(answer.data.as_bytes()).unwrap();
                match msg {
                    Message::Result { result, .. } => {
                        assert_eq!(result.to_value()["protocolVersion"], mcp::LEGACY_VERSION)
                    }
                    other => panic!("{other:?}"),
                }
                let call = h.call_msg(h.id(), "legacy-op", 2);
                assert_eq!(legacy_post(&h, &endpoint.data, &call).await.status, 202);
                h.release(2);
                let progress = next(&mut stream).await;
                let result = next(&mut stream).await;
                assert_eq!(
                    (progress.id.as_deref(), result.id.as_deref()),
                    (Some("2"), Some("3"))
                );
                assert!(matches!(
                    Message::decode(result.data.as_bytes()).unwrap(),
                    Message::Result { .. }
                ));
                assert_eq!(h.ledger.executions("legacy-op"), 1);
                // Unknown session: 404 with a JSON-RPC error.
                let unknown = legacy_post(&h, "/messages?sessionId=00ff", &init).await;
                assert_eq!(unknown.status, 404);
                assert_eq!(
                    rpc_error(&unknown.json().await.unwrap().unwrap()).code,
                    jsonrpc::SESSION_ERROR
                );
                // Streamable HTTP with the legacy session id: Rule T.
                let ping = Message::Request {
                    id: h.id(),
                    method: "ping".into(),
                    params: None,
                };
                let cross = h.send(Outgoing::post(Some(&sid), &ping)).await;
                match variant {
                    Variant::Keys | Variant::Cancel => {
                        unreachable!("both() runs guarded and unguarded")
                    }
                    Variant::Guarded => {
                        assert_eq!(cross.status, 404);
                        let body = cross.json().await.unwrap().unwrap();
                        assert_eq!(
                            rpc_error(&body).data.as_ref().unwrap()["reason"],
                            "transport_mismatch"
                        );
                    }
                    Variant::Unguarded => {
                        assert_eq!(cross.status, 200, "the unguarded lookup succeeds")
                    }
                }
            })
        },
    );
}

/// The `keys` arm honors `Idempotency-Key` with no Rule M: a completed
/// key answers with the stored result (marked replayed, under the retry's
/// id), a key in flight is 409 without a hint, other arguments 422; a
/// retry without a key after a drop just runs again.
#[test]
fn keys_arm_honors_keys_without_rule_m() {
    with_server(Variant::Keys, ServerConfig::default(), |h| async move {
        let sid = h.initialize().await;
        let mut first = h.call(&sid, "op-k", 2, Some("key-1")).await;
        next(&mut first).await;
        let again = h.call(&sid, "op-k", 2, Some("key-1")).await;
        assert_eq!(again.status, 409, "in flight");
        assert_eq!(again.header(headers::LAST_EVENT_ID), None, "no hint");
        let other = h.call(&sid, "op-other", 2, Some("key-1")).await;
        assert_eq!(other.status, 422);
        assert_eq!(
            rpc_error(&other.json().await.unwrap().unwrap()).code,
            jsonrpc::KEY_REUSED
        );
        h.release(2);
        drain(&mut first).await;
        h.tool_ended(1).await;
        let retry_id = h.id();
        let retry = h
            .send(
                Outgoing::post(Some(&sid), &h.call_msg(retry_id.clone(), "op-k", 2))
                    .header(headers::IDEMPOTENCY_KEY, "key-1"),
            )
            .await;
        assert_eq!(retry.status, 200);
        assert!(!retry.is_sse(), "the stored result comes back as JSON");
        let msg = retry.json().await.unwrap().unwrap();
        assert_eq!(msg.id(), Some(&retry_id), "under the retry's id");
        assert!(mcp::is_replayed(&msg), "{msg:?}");
        assert_eq!(h.ledger.executions("op-k"), 1);
        // No Rule M: an unkeyed retry after a drop runs again.
        let mut ex = h.call(&sid, "op-n", 4, None).await;
        next(&mut ex).await;
        drop(ex);
        h.close_seen(1).await;
        let retry = h.call(&sid, "op-n", 4, None).await;
        assert_eq!(retry.status, 200, "no 409 on the keys arm");
        assert_eq!(h.ledger.executions("op-n"), 2);
        assert!(
            !h.history
                .entries()
                .iter()
                .any(|e| matches!(e.record, Rec::Server(Record::Decision { .. }))),
            "the keys arm makes no Rule M decision"
        );
    });
}

/// The arms that ignore keys ignore the header entirely: a non-ASCII key
/// is no 400, and a retry runs again. An arm that honors keys refuses it.
#[test]
fn unguarded_ignores_even_a_non_ascii_key() {
    for variant in Variant::ALL {
        with_server(variant, ServerConfig::default(), |h| async move {
            let sid = h.initialize().await;
            let mut out = Outgoing::post(Some(&sid), &h.call_msg(h.id(), "op-u", 1));
            out.headers.insert(
                headers::IDEMPOTENCY_KEY,
                ::http::HeaderValue::from_bytes(b"cl\xe9").unwrap(),
            );
            let ex = h.send(out).await;
            if variant.honors_keys() {
                assert_eq!(ex.status, 400, "{variant:?}");
            } else {
                assert_eq!(ex.status, 200, "{variant:?}: the header is ignored");
                h.release(1);
                h.tool_ended(1).await;
                assert_eq!(h.ledger.executions("op-u"), 1);
            }
        });
    }
}

/// The keys arm on the legacy transport: a keyed retry of a completed call
/// gets 202 and the stored result on the stream, marked replayed; a key in
/// flight is 409 on the POST. The unguarded server runs the retry again.
#[test]
fn keys_on_the_legacy_transport() {
    for variant in [Variant::Keys, Variant::Guarded, Variant::Unguarded] {
        with_server(variant, ServerConfig::default(), |h| async move {
            let mut stream = h.send(legacy_get()).await;
            let endpoint = next(&mut stream).await.data;
            let init = Message::Request {
                id: h.id(),
                method: mcp::INITIALIZE.into(),
                params: Some(mcp::initialize_params(
                    mcp::LEGACY_VERSION,
                    json!({}),
                    "legacy",
                )),
            };
            assert_eq!(legacy_post(&h, &endpoint, &init).await.status, 202);
            next(&mut stream).await; // the initialize result
            let keyed = |msg: &Message| {
                let mut out = Outgoing::post(None, msg).header(headers::IDEMPOTENCY_KEY, "lk");
                out.path = endpoint.clone();
                out
            };
            let call = h.call_msg(h.id(), "legacy-k", 2);
            assert_eq!(h.send(keyed(&call)).await.status, 202);
            let again = h.send(keyed(&h.call_msg(h.id(), "legacy-k", 2))).await;
            let honors = variant.honors_keys();
            assert_eq!(again.status, if honors { 409 } else { 202 }, "{variant:?}");
            h.release(if honors { 2 } else { 4 });
            h.tool_ended(if honors { 1 } else { 2 }).await;
            let retry_id = h.id();
            let retry = h
                .send(keyed(&h.call_msg(retry_id.clone(), "legacy-k", 2)))
                .await;
            assert_eq!(retry.status, 202, "{variant:?}");
            if honors {
                // progress, result, then the replayed result.
                let events: Vec<_> = [
                    next(&mut stream).await,
                    next(&mut stream).await,
                    next(&mut stream).await,
                ]
                .into_iter()
                .map(|e| Message::decode(e.data.as_bytes()).unwrap())
                .collect();
                assert_eq!(events[2].id(), Some(&retry_id));
                assert!(mcp::is_replayed(&events[2]), "{:?}", events[2]);
                assert!(!mcp::is_replayed(&events[1]));
                assert_eq!(h.ledger.executions("legacy-k"), 1, "{variant:?}");
            } else {
                h.release(2);
                h.tool_ended(3).await;
                assert_eq!(h.ledger.executions("legacy-k"), 3, "{variant:?}");
            }
        });
    }
}

/// Keys per principal: the bearer token scopes a key, so it survives
/// re-initialization; without one the session does, so a new session's
/// same key is another key, as is another token's. `ledger_read` answers
/// for the caller's principal alone.
#[test]
fn keys_are_scoped_to_the_principal() {
    for variant in [Variant::Guarded, Variant::Keys] {
        with_server(variant, ServerConfig::default(), |h| async move {
            let bearer =
                |out: Outgoing, tok: &str| out.header("authorization", &format!("Bearer {tok}"));
            let keyed_call = |sid: &str, tok: Option<&str>| {
                let out = Outgoing::post(Some(sid), &h.call_msg(h.id(), "op-p", 1))
                    .header(headers::IDEMPOTENCY_KEY, "pk");
                match tok {
                    Some(t) => bearer(out, t),
                    None => out,
                }
            };
            let a = h.initialize_as(Some("alice")).await;
            let mut first = h.send(keyed_call(&a, Some("alice"))).await;
            h.release(1);
            drain(&mut first).await;
            h.tool_ended(1).await;
            // Re-initialized, same token: the same key.
            let b = h.initialize_as(Some("alice")).await;
            let retry = h.send(keyed_call(&b, Some("alice"))).await;
            assert_eq!(retry.status, 200, "{variant:?}");
            assert!(!retry.is_sse());
            assert!(mcp::is_replayed(&retry.json().await.unwrap().unwrap()));
            assert_eq!(h.ledger.executions("op-p"), 1, "{variant:?}");
            // A session answers only the token that opened it.
            assert_eq!(h.send(keyed_call(&b, Some("bob"))).await.status, 404);
            // Another token, or no token (the session is the principal),
            // each in a session of its own.
            for tok in [Some("bob"), None] {
                let own = h.initialize_as(tok).await;
                let mut other = h.send(keyed_call(&own, tok)).await;
                assert_eq!(other.status, 200, "{variant:?} {tok:?}");
                assert!(other.is_sse(), "{variant:?} {tok:?}: another key, it runs");
                h.release(1);
                drain(&mut other).await;
            }
            assert_eq!(h.ledger.executions("op-p"), 3, "{variant:?}");
            // ledger_read: the caller's own executions only.
            let read = |sid: &str, tok: &str| {
                bearer(
                    Outgoing::post(
                        Some(sid),
                        &Message::Request {
                            id: h.id(),
                            method: mcp::TOOLS_CALL.into(),
                            params: Some(
                                json!({
                                    "name": mcp::LEDGER_READ,
                                    "arguments": {"tag": "op-p"},
                                })
                                .into(),
                            ),
                        },
                    ),
                    tok,
                )
            };
            for (tok, want) in [("alice", 1), ("bob", 1), ("carol", 0)] {
                let own = h.initialize_as(Some(tok)).await;
                let mut ex = h.send(read(&own, tok)).await;
                let events = drain(&mut ex).await;
                let result = events
                    .iter()
                    .filter_map(|e| Message::decode(e.data.as_bytes()).ok())
                    .find_map(|m| match m {
                        Message::Result { result, .. } => Some(result),
                        _ => None,
                    })
                    .expect("a result");
                let result = result.to_value();
                let text = result["content"][0]["text"].as_str().unwrap();
                let v: Value = serde_json::from_str(text).unwrap();
                assert_eq!(v["executions"]["op-p"], json!(want), "{variant:?} {tok}");
            }
        });
    }
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

/// Several server incarnations over one ledger (a restart, as the world
/// does it): each starts with its own key table, gate and sessions.
async fn incarnation(history: &History, ledger: &Ledger, cfg: ServerConfig) -> Harness {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let gate = Arc::new(Semaphore::new(0));
    let server = Server::new(
        Variant::Guarded,
        cfg,
        history.clone(),
        ledger.clone(),
        Pacing::Gate(gate.clone()),
    );
    tokio::task::spawn_local(server.serve(listener));
    Harness {
        addr,
        history: history.clone(),
        ledger: ledger.clone(),
        gate,
        next_id: 1.into(),
    }
}

/// The result an SSE response ended with.
fn last_result(events: &[SseEvent]) -> Message {
    let msg = Message::decode(events.last().expect("events").data.as_bytes()).unwrap();
    assert!(matches!(msg, Message::Result { .. }), "{msg:?}");
    msg
}

/// Transactional effects: an execution that never finishes (its server
/// gone) commits nothing; the next incarnation's commits; a third, its key
/// table lost, runs again but its commit under the same key is refused and
/// it answers with the stored result, marked as a replay. Durable keys: a
/// completed key outlives the incarnation and is answered without a run.
#[test]
fn transactional_commits_once_per_key_and_durable_keys_outlive_a_restart() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let history = History::tokio_clock();
        let ledger = Ledger::new(history.clone());
        let tx = ServerConfig {
            effects: mcp_chaos::server::Effects::Transactional,
            ..ServerConfig::default()
        };
        let keyed = |h: &Harness, sid: &str, tag: &str| {
            Outgoing::post(Some(sid), &h.call_msg(h.id(), tag, 2))
                .header(headers::IDEMPOTENCY_KEY, "k")
                .header("authorization", "Bearer alice")
        };
        // Killed: one chunk out, then its incarnation is never heard of again.
        let a = incarnation(&history, &ledger, tx.clone()).await;
        let sid = a.initialize_as(Some("alice")).await;
        let mut killed = a.send(keyed(&a, &sid, "op-t")).await;
        a.release(1);
        next(&mut killed).await; // priming
        next(&mut killed).await; // chunk 1
        assert_eq!(ledger.executions("op-t"), 0, "started, not committed");
        // The next incarnation runs it and commits.
        let b = incarnation(&history, &ledger, tx.clone()).await;
        let sid = b.initialize_as(Some("alice")).await;
        let mut won = b.send(keyed(&b, &sid, "op-t")).await;
        b.release(2);
        let won = last_result(&drain(&mut won).await);
        assert!(!mcp::is_replayed(&won));
        assert_eq!(mcp::chunk_of(&won).unwrap().execution, 2);
        assert_eq!(ledger.executions("op-t"), 1);
        // A third, without the key: it runs, its commit is refused.
        let c = incarnation(&history, &ledger, tx.clone()).await;
        let sid = c.initialize_as(Some("alice")).await;
        let mut refused = c.send(keyed(&c, &sid, "op-t")).await;
        assert!(refused.is_sse(), "the key table is lost: it runs");
        c.release(2);
        let replay = last_result(&drain(&mut refused).await);
        assert!(mcp::is_replayed(&replay), "{replay:?}");
        assert_eq!(
            mcp::chunk_of(&replay),
            mcp::chunk_of(&won),
            "the stored result names the execution that committed"
        );
        assert_eq!(ledger.executions("op-t"), 1, "a key commits once");
        let commits: Vec<u32> = history
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                Rec::Ledger(mcp_chaos::history::LedgerRecord::Commit { n, .. }) => Some(*n),
                _ => None,
            })
            .collect();
        assert_eq!(commits, [2], "the killed and the refused commit nothing");
        // Durable keys (immediate effects): the completed key survives.
        let durable = ServerConfig {
            durable_dedup: true,
            ..ServerConfig::default()
        };
        let d = incarnation(&history, &ledger, durable.clone()).await;
        let sid = d.initialize_as(Some("alice")).await;
        let mut first = d.send(keyed(&d, &sid, "op-d")).await;
        d.release(2);
        drain(&mut first).await;
        d.tool_ended(3).await; // b, c and d (a never ends)
        let e = incarnation(&history, &ledger, durable).await;
        let sid = e.initialize_as(Some("alice")).await;
        let retry = e.send(keyed(&e, &sid, "op-d")).await;
        assert_eq!(retry.status, 200);
        assert!(!retry.is_sse(), "answered from the durable key table");
        assert!(mcp::is_replayed(&retry.json().await.unwrap().unwrap()));
        assert_eq!(ledger.executions("op-d"), 1);
        // Without durable keys the next incarnation forgets it and runs it.
        let f = incarnation(&history, &ledger, ServerConfig::default()).await;
        let sid = f.initialize_as(Some("alice")).await;
        let mut again = f.send(keyed(&f, &sid, "op-d")).await;
        assert!(again.is_sse());
        f.release(2);
        drain(&mut again).await;
        assert_eq!(ledger.executions("op-d"), 2);
    });
}

/// Ledger chunks recorded for `tag`.
fn ledger_chunks(h: &Harness, tag: &str) -> usize {
    h.history
        .entries()
        .iter()
        .filter(|e| {
            matches!(&e.record, Rec::Ledger(mcp_chaos::history::LedgerRecord::Chunk { tag: t, .. })
                if t.as_ref() == tag)
        })
        .count()
}

/// The `cancel` arm refuses a resume with 405 and a JSON-RPC error body;
/// a plain GET (the notification stream) stays allowed; its delivery is
/// post-stream whatever the configuration asks.
#[test]
fn cancel_refuses_a_resume_with_405() {
    let cfg = ServerConfig {
        delivery: Delivery::SessionStream,
        ..ServerConfig::default()
    };
    with_server(Variant::Cancel, cfg, |h| async move {
        assert!(h.history.entries().iter().any(|e| matches!(
            e.record,
            Rec::Server(Record::ServerStarted {
                variant: "cancel",
                delivery: Delivery::PostStream,
                replica: None
            })
        )));
        let sid = h.initialize().await;
        let mut standalone = h.send(Outgoing::get(&sid, None)).await;
        assert_eq!(standalone.status, 200, "a plain GET stays allowed");
        assert!(standalone.is_sse());
        next(&mut standalone).await;
        let mut ex = h.call(&sid, "op-c", 4, None).await;
        assert_eq!(ex.status, 200, "the response rides the POST");
        assert!(ex.is_sse());
        let priming = next(&mut ex).await;
        let cursor = event_id(&priming).expect("priming id");
        let resume = h.send(Outgoing::get(&sid, Some(cursor))).await;
        assert_eq!(resume.status, 405);
        assert_eq!(resume.header("allow"), Some("GET, POST, DELETE"));
        let body = resume.json().await.unwrap().unwrap();
        assert_eq!(rpc_error(&body).code, jsonrpc::TRANSPORT_ERROR);
        // The resume took nothing over: the POST's stream goes on.
        h.release(4);
        let events = drain(&mut ex).await;
        assert_eq!(events.len(), 4);
        assert_eq!(h.ledger.executions("op-c"), 1);
    });
}

/// Under `cancel` a close the server sees cancels the request: the tool
/// stops emitting chunks, and the execution it took stays in the ledger
/// (one). Under `unguarded` the same close stops nothing.
#[test]
fn cancel_a_seen_close_cancels_the_tool() {
    for variant in [Variant::Cancel, Variant::Unguarded] {
        with_server(variant, ServerConfig::default(), |h| async move {
            let sid = h.initialize().await;
            let mut ex = h.call(&sid, "op-x", 8, None).await;
            next(&mut ex).await; // priming
            h.release(1);
            next(&mut ex).await; // chunk 1
            drop(ex);
            h.close_seen(1).await;
            h.release(7);
            h.tool_ended(1).await;
            let cancelled = h.history.entries().iter().any(|e| {
                matches!(
                    e.record,
                    Rec::Server(Record::ToolEnded {
                        cancelled: true,
                        ..
                    })
                )
            });
            let recorded = h
                .history
                .entries()
                .iter()
                .any(|e| matches!(e.record, Rec::Server(Record::CancelledOnClose { .. })));
            assert_eq!(h.ledger.executions("op-x"), 1, "{variant:?}");
            if variant == Variant::Cancel {
                assert!(cancelled && recorded, "the seen close cancelled it");
                assert_eq!(ledger_chunks(&h, "op-x"), 1, "no chunk after the close");
                assert_eq!(h.produced_ids(EventKind::Result), Vec::<u64>::new());
            } else {
                assert!(!cancelled && !recorded, "disconnection is not cancellation");
                assert_eq!(ledger_chunks(&h, "op-x"), 8);
            }
        });
    }
}

/// Under `cancel`, a seen close of the legacy stream cancels the session's
/// legacy requests still executing (their answers had no other way).
#[test]
fn cancel_a_seen_legacy_close_cancels_legacy_requests() {
    with_server(Variant::Cancel, ServerConfig::default(), |h| async move {
        let mut stream = h.send(legacy_get()).await;
        let endpoint = next(&mut stream).await;
        let init = Message::Request {
            id: h.id(),
            method: mcp::INITIALIZE.into(),
            params: Some(mcp::initialize_params(
                mcp::LEGACY_VERSION,
                json!({}),
                "legacy",
            )),
        };
        assert_eq!(legacy_post(&h, &endpoint.data, &init).await.status, 202);
        next(&mut stream).await; // the initialize result
        let call = h.call_msg(h.id(), "legacy-x", 4);
        assert_eq!(legacy_post(&h, &endpoint.data, &call).await.status, 202);
        h.release(1);
        next(&mut stream).await; // chunk 1
        drop(stream);
        h.close_seen(1).await;
        h.release(3);
        h.tool_ended(1).await;
        assert_eq!(h.ledger.executions("legacy-x"), 1);
        assert_eq!(ledger_chunks(&h, "legacy-x"), 1);
    });
}

fn decode(e: &SseEvent) -> Message {
    Message::decode(e.data.as_bytes()).unwrap()
}

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
            let ids: Vec<u64> = events.iter().filter_map(event_id).collect();
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
                decode(events.iter().rev().find(|e| e.id.is_some()).unwrap()),
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
            let ids: Vec<u64> = events.iter().filter_map(event_id).collect();
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
                    decode(events.iter().rev().find(|e| e.id.is_some()).unwrap()),
                    Message::Result { .. }
                ));
                assert_eq!(completed, 0);
            }
        });
    }
}

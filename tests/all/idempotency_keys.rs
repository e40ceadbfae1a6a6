//! `Idempotency-Key` on a real socket: a keyed retry runs once where keys
//! are honoured (the stored result answers it), a key in flight is 409 and
//! a key reused with other arguments 422, keys on the legacy transport,
//! keys scoped to the principal, and keys that outlive a restart
//! (transactional effects, durable keys).

use crate::loopback::{
    both, drain, legacy_get, legacy_post, next, rpc_error, with_server, Harness,
};
use mcp_chaos::client::http::Outgoing;
use mcp_chaos::history::{History, Rec, Record};
use mcp_chaos::ledger::Ledger;
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message};
use mcp_chaos::protocol::mcp;
use mcp_chaos::protocol::SseEvent;
use mcp_chaos::server::{Pacing, Server, ServerConfig, Variant};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::Semaphore;

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

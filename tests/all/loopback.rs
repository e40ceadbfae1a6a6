//! The harness of the tests that run the server on a real loopback socket,
//! through the same code the simulator drives (`rule_m`, `replay`,
//! `idempotency_keys`, `reused_ids`, `transport`, `cancel`). Tools are
//! paced by a gate the test opens chunk by chunk, and the test waits for
//! the server's own records (close seen, tool ended) before acting, so no
//! wall-clock race decides an outcome.

use mcp_chaos::client::http::{self, Exchange, Outgoing};
use mcp_chaos::history::{EventKind, History, Rec, Record};
use mcp_chaos::ledger::Ledger;
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message, RequestId};
use mcp_chaos::protocol::mcp;
use mcp_chaos::protocol::SseEvent;
use mcp_chaos::server::{Pacing, Server, ServerConfig, Variant};
use serde_json::json;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

pub(crate) struct Harness {
    pub(crate) addr: SocketAddr,
    pub(crate) history: History,
    pub(crate) ledger: Ledger,
    pub(crate) gate: Arc<Semaphore>,
    pub(crate) next_id: std::cell::Cell<i64>,
}

/// Runs `f` against a fresh server of `variant` inside a LocalSet.
pub(crate) fn with_server<F, Fut>(variant: Variant, cfg: ServerConfig, f: F)
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

pub(crate) fn both(
    cfg: ServerConfig,
    f: impl Fn(Harness, Variant) -> std::pin::Pin<Box<dyn Future<Output = ()>>>,
) {
    for v in Variant::BOTH {
        with_server(v, cfg.clone(), |h| f(h, v));
    }
}

impl Harness {
    pub(crate) async fn send(&self, out: Outgoing) -> Exchange {
        let io = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        http::send(io, out).await.unwrap()
    }

    pub(crate) fn id(&self) -> RequestId {
        let n = self.next_id.get();
        self.next_id.set(n + 1);
        RequestId::Num(n)
    }

    pub(crate) async fn initialize(&self) -> String {
        self.initialize_as(None).await
    }

    /// A session opened with bearer token `tok` (it answers only that token).
    pub(crate) async fn initialize_as(&self, tok: Option<&str>) -> String {
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

    pub(crate) fn call_msg(&self, id: RequestId, tag: &str, chunks: u32) -> Message {
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

    pub(crate) async fn call(
        &self,
        sid: &str,
        tag: &str,
        chunks: u32,
        key: Option<&str>,
    ) -> Exchange {
        let mut out = Outgoing::post(Some(sid), &self.call_msg(self.id(), tag, chunks));
        if let Some(k) = key {
            out = out.header(headers::IDEMPOTENCY_KEY, k);
        }
        self.send(out).await
    }

    pub(crate) fn release(&self, chunks: usize) {
        self.gate.add_permits(chunks);
    }

    /// Waits until the server has recorded `n` records matching `pred`,
    /// for at most [`PATIENCE`].
    pub(crate) async fn wait_for(&self, what: &str, n: usize, pred: impl Fn(&Rec) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let seen = self
                .history
                .entries()
                .iter()
                .filter(|e| pred(&e.record))
                .count();
            if seen >= n {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "waited {PATIENCE:?} for {what}: {seen} of {n} recorded"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    pub(crate) async fn tool_ended(&self, n: usize) {
        self.wait_for("tool end", n, |r| {
            matches!(r, Rec::Server(Record::ToolEnded { .. }))
        })
        .await;
    }

    pub(crate) async fn close_seen(&self, n: usize) {
        self.wait_for("close seen", n, |r| {
            matches!(r, Rec::Server(Record::CloseSeen { .. }))
        })
        .await;
    }

    pub(crate) fn produced_ids(&self, kind: EventKind) -> Vec<u64> {
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

pub(crate) fn event_id(e: &SseEvent) -> Option<u64> {
    e.id.as_deref().and_then(|i| i.parse().ok())
}

/// The ids of a stream's events that are not guarded's `replay-end`
/// marker (which carries the stream's position as its id).
pub(crate) fn message_ids(events: &[SseEvent]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.event != "replay-end")
        .filter_map(event_id)
        .collect()
}

/// The last event of a stream that carries a message under an id (not
/// guarded's `replay-end` marker).
pub(crate) fn last_message(events: &[SseEvent]) -> &SseEvent {
    events
        .iter()
        .rev()
        .find(|e| e.id.is_some() && e.event != "replay-end")
        .expect("an event with an id")
}

/// How long a test waits for what the server is bound to do (an event, a
/// record, a stream's end): long, so that a loaded machine makes a test
/// slower, never wrong; a test that meets it has found the server stuck.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

pub(crate) async fn next(ex: &mut Exchange) -> SseEvent {
    tokio::time::timeout(PATIENCE, ex.next_event())
        .await
        .expect("an event within 30 s")
        .expect("a readable stream")
        .expect("the stream is still open")
}

/// Reads events until the stream ends; returns them.
pub(crate) async fn drain(ex: &mut Exchange) -> Vec<SseEvent> {
    let mut out = Vec::new();
    while let Some(e) = tokio::time::timeout(PATIENCE, ex.next_event())
        .await
        .expect("the stream's end within 30 s")
        .unwrap()
    {
        out.push(e);
    }
    out
}

pub(crate) fn rpc_error(msg: &Message) -> &jsonrpc::ErrorObject {
    match msg {
        Message::Error { error, .. } => error,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// Runs `big` (2 chunks) on a stream dropped after its priming event while
/// `filler` (12 chunks, read as they come, so delivered) keeps producing
/// until `big`'s result is evicted (store: 4). Permits go out one at a
/// time and each chunk is awaited, so no burst evicts `filler`'s own
/// unwritten events. `ended` counts tool ends before this. Returns `big`'s
/// priming id.
pub(crate) async fn evict_a_result(h: &Harness, sid: &str, ended: usize) -> u64 {
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

/// POSTs one message to a legacy `/messages` endpoint.
pub(crate) async fn legacy_post(h: &Harness, endpoint: &str, msg: &Message) -> Exchange {
    let mut out = Outgoing::post(None, msg);
    out.path = endpoint.to_string();
    h.send(out).await
}

pub(crate) fn legacy_get() -> Outgoing {
    let mut out = Outgoing::get("unused", None);
    out.path = "/sse".into();
    out.headers.remove(headers::MCP_SESSION_ID);
    out
}

pub(crate) fn decode(e: &SseEvent) -> Message {
    Message::decode(e.data.as_bytes()).unwrap()
}

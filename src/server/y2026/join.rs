//! Guarded on the 2026-07-28 wire: a keyed re-issue that finds its key
//! executing joins that execution, wherever it runs (this replica's key
//! table, or the shared store), and is answered with its stored result, or
//! runs the call itself once nobody runs it any more.

use super::modern_stream;
use crate::history::{ConnId, SessionId};
use crate::protocol::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::protocol::mcp::CallToolParams;
use crate::protocol::y2026::{self as wire};
use crate::protocol::{sse, Json};
use crate::server::calls::start::{self, Asked};
use crate::server::dedup::{self, KeyState, Lookup};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::event_stream;
use crate::server::session::life::release;
use crate::server::session::reply::Reply;
use crate::server::Shared;
use std::rc::Rc;
use std::time::Duration;

/// How often a stream waiting on a joined execution says it is alive.
const KEEP_ALIVE: Duration = Duration::from_millis(250);

/// A guarded re-issue that found its key executing: what it asked, so
/// that it can run the call itself if the execution it joined ends
/// without a result.
pub(super) struct Joining {
    pub(super) sid: SessionId,
    pub(super) id: RequestId,
    pub(super) conn: ConnId,
    pub(super) call: (CallToolParams, crate::server::calls::tools::Invocation),
    pub(super) who: Rc<str>,
    pub(super) key: String,
    pub(super) cv: serde_json::Value,
}

/// Guarded: a re-issue whose key is still executing joins it. Its stream
/// opens at once and stays alive with comments while the key's execution
/// runs, wherever it runs: the key is followed where every replica sees
/// it (the shared store, else this replica's table), so its result, its
/// runner's lease lapsing and its being dropped all reach the joiner
/// ([`key_fate`]). The stored result answers the re-issue (marked
/// replayed); a key nobody runs any more is run here under transactional
/// effects (the gone execution committed nothing) and otherwise refused
/// with the reason, so the client sends again.
pub(super) fn join(shared: Rc<Shared>, j: Joining) -> Reply {
    let (tx, body) = ServerBody::sse();
    let reply = Reply::new(modern_stream(event_stream(body))).about(Some(&j.sid), None);
    tokio::task::spawn_local(async move {
        let sid = j.sid.clone();
        joined(&shared, j, tx).await;
        release(&shared, &sid);
    });
    reply
}

/// Where a joined key stands now.
enum Fate {
    /// Its execution runs (its runner's lease holds).
    Running,
    /// It completed: its stored result.
    Done(Json),
    /// Nobody runs it any more (dropped, or its runner's lease lapsed),
    /// and this replica now holds it.
    Free,
    /// It cannot be followed: the reason, for the refusal.
    Unknowable(&'static str),
}

/// The key's fate, read where every replica that can run it writes it:
/// on a shared store a begin (compare-and-set) that either finds the
/// execution running under a live lease, finds its result, or takes the
/// key for this replica; without a store, this replica's own table.
async fn key_fate(shared: &Shared, who: &Rc<str>, key: &str, cv: &serde_json::Value) -> Fate {
    let look = if shared.store.is_some() {
        match crate::server::replica::stored::begin_key(shared, who, key, cv).await {
            Ok(look) => look,
            Err(_) => return Fate::Unknowable("the key store did not answer"),
        }
    } else {
        dedup::key_lookup(shared, who, key, cv)
    };
    match look {
        Lookup::Known(KeyState::InFlight) => Fate::Running,
        Lookup::Known(KeyState::Done(result)) => Fate::Done(result),
        Lookup::Unknown => Fate::Free,
        Lookup::OtherArguments => {
            Fate::Unknowable("the key was reused with other arguments meanwhile")
        }
    }
}

/// The joined execution's wait, then its answer on `tx`: the stored
/// result, the call run here, or a refusal naming why.
async fn joined(shared: &Rc<Shared>, j: Joining, tx: tokio::sync::mpsc::Sender<bytes::Bytes>) {
    let msg = loop {
        let refused = |why: &str| Message::Error {
            id: Some(j.id.clone()),
            error: ErrorObject::new(jsonrpc::CONFLICT, why, None),
        };
        match key_fate(shared, &j.who, &j.key, &j.cv).await {
            Fate::Running => {}
            Fate::Done(result) => {
                let result = dedup::replayed_result(shared, &j.sid, &j.id, &j.key, result);
                break Message::Result {
                    id: j.id.clone(),
                    result: wire::complete(&result),
                };
            }
            Fate::Free if shared.cfg.effects == crate::server::Effects::Transactional => {
                return run_joined(shared, j, tx).await;
            }
            Fate::Free => {
                // Held here now: let it go, so the re-issue can begin it.
                crate::server::replica::stored::key_dropped(shared, &j.who, &j.key);
                break refused("the execution this request joined ended without its result, and its effect may be taken (effects are immediate): send it again with the same Idempotency-Key to run it again");
            }
            Fate::Unknowable(why) => break refused(why),
        }
        tokio::select! {
            biased;
            _ = tx.closed() => return,
            _ = tokio::time::sleep(KEEP_ALIVE) => {}
        }
        if tx.send(sse::encode_comment("joined")).await.is_err() {
            return;
        }
    };
    let _ = tx
        .send(sse::encode(None, Some("message"), &msg.encode(), None))
        .await;
}

/// The joined key is free and held here (transactional effects: the
/// execution that held it committed nothing): the call runs as a new
/// execution under the key, its stream forwarded onto the joiner's.
async fn run_joined(shared: &Rc<Shared>, j: Joining, tx: tokio::sync::mpsc::Sender<bytes::Bytes>) {
    shared
        .state
        .borrow_mut()
        .dedup
        .begin(&j.who, &j.key, j.cv.clone());
    let slot = match start::call_stream_slot(shared, &j.sid, &j.id) {
        Ok(slot) => slot,
        Err(_) => {
            // No stream may open here now: the key goes back.
            shared.state.borrow_mut().dedup.abandon(&j.who, &j.key);
            crate::server::replica::stored::key_dropped(shared, &j.who, &j.key);
            return;
        }
    };
    let asked = Asked {
        sid: &j.sid,
        id: j.id,
        conn: j.conn,
        call: Some(j.call),
        key: Some(j.key),
        who: j.who,
    };
    // The slot is held for as long as the forwarding lasts.
    let Reply {
        resp, slot: _held, ..
    } = start::start_call(shared, asked).holding(slot);
    let ServerBody::Sse(mut rx) = resp.into_body() else {
        return;
    };
    loop {
        let frame = tokio::select! {
            biased;
            _ = tx.closed() => return,
            f = rx.recv() => f,
        };
        let Some(frame) = frame else { return };
        if tx.send(frame).await.is_err() {
            return;
        }
    }
}

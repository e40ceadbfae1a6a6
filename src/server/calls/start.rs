//! A tool call starts, on either wire: the key table's look before a
//! keyed call runs, the slot its POST stream takes, and the stream (or
//! the attached standalone stream) its events go on. The 2025-11-25 POST
//! (`y2025/post.rs`) and the 2026-07-28 request (`y2026/request.rs`) both
//! end here once they have admitted the call.

use super::tools::{self, Invocation};
use crate::history::{ConnId, SessionId, StreamKind};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp::CallToolParams;
use crate::server::dedup::{self, KeyState, Lookup};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::{accepted, json_response};
use crate::server::replica::stored;
use crate::server::session::holds::SseSlot;
use crate::server::session::reply::Reply;
use crate::server::session::writer::{sse_response, Plan};
use crate::server::session::ToolCall;
use crate::server::{Delivery, Shared};
use http::StatusCode;
use std::rc::Rc;

/// A request past intake: the session and connection it came on, who it
/// acts for, the key it presents (on an arm that honors keys) and the
/// tool call it is (none for the other methods).
pub(in crate::server) struct Asked<'a> {
    pub sid: &'a SessionId,
    pub id: RequestId,
    pub conn: ConnId,
    pub call: Option<(CallToolParams, Invocation)>,
    pub key: Option<String>,
    pub who: Rc<str>,
}

/// The key table's look before a keyed call runs: in flight, done, or a
/// new execution under the key, begun here (on a shared store the store
/// decides: begun there, or found running — a lease still held — or
/// done; a key still executing is 409). `Err`: the answer the request
/// gets instead (the stored result, a refusal). Guarded on the 2026-07-28
/// wire joins a running key before it comes here (`request::join`).
pub(in crate::server) async fn key_look(
    shared: &Rc<Shared>,
    sid: &SessionId,
    id: &RequestId,
    who: &Rc<str>,
    k: &str,
    cv: &serde_json::Value,
) -> Result<(), Reply> {
    let mut look = dedup::key_lookup(shared, who, k, cv);
    if matches!(look, Lookup::Unknown | Lookup::Known(KeyState::InFlight)) {
        look = match stored::begin_key(shared, who, k, cv).await {
            Ok(l) => l,
            Err(r) => return Err(Reply::new(r)),
        };
    }
    match look {
        Lookup::Known(KeyState::InFlight) => Err(Reply::new(dedup::key_in_flight(id.clone()))),
        Lookup::Known(KeyState::Done(result)) => {
            let result = dedup::replayed_result(shared, sid, id, k, result);
            Err(Reply::new(json_response(
                StatusCode::OK,
                &Message::Result {
                    id: id.clone(),
                    result,
                },
            )))
        }
        Lookup::OtherArguments => Err(Reply::new(dedup::key_reused(id.clone()))),
        Lookup::Unknown => {
            shared.state.borrow_mut().dedup.begin(who, k, cv.clone());
            Ok(())
        }
    }
}

/// The slot a call's POST stream takes ([`crate::server::session::holds::stream_slot`]):
/// none when its events will go on the attached standalone stream.
#[allow(clippy::result_large_err)] // a refusal, the cold path (as in `reply`)
pub(in crate::server) fn call_stream_slot(
    shared: &Shared,
    sid: &SessionId,
    id: &RequestId,
) -> Result<Option<SseSlot>, http::Response<ServerBody>> {
    let st = shared.state.borrow();
    let Some(sess) = st.sessions.get(sid) else {
        return Ok(None);
    };
    if shared.cfg.delivery == Delivery::SessionStream && sess.standalone_attached().is_some() {
        return Ok(None);
    }
    crate::server::session::holds::stream_slot(shared, sess, false, Some(id))
}

/// Starts the asked tool call: on a new POST stream, or on the attached
/// standalone stream under `session-stream` delivery (then 202).
pub(in crate::server) fn start_call(shared: &Rc<Shared>, asked: Asked) -> Reply {
    let Asked {
        sid,
        id,
        conn,
        call,
        key,
        who,
    } = asked;
    let (p, inv) = call.expect("tools/call validated by intake");
    let call = ToolCall {
        rpc_id: id.clone(),
        tool: p.name.clone(),
        progress_token: p.progress_token().cloned(),
        dedup_key: key,
        principal: who,
        dress: None,
    };
    let mut st = shared.state.borrow_mut();
    let sess = st.sessions.get_mut(sid).expect("checked by the caller");
    let call = ToolCall {
        dress: sess.dress,
        ..call
    };
    if shared.cfg.delivery == Delivery::SessionStream {
        if let Some(s) = sess.standalone_attached() {
            drop(st);
            tools::start(shared.clone(), sid.clone(), s, call, inv);
            return Reply::new(accepted());
        }
    }
    let s = sess.open_stream(StreamKind::Post, Some(id), conn, &shared.history);
    drop(st);
    tools::start(shared.clone(), sid.clone(), s, call, inv);
    Reply::new(sse_response(shared, sid, s, conn, Plan::live()))
}

//! Input-required retries (MRTR, 2026-07-28) for `ledger_append` with
//! `asks_input`: the tool takes its effect, then asks the client for input
//! by answering an input-required result whose `requestState` names its
//! execution, signed (HMAC-SHA256). The client retries the call with a new
//! id, its answer and the state. What an arm does with that retry:
//! `unguarded` and `keys` run the tool from the start (the effect again:
//! the `mrtr_reexecution` cause); `guarded` verifies the state and
//! continues the execution it names, and keeps the question under the
//! call's key, so a first round re-sent because its answer was lost is
//! answered again instead of run again. A state guarded cannot verify
//! runs nothing: the question kept under the key is asked again, or the
//! retry is refused (400 naming `requestState`).

use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp::LedgerAppendArgs;
use crate::protocol::Json;
use crate::server::dedup::{self, KeyState, Keyed, Lookup};
use crate::server::http::respond::json_response;
use crate::server::session::reply::Reply;
use crate::server::Shared;
use http::StatusCode;
use serde_json::{json, Value};
use std::rc::Rc;

/// What a call that asks for input does now.
pub(in crate::server) enum Round {
    /// Answered with this result (the question, asked or asked again).
    Answer(Json),
    /// The retry that answers: continue execution `n` (guarded).
    Resume(u32),
    /// Run the tool from the start.
    Run,
    /// Refused: the retry's `requestState` cannot be verified and no
    /// question is kept to ask again (guarded): nothing runs.
    Refuse(String),
}

use crate::server::calls::fixtures::state_key;

fn is_question(r: &Json) -> bool {
    r.get("resultType")
        .and_then(|t| t.as_str().map(|s| s == "input_required"))
        .unwrap_or(false)
}

/// The key's stored result, when it is a question.
fn asked_under(shared: &Shared, who: &Rc<str>, key: &str, call: &Value) -> Option<Json> {
    match dedup::key_lookup(shared, who, key, call) {
        Lookup::Known(KeyState::Done(r)) if is_question(&r) => Some(r),
        _ => None,
    }
}

/// One round of `a` (request `id`, `params` as sent; `call`: the tool
/// name and arguments a key is checked against).
pub(in crate::server) fn round(
    shared: &Shared,
    id: &RequestId,
    params: &Value,
    a: &LedgerAppendArgs,
    Keyed { who, key }: Keyed<'_>,
    call: &Value,
) -> Round {
    let guarded_key = key.filter(|_| shared.guarded());
    if params.get("inputResponses").is_none() {
        if let Some(q) = guarded_key.and_then(|k| asked_under(shared, who, k, call)) {
            return Round::Answer(q);
        }
        let deferred = shared.cfg.effects == crate::server::Effects::Transactional;
        let n = shared.ledger.execute(&a.tag, who, key, id, deferred);
        let state = state_key(shared).sign(&json!({"tag": a.tag, "n": n, "who": &**who}));
        let q = Json::from_value(&json!({
            "resultType": "input_required",
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                "mode": "form",
                "message": format!("Append {} to the ledger?", a.tag),
                "requestedSchema": {"type": "object",
                    "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}}},
            "requestState": state,
        }));
        if let Some(k) = guarded_key {
            let mut st = shared.state.borrow_mut();
            st.dedup.begin(who, k, call.clone());
            st.dedup.complete(who, k, q.clone());
        }
        return Round::Answer(q);
    }
    if !shared.guarded() {
        return Round::Run;
    }
    let state = params["requestState"]
        .as_str()
        .and_then(|s| state_key(shared).verify(s))
        .filter(|s| s["tag"] == a.tag.as_str() && s["who"] == **who);
    let Some(n) = state.and_then(|s| s["n"].as_u64().and_then(|n| u32::try_from(n).ok())) else {
        // Unverifiable (tampered, of another call, not a string, signed
        // with another key): it continues nothing and runs nothing. The
        // question the key keeps is asked again; without one, refused.
        if let Some(q) = guarded_key.and_then(|k| asked_under(shared, who, k, call)) {
            return Round::Answer(q);
        }
        return Round::Refuse(format!(
            "requestState cannot be verified (not one this server signed for this call of {}): nothing ran; send the call again without inputResponses to be asked again",
            a.tag
        ));
    };
    // The question stored under the key gives way to the execution.
    if let Some(k) = key {
        if asked_under(shared, who, k, call).is_some() {
            shared.state.borrow_mut().dedup.abandon(who, k);
        }
    }
    Round::Resume(n)
}

/// The answer to `id` with `result`.
pub(in crate::server) fn answer(id: &RequestId, result: Json) -> Reply {
    Reply::new(json_response(
        StatusCode::OK,
        &Message::Result {
            id: id.clone(),
            result,
        },
    ))
}

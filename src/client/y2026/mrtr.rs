//! Input-required retries as a client answers them (2026-07-28): a call
//! answered with an input-required result is retried at once with a new
//! id, the answer to what it asked (`confirm: true`), and the
//! `requestState` it carried. The retry is an attempt of the call like any
//! other; the question goes on being answered on every later attempt.

use crate::client::actor::{Client, Timer};
use crate::client::ops::Answer;
use crate::history::ClientRecord;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::Json;
use serde_json::{json, Map, Value};
use std::time::Duration;

impl Client {
    /// A call's answer (`msg`, to `rpc`) asked for input: the operation
    /// retries with its answers now. False when it did not ask.
    pub(in crate::client) fn on_input_required(
        &mut self,
        op: usize,
        rpc: &RequestId,
        msg: &Message,
    ) -> bool {
        let Message::Result { result, .. } = msg else {
            return false;
        };
        if !self.modern() {
            return false;
        }
        let v = result.to_value();
        if v.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return false;
        }
        let responses: Map<String, Value> = v["inputRequests"]
            .as_object()
            .map(|asked| {
                asked
                    .keys()
                    .map(|k| {
                        (
                            k.clone(),
                            json!({"action": "accept", "content": {"confirm": true}}),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.record(ClientRecord::InputRequired {
            client: self.spec.index,
            tag: self.ops.tag(op),
            rpc_id: rpc.clone(),
        });
        self.ops[op].answer = Some(Box::new(Answer {
            responses: Value::Object(responses),
            state: v["requestState"].as_str().map(str::to_string),
        }));
        self.ops[op].stream = None;
        if self.count_attempt(op) {
            self.schedule(Duration::ZERO, Timer::Post(op));
        }
        true
    }

    /// `params` of a call with `op`'s answers, when it has some.
    pub(in crate::client) fn with_answers(&self, op: usize, params: &mut Option<Json>) {
        let Some(a) = &self.ops[op].answer else {
            return;
        };
        let mut v = params.as_ref().map_or_else(|| json!({}), Json::to_value);
        v["inputResponses"] = a.responses.clone();
        if let Some(s) = &a.state {
            v["requestState"] = json!(s);
        }
        *params = Some(Json::from_value(&v));
    }
}

//! The 2026-07-28 wire's hazards (`probe --era 2026-07-28`): what a close
//! does to a call whose effect is taken, and what the protocol's own
//! retries do to effects: a re-issue after a broken stream, the retry
//! that answers an input-required result, and a task creation re-sent
//! after its `CreateTaskResult` was lost. Each counts executions with the
//! ledger tools (a counter tool cannot tell a stopped execution, nor ask
//! for input).

use super::ctx::{dropped_at, Counter, Ctx, Step, Verdict, CHUNKS};
use super::peer::{call, clip, Session};
use crate::protocol::jsonrpc::Message;
use crate::protocol::mcp;
use crate::protocol::y2026;
use crate::protocol::Json;
use serde_json::{json, Value};

impl Ctx<'_> {
    /// Refuses a test that needs the ledger tools.
    pub(super) fn need_ledger(&self) -> Step<()> {
        match self.counter {
            Counter::Ledger => Ok(()),
            _ => Err("needs ledger_append and ledger_read (a counter tool cannot show whether an execution stopped, nor ask for input)".into()),
        }
    }

    /// `ledger_read {tag}`: (executions, those that emitted their result).
    pub(super) async fn ledger_counts(&self, s: &Session, tag: &str) -> Step<(u64, Option<u64>)> {
        let id = self.peer.fresh_id();
        let msg = call(&id, mcp::LEDGER_READ, json!({"tag": tag}));
        let text = self.result_text(s, &msg, &id).await?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|_| format!("ledger_read's text is not JSON: {:?}", clip(&text)))?;
        let n = v["executions"][tag]
            .as_u64()
            .ok_or_else(|| format!("ledger_read names no count for the tag: {}", clip(&text)))?;
        Ok((n, v["finished"][tag].as_u64()))
    }

    /// close-cancels: drop a call after its first event, wait until it
    /// would have finished, and read whether its execution reached its
    /// result.
    pub(super) async fn close_cancels(&self) -> Step<(Verdict, String)> {
        self.need_ledger()?;
        let s = self.session().await?;
        let d = self.start_and_drop(&s, "close-cancels", CHUNKS).await?;
        if d.finished() {
            return Err("the call finished before the probe could drop it".into());
        }
        tokio::time::sleep_until(self.peer.within(self.settle_window())).await;
        let (n, finished) = self.ledger_counts(&s, &d.tag).await?;
        let seen = format!("dropped {}", dropped_at(&d));
        Ok(match (n, finished) {
            (_, None) => (
                Verdict::Untestable,
                format!("{seen}; ledger_read gives no finished count"),
            ),
            (0, _) => (
                Verdict::Absent,
                format!("{seen}; the tool took no effect"),
            ),
            (n, Some(f)) if f < n => (
                Verdict::Present,
                format!("{seen}; {n} execution took its effect, {f} reached its result: the close stopped it, the result is gone"),
            ),
            (n, Some(_)) => (
                Verdict::Absent,
                format!("{seen}; {n} execution ran to its result past the close"),
            ),
        })
    }

    /// mrtr-retry-runs-twice: a call that asks for input after its effect,
    /// then the retry that answers.
    pub(super) async fn mrtr_retry(&self) -> Step<(Verdict, String)> {
        self.need_ledger()?;
        let s = self.session().await?;
        let tag = self.peer.tag("mrtr-retry-runs-twice");
        let key = self.key_for(&tag);
        let args = json!({"tag": tag, "chunks": 2, "chunk_interval_ms": 20, "asks_input": true});
        let id = self.peer.fresh_id();
        let q = self
            .answer_of(
                &s,
                &call(&id, mcp::LEDGER_APPEND, args.clone()),
                &id,
                key.as_deref(),
            )
            .await?;
        if q["resultType"] != "input_required" {
            return Err(format!(
                "the tool asked for no input (resultType {}): ledger_append with asks_input is this project's fixture",
                q["resultType"]
            ));
        }
        let answers: serde_json::Map<String, Value> = q["inputRequests"]
            .as_object()
            .map(|m| {
                m.keys()
                    .map(|k| {
                        (
                            k.clone(),
                            json!({"action": "accept", "content": {"confirm": true}}),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let retry_id = self.peer.fresh_id();
        let mut params =
            json!({"name": mcp::LEDGER_APPEND, "arguments": args, "inputResponses": answers});
        if let Some(state) = q.get("requestState") {
            params["requestState"] = state.clone();
        }
        let retry = Message::Request {
            id: retry_id.clone(),
            method: mcp::TOOLS_CALL.into(),
            params: Some(Json::from_value(&params)),
        };
        let r = self
            .answer_of(&s, &retry, &retry_id, key.as_deref())
            .await?;
        let (n, _) = self.ledger_counts(&s, &tag).await?;
        let story = format!(
            "asked for input, retried with the answer: {}",
            r["resultType"]
        );
        Ok(if n > 1 {
            (
                Verdict::Present,
                format!("the tool ran {n} times for one call ({story})"),
            )
        } else {
            (
                Verdict::Absent,
                format!("the tool ran {n} time for one call ({story})"),
            )
        })
    }

    /// task-create-retry: a call made as a task whose answer the client
    /// never reads (the connection goes), then the same call again.
    pub(super) async fn task_create_retry(&self) -> Step<(Verdict, String)> {
        self.need_ledger()?;
        let plain = self.session().await?;
        let s = Session {
            modern: Some(json!({"extensions": {y2026::TASKS_EXTENSION: {}}})),
            ..plain
        };
        let tag = self.peer.tag("task-create-retry");
        let key = self.key_for(&tag);
        let args = json!({"tag": tag, "chunks": 2, "chunk_interval_ms": self.interval().as_millis() as u64});
        let first = self.peer.fresh_id();
        self.peer
            .fire(
                &s,
                &call(&first, mcp::LEDGER_APPEND, args.clone()),
                key.as_deref(),
                self.backoff(),
            )
            .await
            .map_err(|e| format!("the call failed: {e}"))?;
        let id = self.peer.fresh_id();
        let created = self
            .answer_of(
                &s,
                &call(&id, mcp::LEDGER_APPEND, args),
                &id,
                key.as_deref(),
            )
            .await?;
        let Some((task, _)) = y2026::created_task(&created) else {
            return Err(format!(
                "the server ran the call without a task (resultType {}): it offers no tasks extension",
                created["resultType"]
            ));
        };
        let mut status = String::new();
        while !self.peer.out_of_time() {
            let gid = self.peer.fresh_id();
            let get = Message::Request {
                id: gid.clone(),
                method: y2026::TASKS_GET.into(),
                params: Some(Json::from_value(&json!({"taskId": task}))),
            };
            let v = self.answer_of(&s, &get, &gid, None).await?;
            status = v["status"].as_str().unwrap_or("?").to_string();
            if !matches!(status.as_str(), "working" | "input_required") {
                break;
            }
            tokio::time::sleep(self.interval()).await;
        }
        let (n, _) = self.ledger_counts(&s, &tag).await?;
        let story = format!(
            "the first creation's answer unread, the call sent again: task {}",
            clip(&task)
        );
        Ok(if n > 1 {
            (
                Verdict::Present,
                format!("the tool ran {n} times for one call ({story}, {status})"),
            )
        } else {
            (
                Verdict::Absent,
                format!("the tool ran {n} time for one call ({story}, {status})"),
            )
        })
    }
}

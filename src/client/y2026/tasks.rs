//! The tasks extension as a client speaks it (2026-07-28, `tasks` and
//! `tasks+keys` profiles): a call answered with a `CreateTaskResult` waits
//! on its task, polling `tasks/get` at the interval the server asked for;
//! a completed task's result is the call's result. A task the server no
//! longer knows (expired), or that failed or was cancelled, leaves the
//! client its one way on: the call again, as a new task. With a
//! `task_deadline_ms`, a task still unfinished that long after its
//! creation is cancelled (`tasks/cancel`) and, once the cancel is
//! acknowledged, its call is re-issued (once per call: the new task is
//! waited for). A poll that gets no answer is
//! simply sent again: reading a task changes nothing. Every answer may
//! come as JSON or as an SSE stream of one message, the server's choice.

use crate::client::actor::{Client, Got, SlotKind, Timer};
use crate::client::ops::{OpState, OpTask};
use crate::client::reader::Input;
use crate::history::{ClientRecord, Sent, TaskEvent};
use crate::protocol::jsonrpc::{self, Message, RequestId};
use crate::protocol::y2026 as wire;
use serde_json::{json, Value};
use std::rc::Rc;
use std::time::Duration;

/// How long a client polls when the server did not say, ms.
const DEFAULT_POLL_MS: u64 = 500;

impl Client {
    /// Whether this client declares the tasks extension (2026-07-28 only).
    pub(in crate::client) fn tasked(&self) -> bool {
        self.modern() && self.g().tasked()
    }

    /// The capabilities its requests' `_meta` declares.
    pub(in crate::client) fn capabilities(&self) -> Value {
        if self.tasked() {
            json!({"extensions": {wire::TASKS_EXTENSION: {}}})
        } else {
            json!({})
        }
    }

    /// A call's answer (`msg`, to request `rpc`) was a `CreateTaskResult`:
    /// the operation waits on the task. False when it was not one.
    pub(in crate::client) fn on_created(
        &mut self,
        op: usize,
        rpc: &RequestId,
        msg: &Message,
    ) -> bool {
        let Message::Result { result, .. } = msg else {
            return false;
        };
        if !self.tasked() {
            return false;
        }
        let Some((id, poll)) = wire::created_task(&result.to_value()) else {
            return false;
        };
        let id: Rc<str> = id.into();
        self.record(ClientRecord::Task {
            client: self.spec.index,
            tag: self.ops.tag(op),
            task: id.clone(),
            rpc_id: rpc.clone(),
            event: TaskEvent::Created,
        });
        let poll_ms = poll.filter(|p| *p > 0).unwrap_or(DEFAULT_POLL_MS);
        self.ops[op].ran_as_task = true;
        self.ops[op].task = Some(Box::new(OpTask {
            id,
            poll_ms,
            created_us: self.io.history.now_us(),
            requests: 0,
        }));
        self.schedule(Duration::from_millis(poll_ms), Timer::Poll(op));
        true
    }

    /// Polls `op`'s task, or cancels it once past the group's deadline.
    pub(in crate::client) fn poll_task(&mut self, op: usize) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        let deadline = self.g().task_deadline_ms;
        let now = self.io.history.now_us();
        let tag = self.ops.tag(op);
        let o = &mut self.ops[op];
        let Some(t) = o.task.as_mut() else {
            return;
        };
        let cancel = deadline > 0
            && !o.cancelled_task
            && now.saturating_sub(t.created_us) >= deadline.saturating_mul(1000);
        o.cancelled_task |= cancel;
        t.requests += 1;
        let (method, what) = if cancel {
            (wire::TASKS_CANCEL, Sent::TaskCancel)
        } else {
            (wire::TASKS_GET, Sent::TaskGet)
        };
        let rpc = RequestId::Str(format!("{tag}~{}#{}", t.id, t.requests));
        let params = crate::protocol::Json::from_value(&json!({"taskId": &*t.id}));
        let task = t.id.clone();
        let msg = Message::Request {
            id: rpc.clone(),
            method: method.into(),
            params: Some(self.with_meta(Some(&params))),
        };
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what,
            tag: Some(tag),
            rpc_id: Some(rpc),
            cursor: None,
            keyed: false,
        });
        let out = self.modern_post(&msg, method, Some(&task));
        self.spawn(SlotKind::Task { op, cancel }, out, true);
    }

    /// What a reader saw on a task exchange: its answer as JSON, or as the
    /// one message of an SSE stream (a server may answer in either).
    pub(in crate::client) fn on_task_input(&mut self, input: Input) {
        let slot = input.slot();
        let (status, msg) = match input {
            Input::Json { status, msg, .. } => (status, msg),
            // A stream: its message follows (priming events and gaps aside).
            Input::Head { status: 200, .. }
            | Input::Event { msg: None, .. }
            | Input::Gap { .. }
            | Input::Reused { .. } => return,
            Input::Event { msg: Some(m), .. } => (200, Some(m)),
            // The planned drop took this answer: asked again, as for any
            // exchange that broke.
            Input::Dropped {
                tag, after_event, ..
            } => {
                self.dropped(tag, after_event);
                (0, None)
            }
            // Anything else ends the exchange unanswered: poll again.
            _ => (0, None),
        };
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        s.task.abort();
        let SlotKind::Task { op, cancel } = s.kind else {
            return;
        };
        if self.ops[op].state != OpState::Active {
            return;
        }
        let Some(t) = self.ops[op].task.clone() else {
            return;
        };
        let poll = Duration::from_millis(t.poll_ms);
        match (status, msg) {
            (200, Some(Message::Result { id, result })) => {
                let v = result.to_value();
                if cancel {
                    return self.task_over(op, &t, id, TaskEvent::CancelAcked);
                }
                match v.get("status").and_then(Value::as_str) {
                    Some("completed") => {
                        let result = crate::protocol::Json::from_value(&v["result"]);
                        let m = Message::Result {
                            id: id.clone(),
                            result,
                        };
                        self.ops[op].task = None;
                        self.received_from_task(op, slot, &m);
                        self.deliver(op, Got::of(id, &m), None);
                    }
                    Some("failed") | Some("cancelled") => {
                        self.task_over(op, &t, id, TaskEvent::Ended)
                    }
                    // Working, or waiting for input this client never
                    // gives (its tools ask for none): poll on, or cancel
                    // at the deadline.
                    _ => self.schedule(poll, Timer::Poll(op)),
                }
            }
            (_, Some(Message::Error { id, error })) if error.code == jsonrpc::INVALID_PARAMS => {
                let id = id.unwrap_or_else(|| RequestId::Str(format!("{}~gone", t.id)));
                self.task_over(op, &t, id, TaskEvent::Gone)
            }
            // No answer, or one it cannot read: ask again.
            _ => {
                let wait = poll.max(self.backoff(1));
                self.schedule(wait, Timer::Poll(op));
            }
        }
    }

    /// The record that `op`'s result arrived, read from its task: one event
    /// with an id of the client's own (the task wire numbers nothing), on
    /// a stream of its own.
    fn received_from_task(&mut self, op: usize, slot: crate::client::core::SlotId, m: &Message) {
        self.local_ids += 1;
        let id = self
            .event_ids
            .number(&format!("~task{slot}.{}", self.local_ids));
        let session = self.session.clone().unwrap_or_else(|| wire::VERSION.into());
        self.record(ClientRecord::Received {
            client: self.spec.index,
            session,
            event: id,
            tag: Some(self.ops.tag(op)),
            chunk: crate::protocol::mcp::chunk_of(m),
            result: true,
            transport: crate::history::Transport::Streamable,
            stream: id,
        });
    }

    /// `op`'s task is out of its reach (`event`): the call again, as a new
    /// task, after the backoff.
    fn task_over(&mut self, op: usize, t: &OpTask, rpc: RequestId, event: TaskEvent) {
        self.record(ClientRecord::Task {
            client: self.spec.index,
            tag: self.ops.tag(op),
            task: t.id.clone(),
            rpc_id: rpc,
            event,
        });
        self.ops[op].task = None;
        self.retry_post(op);
    }
}

//! Receiving: what the reader tasks report, turned into the client's view
//! of its streams (priming ids, last seen ids, markers), records of what
//! arrived, and results delivered to their operations.

use super::actor::{CStream, Client, Got, OpSet, SlotKind};
use super::core::SlotId;
use super::ops::OpState;
use super::reader::{rpc_of, tag_of, Input};
use crate::fault::At;
use crate::history::{ClientRecord, SessionId, Transport};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::{mcp, Json};
use std::rc::Rc;

impl Client {
    /// One report of a reader task.
    pub(super) fn on_input(&mut self, input: Input) {
        let on_task = self
            .slots
            .get(&input.slot())
            .is_some_and(|s| matches!(s.kind, SlotKind::Task { .. }));
        if on_task {
            return self.on_task_input(input);
        }
        match input {
            Input::Json {
                slot,
                status,
                headers,
                msg,
            } => self.on_json(slot, status, &headers, msg),
            Input::Head {
                slot,
                status,
                stream_first,
                session,
            } => {
                if let (Some(tag), _) = self.slot_request(slot) {
                    if matches!(
                        self.slots.get(&slot).map(|s| &s.kind),
                        Some(SlotKind::Call { .. })
                    ) {
                        self.io.tap.report(&tag, At::ResponseHead, 0);
                        if self.planned.head_drops.remove(&tag) {
                            // The placed drop: the head arrived, the
                            // connection closes before anything else is read.
                            return self.drop_now(slot, tag);
                        }
                    }
                }
                self.on_head(slot, status, stream_first, session);
                // A 2026-07-28 call stream carries no event ids: its
                // headers name it, as a priming event would.
                if status == 200 {
                    if let Some(id) = self.local_id(slot) {
                        self.on_event(slot, Some(id), false, None);
                    }
                }
            }
            Input::Event {
                slot,
                id,
                marker,
                msg,
                endpoint,
                retry_ms,
            } => {
                if let Some(r) = retry_ms {
                    self.advised(slot, r);
                }
                if let Some(e) = endpoint {
                    self.on_endpoint(slot, &e);
                } else {
                    let id = match id {
                        Some(i) => Some(self.event_ids.number(&i)),
                        None => self.local_id(slot),
                    };
                    self.on_event(slot, id, marker, msg);
                }
            }
            Input::Gap { slot, missing } => self.on_gap(slot, missing),
            Input::End { slot } => self.on_end(slot, true),
            Input::Broken { slot } => self.on_end(slot, false),
            Input::Dropped {
                slot,
                tag,
                after_event,
            } => {
                self.dropped(tag, after_event);
                self.on_end(slot, false);
            }
            Input::Kill { tag } => self.kill(tag),
            Input::Reused { slot } => {
                let (tag, rpc_id) = self.slot_request(slot);
                self.record(ClientRecord::Reused {
                    client: self.spec.index,
                    tag,
                    rpc_id,
                });
            }
            Input::Failed {
                slot,
                connected,
                stale,
            } => {
                if stale {
                    let (tag, rpc_id) = self.slot_request(slot);
                    let sent_us = self.slots.get(&slot).map_or(0, |s| s.sent_us);
                    self.record(ClientRecord::Stale {
                        client: self.spec.index,
                        tag,
                        rpc_id,
                        sent_us,
                    });
                }
                self.on_failed(slot, connected)
            }
        }
    }

    /// On the 2026-07-28 wire, a fresh id of the client's own for an event
    /// of a call's stream (which the server does not number): the stream
    /// is named, and each event is newer than the last. `None` elsewhere.
    fn local_id(&mut self, slot: SlotId) -> Option<u64> {
        let call = matches!(
            self.slots.get(&slot).map(|s| &s.kind),
            Some(SlotKind::Call { .. })
        );
        if !self.modern() || !call {
            return None;
        }
        self.local_ids += 1;
        Some(
            self.event_ids
                .number(&format!("~{slot}.{}", self.local_ids)),
        )
    }

    /// The operation a slot's request is for and, for a call's POST, its
    /// request id (what the connection records name).
    fn slot_request(&self, slot: SlotId) -> (Option<Rc<str>>, Option<RequestId>) {
        match self.slots.get(&slot).map(|s| &s.kind) {
            Some(SlotKind::Call { op }) => (Some(self.ops.tag(*op)), self.ops[*op].rpc.clone()),
            Some(SlotKind::Resume { stream }) => {
                let tag = self.ops_on(*stream).first().map(|&op| self.ops.tag(op));
                (tag, None)
            }
            _ => (None, None),
        }
    }

    /// The legacy `endpoint` event: the session exists; initialize there.
    pub(super) fn on_endpoint(&mut self, slot: SlotId, uri: &str) {
        let Some(sid) = uri
            .split_once("sessionId=")
            .map(|(_, v)| v.split('&').next().unwrap_or(v))
        else {
            return;
        };
        let sid: SessionId = sid.into();
        if let Some(s) = self.slots.get_mut(&slot) {
            s.last_activity_us = self.io.history.now_us();
        }
        self.session = Some(sid.clone());
        self.legacy_endpoint = Some(uri.to_string());
        self.record(ClientRecord::Session {
            client: self.spec.index,
            session: sid,
        });
        let msg = self.init_message();
        self.legacy_post(&msg);
    }

    /// The initialize result arrived on the legacy stream.
    pub(super) fn on_legacy_init(&mut self, result: &Json) {
        let Some(sid) = self.session.clone() else {
            return;
        };
        let version = result
            .get("protocolVersion")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .into_owned();
        self.record(ClientRecord::Negotiated {
            client: self.spec.index,
            session: sid,
            transport: Transport::Legacy,
            protocol_version: version,
        });
        let initialized = Message::Notification {
            method: mcp::INITIALIZED.into(),
            params: None,
        };
        self.legacy_post(&initialized);
        self.after_init();
    }

    /// One SSE event on `slot` (its id numbered): the stream it names,
    /// the record of what arrived, a marker, a result delivered.
    pub(super) fn on_event(
        &mut self,
        slot: SlotId,
        id: Option<u64>,
        marker: bool,
        msg: Option<Message>,
    ) {
        let now = self.io.history.now_us();
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        s.last_activity_us = now;
        if matches!(s.kind, SlotKind::Init) {
            return self.on_init_event(slot, msg.as_ref());
        }
        s.messages += u32::from(msg.is_some());
        s.id_seen |= id.is_some();
        let kind = s.kind.clone();
        // A standalone stream whose priming event carries no id (a server
        // that numbers only stored events) is open all the same.
        if id.is_none() && s.stream.is_none() && matches!(kind, SlotKind::Open) {
            s.open_unnamed = true;
            if std::mem::take(&mut self.open_before_next) {
                self.start_next(false);
            }
            return;
        }
        // Events of a call keep the hold alive; notifications do not (a
        // steady notification stream without a marker would hold forever).
        let call_event = msg.as_ref().and_then(tag_of).is_some();
        if let (SlotKind::Resume { stream }, Some((h, _)), true) = (&kind, self.hold.on, call_event)
        {
            if *stream == h {
                self.arm_hold(h);
            }
        }
        if let Some(id) = id {
            let Some(key) = self.stream_of(slot, &kind, id) else {
                return;
            };
            if let Some(st) = self.streams.get_mut(&key) {
                st.last_seen = st.last_seen.max(id);
            }
            if let Some(m) = &msg {
                self.record_received(&kind, id, key, m);
            }
        }
        // An event of a POST we never saw begin: its stream is seen now.
        if let Some(m) = &msg {
            if let (Some(op), Some(rpc)) =
                (tag_of(m).and_then(|(t, _)| self.op_by_tag(&t)), rpc_of(m))
            {
                self.ops[op].unseen.retain(|r| *r != rpc);
            }
        }
        if marker {
            if let Some(s) = self.slots.get_mut(&slot) {
                s.marker_pending = false;
                if let Some(stream) = s.stream {
                    self.end_hold(stream);
                }
            }
        }
        if let (
            SlotKind::LegacyOpen,
            Some(Message::Result {
                id: RequestId::Str(rid),
                result,
            }),
        ) = (&kind, &msg)
        {
            if rid.starts_with(&format!("c{}-init#", self.spec.index)) {
                let result = result.clone();
                self.on_legacy_init(&result);
                return;
            }
        }
        // A call answered with a task on its stream (a server may answer in
        // either content type): the operation waits on the task, and the
        // exchange is over.
        if let (SlotKind::Call { op }, Some(m @ Message::Result { id: rpc, .. })) = (&kind, &msg) {
            if self.ops[*op].state == OpState::Active && self.on_created(*op, rpc, m) {
                if let Some(s) = self.slots.remove(&slot) {
                    s.task.abort();
                }
                return;
            }
        }
        if let Some(m @ Message::Result { id: rpc, .. }) = &msg {
            if let Some(op) = tag_of(m).and_then(|(t, _)| self.op_by_tag(&t)) {
                if !self.on_input_required(op, rpc, m) {
                    self.deliver(op, Got::of(rpc.clone(), m), Some(slot));
                }
            }
        }
    }

    /// An event on an initialize's stream: its result (priming events
    /// aside) makes the session the client's.
    fn on_init_event(&mut self, slot: SlotId, msg: Option<&Message>) {
        let Some(m @ Message::Result { .. }) = msg else {
            return;
        };
        let Some(sid) = self
            .slots
            .get_mut(&slot)
            .and_then(|s| s.init_session.take())
        else {
            return;
        };
        self.slots.remove(&slot);
        self.initialized(sid, Some(m));
    }

    /// The client's key for the stream of `slot` (of `kind`), which event
    /// `id` arrived on: the first id names a new stream (a call's, or the
    /// standalone one, which a call waiting for it may now start on).
    fn stream_of(&mut self, slot: SlotId, kind: &SlotKind, id: u64) -> Option<u64> {
        let s = self.slots.get_mut(&slot)?;
        if let Some(k) = s.stream {
            return Some(k);
        }
        s.stream = Some(id);
        let standalone = matches!(kind, SlotKind::Open | SlotKind::LegacyOpen);
        let mut st = CStream {
            last_seen: id,
            live: Some(slot),
            finished: false,
            standalone,
            ops: OpSet::default(),
        };
        if let SlotKind::Call { op } = *kind {
            self.ops[op].stream = Some(id);
            st.ops.insert(op);
        }
        self.streams.insert(id, st);
        if standalone {
            self.standalone = Some(id);
            if std::mem::take(&mut self.open_before_next) {
                self.start_next(false);
            }
        }
        Some(id)
    }

    /// The `Received` record of message `m`, event `id` of stream `key`.
    fn record_received(&mut self, kind: &SlotKind, id: u64, key: u64, m: &Message) {
        let Some(session) = self.session.clone() else {
            return;
        };
        let (tag, result) = match tag_of(m) {
            Some((t, r)) => (self.op_by_tag(&t).map(|o| self.ops.tag(o)), r),
            None => (None, false),
        };
        let transport = if matches!(kind, SlotKind::LegacyOpen) {
            Transport::Legacy
        } else {
            Transport::Streamable
        };
        self.record(ClientRecord::Received {
            client: self.spec.index,
            session,
            event: id,
            tag,
            chunk: mcp::chunk_of(m),
            result,
            transport,
            stream: key,
        });
    }
}

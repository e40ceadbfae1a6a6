//! Receiving: what the reader tasks report, turned into the client's view
//! of its streams (priming ids, last seen ids, markers), records of what
//! arrived, and results delivered to their operations.

use super::core::{Action, CStream, Client, Got, OpState, SlotId, SlotKind};
use super::reader::{rpc_of, tag_of, Input};
use crate::history::{ClientRecord, SessionId, Transport};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::{mcp, sse, Json};
use std::collections::BTreeSet;
use std::time::Duration;

impl Client {
    /// One report of a reader task.
    pub(super) fn on_input(&mut self, input: Input) {
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
            } => self.on_head(slot, status, stream_first, session),
            Input::Event {
                slot,
                id,
                marker,
                msg,
                endpoint,
            } => {
                if let Some(e) = endpoint {
                    self.on_endpoint(slot, &e);
                } else {
                    let id = id.map(|i| self.event_ids.number(&i));
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
            Input::Failed { slot, connected } => self.on_failed(slot, connected),
        }
    }

    pub(super) fn on_head(
        &mut self,
        slot: SlotId,
        status: u16,
        stream_first: Option<u64>,
        session: Option<String>,
    ) {
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        s.answered = true;
        // initialize answered with a stream: its result follows on it.
        if let (SlotKind::Init, 200, Some(sid)) = (&s.kind, status, session) {
            s.init_session = Some(sid.as_str().into());
        }
        if let (SlotKind::Resume { stream }, 200) = (&s.kind, status) {
            let stream = *stream;
            // A mapped resume says how Rule M names this stream from now on.
            if let Some(first) = stream_first.filter(|&f| f != stream) {
                self.names.insert(first, stream);
            }
            if self.holding.is_some_and(|(h, _)| h == stream) {
                self.arm_hold(stream);
            }
            // The resume's headers arrived: re-send new calls it held up.
            for op in self.resend_after_resume.remove(&stream).unwrap_or_default() {
                if self.ops[op].state == OpState::Active {
                    self.send_call(op);
                }
            }
            self.set_expecting(stream);
            if std::mem::take(&mut self.next_on_resume) {
                self.start_next(true);
            }
            if std::mem::take(&mut self.switch_pending) {
                // The server took the session over the new transport.
                self.schedule(Duration::ZERO, Action::StartNext);
            }
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
            s.last_activity_us = self.history.now_us();
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

    /// An `event: gap`: the server announces owed events of this stream it
    /// no longer has. Record the announced loss and keep reading: the
    /// surviving events (the result, if it survived) follow.
    pub(super) fn on_gap(&mut self, slot: SlotId, missing: Option<Vec<(u64, u64)>>) {
        let now = self.history.now_us();
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        s.last_activity_us = now;
        let (Some(stream), Some(session), Some(missing)) =
            (s.stream, self.session.clone(), missing)
        else {
            return;
        };
        self.record(ClientRecord::Gap {
            client: self.spec.index,
            session,
            stream,
            named: sse::gap_count(&missing),
            missing,
        });
    }

    pub(super) fn on_event(
        &mut self,
        slot: SlotId,
        id: Option<u64>,
        marker: bool,
        msg: Option<Message>,
    ) {
        let now = self.history.now_us();
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        s.last_activity_us = now;
        if matches!(s.kind, SlotKind::Init) {
            // The initialize result on its stream (priming events aside).
            if let Some(m @ Message::Result { .. }) = &msg {
                if let Some(sid) = s.init_session.take() {
                    self.slots.remove(&slot);
                    self.initialized(sid, Some(m));
                }
            }
            return;
        }
        s.messages += u32::from(msg.is_some());
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
        if let (SlotKind::Resume { stream }, Some((h, _)), true) = (&kind, self.holding, call_event)
        {
            if *stream == h {
                self.arm_hold(h);
            }
        }
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        if let Some(id) = id {
            let key = match s.stream {
                Some(k) => k,
                None => {
                    s.stream = Some(id);
                    let standalone = matches!(kind, SlotKind::Open | SlotKind::LegacyOpen);
                    self.streams.insert(
                        id,
                        CStream {
                            last_seen: id,
                            live: Some(slot),
                            finished: false,
                            standalone,
                            ops: BTreeSet::new(),
                        },
                    );
                    if let SlotKind::Call { op } = kind {
                        self.ops[op].stream = Some(id);
                        self.streams
                            .get_mut(&id)
                            .expect("just inserted")
                            .ops
                            .insert(op);
                    }
                    if standalone {
                        self.standalone = Some(id);
                        if std::mem::take(&mut self.open_before_next) {
                            self.start_next(false);
                        }
                    }
                    id
                }
            };
            if let Some(st) = self.streams.get_mut(&key) {
                st.last_seen = st.last_seen.max(id);
            }
            if let (Some(session), Some(m)) = (self.session.clone(), &msg) {
                let (tag, result) = match tag_of(m) {
                    Some((t, r)) => (self.op_by_tag(&t).map(|o| self.ops[o].tag.clone()), r),
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
        if let Some(m @ Message::Result { id: rpc, .. }) = &msg {
            if let Some(op) = tag_of(m).and_then(|(t, _)| self.op_by_tag(&t)) {
                self.deliver(op, Got::of(rpc.clone(), m), Some(slot));
            }
        }
    }
}

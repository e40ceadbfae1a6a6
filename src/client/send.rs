//! Sending: every request the client makes (initialize, calls, resumes,
//! opens, subscribes), each on a slot of its own with a reader task, and
//! the messages they carry.

use super::actor::{Client, Slot, SlotKind};
use super::behaviour::Policy;
use super::core::SlotId;
use super::http::Outgoing;
use super::ops::OpState;
use super::reader::Job;
use crate::fault::At;
use crate::history::{ClientRecord, Delivery, Sent, Transport};
use crate::protocol::headers::{self, CursorEntry, CursorList};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use crate::protocol::y2026 as wire;
use crate::scenario::ClientGroup;
use serde_json::json;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

impl Client {
    /// Starts an exchange on a new slot; `expecting` says whether it owes
    /// events from the start.
    pub(super) fn spawn(&mut self, kind: SlotKind, out: Outgoing, expecting: bool) -> SlotId {
        // Every request carries the client's own bearer token: its identity
        // (not a secret), so the server scopes keys to it and a key survives
        // re-initialization.
        let out = out.header(
            headers::AUTHORIZATION,
            &format!("Bearer client-{}", self.spec.index),
        );
        let slot = self.next_slot;
        self.next_slot += 1;
        let expecting = Rc::new(Cell::new(expecting));
        // Standalone and legacy streams hold their connection for good:
        // they neither take the idle one nor give theirs back.
        let pooled = match &kind {
            SlotKind::Open | SlotKind::LegacyOpen => false,
            SlotKind::Resume { stream } => !self.streams.get(stream).is_some_and(|s| s.standalone),
            _ => true,
        };
        let pool = self.io.pool.clone().filter(|_| pooled);
        // A client that keeps connections alive says so, as undici does
        // (the server reads nothing from it: it closes any connection idle
        // for its `server_idle_ms`).
        let out = match pool {
            Some(_) => out.header("connection", "keep-alive"),
            None => out,
        };
        let task = (self.io.spawner)(Job {
            slot,
            out,
            tx: self.io.tx.clone(),
            connect_timeout: Duration::from_millis(self.g().connect_timeout_ms),
            read_timeout: Duration::from_millis(self.g().read_timeout_ms),
            expecting: expecting.clone(),
            drops: self.planned.drop_rules.clone(),
            pool,
        });
        self.slots.insert(
            slot,
            Slot {
                kind,
                stream: None,
                last_activity_us: self.io.history.now_us(),
                sent_us: self.io.history.now_us(),
                expecting,
                task,
                marker_pending: false,
                answered: false,
                messages: 0,
                open_unnamed: false,
                id_seen: false,
                init_session: None,
                retry_ms: None,
            },
        );
        slot
    }

    pub(super) fn send_init(&mut self) {
        // Every way to a new session (a failed initialize, a 404, a lost
        // legacy stream) comes here: the bound holds on all of them.
        if self.inits_exhausted() {
            return self.give_up();
        }
        if !std::mem::take(&mut self.fresh_init) {
            self.init_attempts += 1;
        }
        if self.transport == Transport::Legacy {
            // Legacy: the session is born with its stream; initialize goes
            // to /messages once the endpoint event names it.
            let mut h = ::http::HeaderMap::new();
            h.insert(
                ::http::header::ACCEPT,
                ::http::HeaderValue::from_static("text/event-stream"),
            );
            let out = Outgoing {
                method: ::http::Method::GET,
                path: "/sse".into(),
                headers: h,
                body: None,
            };
            self.spawn(SlotKind::LegacyOpen, out, true);
            return;
        }
        if self.modern() {
            let msg = self.discover_message();
            let out = self.modern_post(&msg, wire::SERVER_DISCOVER, None);
            self.spawn(SlotKind::Init, out, true);
            return;
        }
        let msg = self.init_message();
        self.spawn(SlotKind::Init, Outgoing::post(None, &msg), true);
    }

    /// `server/discover`, the 2026-07-28 wire's first request (and the
    /// record that it went out as this client's initialization).
    fn discover_message(&self) -> Message {
        self.sent_init(Message::Request {
            id: RequestId::Str(format!("discover#{}", self.init_attempts)),
            method: wire::SERVER_DISCOVER.into(),
            params: Some(self.with_meta(None)),
        })
    }

    /// `msg`, the client's initialization, once its record is written.
    fn sent_init(&self, msg: Message) -> Message {
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Initialize,
            tag: None,
            rpc_id: msg.id().cloned(),
            cursor: None,
            keyed: false,
        });
        msg
    }

    /// `params` with this client's 2026-07-28 `_meta`.
    pub(super) fn with_meta(
        &self,
        params: Option<&crate::protocol::Json>,
    ) -> crate::protocol::Json {
        let name = format!("mcp-chaos-client-{}", self.spec.index);
        wire::with_meta(params, wire::request_meta(self.capabilities(), &name))
    }

    /// A POST of the 2026-07-28 wire: no session; the version, method and
    /// name headers mirroring the body.
    pub(super) fn modern_post(&self, msg: &Message, method: &str, name: Option<&str>) -> Outgoing {
        let mut out = Outgoing::post(None, msg)
            .header(headers::MCP_PROTOCOL_VERSION, wire::VERSION)
            .header(wire::MCP_METHOD, method);
        if let Some(n) = name {
            out = out.header(wire::MCP_NAME, &wire::encode_header(n));
        }
        out
    }

    /// `initialize` as this client sends it on its current transport (and
    /// the record that it went out): a
    /// transport-switch client asks for the legacy revision and one
    /// capability set there, and a newer revision and another set on
    /// streamable HTTP.
    pub(super) fn init_message(&self) -> Message {
        self.sent_init(self.init_request())
    }

    pub(super) fn init_request(&self) -> Message {
        init_request(
            self.policy,
            self.transport,
            self.spec.index,
            self.init_attempts,
        )
    }

    /// A POST to the legacy `/messages` endpoint.
    pub(super) fn legacy_post(&mut self, msg: &Message) -> Option<SlotId> {
        let out = self.legacy_out(msg)?;
        Some(self.spawn(SlotKind::LegacyPost, out, true))
    }

    /// `msg` POSTed to the legacy session's endpoint, once it is known.
    pub(super) fn legacy_out(&self, msg: &Message) -> Option<Outgoing> {
        let mut out = Outgoing::post(None, msg);
        out.path = self.legacy_endpoint.clone()?;
        Some(out)
    }

    pub(super) fn with_session(&self, out: Outgoing) -> Outgoing {
        out.header(headers::MCP_PROTOCOL_VERSION, mcp::LATEST_VERSION)
    }

    /// Starts the next call. Unless `concurrent` (resume-then-post moving
    /// on during a resume), only when no call is active.
    pub(super) fn start_next(&mut self, concurrent: bool) {
        if self.next_op >= self.calls() || self.session.is_none() {
            return;
        }
        if !concurrent && !self.active.is_empty() {
            return;
        }
        if self.switch_pending || (self.transport == Transport::Legacy && self.standalone.is_none())
        {
            return; // a switch resolves first; legacy calls need the stream
        }
        if self
            .ops
            .get(self.next_op)
            .is_some_and(|o| o.state != OpState::Pending)
        {
            return;
        }
        if self.spec.delivery == Delivery::SessionStream && !self.standalone_live() {
            self.open_before_next = true;
            // Only an open in flight brings the standalone stream (and
            // starts the call on its priming event). A resume in flight does
            // not: one of the current standalone stream makes it live
            // already, and one of an older standalone stream (a 409 named
            // it) never becomes the session's standalone stream again.
            if !self
                .slots
                .values()
                .any(|s| matches!(s.kind, SlotKind::Open))
            {
                self.send_open();
            }
            return;
        }
        if self.fresh_session_first() {
            return;
        }
        let op = self.next_op;
        self.next_op += 1;
        self.activate(op);
        self.ops[op].started = true;
        self.record(ClientRecord::OpStarted {
            client: self.spec.index,
            tag: self.ops.tag(op),
        });
        let tag = self.ops.tag(op);
        if let Some(&after) = self.spec.drops.get(&(op as u32)) {
            let tasked = self.tasked();
            let mut rules = self.planned.drop_rules.borrow_mut();
            // A call run as a task has no stream: its drop takes the
            // after_event-th answer of its exchanges (1: the creation).
            match tasked {
                true => rules.answers.insert(tag.clone(), (after.max(1), 0)),
                false => rules.events.insert(tag.clone(), (after, 0)),
            };
        }
        if self.spec.resets.contains(&(op as u32)) {
            let mut rules = self.planned.drop_rules.borrow_mut();
            rules.resets.insert(tag.clone());
        }
        match self.spec.placed_drops.get(&(op as u32)) {
            Some(At::Result) => {
                self.planned.drop_rules.borrow_mut().results.insert(tag);
            }
            Some(At::ResponseHead) => {
                self.planned.head_drops.insert(tag);
            }
            _ => {}
        }
        self.send_call(op);
    }

    pub(super) fn standalone_live(&self) -> bool {
        self.standalone
            .and_then(|s| self.streams.get(&s))
            .is_some_and(|s| s.live.is_some())
            || self.slots.values().any(|s| s.open_unnamed)
            || self.standalone.is_some_and(|s| self.coming_back(s))
    }

    pub(super) fn send_call(&mut self, op: usize) {
        let Some(session) = self.session.clone() else {
            return;
        };
        if !self.take_attempt(op) {
            return;
        }
        let tag = self.ops.tag(op);
        let o = &mut self.ops[op];
        o.posts += 1;
        o.stream = None;
        let rpc = RequestId::Str(format!("{}#{}", tag, o.posts));
        o.rpc = Some(rpc.clone());
        o.in_doubt_on = Some(session.clone());
        let asks = self.modern() && self.g().asks_input;
        let mut msg = call_request(&tag, &rpc, self.g(), asks);
        let mut out = if self.modern() {
            if let Message::Request { params, .. } = &mut msg {
                self.with_answers(op, params);
                *params = Some(self.with_meta(params.as_ref()));
            }
            self.modern_post(&msg, mcp::TOOLS_CALL, Some(mcp::LEDGER_APPEND))
        } else if self.transport == Transport::Legacy {
            let mut o = Outgoing::post(None, &msg);
            o.path = self
                .legacy_endpoint
                .clone()
                .unwrap_or_else(|| format!("/messages?sessionId={session}"));
            o
        } else {
            self.with_session(Outgoing::post(Some(&session), &msg))
        };
        let keyed = self.keyed();
        if keyed {
            out = out.header(headers::IDEMPOTENCY_KEY, &self.key_for(op, &tag));
        }
        let cursor = self.cursor_on_post().then(|| self.cursor_list()).flatten();
        if let Some(c) = &cursor {
            out = out.header(headers::LAST_EVENT_ID, c);
        }
        if self.cursor_on_post() {
            let unseen: Vec<&RequestId> = self
                .active
                .iter()
                .flat_map(|&o| self.ops[o].unseen.iter())
                .collect();
            if !unseen.is_empty() {
                let list = serde_json::to_string(&unseen).expect("ids serialize");
                out = out.header(headers::MCP_LOST_REQUESTS, &list);
            }
        }
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Call,
            tag: Some(tag),
            rpc_id: Some(rpc),
            cursor,
            keyed,
        });
        self.spawn(SlotKind::Call { op }, out, true);
    }

    /// The cursor list for a POST: every unfinished stream's last seen id,
    /// `;lost` where the client has no live connection to it.
    pub(super) fn cursor_list(&self) -> Option<String> {
        let list: Vec<CursorEntry> = self
            .streams
            .values()
            .filter(|s| {
                !s.finished
                    && (s.standalone || s.ops.iter().any(|o| self.ops[o].state == OpState::Active))
            })
            .map(|s| CursorEntry {
                event_id: s.last_seen,
                lost: s.live.is_none(),
            })
            .collect();
        (!list.is_empty()).then(|| CursorList(list).to_string())
    }

    pub(super) fn send_resume(&mut self, stream: u64, attempt: bool) {
        let Some(session) = self.session.clone() else {
            return;
        };
        let Some(st) = self.streams.get(&stream) else {
            return;
        };
        if st.live.is_some_and(|l| {
            self.slots
                .get(&l)
                .is_some_and(|s| matches!(s.kind, SlotKind::Resume { .. }))
        }) {
            return; // never two resumes of one stream at once
        }
        let cursor = st.last_seen;
        // The resume is an attempt of every operation it resumes for; past
        // the bound they are abandoned, and with none left it is not sent
        // (unless a transport switch waits on it).
        let waiting = self.resuming_for(stream);
        if attempt && !waiting.is_empty() {
            for &op in &waiting {
                self.take_attempt(op);
            }
            if self.resuming_for(stream).is_empty() && !self.switch_pending {
                return;
            }
        }
        let waiting = self.ops_on(stream);
        let tag = waiting.first().map(|&o| self.ops.tag(o));
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Resume,
            tag,
            rpc_id: None,
            cursor: Some(cursor.to_string()),
            keyed: false,
        });
        let out = self.with_session(Outgoing::resume(
            &session,
            Some(&self.event_ids.wire(cursor)),
        ));
        let slot = self.spawn(SlotKind::Resume { stream }, out, true);
        let s = self.slots.get_mut(&slot).expect("just inserted");
        s.stream = Some(stream);
        s.marker_pending = true;
        if let Some(old) = self
            .streams
            .get_mut(&stream)
            .and_then(|st| st.live.replace(slot))
        {
            if let Some(o) = self.slots.remove(&old) {
                o.task.abort();
            }
        }
        // Hold results on other streams until this stream's replay-end. A
        // resume that breaks before its marker keeps the hold: the next
        // resume brings the marker.
        // Only a stream that owes us a result has an order to protect.
        if self.hold.on.is_none_or(|(h, _)| h == stream) && !self.ops_on(stream).is_empty() {
            self.arm_hold(stream);
        }
    }

    pub(super) fn send_open(&mut self) {
        let Some(session) = self.session.clone() else {
            return;
        };
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Open,
            tag: None,
            rpc_id: None,
            cursor: None,
            keyed: false,
        });
        let out = self.with_session(Outgoing::get(&session, None));
        self.spawn(SlotKind::Open, out, false);
    }

    /// `resources/subscribe` to the clock on the current transport.
    pub(super) fn subscribe(&mut self) {
        let Some(session) = self.session.clone() else {
            return;
        };
        let msg = Message::Request {
            id: RequestId::Str(format!("c{}-sub#{}", self.spec.index, self.init_attempts)),
            method: mcp::RESOURCES_SUBSCRIBE.into(),
            params: Some(json!({"uri": mcp::CLOCK_URI}).into()),
        };
        if self.transport == Transport::Legacy {
            self.legacy_post(&msg);
        } else {
            let out = self.with_session(Outgoing::post(Some(&session), &msg));
            self.spawn(SlotKind::Subscribe, out, true);
        }
    }
}

/// `initialize` as a client of `policy` sends it on `transport` (its
/// revision and capabilities are the behaviour's).
pub(super) fn init_request(
    policy: &dyn Policy,
    transport: Transport,
    index: u32,
    attempt: u32,
) -> Message {
    let (version, caps) = policy.init(transport);
    Message::Request {
        id: RequestId::Str(format!("c{index}-init#{attempt}")),
        method: mcp::INITIALIZE.into(),
        params: Some(mcp::initialize_params(
            version,
            caps,
            "mcp-chaos-virtual-client",
        )),
    }
}

/// The `tools/call` of one attempt (`rpc`) of operation `tag` (`asks`:
/// its tool asks for input after its effect, on the 2026-07-28 wire).
pub(super) fn call_request(tag: &str, rpc: &RequestId, g: &ClientGroup, asks: bool) -> Message {
    Message::Request {
        id: rpc.clone(),
        method: mcp::TOOLS_CALL.into(),
        params: Some(mcp::append_call_params(
            mcp::AppendArgs {
                tag,
                chunks: g.chunks,
                chunk_interval_ms: g.chunk_interval_ms,
                asks_input: asks,
            },
            rpc,
        )),
    }
}

//! The reaction table: how the client honors the server and the network.
//! A call's answer (200, 202, 409 with a hint or without, 404, 410, 503),
//! a resume's refusal, a failed exchange, a stream that ends or breaks
//! before the result; and the retries, re-issues and re-initializations
//! they lead to. What a broken stream leads to differs per behaviour
//! ([`super::behaviour`]).

use super::core::{Action, CStream, Client, Got, OpState, SlotId, SlotKind};
use crate::history::{ClientRecord, Delivery, Outcome, SessionId, Transport};
use crate::protocol::headers;
use crate::protocol::jsonrpc::Message;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

impl Client {
    /// A JSON (non-SSE) answer to the exchange on `slot`.
    pub(super) fn on_json(
        &mut self,
        slot: SlotId,
        status: u16,
        h: &::http::HeaderMap,
        msg: Option<Message>,
    ) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        match s.kind {
            // A legacy stream answered without SSE: it failed to open.
            SlotKind::LegacyOpen => self.retry_init(),
            SlotKind::LegacyPost => match status {
                202 => {}
                404 => {
                    self.status(None, status, None, None);
                    self.reinit()
                }
                _ => self.status(None, status, None, None),
            },
            SlotKind::Subscribe => {
                if status == 404 {
                    self.reinit();
                }
            }
            SlotKind::Init => {
                let sid = h.get(headers::MCP_SESSION_ID).and_then(|v| v.to_str().ok());
                match (status, sid) {
                    (200, Some(sid)) => self.initialized(sid.into(), msg.as_ref()),
                    _ => self.retry_init(),
                }
            }
            SlotKind::Call { op } => self.on_call_reply(op, status, h, msg),
            SlotKind::Resume { stream } => {
                let op = self.ops_on(stream).first().copied();
                self.status(op, status, None, None);
                if let Some(st) = self.streams.get_mut(&stream) {
                    if st.live == Some(slot) {
                        st.live = None;
                    }
                }
                self.end_hold(stream);
                match status {
                    404 => self.reinit(),
                    // 410 (evicted), 405 (a server that does not resume),
                    // or any refusal: re-issue by POST.
                    _ => self.resume_refused(stream),
                }
            }
            SlotKind::Open => match status {
                404 => self.reinit(),
                _ => {
                    let n = self.init_attempts;
                    self.schedule(self.backoff(n), Action::Open);
                }
            },
        }
    }

    /// The initialize result arrived (as JSON, or on its SSE stream) with
    /// session `sid`.
    pub(super) fn initialized(&mut self, sid: SessionId, msg: Option<&Message>) {
        self.session = Some(sid.clone());
        self.record(ClientRecord::Session {
            client: self.spec.index,
            session: sid.clone(),
        });
        if let Some(Message::Result { result, .. }) = msg {
            let version = result
                .get("protocolVersion")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            self.record(ClientRecord::Negotiated {
                client: self.spec.index,
                session: sid,
                transport: Transport::Streamable,
                protocol_version: version.to_string(),
            });
        }
        self.after_init();
    }

    pub(super) fn status(
        &self,
        op: Option<usize>,
        status: u16,
        hint: Option<u64>,
        stream_first: Option<u64>,
    ) {
        self.record(ClientRecord::Status {
            client: self.spec.index,
            tag: op.map(|o| self.ops[o].tag.clone()),
            session: self.session.clone(),
            status,
            hint,
            stream_first,
        });
    }

    pub(super) fn on_call_reply(
        &mut self,
        op: usize,
        status: u16,
        h: &::http::HeaderMap,
        msg: Option<Message>,
    ) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        let data = match &msg {
            Some(Message::Error { error, .. }) => error.data.clone(),
            _ => None,
        };
        let hint = h
            .get(headers::LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let stream_first = data
            .as_ref()
            .and_then(|d| d.get("streamFirstEventId"))
            .and_then(Value::as_u64);
        match status {
            200 => match msg {
                Some(m @ Message::Result { .. }) => {
                    self.ops[op].json_result = true;
                    let got = Got::of(m.id().cloned().expect("a result has an id"), &m);
                    self.deliver(op, got, None)
                }
                _ => {
                    self.status(Some(op), status, None, None);
                    self.finish(op, Outcome::Abandoned);
                }
            },
            202 => {
                // The response rides the standalone stream.
                if let Some(s) = self.standalone {
                    self.ops[op].stream = Some(s);
                    if let Some(st) = self.streams.get_mut(&s) {
                        st.ops.insert(op);
                    }
                    self.set_expecting(s);
                }
            }
            409 => {
                self.status(Some(op), status, hint, stream_first);
                match hint {
                    Some(hint) => self.on_conflict(op, hint, stream_first),
                    None => self.retry_post(op),
                }
            }
            404 => {
                self.status(Some(op), status, None, None);
                self.reinit();
            }
            410 => {
                self.status(Some(op), status, None, stream_first);
                let key = stream_first.map(|f| self.key_of(f));
                if let Some(st) = key.and_then(|k| self.streams.get_mut(&k)) {
                    st.finished = true;
                }
                self.reissue(op);
            }
            503 => {
                self.status(Some(op), status, None, None);
                self.retry_post(op);
            }
            _ => {
                self.status(Some(op), status, None, None);
                self.finish(op, Outcome::Abandoned);
            }
        }
    }

    /// A Rule M 409: resume the named stream from our own last seen id
    /// there (the hint only if we have none).
    pub(super) fn on_conflict(&mut self, op: usize, hint: u64, stream_first: Option<u64>) {
        let key = self.key_of(stream_first.unwrap_or(hint));
        let known = self.streams.contains_key(&key);
        let st = self.streams.entry(key).or_insert(CStream {
            // A stream we never saw: nothing of it arrived, so resume from
            // its first event (the hint only when it does not say).
            last_seen: stream_first.unwrap_or(hint),
            live: None,
            finished: false,
            standalone: false,
            ops: BTreeSet::new(),
        });
        st.finished = false;
        // The rejected POST retried the operation whose stream is named: the
        // stream it rode, or one of its earlier POSTs we never saw begin.
        let retried_here = self.ops[op].stream == Some(key)
            || st.ops.contains(&op)
            || (!known && !self.ops[op].unseen.is_empty());
        if retried_here {
            st.ops.insert(op);
        }
        if retried_here {
            // The rejected POST retried the operation being resumed: wait
            // for its result on the resumed stream.
            self.ops[op].stream = Some(key);
        } else {
            self.resend_after_resume.entry(key).or_default().push(op);
        }
        // A resume on its way brings the stream (and, at its headers, the
        // re-sends). One the server answered already has a connection the
        // server no longer counts (it names the stream): take it over.
        let live = st.live;
        let resume = live.and_then(|l| {
            self.slots
                .get(&l)
                .filter(|s| matches!(s.kind, SlotKind::Resume { .. }))
                .map(|s| s.answered)
        });
        match resume {
            Some(false) => {}
            Some(true) => {
                if let Some(old) = live.and_then(|l| self.slots.remove(&l)) {
                    old.task.abort();
                }
                if let Some(st) = self.streams.get_mut(&key) {
                    st.live = None;
                }
                self.send_resume(key);
            }
            None => self.send_resume(key),
        }
    }

    /// The client's key for a stream the server names by `first`.
    pub(super) fn key_of(&self, first: u64) -> u64 {
        self.names.get(&first).copied().unwrap_or(first)
    }

    /// A resume of `stream` failed for good (refused, or answered with a
    /// stream that ended and brought nothing): nothing more comes on it.
    /// Re-issue every operation waiting on it (same tag and key, a new
    /// request id; each re-issue an attempt). A transport switch waiting on
    /// it goes on over the new transport without the stream.
    pub(super) fn resume_refused(&mut self, stream: u64) {
        let waiting: Vec<usize> = self
            .ops_on(stream)
            .into_iter()
            .chain(self.resend_after_resume.remove(&stream).unwrap_or_default())
            .collect();
        if let Some(st) = self.streams.get_mut(&stream) {
            st.finished = true;
        }
        // Whatever it held back goes on now (nothing resumes).
        self.next_on_resume = false;
        if std::mem::take(&mut self.switch_pending) {
            // The session stays (only the resume was refused): keep it on
            // the new transport, with a stream for its notifications.
            if self.spec.delivery != Delivery::SessionStream {
                self.send_open();
            }
            self.schedule(Duration::ZERO, Action::StartNext);
        }
        for op in waiting {
            self.reissue(op);
        }
    }

    /// Whether `s`, ending cleanly, was a resume that brought nothing
    /// while operations wait on its stream: a failed resume (as real SDKs
    /// answer a resume of a stream they do not have: 200 and a stream that
    /// ends with no events, or only a priming event).
    fn empty_resume(&self, s: &super::core::Slot) -> Option<u64> {
        let SlotKind::Resume { stream } = s.kind else {
            return None;
        };
        (s.messages == 0 && !self.resuming_for(stream).is_empty()).then_some(stream)
    }

    pub(super) fn on_end(&mut self, slot: SlotId, clean: bool) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        if let Some(stream) = clean.then(|| self.empty_resume(&s)).flatten() {
            if let Some(st) = self.streams.get_mut(&stream) {
                if st.live == Some(slot) {
                    st.live = None;
                }
            }
            self.end_hold(stream);
            return self.resume_refused(stream);
        }
        if matches!(s.kind, SlotKind::LegacyOpen)
            && self.transport == Transport::Legacy
            && self.session.is_some()
        {
            // The legacy stream is gone: that is the network change.
            self.schedule(Duration::ZERO, Action::Switch);
        }
        if clean {
            // The replay is over (the unguarded server sends no marker).
            if let Some(stream) = s.stream {
                self.end_hold(stream);
            }
        }
        let Some(stream) = s.stream else {
            // Ended before any event: treat as a failed exchange.
            self.slots.insert(slot, s);
            return self.on_failed(slot, true);
        };
        // An op whose result is held behind a resume has its result.
        let waiting: Vec<usize> = self
            .ops_on(stream)
            .into_iter()
            .filter(|op| !self.held.iter().any(|(o, _)| o == op))
            .collect();
        if let Some(st) = self.streams.get_mut(&stream) {
            if st.live == Some(slot) {
                st.live = None;
            }
            if clean && waiting.is_empty() && !st.standalone {
                st.finished = true;
            }
        }
        let fault_us = s.last_activity_us;
        for op in waiting {
            self.interrupted(op, stream, fault_us);
        }
    }

    pub(super) fn interrupted(&mut self, op: usize, stream: u64, fault_us: u64) {
        if !self.ops[op].interrupted {
            self.ops[op].interrupted = true;
            self.record(ClientRecord::Interrupted {
                client: self.spec.index,
                tag: self.ops[op].tag.clone(),
                fault_us,
            });
        }
        let wait = self.backoff(self.ops[op].attempts);
        let policy = self.policy;
        policy.on_interrupted(self, op, stream, wait);
    }

    /// Re-POSTs `op` after `wait` (a new request id, same tag), forgetting
    /// the stream that broke: how the re-POSTing behaviours answer one.
    pub(super) fn repost_after(&mut self, op: usize, wait: Duration) {
        self.ops[op].stream = None;
        if self.count_attempt(op) {
            self.schedule(wait, Action::Post(op));
        }
    }

    pub(super) fn on_failed(&mut self, slot: SlotId, connected: bool) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        match s.kind {
            SlotKind::LegacyOpen if self.session.is_some() => {
                self.schedule(Duration::ZERO, Action::Switch)
            }
            SlotKind::LegacyOpen => self.retry_init(),
            // A lost legacy message (initialize, subscribe): start over.
            SlotKind::LegacyPost => self.reinit_now(),
            SlotKind::Subscribe => {
                let wait = self.backoff(self.init_attempts);
                self.schedule(wait, Action::Subscribe);
            }
            SlotKind::Init => self.retry_init(),
            SlotKind::Call { op } => {
                // The request may have run; its stream never began for us.
                if let Some(rpc) = self.ops[op].rpc.clone() {
                    if self.ops[op].state == OpState::Active {
                        self.record(ClientRecord::NoResponse {
                            client: self.spec.index,
                            tag: self.ops[op].tag.clone(),
                            rpc_id: rpc.clone(),
                            connected,
                        });
                        self.ops[op].unseen.push(rpc);
                        if !self.ops[op].interrupted {
                            self.ops[op].interrupted = true;
                            self.record(ClientRecord::Interrupted {
                                client: self.spec.index,
                                tag: self.ops[op].tag.clone(),
                                fault_us: s.last_activity_us,
                            });
                        }
                    }
                }
                self.retry_post(op)
            }
            SlotKind::Resume { stream } => {
                if let Some(st) = self.streams.get_mut(&stream) {
                    if st.live == Some(slot) {
                        st.live = None;
                    }
                }
                // Again, for what it resumes for (each try an attempt), or
                // for a transport switch waiting on it.
                let waiting = self.resuming_for(stream);
                if waiting.is_empty() && !self.switch_pending {
                    return;
                }
                let attempts = waiting.first().map_or(1, |&o| self.ops[o].attempts);
                self.schedule_resume(self.backoff(attempts), stream);
            }
            SlotKind::Open => {
                let n = self.init_attempts.max(1);
                self.schedule(self.backoff(n), Action::Open);
            }
        }
    }

    pub(super) fn retry_post(&mut self, op: usize) {
        if self.ops[op].state == OpState::Active && self.count_attempt(op) {
            let wait = self.backoff(self.ops[op].attempts);
            self.schedule(wait, Action::Post(op));
        }
    }

    /// Re-issues an operation (same tag and key) after a 410 or a failed resume.
    pub(super) fn reissue(&mut self, op: usize) {
        self.ops[op].stream = None;
        self.retry_post(op);
    }

    pub(super) fn retry_init(&mut self) {
        if self.inits_exhausted() {
            return self.give_up();
        }
        let wait = self.backoff(self.init_attempts);
        self.schedule(wait, Action::Init);
    }

    /// The bound on `initialize` attempts (over the run) is reached.
    pub(super) fn inits_exhausted(&self) -> bool {
        self.init_attempts >= self.g().max_attempts.saturating_mul(4)
    }

    /// No session can be had: every unresolved operation is abandoned (on
    /// the record), and the workload ends.
    pub(super) fn give_up(&mut self) {
        for op in 0..self.ops.len() {
            if matches!(self.ops[op].state, OpState::Active | OpState::Pending) {
                self.ops[op].state = OpState::Active;
                self.finish(op, Outcome::Abandoned);
            }
        }
        self.next_op = self.ops.len();
    }

    /// Starts over on the current transport, whatever the session state.
    pub(super) fn reinit_now(&mut self) {
        if self.session.is_none() {
            let wait = self.backoff(self.init_attempts);
            self.schedule(wait, Action::Init);
        } else {
            self.reinit();
        }
    }

    /// A 404: the session is gone. Start a new one, then re-issue every
    /// unresolved operation with the same tag and key.
    pub(super) fn reinit(&mut self) {
        if self.session.is_none() {
            return; // already re-initializing
        }
        self.session = None;
        self.switch_pending = false;
        for s in std::mem::take(&mut self.slots).into_values() {
            s.task.abort();
        }
        self.streams.clear();
        self.names.clear();
        self.standalone = None;
        self.holding = None;
        self.resend_after_resume.clear();
        for (op, got) in std::mem::take(&mut self.held) {
            self.handle(op, got);
        }
        self.timers.retain(|_, a| matches!(a, Action::StartNext));
        for o in &mut self.ops {
            o.stream = None;
        }
        self.send_init();
    }

    pub(super) fn after_init(&mut self) {
        let policy = self.policy;
        policy.after_init(self);
        // (A legacy session's stream is the session stream already; a GET
        // on /mcp would be refused under Rule T.)
        if self.spec.delivery == Delivery::SessionStream && self.transport == Transport::Streamable
        {
            self.send_open();
            self.open_before_next = true;
        }
        let unresolved: Vec<usize> = (0..self.ops.len())
            .filter(|&i| self.ops[i].state == OpState::Active)
            .collect();
        if self.init_attempts == 1 && unresolved.is_empty() {
            self.schedule(
                Duration::from_millis(self.spec.start_delay_ms),
                Action::StartNext,
            );
        } else {
            for op in unresolved {
                self.retry_post(op);
            }
            if self.next_op < self.ops.len() && self.ops.iter().all(|o| o.state != OpState::Active)
            {
                self.schedule(Duration::ZERO, Action::StartNext);
            }
        }
    }
}

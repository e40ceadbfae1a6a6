//! Performing the reaction table: the actor's side of [`super::core::react`].
//! Each answer (JSON, SSE headers, a stream's end, no answer, a gap) is
//! turned into the core's [`View`] and [`Answer`], and the [`Action`]s it
//! returns are performed here in order: a call's answer (200, 202, 409
//! with a hint or without, 404, 410, 503), a resume's refusal, a failed
//! exchange, a stream that ends or breaks before the result; and the
//! retries, re-issues, re-initializations and the transport switch they
//! lead to. What a broken stream leads to differs per behaviour
//! ([`super::behaviour`]).

use super::actor::{CStream, Client, Got, OpSet, Slot, SlotKind, Timer};
use super::core::{self, Action, Answer, OnBreak, Request, SlotId, View};
use super::ops::OpState;
use crate::history::Delivery;
use crate::history::{ClientRecord, Outcome, SessionId, Transport};
use crate::protocol::headers;
use crate::protocol::jsonrpc::Message;
use serde_json::Value;
use std::time::Duration;

/// An answer as the actor holds it while it performs the reaction: the
/// exchange it answers and what it carried (the values the core's
/// [`Answer`] only says are there).
#[derive(Default)]
struct Exchange {
    slot: SlotId,
    kind: Option<SlotKind>,
    /// The exchange's stream, once an event id named it.
    stream: Option<u64>,
    last_activity_us: u64,
    status: u16,
    /// A 409's `Last-Event-ID`.
    hint: Option<u64>,
    /// The stream a 409 or a 410 names (`streamFirstEventId`).
    stream_first: Option<u64>,
    /// The session the headers name.
    session: Option<SessionId>,
    msg: Option<Message>,
    /// A gap's missing ranges.
    missing: Option<Vec<(u64, u64)>>,
    /// No answer, after the connection was established.
    connected: bool,
    /// A refusal's `Retry-After`: when to come back.
    retry_after: Option<std::time::Duration>,
    /// The stream's `retry:` advice, ms.
    retry_ms: Option<u64>,
}

impl Exchange {
    /// The exchange of `slot` (`s`), as it stands.
    fn of(slot: SlotId, s: &Slot) -> Exchange {
        Exchange {
            slot,
            kind: Some(s.kind.clone()),
            stream: s.stream,
            last_activity_us: s.last_activity_us,
            retry_ms: s.retry_ms,
            ..Exchange::default()
        }
    }

    fn call(&self) -> Option<usize> {
        match self.kind {
            Some(SlotKind::Call { op }) => Some(op),
            _ => None,
        }
    }

    /// The stream a resume resumes (or the one an event named).
    fn stream(&self) -> Option<u64> {
        match self.kind {
            Some(SlotKind::Resume { stream }) => Some(stream),
            _ => self.stream,
        }
    }
}

/// The request kind of a slot, as the core tells them apart.
fn request_of(kind: &SlotKind) -> Request {
    match kind {
        SlotKind::Init => Request::Initialize,
        SlotKind::LegacyOpen => Request::LegacyOpen,
        SlotKind::LegacyPost => Request::LegacyPost,
        SlotKind::Subscribe => Request::Subscribe,
        SlotKind::Cancel { .. } => Request::Cancel,
        SlotKind::Call { .. } => Request::Call,
        SlotKind::Resume { .. } => Request::Resume,
        SlotKind::Open => Request::Open,
        // Task exchanges never reach the core (`Client::on_task_input`).
        SlotKind::Task { .. } => Request::Call,
    }
}

impl Client {
    /// The facts of the state the core reads for an answer on `s`.
    fn view(&self, s: &Slot) -> View {
        View {
            session: self.session.is_some(),
            legacy: self.transport == Transport::Legacy,
            op_active: match s.kind {
                SlotKind::Call { op } => self.ops[op].state == OpState::Active,
                _ => false,
            },
            standalone: self.standalone.is_some(),
            named: s.stream.is_some(),
            brought_nothing: s.messages == 0,
            waiting: match s.kind {
                SlotKind::Resume { stream } => !self.resuming_for(stream).is_empty(),
                _ => false,
            },
            switch_pending: self.switch_pending,
            keyed: matches!(s.kind, SlotKind::Call { .. }) && self.keyed(),
            advised: s.retry_ms.is_some(),
            reconnect_forever: self.g().reconnect == crate::scenario::Reconnect::Rmcp,
        }
    }

    /// Asks the core what `answer` on `s` leads to, and performs it.
    fn react(&mut self, s: &Slot, answer: Answer, ex: &Exchange) {
        let view = self.view(s);
        for action in core::react(&view, request_of(&s.kind), answer) {
            self.perform(action, ex);
        }
    }

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
        // A call answered in JSON is settled: its result, or a refusal
        // (only a 202's answer is still to come).
        if let (SlotKind::Call { op }, false) = (&s.kind, status == 202) {
            self.ops[*op].in_doubt_on = None;
        }
        let session = h
            .get(headers::MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .or_else(|| self.discovered(&s, matches!(msg, Some(Message::Result { .. }))));
        let data = match &msg {
            Some(Message::Error { error, .. }) => error.data.clone(),
            _ => None,
        };
        let hint = h
            .get(headers::LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let answer = Answer::Json {
            status,
            session: session.is_some(),
            result: matches!(msg, Some(Message::Result { .. })),
            hint: hint.is_some(),
        };
        let retry_after = h
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .map(std::time::Duration::from_secs);
        let ex = Exchange {
            status,
            hint,
            retry_after,
            stream_first: data
                .as_ref()
                .and_then(|d| d.get("streamFirstEventId"))
                .and_then(Value::as_u64),
            session: session.map(SessionId::from),
            msg,
            ..Exchange::of(slot, &s)
        };
        self.react(&s, answer, &ex);
    }

    /// The 2026-07-28 wire has no session: an answer to `server/discover`
    /// (`ok`: a result, or a stream that will carry it) stands for one, by
    /// a marker the wire never carries.
    fn discovered(&self, s: &Slot, ok: bool) -> Option<&'static str> {
        (self.modern() && ok && matches!(s.kind, SlotKind::Init))
            .then_some(crate::protocol::y2026::VERSION)
    }

    /// SSE response headers on `slot`.
    pub(super) fn on_head(
        &mut self,
        slot: SlotId,
        status: u16,
        stream_first: Option<u64>,
        session: Option<String>,
    ) {
        let Some(s) = self.slots.get(&slot) else {
            return;
        };
        // `server/discover` answered on a stream (as rmcp answers it): its
        // result follows there.
        let session = session.or_else(|| self.discovered(s, status == 200).map(str::to_string));
        // The exchange goes on: its slot stays.
        let answer = Answer::Stream {
            status,
            session: session.is_some(),
        };
        let ex = Exchange {
            status,
            stream_first,
            session: session.map(|sid| sid.as_str().into()),
            ..Exchange::of(slot, s)
        };
        let (view, request) = (self.view(s), request_of(&s.kind));
        for action in core::react(&view, request, answer) {
            self.perform(action, &ex);
        }
    }

    /// An `event: gap`: the server announces owed events of this stream it
    /// no longer has. Record the announced loss and keep reading: the
    /// surviving events (the result, if it survived) follow.
    pub(super) fn on_gap(&mut self, slot: SlotId, missing: Option<Vec<(u64, u64)>>) {
        let Some(s) = self.slots.get(&slot) else {
            return;
        };
        let answer = Answer::Gap {
            readable: missing.is_some(),
        };
        let ex = Exchange {
            missing,
            ..Exchange::of(slot, s)
        };
        let (view, request) = (self.view(s), request_of(&s.kind));
        for action in core::react(&view, request, answer) {
            self.perform(action, &ex);
        }
    }

    /// The stream on `slot` ended, `clean`ly or broken.
    pub(super) fn on_end(&mut self, slot: SlotId, clean: bool) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        if self.drops_cursor(slot, &s) {
            return;
        }
        // Ended before any event, it is a failed exchange: after connecting.
        let ex = Exchange {
            connected: true,
            ..Exchange::of(slot, &s)
        };
        self.react(&s, Answer::Ended { clean }, &ex);
    }

    /// No answer on `slot` (`connected`: the connection was established).
    pub(super) fn on_failed(&mut self, slot: SlotId, connected: bool) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        let ex = Exchange {
            connected,
            ..Exchange::of(slot, &s)
        };
        self.react(&s, Answer::Unanswered { connected }, &ex);
    }

    /// Performs one action the core decided for `ex`.
    fn perform(&mut self, action: Action, ex: &Exchange) {
        let op = ex.call();
        match action {
            Action::Answered => {
                if let Some(s) = self.slots.get_mut(&ex.slot) {
                    s.answered = true;
                }
            }
            Action::Touch => {
                let now = self.io.history.now_us();
                if let Some(s) = self.slots.get_mut(&ex.slot) {
                    s.last_activity_us = now;
                }
            }
            Action::RecordStatus { hint, stream_first } => {
                let op = match ex.kind {
                    Some(SlotKind::Resume { stream }) => self.ops_on(stream).first().copied(),
                    _ => op,
                };
                let hint = ex.hint.filter(|_| hint);
                let first = ex.stream_first.filter(|_| stream_first);
                self.status(op, ex.status, hint, first);
            }
            Action::RecordGap => self.record_gap(ex),
            Action::Initialized => {
                if let Some(sid) = ex.session.clone() {
                    self.initialized(sid, ex.msg.as_ref());
                }
            }
            Action::AwaitInitResult => {
                if let Some(s) = self.slots.get_mut(&ex.slot) {
                    s.init_session = ex.session.clone();
                }
            }
            Action::DeliverJson => {
                if let (Some(op), Some(m)) = (op, &ex.msg) {
                    if let Some(rpc) = m.id().cloned() {
                        if self.on_created(op, &rpc, m) || self.on_input_required(op, &rpc, m) {
                            return;
                        }
                        self.ops[op].json_result = true;
                        self.deliver(op, Got::of(rpc, m), None);
                    }
                }
            }
            Action::Abandon => op
                .into_iter()
                .for_each(|o| self.finish(o, Outcome::Abandoned)),
            Action::RideStandalone => op.into_iter().for_each(|o| self.ride_standalone(o)),
            Action::CancelAccepted => {
                if let Some(SlotKind::Cancel { op, rpc }) = &ex.kind {
                    self.record(ClientRecord::CancelAccepted {
                        client: self.spec.index,
                        tag: self.ops.tag(*op),
                        rpc_id: rpc.clone(),
                    });
                }
            }
            Action::ResumeNamed => {
                if let (Some(op), Some(hint)) = (op, ex.hint) {
                    self.on_conflict(op, hint, ex.stream_first);
                }
            }
            Action::FinishNamed => {
                let key = ex.stream_first.map(|f| self.key_of(f));
                if let Some(st) = key.and_then(|k| self.streams.get_mut(&k)) {
                    st.finished = true;
                }
            }
            Action::RetryPost => match ex.retry_after {
                // Told when to come back: then, and not an attempt.
                Some(wait) => op.into_iter().for_each(|o| self.come_back(o, wait)),
                None => op.into_iter().for_each(|o| self.retry_post(o)),
            },
            Action::Reissue => op.into_iter().for_each(|o| self.reissue(o)),
            Action::NoResponse => op.into_iter().for_each(|o| self.no_response(o, ex)),
            Action::Detach => self.detach(ex),
            Action::EndHold => ex.stream().into_iter().for_each(|s| self.end_hold(s)),
            Action::ResumeRefused => ex.stream().into_iter().for_each(|s| self.resume_refused(s)),
            Action::ResumeAccepted => ex
                .stream()
                .into_iter()
                .for_each(|s| self.resume_accepted(s, ex)),
            Action::RetryResume => ex.stream().into_iter().for_each(|s| self.retry_resume(s)),
            Action::Interrupt { clean } => self.interrupt(ex, clean),
            Action::Reinit => self.session_gone(),
            Action::ReinitNow => self.reinit_now(),
            Action::RetryInit => self.retry_init(),
            Action::RetryOpen => {
                let n = self.init_attempts;
                self.schedule(self.backoff(n), Timer::Open);
            }
            Action::RetrySubscribe => {
                let wait = self.backoff(self.init_attempts);
                self.schedule(wait, Timer::Subscribe);
            }
            Action::Switch => self.schedule(Duration::ZERO, Timer::Switch),
            Action::PollResume => self.poll_resume(ex.stream(), ex.retry_ms),
            Action::Reconnect => self.reconnect(ex.stream(), ex.retry_ms),
        }
    }

    /// The initialize result arrived (as JSON, or on its SSE stream) with
    /// session `sid`.
    pub(super) fn initialized(&mut self, sid: SessionId, msg: Option<&Message>) {
        self.session = Some(sid.clone());
        if self.modern() {
            // Nothing was negotiated: every request says its version.
            return self.after_init();
        }
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
            tag: op.map(|o| self.ops.tag(o)),
            session: self.session.clone(),
            status,
            hint,
            stream_first,
        });
    }

    /// A Rule M 409: resume the named stream from our own last seen id
    /// there (the hint only if we have none).
    pub(super) fn on_conflict(&mut self, op: usize, hint: u64, stream_first: Option<u64>) {
        let key = self.key_of(stream_first.unwrap_or(hint));
        self.unretire(key);
        let known = self.streams.contains_key(&key);
        let st = self.streams.entry(key).or_insert(CStream {
            // A stream we never saw: nothing of it arrived, so resume from
            // its first event (the hint only when it does not say).
            last_seen: stream_first.unwrap_or(hint),
            live: None,
            finished: false,
            standalone: false,
            ops: OpSet::default(),
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
                self.send_resume(key, true);
            }
            None => self.send_resume(key, true),
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
            self.schedule(Duration::ZERO, Timer::StartNext);
        }
        for op in waiting {
            self.reissue(op);
        }
    }

    /// A 202: the call's response rides the standalone stream. When that
    /// stream already broke (its connection ended before the 202 came: a
    /// restart that cut both), nothing will arrive on it: the call is
    /// interrupted now, as if its stream broke under it.
    fn ride_standalone(&mut self, op: usize) {
        if let Some(s) = self.standalone {
            self.ops[op].stream = Some(s);
            let mut down = false;
            if let Some(st) = self.streams.get_mut(&s) {
                st.ops.insert(op);
                down = st.live.is_none() && !self.slots.values().any(|x| x.open_unnamed);
            }
            if down {
                let now = self.io.history.now_us();
                return self.interrupted(op, s, now);
            }
            self.set_expecting(s);
        }
    }

    /// The call's POST got no response: the request may have run, and its
    /// stream never began for us.
    fn no_response(&mut self, op: usize, ex: &Exchange) {
        let Some(rpc) = self.ops[op].rpc.clone() else {
            return;
        };
        self.record(ClientRecord::NoResponse {
            client: self.spec.index,
            tag: self.ops.tag(op),
            rpc_id: rpc.clone(),
            connected: ex.connected,
        });
        self.ops[op].unseen.push(rpc);
        if !self.ops[op].interrupted {
            self.ops[op].interrupted = true;
            self.record(ClientRecord::Interrupted {
                client: self.spec.index,
                tag: self.ops.tag(op),
                fault_us: ex.last_activity_us,
            });
        }
    }

    /// The exchange no longer carries its stream.
    fn detach(&mut self, ex: &Exchange) {
        let Some(stream) = ex.stream() else {
            return;
        };
        if let Some(st) = self.streams.get_mut(&stream) {
            if st.live == Some(ex.slot) {
                st.live = None;
            }
        }
    }

    /// A resume's headers arrived (200): the stream is back.
    fn resume_accepted(&mut self, stream: u64, ex: &Exchange) {
        // A mapped resume says how Rule M names this stream from now on.
        if let Some(first) = ex.stream_first.filter(|&f| f != stream) {
            self.names.insert(first, stream);
        }
        if self.hold.on.is_some_and(|(h, _)| h == stream) {
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
            self.schedule(Duration::ZERO, Timer::StartNext);
        }
    }

    /// The resume failed before any answer: again, after the backoff of
    /// the attempts made for what it resumes for.
    fn retry_resume(&mut self, stream: u64) {
        let waiting = self.resuming_for(stream);
        let attempts = waiting.first().map_or(1, |&o| self.ops[o].attempts);
        self.schedule_resume(self.backoff(attempts), stream, true);
    }

    /// The stream ended or broke: it is detached (finished, if it ended
    /// cleanly and nothing waits on it), and every operation waiting on it
    /// is interrupted.
    fn interrupt(&mut self, ex: &Exchange, clean: bool) {
        let Some(stream) = ex.stream else {
            return;
        };
        // An op whose result is held behind a resume has its result.
        let waiting: Vec<usize> = self
            .ops_on(stream)
            .into_iter()
            .filter(|op| !self.hold.results.iter().any(|(o, _)| o == op))
            .collect();
        if let Some(st) = self.streams.get_mut(&stream) {
            if st.live == Some(ex.slot) {
                st.live = None;
            }
            if clean && waiting.is_empty() && !st.standalone {
                st.finished = true;
            }
        }
        for op in waiting {
            self.interrupted(op, stream, ex.last_activity_us);
        }
    }

    /// Records the gap the server announced on the exchange's stream.
    fn record_gap(&mut self, ex: &Exchange) {
        let (Some(stream), Some(session), Some(missing)) =
            (ex.stream, self.session.clone(), ex.missing.clone())
        else {
            return;
        };
        self.record(ClientRecord::Gap {
            client: self.spec.index,
            session,
            stream,
            named: crate::protocol::sse::gap_count(&missing),
            missing,
        });
    }

    pub(super) fn interrupted(&mut self, op: usize, stream: u64, fault_us: u64) {
        if !self.ops[op].interrupted {
            self.ops[op].interrupted = true;
            self.record(ClientRecord::Interrupted {
                client: self.spec.index,
                tag: self.ops.tag(op),
                fault_us,
            });
        }
        let wait = self.backoff(self.ops[op].attempts);
        // On the 2026-07-28 wire every behaviour re-issues with a new id:
        // there is nothing to resume.
        let on_break = if self.modern() {
            OnBreak::Repost
        } else {
            self.policy.on_interrupted(self.transport)
        };
        match on_break {
            OnBreak::Repost => self.repost_after(op, wait),
            OnBreak::Resume { move_on } => {
                self.schedule_resume(wait, stream, true);
                if move_on && op + 1 == self.next_op {
                    self.next_on_resume = true;
                }
            }
            OnBreak::Switch => self.schedule(Duration::ZERO, Timer::Switch),
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
        self.retired.clear();
        self.names.clear();
        self.standalone = None;
        self.hold.on = None;
        self.resend_after_resume.clear();
        for (op, got) in std::mem::take(&mut self.hold.results) {
            self.handle(op, got);
        }
        self.io.timers.retain(|_, a| matches!(a, Timer::StartNext));
        for o in self.ops.live_mut() {
            o.stream = None;
        }
        self.send_init();
    }

    pub(super) fn after_init(&mut self) {
        // The 2026-07-28 wire has no standalone stream and no
        // resources/subscribe (its notifications ride subscriptions/listen,
        // which no workload here needs).
        let more = if self.modern() {
            super::core::AfterInit::default()
        } else {
            self.policy.after_init(self.transport, self.spec.delivery)
        };
        if more.subscribe {
            self.subscribe();
        }
        if more.open {
            self.send_open();
        }
        // (A legacy session's stream is the session stream already; a GET
        // on /mcp would be refused under Rule T.)
        if self.spec.delivery == Delivery::SessionStream && self.transport == Transport::Streamable
        {
            self.send_open();
            self.open_before_next = true;
        }
        let unresolved: Vec<usize> = self.active.iter().copied().collect();
        if self.init_attempts == 1 && unresolved.is_empty() {
            self.schedule(
                Duration::from_millis(self.spec.start_delay_ms),
                Timer::StartNext,
            );
        } else {
            for op in unresolved {
                self.retry_post(op);
            }
            if self.next_op < self.calls() && self.active.is_empty() {
                self.schedule(Duration::ZERO, Timer::StartNext);
            }
        }
    }

    /// The network change (planned, or the legacy stream lost): leave the
    /// legacy stream and reconnect over streamable HTTP with the same
    /// session id and the last legacy event id as `Last-Event-ID`. Only a
    /// client whose behaviour starts on legacy has one.
    pub(super) fn switch(&mut self) {
        if !self.policy.legacy_first() {
            return;
        }
        let planned = std::mem::take(&mut self.planned.switch_due);
        if self.transport != Transport::Legacy {
            return;
        }
        self.planned.switched = Some((!planned).then(|| {
            let during = self
                .next_op
                .checked_sub(1)
                .map_or("before its first call".to_string(), |n| {
                    format!("during call {n}")
                });
            match self.planned.legacy_dropped {
                Some(n) => format!("a planned drop closed its legacy stream during call {n}"),
                None => format!("its legacy stream broke {during}"),
            }
        }));
        let stream = self.standalone;
        let cursor = stream
            .and_then(|k| self.streams.get(&k))
            .map(|st| st.last_seen);
        self.record(ClientRecord::Switched {
            client: self.spec.index,
            from: Transport::Legacy,
            cursor,
        });
        self.transport = Transport::Streamable;
        if let Some(k) = stream {
            if let Some(old) = self.streams.get_mut(&k).and_then(|st| st.live.take()) {
                if let Some(o) = self.slots.remove(&old) {
                    o.task.abort();
                }
            }
            self.switch_pending = true;
            self.send_resume(k, true);
        } else {
            self.reinit();
        }
    }
}

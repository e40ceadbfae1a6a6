//! Rebuilds the guard's view at every decision from the server's primitive
//! records, and checks the logged view and verdict against the oracle's own
//! statement of Rule M (docs/rules.md). Written independently of `guard/`.

use super::intern::Sessions;
use crate::history::{
    Delivery, Entry, EventKind, LoggedDecision, LoggedReason, LoggedStream, LoggedVerdict,
    LoggedView, Rec, Record, ServerClose, SessionId, StreamKind, WordKind,
};
use crate::protocol::RequestId;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, Default)]
struct Stream {
    last_produced: u64,
    last_written: u64,
    watermark: u64,
    cursor_presented: bool,
    /// The client's own cursor: the last resume's, raised by cursors on POST.
    client_cursor: Option<u64>,
    conn: Option<u64>,
    dropped: bool,
    lost: bool,
    lost_reported: bool,
    in_flight: u32,
    finished: bool,
    replay_backlog: u32,
    /// Carries responses: every stream but a standalone GET stream in
    /// `post-stream` delivery (notifications only), which Rule M ignores.
    response: bool,
    /// The replica that opened it (0 without a deployment).
    replica: u32,
    /// Closed by the server after `retry:`, not resumed yet, not expired.
    paused: bool,
}

impl Stream {
    /// A dropped stream retires once nothing is in flight and the client
    /// itself (never the server's estimate) says it has the last event.
    fn retire_if_caught_up(&mut self) {
        if self.dropped
            && !self.finished
            && self.in_flight == 0
            && self.client_cursor.is_some_and(|c| c >= self.last_produced)
        {
            self.finished = true;
            self.dropped = false;
        }
    }

    fn delivered(&self) -> u64 {
        if self.conn.is_some() && !self.dropped {
            self.last_written.max(self.watermark)
        } else {
            self.watermark
        }
    }
}

#[derive(Default)]
struct Session {
    streams: BTreeMap<u32, Stream>,
    /// POSTs queued, with the replica whose guard queued them.
    queued: BTreeMap<RequestId, Option<u32>>,
}

impl Session {
    /// The view of the guard of `replica` (`None`: the one server's, or
    /// every replica's on one store): the streams it opened.
    fn view(&self, replica: Option<u32>) -> LoggedView {
        let mine = |r: u32| replica.is_none_or(|x| x == r);
        LoggedView {
            replay_backlog: self
                .streams
                .values()
                .filter(|s| mine(s.replica))
                .map(|s| u64::from(s.replay_backlog))
                .sum(),
            queued: self.queued.values().filter(|&&q| q == replica).count() as u32,
            dropped: self
                .streams
                .iter()
                .filter(|(_, s)| s.response && s.dropped && !s.lost_reported && mine(s.replica))
                .map(|(&i, s)| LoggedStream {
                    stream: i,
                    last_produced: s.last_produced,
                    last_written: s.last_written,
                    watermark: s.watermark,
                    cursor_presented: s.cursor_presented,
                    lost: s.lost,
                    in_flight: s.in_flight,
                })
                .collect(),
        }
    }

    /// Rule M as the oracle states it: the verdicts (and reasons) legal on
    /// this view. Row 0 allows either queueing or refusing (the queue's
    /// bound and wait are server settings the trace does not repeat).
    fn legal(
        v: &LoggedView,
        idempotent: bool,
        dedup_honored: bool,
    ) -> Vec<(LoggedVerdict, Option<LoggedReason>)> {
        use LoggedReason as R;
        use LoggedVerdict::{Allow, Fresh, Queue, Reject};
        if v.replay_backlog > 0 {
            return vec![(Queue, None), (Reject, Some(R::ReplayInProgress))];
        }
        if v.dropped.is_empty() {
            return vec![(Fresh, None)];
        }
        if v.dropped.iter().any(|s| s.lost) {
            return vec![(Reject, Some(R::StreamLost))];
        }
        if v.dropped.iter().any(|s| s.watermark < s.last_produced) {
            return vec![(Reject, Some(R::NotDrained))];
        }
        if v.dropped.iter().any(|s| s.in_flight > 0) {
            return vec![(Reject, Some(R::InFlight))];
        }
        if !idempotent && !dedup_honored {
            return vec![(Reject, Some(R::NonIdempotent))];
        }
        vec![(Allow, None)]
    }
}

/// Decisions the oracle disputes.
#[derive(Default, Debug)]
pub struct DecisionErrors {
    /// How many.
    pub count: u64,
    /// Sessions they happened in.
    pub sessions: BTreeSet<SessionId>,
    /// One line each, for the report.
    pub details: Vec<String>,
}

/// Replays the server's records and checks every logged decision.
pub fn decision_errors(entries: &[Entry]) -> DecisionErrors {
    let mut a = Auditor::default();
    for e in entries {
        a.entry(e);
    }
    a.out
}

/// [`decision_errors`] one entry at a time.
#[derive(Default)]
pub(super) struct Auditor {
    audit: Audit,
    pub out: DecisionErrors,
}

impl Auditor {
    /// Takes the next entry.
    pub fn entry(&mut self, e: &Entry) {
        let Rec::Server(r) = &e.record else { return };
        let (audit, out) = (&mut self.audit, &mut self.out);
        match r {
            Record::Decision {
                session,
                rpc_id,
                decision,
                view,
                idempotent,
                dedup_honored,
                replica,
            } => {
                let s = audit.sessions.entry(session);
                // A decision for a queued POST is its dequeue.
                s.queued.remove(rpc_id);
                let wrong = s.disputes(*replica, decision, view, *idempotent, *dedup_honored);
                if !wrong.is_empty() {
                    out.count += 1;
                    out.sessions.insert(session.clone());
                    out.details.push(format!(
                        "seq {} session {session} rpc {rpc_id}: {}",
                        e.seq,
                        wrong.join("; ")
                    ));
                }
                if decision.verdict == LoggedVerdict::Queue {
                    s.queued.insert(rpc_id.clone(), *replica);
                }
            }
            r => audit.observe(r),
        }
    }
}

/// The guard's view as the server's records rebuild it.
#[derive(Default)]
struct Audit {
    sessions: States,
    /// Whether the standalone GET stream carries responses.
    standalone_responses: bool,
}

impl Audit {
    /// What one server record (other than a decision) changes in the view.
    fn observe(&mut self, r: &Record) {
        let sessions = &mut self.sessions;
        match r {
            Record::ServerStarted {
                delivery, replica, ..
            } => {
                // A replica's restart leaves the other replicas' sessions;
                // its own are never named again (their ids are gone).
                if replica.is_none() {
                    sessions.clear();
                }
                self.standalone_responses = *delivery == Delivery::SessionStream;
            }
            Record::StreamOpened {
                session,
                stream,
                conn,
                kind,
                ..
            } => {
                let response = *kind != StreamKind::Standalone || self.standalone_responses;
                let s = sessions.entry(session);
                s.streams.insert(
                    *stream,
                    Stream {
                        conn: Some(*conn),
                        replica: crate::history::replica_of_conn(*conn),
                        response,
                        ..Stream::default()
                    },
                );
            }
            Record::QueueLeft { session, rpc_id } => {
                if let Some(s) = sessions.get_mut(session) {
                    s.queued.remove(rpc_id);
                }
            }
            _ => {
                if let Some((session, stream)) = stream_of(r) {
                    if let Some(st) = sessions.stream_mut(session, stream) {
                        st.observe(r);
                    }
                }
            }
        }
    }
}

/// The stream a record about one stream names.
fn stream_of(r: &Record) -> Option<(&SessionId, u32)> {
    match r {
        Record::Produced {
            session, stream, ..
        }
        | Record::Written {
            session, stream, ..
        }
        | Record::CloseSeen {
            session, stream, ..
        }
        | Record::ServerClosed {
            session, stream, ..
        }
        | Record::StreamFinished { session, stream }
        | Record::StreamPaused {
            session, stream, ..
        }
        | Record::PauseExpired { session, stream }
        | Record::CursorPresented {
            session, stream, ..
        }
        | Record::Resumed {
            session, stream, ..
        }
        | Record::Evicted {
            session, stream, ..
        }
        | Record::LostReported {
            session, stream, ..
        }
        | Record::StoreWord {
            session, stream, ..
        }
        | Record::ToolStarted {
            session, stream, ..
        }
        | Record::ToolEnded {
            session, stream, ..
        } => Some((session, *stream)),
        _ => None,
    }
}

impl Stream {
    /// What a record about this stream changes in its view.
    fn observe(&mut self, r: &Record) {
        match r {
            Record::Produced { event, kind, .. } => {
                self.last_produced = *event;
                if *kind == EventKind::Priming {
                    self.last_written = *event;
                    self.watermark = *event;
                }
            }
            Record::Written {
                event,
                conn,
                replay,
                ..
            } if self.conn == Some(*conn) => {
                self.last_written = self.last_written.max(*event);
                if *replay && self.replay_backlog > 0 {
                    self.replay_backlog -= 1;
                }
            }
            Record::CloseSeen { .. } => self.close_seen(),
            Record::StreamPaused { .. } if !self.finished => {
                self.conn = None;
                self.paused = true;
            }
            Record::PauseExpired { .. } if std::mem::take(&mut self.paused) => self.close_seen(),
            Record::ServerClosed {
                why: ServerClose::TakenOver,
                ..
            } => {
                self.replay_backlog = 0;
                self.conn = None;
            }
            Record::StreamFinished { .. } => {
                self.finished = true;
                self.paused = false;
                self.conn = None;
                self.dropped = false;
            }
            Record::CursorPresented { event, lost, .. } => self.cursor(*event, *lost),
            Record::Resumed {
                cursor,
                backlog,
                conn,
                ..
            } => {
                self.conn = Some(*conn);
                self.watermark = *cursor;
                self.last_written = *cursor;
                self.cursor_presented = false;
                self.client_cursor = Some(*cursor);
                self.replay_backlog = *backlog;
                self.dropped = false;
                self.paused = false;
            }
            // Only an owed result makes a stream lost; other owed events
            // are announced by a gap (`GapReplayed`), which changes nothing
            // in Rule M's view.
            Record::Evicted {
                event,
                result: true,
                ..
            } if *event > self.delivered() => self.lost = true,
            // Another replica's 410 reaches this stream's view only when
            // its own replica loads it (`StoreWord`).
            Record::LostReported { replica, .. } if replica.is_none_or(|r| r == self.replica) => {
                self.lost_reported = true
            }
            Record::StoreWord { event, kind, .. } => match kind {
                WordKind::Cursor => self.cursor(*event, false),
                WordKind::Lost => self.cursor(*event, true),
                WordKind::Reported => self.lost_reported = true,
                // Served by another replica from the store: no connection
                // of this one writes it, and nothing is replayed here.
                WordKind::Resumed => {
                    self.conn = None;
                    self.watermark = *event;
                    self.last_written = *event;
                    self.cursor_presented = false;
                    self.client_cursor = Some(*event);
                    self.replay_backlog = 0;
                    self.dropped = false;
                }
            },
            Record::ToolStarted { .. } => self.in_flight += 1,
            Record::ToolEnded { .. } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.retire_if_caught_up();
            }
            _ => {}
        }
    }

    /// The client presented `event` as its cursor (`lost`: it reports the
    /// stream lost short of it).
    fn cursor(&mut self, event: u64, lost: bool) {
        // A finished stream reopens only when the client reports it lost
        // short of its last event.
        if self.finished {
            if !(lost && event < self.last_produced) {
                return;
            }
            self.finished = false;
        }
        self.watermark = if self.cursor_presented {
            self.watermark.max(event)
        } else {
            event
        };
        self.cursor_presented = true;
        self.client_cursor = self.client_cursor.max(Some(event));
        if lost {
            self.dropped = true;
            self.paused = false;
        }
        self.retire_if_caught_up();
    }

    /// The stream's connection ended (or its pause ran out): before the
    /// stream finished, a drop.
    fn close_seen(&mut self) {
        self.conn = None;
        if !self.finished {
            if !self.cursor_presented {
                self.watermark = self.last_written;
            }
            self.replay_backlog = 0;
            self.dropped = true;
            self.retire_if_caught_up();
        }
    }
}

impl Session {
    /// What the oracle disputes in a logged decision: its view against
    /// the rebuilt one, its verdict against the rule's.
    fn disputes(
        &self,
        replica: Option<u32>,
        decision: &LoggedDecision,
        view: &LoggedView,
        idempotent: bool,
        dedup_honored: bool,
    ) -> Vec<String> {
        let mut rebuilt = self.view(replica);
        let mut wrong = Vec::new();
        // On a shared store the logged view also holds the dropped streams
        // other replicas published: the audit rebuilds the deciding
        // replica's own streams and takes the others as loaded (they are
        // what the store said, checked only to be streams of the session
        // another replica opened), then states the rule on both.
        let ours = |i: u32| {
            self.streams
                .get(&i)
                .is_some_and(|s| replica.is_none_or(|r| r == s.replica))
        };
        let (own, foreign): (Vec<LoggedStream>, Vec<LoggedStream>) =
            view.dropped.iter().cloned().partition(|d| ours(d.stream));
        let logged_own = LoggedView {
            dropped: own,
            ..view.clone()
        };
        if rebuilt != logged_own {
            wrong.push(format!("logged view {view:?} != rebuilt {rebuilt:?}"));
        }
        for d in &foreign {
            if replica.is_none() || !self.streams.contains_key(&d.stream) {
                wrong.push(format!(
                    "stream {} in the view is none another replica opened",
                    d.stream
                ));
            }
        }
        rebuilt.dropped.extend(foreign);
        rebuilt.dropped.sort_unstable_by_key(|d| d.stream);
        let legal = Self::legal(&rebuilt, idempotent, dedup_honored);
        if !legal.contains(&(decision.verdict, decision.reason)) {
            // Named as the trace names them.
            let names: Vec<_> = legal
                .iter()
                .map(|(v, r)| (v.as_str(), r.map(LoggedReason::as_str)))
                .collect();
            wrong.push(format!(
                "verdict {}/{:?} where the rules give {names:?}",
                decision.verdict.as_str(),
                decision.reason.map(LoggedReason::as_str)
            ));
        }
        wrong
    }
}

/// The sessions of the current server incarnation, by interned id.
#[derive(Default)]
struct States {
    ids: Sessions,
    states: Vec<Option<Session>>,
}

impl States {
    /// A server restart: every session is gone (ids stay interned).
    fn clear(&mut self) {
        self.states.clear();
    }

    fn entry(&mut self, session: &SessionId) -> &mut Session {
        let i = self.ids.id(session) as usize;
        if i >= self.states.len() {
            self.states.resize_with(i + 1, || None);
        }
        self.states[i].get_or_insert_with(Session::default)
    }

    fn get_mut(&mut self, session: &SessionId) -> Option<&mut Session> {
        let i = self.ids.get(session)? as usize;
        self.states.get_mut(i)?.as_mut()
    }

    fn stream_mut(&mut self, session: &SessionId, stream: u32) -> Option<&mut Stream> {
        self.get_mut(session)?.streams.get_mut(&stream)
    }
}

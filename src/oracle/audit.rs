//! Rebuilds the guard's view at every decision from the server's primitive
//! records, and checks the logged view and verdict against the oracle's own
//! statement of Rule M (README: the two rules). Written independently of `guard/`.

use super::intern::Sessions;
use crate::history::{
    Entry, EventKind, LoggedStream, LoggedView, Rec, Record, ServerClose, SessionId, StreamKind,
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
    queued: BTreeSet<RequestId>,
}

impl Session {
    fn view(&self) -> LoggedView {
        LoggedView {
            replay_backlog: self
                .streams
                .values()
                .map(|s| u64::from(s.replay_backlog))
                .sum(),
            queued: self.queued.len() as u32,
            dropped: self
                .streams
                .iter()
                .filter(|(_, s)| s.response && s.dropped && !s.lost_reported)
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
        &self,
        idempotent: bool,
        dedup_honored: bool,
    ) -> Vec<(&'static str, Option<&'static str>)> {
        let v = self.view();
        if v.replay_backlog > 0 {
            return vec![("queue", None), ("reject", Some("replay_in_progress"))];
        }
        if v.dropped.is_empty() {
            return vec![("fresh", None)];
        }
        if v.dropped.iter().any(|s| s.lost) {
            return vec![("reject", Some("stream_lost"))];
        }
        if v.dropped.iter().any(|s| s.watermark < s.last_produced) {
            return vec![("reject", Some("not_drained"))];
        }
        if v.dropped.iter().any(|s| s.in_flight > 0) {
            return vec![("reject", Some("in_flight"))];
        }
        if !idempotent && !dedup_honored {
            return vec![("reject", Some("non_idempotent"))];
        }
        vec![("allow", None)]
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
    let mut sessions = States::default();
    let mut out = DecisionErrors::default();
    // Whether the standalone GET stream carries responses.
    let mut standalone_responses = false;
    for e in entries {
        let Rec::Server(r) = &e.record else { continue };
        match r {
            Record::ServerStarted { delivery, .. } => {
                sessions.clear();
                standalone_responses = *delivery == "session-stream";
            }
            Record::StreamOpened {
                session,
                stream,
                conn,
                kind,
                ..
            } => {
                let s = sessions.entry(session);
                s.streams.insert(
                    *stream,
                    Stream {
                        conn: Some(*conn),
                        response: *kind != StreamKind::Standalone || standalone_responses,
                        ..Stream::default()
                    },
                );
            }
            Record::Produced {
                session,
                stream,
                event,
                kind,
                ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.last_produced = *event;
                    if *kind == EventKind::Priming {
                        st.last_written = *event;
                        st.watermark = *event;
                    }
                }
            }
            Record::Written {
                session,
                stream,
                event,
                conn,
                replay,
                ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    if st.conn == Some(*conn) {
                        st.last_written = st.last_written.max(*event);
                        if *replay && st.replay_backlog > 0 {
                            st.replay_backlog -= 1;
                        }
                    }
                }
            }
            Record::CloseSeen {
                session, stream, ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.conn = None;
                    if !st.finished {
                        if !st.cursor_presented {
                            st.watermark = st.last_written;
                        }
                        st.replay_backlog = 0;
                        st.dropped = true;
                        st.retire_if_caught_up();
                    }
                }
            }
            Record::ServerClosed {
                session,
                stream,
                why: ServerClose::TakenOver,
                ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.replay_backlog = 0;
                    st.conn = None;
                }
            }
            Record::StreamFinished { session, stream } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.finished = true;
                    st.conn = None;
                    st.dropped = false;
                }
            }
            Record::CursorPresented {
                session,
                stream,
                event,
                lost,
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    // A finished stream reopens only when the client reports
                    // it lost short of its last event.
                    if st.finished {
                        if !(*lost && *event < st.last_produced) {
                            continue;
                        }
                        st.finished = false;
                    }
                    st.watermark = if st.cursor_presented {
                        st.watermark.max(*event)
                    } else {
                        *event
                    };
                    st.cursor_presented = true;
                    st.client_cursor = st.client_cursor.max(Some(*event));
                    if *lost {
                        st.dropped = true;
                    }
                    st.retire_if_caught_up();
                }
            }
            Record::Resumed {
                session,
                stream,
                cursor,
                backlog,
                conn,
                ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.conn = Some(*conn);
                    st.watermark = *cursor;
                    st.last_written = *cursor;
                    st.cursor_presented = false;
                    st.client_cursor = Some(*cursor);
                    st.replay_backlog = *backlog;
                    st.dropped = false;
                }
            }
            Record::Evicted {
                session,
                stream,
                event,
                result: true,
                ..
            } => {
                // Only an owed result makes a stream lost; other owed
                // events are announced by a gap (`GapReplayed`), which
                // changes nothing in Rule M's view.
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    if *event > st.delivered() {
                        st.lost = true;
                    }
                }
            }
            Record::LostReported { session, stream } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.lost_reported = true;
                }
            }
            Record::ToolStarted {
                session, stream, ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.in_flight += 1;
                }
            }
            Record::ToolEnded {
                session, stream, ..
            } => {
                if let Some(st) = sessions.stream_mut(session, *stream) {
                    st.in_flight = st.in_flight.saturating_sub(1);
                    st.retire_if_caught_up();
                }
            }
            Record::QueueLeft { session, rpc_id } => {
                if let Some(s) = sessions.get_mut(session) {
                    s.queued.remove(rpc_id);
                }
            }
            Record::Decision {
                session,
                rpc_id,
                decision,
                view,
                idempotent,
                dedup_honored,
            } => {
                let s = sessions.entry(session);
                // A decision for a queued POST is its dequeue.
                s.queued.remove(rpc_id);
                let rebuilt = s.view();
                let legal = s.legal(*idempotent, *dedup_honored);
                let mut wrong = Vec::new();
                if rebuilt != **view {
                    wrong.push(format!("logged view {view:?} != rebuilt {rebuilt:?}"));
                }
                if !legal.contains(&(decision.verdict, decision.reason)) {
                    wrong.push(format!(
                        "verdict {}/{:?} where the rules give {legal:?}",
                        decision.verdict, decision.reason
                    ));
                }
                if !wrong.is_empty() {
                    out.count += 1;
                    out.sessions.insert(session.clone());
                    out.details.push(format!(
                        "seq {} session {session} rpc {rpc_id}: {}",
                        e.seq,
                        wrong.join("; ")
                    ));
                }
                if decision.verdict == "queue" {
                    s.queued.insert(rpc_id.clone());
                }
            }
            _ => {}
        }
    }
    out
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

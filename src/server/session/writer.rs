//! The per-connection stream writer: drains a stream's events from the
//! store onto one connection, in id order, under a write deadline.
//!
//! A resume makes it a replay: backlog events (up to the stream's last
//! produced event at the resume) go out `replay_interval_ms` apart. The
//! guarded writer sends the backlog, then `replay-end`, then live events;
//! the unguarded writer sends live events as they are produced, between
//! backlog events.

use super::handover::{lost, on_close, send, with_session, Lost};
use super::{Scope, Sent};
use crate::guard::{EventId, StreamIdx};
use crate::history::{ConnId, Record, ServerClose, SessionId, Transport};
use crate::protocol::sse;
use crate::server::http::body::ServerBody;
use crate::server::Shared;
use bytes::Bytes;
use http::Response;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Where a writer starts.
pub(crate) struct Plan {
    /// Write events after this id (`None`: every event of the stream).
    pub after: Option<EventId>,
    /// Events up to this id are replay backlog (= `after` when none).
    pub replay_until: Option<EventId>,
    /// This connection resumes the stream.
    pub replay: bool,
    /// Live events go out between backlog events (the unguarded replay
    /// after a drop, as the SDKs write it); otherwise the backlog first.
    pub interleave: bool,
    /// The connection's transport: legacy connections number events with
    /// the legacy stream's own counter and carry no priming.
    pub transport: Transport,
    /// A frame to write before any event (the legacy `endpoint` event).
    pub preamble: Option<Bytes>,
}

impl Plan {
    /// A new streamable stream: every event of it (its priming event
    /// first), live.
    pub fn live() -> Self {
        Plan {
            after: None,
            replay_until: None,
            replay: false,
            interleave: false,
            transport: Transport::Streamable,
            preamble: None,
        }
    }
}

enum Next {
    Write {
        id: EventId,
        frame: Bytes,
        backlog: bool,
        /// A message, not a priming event: it counts toward a polling close.
        message: bool,
    },
    Pace(EventId),
    Gap {
        id: EventId,
        backlog: bool,
    },
    Marker,
    Finish,
    Wait,
    Exit,
}

/// Starts the writer of stream `s` on connection `conn`.
pub(crate) fn spawn(
    shared: Rc<Shared>,
    sid: SessionId,
    s: StreamIdx,
    conn: ConnId,
    tx: mpsc::Sender<Bytes>,
    plan: Plan,
) {
    // From now on the stream owes what this connection has yet to write
    // (a resume owes the events after its cursor, not what an older
    // connection wrote).
    let interleave = plan.interleave;
    with_session(&shared, &sid, |sess| {
        if let Some(rt) = sess.streams.get_mut(s).filter(|rt| rt.conn == Some(conn)) {
            rt.sent = Sent {
                last: plan.after,
                interleaved: interleave
                    .then_some((plan.replay_until.max(plan.after), plan.replay_until)),
            };
        }
    });
    tokio::task::spawn_local(run(shared, sid, s, conn, tx, plan));
}

/// One writer's fixed part: the stream and connection it writes, the plan
/// it follows, and the pacing and deadline it writes under.
struct Writer {
    shared: Rc<Shared>,
    sid: SessionId,
    s: StreamIdx,
    conn: ConnId,
    plan: Plan,
    /// An unguarded replay: live events go out between backlog events.
    interleave: bool,
    /// The pause between backlog events.
    pace: Duration,
    /// How long one frame may wait to be handed over.
    deadline: Duration,
}

/// Where a writer stands. Non-interleaved: `last` is the one cursor.
/// Interleaved: `last` walks the backlog and `live_last` the events
/// produced after the resume.
struct Position {
    last: Option<EventId>,
    live_last: Option<EventId>,
    /// The guarded replay's `replay-end` is still to be written.
    marker_due: bool,
    /// The backlog event whose pause has passed.
    paced: Option<EventId>,
    /// The backlog event being paced and when its pause ends: a live event
    /// written meanwhile must not restart the pause.
    pace_until: Option<(EventId, tokio::time::Instant)>,
    /// Messages written on this connection (toward a polling close).
    messages: u32,
}

impl Position {
    fn start(plan: &Plan, guarded: bool) -> Self {
        Position {
            last: plan.after,
            live_last: plan.replay_until.max(plan.after),
            marker_due: plan.replay && guarded,
            paced: None,
            pace_until: None,
            messages: 0,
        }
    }

    /// When the pause before backlog event `id` ends (started now, unless
    /// it is already running).
    fn pause_until(&mut self, id: EventId, pace: Duration) -> tokio::time::Instant {
        match self.pace_until {
            Some((p, t)) if p == id => t,
            _ => {
                let t = tokio::time::Instant::now() + pace;
                self.pace_until = Some((id, t));
                t
            }
        }
    }
}

async fn run(
    shared: Rc<Shared>,
    sid: SessionId,
    s: StreamIdx,
    conn: ConnId,
    tx: mpsc::Sender<Bytes>,
    plan: Plan,
) {
    let w = Writer {
        interleave: plan.interleave,
        pace: Duration::from_millis(shared.cfg.replay_interval_ms),
        deadline: Duration::from_millis(shared.cfg.write_deadline_ms),
        shared,
        sid,
        s,
        conn,
        plan,
    };
    let mut at = Position::start(&w.plan, w.shared.guarded());
    let Some(wake) = with_session(&w.shared, &w.sid, |sess| {
        sess.streams.get(s).map(|rt| rt.wake.clone())
    })
    .flatten() else {
        return;
    };
    if let Some(pre) = w.plan.preamble.clone() {
        if let Err(why) = send(&tx, pre, w.deadline).await {
            return w.lost(why);
        }
    }
    loop {
        let mut notified = pin!(wake.notified());
        notified.as_mut().enable();
        let next = w.next_action(&at);
        if w.poll_due(&at, &next) {
            return super::polling::pause(&w.shared, &w.sid, s, w.conn, &tx, w.deadline).await;
        }
        match next {
            Next::Exit => return,
            Next::Wait => {
                tokio::select! {
                    biased;
                    _ = tx.closed() => return w.lost(Lost::Closed),
                    _ = notified => continue,
                    _ = w.keepalive() => {
                        if let Err(why) = send(&tx, sse::encode_comment("keep-alive"), w.deadline).await {
                            return w.lost(why);
                        }
                    }
                }
            }
            Next::Pace(id) => {
                let until = at.pause_until(id, w.pace);
                tokio::select! {
                    biased;
                    _ = tx.closed() => return w.lost(Lost::Closed),
                    _ = notified, if w.interleave => continue,
                    _ = tokio::time::sleep_until(until) => at.paced = Some(id),
                    _ = w.keepalive() => {
                        if let Err(why) = send(&tx, sse::encode_comment("keep-alive"), w.deadline).await {
                            return w.lost(why);
                        }
                    }
                }
            }
            Next::Gap { id, backlog } => {
                if w.shared.guarded() {
                    // Owed events are gone: never a silent gap. Close the
                    // connection; the client's resume then gets an
                    // announced `gap` and the survivors (410 only when the
                    // result itself is gone).
                    w.shared.close_conn(w.conn);
                    let (shared, sid) = (&w.shared, &w.sid);
                    return on_close(shared, sid, s, w.conn, Some(ServerClose::Evicted));
                }
                w.advance(&mut at, id, backlog, false);
            }
            Next::Marker => {
                if let Err(why) = send(&tx, w.marker(), w.deadline).await {
                    return w.lost(why);
                }
                at.marker_due = false;
                w.shared.history.record(Record::ReplayEnd {
                    session: w.sid.clone(),
                    stream: s,
                    conn: w.conn,
                });
            }
            Next::Write {
                id,
                frame,
                backlog,
                message,
            } => {
                if let Err(why) = send(&tx, frame, w.deadline).await {
                    return w.lost(why);
                }
                at.messages += u32::from(message);
                w.advance(&mut at, id, backlog, true);
            }
            Next::Finish => {
                drop(tx);
                return w.finish();
            }
        }
    }
}

impl Writer {
    /// Whether a polling close is due before `next`: `poll_after` messages
    /// are written on this connection and more of the stream is to come
    /// (never on a stream that is finishing, never where resuming is not
    /// offered: the 2026-07-28 wire, the cancel arm, the legacy transport).
    fn poll_due(&self, at: &Position, next: &Next) -> bool {
        let k = self.shared.cfg.poll_after;
        k > 0
            && at.messages >= k
            && matches!(next, Next::Write { .. } | Next::Wait | Next::Pace(_))
            // An interleaved replay closes only with its backlog behind
            // it: a close between a live event and older backlog would
            // leave the client a cursor past events it never got.
            && !(self.interleave && at.last < self.plan.replay_until)
            && self.plan.transport == Transport::Streamable
            && !self.shared.variant.cancels_on_close()
            && with_session(&self.shared, &self.sid, |sess| sess.scope == Scope::Named)
                .unwrap_or(false)
    }

    /// What to do next from `at`, as the store stands now.
    fn next_action(&self, at: &Position) -> Next {
        let (plan, s) = (&self.plan, self.s);
        with_session(&self.shared, &self.sid, |sess| {
            let Some(rt) = sess.streams.get(s).filter(|rt| rt.conn == Some(self.conn)) else {
                return Next::Exit; // taken over
            };
            let first_after = |x: Option<EventId>| {
                let i = rt.ids.partition_point(|&e| Some(e) <= x);
                rt.ids.get(i).copied()
            };
            let emit = |id: EventId, backlog: bool| match sess.data(id) {
                None => Next::Gap { id, backlog },
                Some(_) if backlog && !self.pace.is_zero() && at.paced != Some(id) => {
                    Next::Pace(id)
                }
                Some(data) => Next::Write {
                    id,
                    frame: encode(sess, s, id, data, plan.transport, self.shared.cfg.retry_ms),
                    backlog,
                    message: !data.is_empty(),
                },
            };
            if self.interleave {
                if let Some(id) = first_after(at.live_last) {
                    return emit(id, false);
                }
                if let Some(id) = first_after(at.last).filter(|&id| Some(id) <= plan.replay_until) {
                    return emit(id, true);
                }
            } else {
                match first_after(at.last) {
                    Some(id) if Some(id) <= plan.replay_until => return emit(id, true),
                    Some(_) | None if at.marker_due => return Next::Marker,
                    Some(id) => return emit(id, false),
                    None => {}
                }
            }
            if rt.done_producing {
                Next::Finish
            } else {
                Next::Wait
            }
        })
        .unwrap_or(Next::Exit)
    }

    /// Event `id` is behind the writer (`written`: handed over; else
    /// skipped as gone): moves `at` and the stream's `Sent` position past
    /// it and tells the guard.
    fn advance(&self, at: &mut Position, id: EventId, backlog: bool, written: bool) {
        let (shared, sid, s, conn) = (&self.shared, &self.sid, self.s, self.conn);
        if self.interleave && !backlog {
            at.live_last = Some(id);
        } else {
            at.last = Some(id);
        }
        with_session(shared, sid, |sess| {
            if written {
                shared.history.record(Record::Written {
                    session: sid.clone(),
                    stream: s,
                    event: id,
                    conn,
                    replay: backlog,
                    transport: self.plan.transport,
                });
            }
            let Some(rt) = sess.streams.get_mut(s).filter(|rt| rt.conn == Some(conn)) else {
                return;
            };
            let sent = &mut rt.sent;
            match &mut sent.interleaved {
                Some((live, _)) if !backlog => *live = Some(id),
                _ => sent.last = Some(id),
            }
            sess.room.notify_waiters();
            if written {
                sess.guard.written(s, id);
            }
            if backlog && sess.guard.stream(s).replay_backlog > 0 {
                sess.guard.replay_written(s);
                if sess.guard.replay_backlog() == 0 {
                    sess.drained.notify_waiters();
                }
            }
        });
    }

    /// Ready once the connection has been silent for `keepalive_ms`
    /// (never when it is 0): time for a `:` comment.
    async fn keepalive(&self) {
        match self.shared.cfg.keepalive_ms {
            0 => std::future::pending().await,
            ms => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }

    /// The guarded replay's `replay-end` frame. It carries the id of the
    /// last event the replay brought (the cursor, when it brought none):
    /// a resumed stream names its position at once, so a client whose
    /// reader keeps the cursor only from the stream's own events
    /// (typescript-sdk PR #2509) still has one if the stream breaks again
    /// before its next event.
    fn marker(&self) -> Bytes {
        let data = serde_json::json!({"stream": self.s, "lastEventId": self.plan.replay_until})
            .to_string();
        sse::encode(self.plan.replay_until, Some("replay-end"), &data, None)
    }

    /// The stream is done and every event written: the connection is no
    /// longer the stream's.
    fn finish(&self) {
        let (shared, sid, s, conn) = (&self.shared, &self.sid, self.s, self.conn);
        with_session(shared, sid, |sess| {
            if let Some(rt) = sess.streams.get_mut(s).filter(|rt| rt.conn == Some(conn)) {
                rt.conn = None;
                sess.room.notify_waiters();
                sess.last_active.set(tokio::time::Instant::now());
                sess.guard.finished(s);
                shared.history.record(Record::StreamFinished {
                    session: sid.clone(),
                    stream: s,
                });
                sess.release_if_done(s);
            }
        });
        super::life::release(shared, sid);
    }

    /// The connection is lost for `why`.
    fn lost(&self, why: Lost) {
        lost(&self.shared, &self.sid, self.s, self.conn, why);
    }
}

/// One event's SSE frame for a connection of `transport`: a priming event
/// (empty data) or a `message` event, numbered in that transport's
/// namespace.
fn encode(
    sess: &super::Session,
    s: StreamIdx,
    id: EventId,
    data: &Bytes,
    transport: Transport,
    retry_ms: Option<u64>,
) -> Bytes {
    let text = std::str::from_utf8(data).expect("stored messages are JSON text");
    if sess.scope == Scope::Request {
        // A request's context resumes nothing: its events carry no ids.
        return sse::encode(None, Some("message"), text, None);
    }
    match transport {
        Transport::Streamable if data.is_empty() => sse::encode(Some(id), None, "", retry_ms),
        Transport::Streamable => sse::encode(Some(id), Some("message"), text, None),
        Transport::Legacy => sse::encode(Some(sess.legacy_id(s, id)), Some("message"), text, None),
    }
}

pub(in crate::server) fn sse_response(
    shared: &Rc<Shared>,
    sid: &SessionId,
    s: StreamIdx,
    conn: ConnId,
    plan: Plan,
) -> Response<ServerBody> {
    let (tx, body) = ServerBody::sse();
    spawn(shared.clone(), sid.clone(), s, conn, tx, plan);
    crate::server::http::respond::event_stream(body)
}

//! Rule M at the server (guarded): a POST's cursor lists, the decision with
//! the view it was made from (logged), queueing behind a replay, and the
//! 409/410 rejections.

// Refusals travel as ready-made responses (`Result<_, Response<_>>`): they
// are the cold path, and boxing each would only add noise.
#![allow(clippy::result_large_err)]

use crate::guard::{Decision, Limits, PostFacts, Reason, StreamIdx, Verdict};
use crate::history::{
    LoggedDecision, LoggedReason, LoggedStream, LoggedVerdict, LoggedView, Record, SessionId,
};
use crate::protocol::headers::{self, CursorList};
use crate::protocol::jsonrpc::{self, ErrorObject, RequestId};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::{error, error_with};
use crate::server::session::logged_id;
use crate::server::session::reply::header_str;
use crate::server::Shared;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use serde_json::json;
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

/// Applies a guarded POST's cursor list (`Last-Event-ID: 142;lost, 163`)
/// and its lost-request list (`Mcp-Lost-Requests: ["op#1"]`: POSTs whose
/// stream the client never saw begin, so it has no cursor to name them; each
/// counts as a `;lost` cursor at the stream's priming event).
pub(in crate::server) fn present_cursors(
    shared: &Shared,
    h: &HeaderMap,
    sid: &SessionId,
) -> Result<(), Response<ServerBody>> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, None, jsonrpc::TRANSPORT_ERROR, &m);
    let list = match header_str(h, headers::LAST_EVENT_ID)? {
        Some(v) => CursorList::parse(v).map_err(|e| bad(e.to_string()))?.0,
        None => Vec::new(),
    };
    let lost_requests: Vec<RequestId> = match header_str(h, headers::MCP_LOST_REQUESTS)? {
        Some(v) => serde_json::from_str(v).map_err(|_| {
            bad(format!(
                "{} must be a JSON array of request ids, got {v:?}",
                headers::MCP_LOST_REQUESTS
            ))
        })?,
        None => Vec::new(),
    };
    let mut st = shared.state.borrow_mut();
    let Some(sess) = st.sessions.get_mut(sid) else {
        return Ok(());
    };
    // Ids the session never issued name no stream: ignore them.
    let named = list
        .iter()
        .filter_map(|c| Some((sess.stream_of(c.event_id)?, c.event_id, c.lost)));
    let unseen = lost_requests.iter().filter_map(|r| {
        let s = *sess.post_streams.get(r)?;
        Some((s, *sess.streams[s].ids.first()?, true))
    });
    let entries: Vec<_> = named.chain(unseen).collect();
    // Cursors for events another replica gave go with the next decision
    // to the shared record (a replica on a shared store).
    if crate::server::replica::shared_guard::on(shared) {
        for c in &list {
            if sess.stream_of(c.event_id).is_none() && !sess.released(c.event_id) {
                sess.sync.heard(c.event_id, c.lost);
            }
        }
    }
    for (s, event, lost) in entries {
        shared.history.record(Record::CursorPresented {
            session: sid.clone(),
            stream: s,
            event,
            lost,
        });
        sess.guard.cursor(s, event, lost);
        // A cursor that retired the stream may leave nothing to keep.
        sess.release_if_done(s);
    }
    Ok(())
}

/// Rule M for one POST, queueing behind a replay as row 0 says.
pub(in crate::server) async fn rule_m(
    shared: &Rc<Shared>,
    sid: &SessionId,
    id: &RequestId,
    facts: PostFacts,
) -> Result<(), Response<ServerBody>> {
    let limits = Limits {
        queue_capacity: shared.cfg.queue_capacity,
    };
    let wait_until = tokio::time::Instant::now() + Duration::from_millis(shared.cfg.queue_wait_ms);
    loop {
        if crate::server::replica::shared_guard::on(shared) {
            crate::server::replica::shared_guard::settle(shared, sid, facts, limits).await?;
        }
        let decision = decide(shared, sid, id, facts, |g| g.check(facts, limits))?;
        match decision.verdict {
            Verdict::Fresh | Verdict::Allow => return Ok(()),
            Verdict::Reject(reason) => {
                let first = stream_first(shared, sid, decision.stream);
                let mut r = rejection(id, reason, &decision, first);
                if reason == Reason::ReplayInProgress {
                    come_back_after(shared, sid, &mut r);
                }
                return Err(r);
            }
            Verdict::Queue => {}
        }
        // Held while queued: a POST whose connection closes meanwhile (its
        // future dropped) gives the slot back.
        let slot = QueueSlot {
            shared: shared.clone(),
            sid: sid.clone(),
            id: id.clone(),
            left: false,
        };
        let drained = match shared.state.borrow().sessions.get(sid) {
            Some(s) => s.drained.clone(),
            None => {
                return Err(error(
                    StatusCode::NOT_FOUND,
                    Some(id.clone()),
                    jsonrpc::SESSION_ERROR,
                    "session terminated",
                ))
            }
        };
        let timed_out = loop {
            let mut n = pin!(drained.notified());
            n.as_mut().enable();
            let backlog = shared
                .state
                .borrow()
                .sessions
                .get(sid)
                .map(|s| s.guard.replay_backlog());
            if backlog.unwrap_or(0) == 0 {
                break false;
            }
            if tokio::time::timeout_at(wait_until, n).await.is_err() {
                break true;
            }
        };
        slot.leave();
        if timed_out {
            let reject = |_: &crate::guard::SessionGuard| Decision {
                verdict: Verdict::Reject(Reason::ReplayInProgress),
                stream: None,
                hint: None,
            };
            let d = decide(shared, sid, id, facts, reject)?;
            let mut r = rejection(id, Reason::ReplayInProgress, &d, None);
            come_back_after(shared, sid, &mut r);
            return Err(r);
        }
    }
}

/// A POST's place in a session's Rule M queue, while it waits. Dropped
/// without being left normally (the connection closed and hyper dropped the
/// request's future), it gives the place back and says so in the trace.
struct QueueSlot {
    shared: Rc<Shared>,
    sid: SessionId,
    id: RequestId,
    left: bool,
}

impl QueueSlot {
    /// The POST leaves the queue to be decided afresh (or rejected).
    fn leave(mut self) {
        self.left = true;
        if let Some(s) = self.shared.state.borrow_mut().sessions.get_mut(&self.sid) {
            s.guard.dequeued();
        }
    }
}

impl Drop for QueueSlot {
    fn drop(&mut self) {
        if self.left {
            return;
        }
        // Never inside one of our borrows (none is held across an await);
        // `try_` only so that a teardown cannot turn into a double panic.
        let Ok(mut st) = self.shared.state.try_borrow_mut() else {
            return;
        };
        let Some(sess) = st.sessions.get_mut(&self.sid) else {
            return;
        };
        sess.guard.dequeued();
        drop(st);
        self.shared.history.record(Record::QueueLeft {
            session: self.sid.clone(),
            rpc_id: self.id.clone(),
        });
    }
}

fn logged_decision(d: &Decision) -> LoggedDecision {
    let (verdict, reason) = match d.verdict {
        Verdict::Fresh => (LoggedVerdict::Fresh, None),
        Verdict::Allow => (LoggedVerdict::Allow, None),
        Verdict::Queue => (LoggedVerdict::Queue, None),
        Verdict::Reject(r) => (LoggedVerdict::Reject, Some(logged_reason(r))),
    };
    LoggedDecision {
        verdict,
        reason,
        stream: d.stream,
        hint: d.hint,
    }
}

/// The guard's reason as the trace names it.
fn logged_reason(r: Reason) -> LoggedReason {
    match r {
        Reason::ReplayInProgress => LoggedReason::ReplayInProgress,
        Reason::NotDrained => LoggedReason::NotDrained,
        Reason::InFlight => LoggedReason::InFlight,
        Reason::NonIdempotent => LoggedReason::NonIdempotent,
        Reason::StreamLost => LoggedReason::StreamLost,
    }
}

fn logged_view(g: &crate::guard::SessionGuard) -> LoggedView {
    let mut dropped: Vec<LoggedStream> = g
        .dropped_streams()
        .map(|(s, st)| LoggedStream {
            stream: s,
            last_produced: logged_id(st.last_produced),
            last_written: logged_id(st.last_written),
            watermark: logged_id(st.watermark),
            cursor_presented: st.cursor_presented,
            lost: st.lost,
            in_flight: st.in_flight,
        })
        .collect();
    dropped.sort_unstable_by_key(|d| d.stream);
    LoggedView {
        replay_backlog: g.replay_backlog(),
        queued: g.queued(),
        dropped,
    }
}

/// Makes, commits and logs one decision with the view it was made from.
fn decide(
    shared: &Shared,
    sid: &SessionId,
    id: &RequestId,
    facts: PostFacts,
    f: impl FnOnce(&crate::guard::SessionGuard) -> Decision,
) -> Result<Decision, Response<ServerBody>> {
    let mut st = shared.state.borrow_mut();
    let Some(sess) = st.sessions.get_mut(sid) else {
        return Err(error(
            StatusCode::NOT_FOUND,
            Some(id.clone()),
            jsonrpc::SESSION_ERROR,
            "session terminated",
        ));
    };
    let view = Box::new(logged_view(&sess.guard));
    let decision = f(&sess.guard);
    sess.guard.apply(&decision);
    shared.history.record(Record::Decision {
        session: sid.clone(),
        rpc_id: id.clone(),
        decision: Box::new(logged_decision(&decision)),
        view,
        idempotent: facts.idempotent,
        dedup_honored: facts.dedup_honored,
        replica: shared.store.as_ref().map(|on| on.replica),
    });
    if let (Verdict::Reject(Reason::StreamLost), Some(s)) = (decision.verdict, decision.stream) {
        shared.history.record(Record::LostReported {
            session: sid.clone(),
            stream: s,
            replica: shared.store.as_ref().map(|on| on.replica),
        });
    }
    Ok(decision)
}

/// With `replay_retry_after`, a `replay_in_progress` refusal says when
/// to come back: the replay's backlog at its pace, in whole seconds, at
/// least 1.
fn come_back_after(shared: &Shared, sid: &SessionId, r: &mut Response<ServerBody>) {
    if !shared.cfg.replay_retry_after {
        return;
    }
    let backlog = shared
        .state
        .borrow()
        .sessions
        .get(sid)
        .map_or(0, |s| s.guard.replay_backlog());
    let ms = backlog.saturating_mul(shared.cfg.replay_interval_ms);
    let secs = ms.div_ceil(1000).max(1);
    r.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
}

/// The first event id (priming) of a stream: how clients name it.
fn stream_first(shared: &Shared, sid: &SessionId, s: Option<StreamIdx>) -> Option<u64> {
    let st = shared.state.borrow();
    let sess = st.sessions.get(sid)?;
    let s = s?;
    match sess.streams.get(s) {
        Some(rt) => rt.ids.first().copied(),
        // Another replica's stream: as it published it.
        None => sess.sync.foreign_first(s),
    }
}

/// A Rule M rejection: 409 naming the owed stream's resume point, or 410
/// for a lost stream.
fn rejection(
    id: &RequestId,
    reason: Reason,
    d: &Decision,
    stream_first: Option<u64>,
) -> Response<ServerBody> {
    let (status, code, what) = match reason {
        Reason::StreamLost => (
            StatusCode::GONE,
            jsonrpc::GONE,
            "events owed on a dropped stream were evicted; re-issue the operation",
        ),
        Reason::ReplayInProgress => (
            StatusCode::CONFLICT,
            jsonrpc::CONFLICT,
            "a replay is in progress on this session; retry after it",
        ),
        _ => (
            StatusCode::CONFLICT,
            jsonrpc::CONFLICT,
            "a dropped stream must be resumed first: GET with Last-Event-ID",
        ),
    };
    let data = json!({
        "reason": reason.as_str(),
        "stream": d.stream,
        "streamFirstEventId": stream_first,
        "lastEventId": d.hint,
    });
    let mut r = error_with(
        status,
        Some(id.clone()),
        ErrorObject::new(
            code,
            format!("rejected ({}): {what}", reason.as_str()),
            Some(data),
        ),
    );
    if let Some(hint) = d.hint.filter(|_| status == StatusCode::CONFLICT) {
        r.headers_mut()
            .insert(headers::LAST_EVENT_ID, HeaderValue::from(hint));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trace names a rejection as the guard does: the oracle's audit
    /// compares them with its own statement of the rule.
    #[test]
    fn logged_reasons_carry_the_guards_names() {
        for r in Reason::ALL {
            assert_eq!(logged_reason(r).as_str(), r.as_str());
            let json = serde_json::to_value(logged_reason(r)).expect("serializes");
            assert_eq!(json, r.as_str());
        }
    }
}

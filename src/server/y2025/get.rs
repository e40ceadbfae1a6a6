//! GET on `/mcp`: the standalone stream, or a resume from `Last-Event-ID`
//! (replay, cursor translation for mapped legacy sessions, `gap` events and
//! 410 on the guarded arm; on unguarded and keys, as the SDKs: an empty
//! stream for a malformed cursor, and rmcp's inclusive replay and empty
//! resume of a completed stream when configured).

use super::transport::transport_gate;
use crate::guard::{EventId, StreamIdx};
use crate::history::{ConnId, EmptyResume, Record, ServerClose, SessionId, StreamKind, Transport};
use crate::protocol::headers::{self, CursorList};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::{error, error_with};
use crate::server::session::reply::{accepts, check_version, header_str, session_of, Reply};
use crate::server::session::writer::{sse_response, Plan};
use crate::server::session::{logged_id, Session};
use crate::server::{CompletedResume, Delivery, Replay, Shared};
use bytes::Bytes;
use http::{HeaderValue, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use std::rc::Rc;

pub(in crate::server) async fn get(
    shared: &Rc<Shared>,
    req: Request<Incoming>,
    conn: ConnId,
) -> Reply {
    let h = req.headers();
    if !accepts(h, "text/event-stream") {
        return Reply::new(error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            jsonrpc::TRANSPORT_ERROR,
            "Accept must list text/event-stream",
        ));
    }
    if let Err(r) = check_version(h) {
        return Reply::new(r);
    }
    let sid = match session_of(shared, h, None) {
        Ok(s) => s,
        Err(r) => return Reply::new(r),
    };
    if shared.variant.cancels_on_close() && h.contains_key(headers::LAST_EVENT_ID) {
        return crate::server::session::cancel::refuse_resume().about(Some(&sid), None);
    }
    let mapped = match transport_gate(shared, &sid, Transport::Streamable, None) {
        Ok(m) => m,
        Err(r) => return Reply::new(r).about(Some(&sid), None),
    };
    let cursor = match header_str(h, headers::LAST_EVENT_ID) {
        Ok(None) => None,
        Ok(Some(v)) => match CursorList::parse_single(v) {
            Ok(c) => Some(c),
            // The SDKs answer a cursor that is no event id with 200 and a
            // stream that ends at once; the guarded arm says what is wrong.
            Err(_) if !shared.guarded() => {
                return empty_resume(shared, &sid, None, conn, EmptyResume::MalformedCursor)
            }
            Err(e) => {
                return Reply::new(error(
                    StatusCode::BAD_REQUEST,
                    None,
                    jsonrpc::TRANSPORT_ERROR,
                    &e.to_string(),
                ))
                .about(Some(&sid), None)
            }
        },
        Err(_) if !shared.guarded() => {
            return empty_resume(shared, &sid, None, conn, EmptyResume::MalformedCursor)
        }
        Err(r) => return Reply::new(r),
    };
    let elsewhere = cursor.filter(|&c| {
        let st = shared.state.borrow();
        st.sessions
            .get(&sid)
            .is_some_and(|s| crate::server::replica::stored::resumes_elsewhere(shared, s, c))
    });
    if let Some(c) = elsewhere {
        let r =
            crate::server::replica::stored::resume_elsewhere(shared.clone(), sid.clone(), c, conn)
                .await;
        return Reply::new(r).about(Some(&sid), None);
    }
    let reply = match cursor {
        None => open_standalone(shared, &sid, conn),
        Some(c) => resume(shared, &sid, c, conn, mapped),
    };
    reply.about(Some(&sid), None)
}

/// 200 `text/event-stream` with no event: the stream ends at once. Nothing
/// is replayed and no stream changes hands.
fn empty_resume(
    shared: &Rc<Shared>,
    sid: &SessionId,
    stream: Option<StreamIdx>,
    conn: ConnId,
    why: EmptyResume,
) -> Reply {
    shared.history.record(Record::ResumedEmpty {
        session: sid.clone(),
        stream,
        conn,
        why,
    });
    let r = crate::server::http::respond::event_stream(ServerBody::empty());
    Reply::new(r).about(Some(sid), None)
}

/// A plain GET: opens the session's standalone stream (409 when one is
/// attached already).
fn open_standalone(shared: &Rc<Shared>, sid: &SessionId, conn: ConnId) -> Reply {
    if let Err(r) = crate::server::session::reply::session_full(shared, sid, None) {
        return Reply::new(r);
    }
    let mut st = shared.state.borrow_mut();
    let sess = st.sessions.get_mut(sid).expect("session_of found it");
    if sess.standalone_attached().is_some() {
        return Reply::new(error(
            StatusCode::CONFLICT,
            None,
            jsonrpc::CONFLICT,
            "a standalone stream is already open for this session: resume with Last-Event-ID instead",
        ));
    }
    let slot = match crate::server::session::holds::stream_slot(shared, sess, false, None) {
        Ok(s) => s,
        Err(r) => return Reply::new(r),
    };
    let s = sess.open_stream(StreamKind::Standalone, None, conn, &shared.history);
    if shared.cfg.delivery == Delivery::PostStream {
        // Responses ride their POSTs: this stream carries notifications
        // only, and its end is never a migration's cause.
        sess.guard.notifications_only(s);
    }
    sess.standalone = Some(s);
    drop(st);
    Reply::new(sse_response(shared, sid, s, conn, Plan::live())).holding(slot)
}

/// A GET with `Last-Event-ID`: replays that id's stream after it, taking
/// the stream over, then continues live. A legacy cursor on a session with a
/// registered mapping is translated (and the response says so); the
/// unguarded server reads any cursor as a streamable id, as the observed
/// dual-transport server did; a cursor past every id issued gets an empty
/// stream there (400 on guarded). Past evicted events, the guarded server first
/// sends a `gap` event naming them (410 only when the result itself is
/// gone); the other arms replay from the oldest event left, silently.
fn resume(shared: &Rc<Shared>, sid: &SessionId, cursor: u64, conn: ConnId, mapped: bool) -> Reply {
    let mut st = shared.state.borrow_mut();
    let sess = st.sessions.get_mut(sid).expect("session_of found it");
    let translate = mapped && sess.issued == Transport::Legacy && !sess.cursor_translated;
    if !translate && sess.released(cursor) {
        // A finished stream forgotten once none of its events was stored
        // (served only): nothing of it can be replayed, as for a stream
        // whose tail was evicted.
        drop(st);
        if shared.guarded() {
            return Reply::new(error(
                StatusCode::GONE,
                None,
                jsonrpc::GONE,
                "the stream of Last-Event-ID ended and none of its events is kept: re-issue the operation if its result did not arrive",
            ));
        }
        return empty_resume(shared, sid, None, conn, EmptyResume::Completed);
    }
    let target = resume_target(shared, sess, cursor, translate);
    let Some((s, at)) = target else {
        // Past the end of what the session issued: 200 and an empty
        // stream, as every SDK's server answers (unguarded and keys); the
        // guarded server refuses an id it never issued.
        if !shared.guarded() && sess.past_issued(cursor) {
            drop(st);
            return empty_resume(shared, sid, None, conn, EmptyResume::PastEnd);
        }
        return Reply::new(error(
            StatusCode::BAD_REQUEST,
            None,
            jsonrpc::TRANSPORT_ERROR,
            &format!("Last-Event-ID {cursor} was never issued in this session"),
        ));
    };
    // rmcp drops a POST stream once its result is routed: a resume then
    // finds nothing (`completed_resume = "empty"`; never on guarded).
    if shared.cfg.completed_resume == Some(CompletedResume::Empty)
        && sess.streams[s].kind == StreamKind::Post
        && sess.streams[s].done_producing
    {
        drop(st);
        return empty_resume(shared, sid, Some(s), conn, EmptyResume::Completed);
    }
    // A resume of a stream still attached replaces its connection: never
    // refused for the slot it will give back.
    let takes_over = sess.streams[s].conn.is_some();
    let slot = match crate::server::session::holds::stream_slot(shared, sess, takes_over, None) {
        Ok(slot) => slot,
        Err(r) => return Reply::new(r),
    };
    if translate {
        sess.cursor_translated = true;
        shared.history.record(Record::MappingApplied {
            session: sid.clone(),
            from: cursor,
            to: logged_id(at),
        });
    }
    let (from, preamble) = match replay_start(shared, sid, sess, s, at, conn) {
        Ok(start) => start,
        Err(r) => return r,
    };
    if let Some(old) = sess.streams[s].conn.take() {
        shared.history.record(Record::ServerClosed {
            session: sid.clone(),
            stream: s,
            conn: old,
            why: ServerClose::TakenOver,
        });
        sess.guard.taken_over(s);
        if let Some((h, _)) = st.conns.remove(&old) {
            h.abort();
        }
    }
    let sess = st.sessions.get_mut(sid).expect("still there");
    let (backlog, _) = sess.replayable_after(s, from);
    let first = sess.streams[s].ids.first().copied();
    let replay_until = sess.streams[s].ids.last().copied().or(at).max(from);
    // The resume of a pause continues the stream in order, on every arm:
    // the server closed the connection itself and kept the stream for the
    // client it told when to come back (as the SDKs that poll replay their
    // store from the cursor, then go on). Only the unguarded resume after
    // a drop interleaves live events with the backlog.
    let interleave = !shared.guarded() && !sess.guard.stream(s).paused;
    sess.guard.resumed(s, at, backlog);
    sess.streams[s].conn = Some(conn);
    sess.streams[s].wake.notify_waiters();
    shared.history.record(Record::Resumed {
        session: sid.clone(),
        stream: s,
        cursor: logged_id(at),
        backlog,
        conn,
        from: logged_id(from),
    });
    drop(st);
    crate::server::replica::shared_guard::withdraw_soon(shared, sid);
    let mut resp = sse_response(
        shared,
        sid,
        s,
        conn,
        Plan {
            after: from,
            replay_until,
            replay: true,
            interleave,
            transport: Transport::Streamable,
            preamble,
        },
    );
    if translate {
        resp.headers_mut().insert(
            headers::MCP_CURSOR_MAPPING,
            HeaderValue::from_static("legacy"),
        );
        if let Some(first) = first {
            resp.headers_mut()
                .insert(headers::MCP_STREAM_FIRST_EVENT_ID, HeaderValue::from(first));
        }
    }
    Reply::new(resp).holding(slot)
}

/// The stream a resume's `cursor` names and the event it names there
/// (`None`: from before the stream's first event); `translate`: the
/// cursor is a legacy id to map onto the legacy stream.
fn resume_target(
    shared: &Shared,
    sess: &Session,
    cursor: u64,
    translate: bool,
) -> Option<(StreamIdx, Option<EventId>)> {
    if translate {
        sess.legacy_stream.map(|l| {
            let ids = &sess.streams[l].ids;
            // Legacy ids number the stream's events from 1: 0 saw none
            // (`None`: from before its first event).
            let to = match cursor {
                0 => None,
                n => ids.get(n as usize - 1).or(ids.last()).copied(),
            };
            (l, to)
        })
    } else {
        match sess.stream_of(cursor) {
            Some(s) => Some((s, Some(cursor))),
            // Not an id of this session: the unguarded server replays
            // every event with a larger id (on the notification stream).
            None if !shared.guarded() => sess.notification_stream().map(|s| (s, Some(cursor))),
            None => None,
        }
    }
}

/// Where a resume's replay starts (after the returned id) and the frame
/// written before it: the guarded server announces what it lost (a `gap`
/// event) and replays what survived; the others replay from the oldest
/// event stored, silently, and rmcp's inclusive replay re-sends the named
/// event. `Err`: 410, the result after `at` is gone (guarded).
#[allow(clippy::result_large_err)] // a refusal, the cold path (as in `reply`)
fn replay_start(
    shared: &Shared,
    sid: &SessionId,
    sess: &mut Session,
    s: StreamIdx,
    at: Option<EventId>,
    conn: ConnId,
) -> Result<(Option<EventId>, Option<Bytes>), Reply> {
    let (_, gap) = sess.replayable_after(s, at);
    let mut from = at;
    let mut preamble = None;
    if shared.guarded() {
        // The guarded server announces what it lost (a `gap` event) and
        // replays what survived; only a lost result leaves nothing to
        // resume: 410, and the client re-issues.
        if sess.result_evicted_after(s, at) {
            sess.guard.report_lost(s);
            shared.history.record(Record::LostReported {
                session: sid.clone(),
                stream: s,
                replica: shared.store.as_ref().map(|on| on.replica),
            });
            return Err(Reply::new(error_with(
                StatusCode::GONE,
                None,
                ErrorObject::new(
                    jsonrpc::GONE,
                    "the result after Last-Event-ID was evicted: re-issue the operation",
                    Some(json!({
                        "stream": s,
                        "streamFirstEventId": sess.streams[s].ids.first(),
                        "lastEventId": at,
                        "oldestRetained": sess.oldest_stored(),
                    })),
                ),
            )));
        }
        if gap {
            let missing = sess.missing_after(s, at);
            preamble = Some(crate::server::session::gaps::gap_frame(&missing));
            shared.history.record(Record::GapReplayed {
                session: sid.clone(),
                stream: s,
                conn,
                missing,
            });
            from = at.max(sess.oldest_stored().checked_sub(1));
        }
    } else {
        if gap || sess.guard.stream(s).lost {
            // As real SDKs do: replay from the oldest event still stored,
            // silently.
            from = at.max(sess.oldest_stored().checked_sub(1));
        }
        // The Python SDK's resume opens with a priming event: the client
        // has a position before anything is replayed (`prime_resume`).
        if shared.cfg.prime_resume_mode() {
            preamble = at.map(|c| crate::protocol::sse::encode(Some(c), None, "", None));
        }
    }
    // rmcp re-sends the named event too (when it is still stored): one
    // duplicate per resume (`replay = "inclusive"`; never on guarded).
    let named_stored = at.is_some_and(|c| sess.stream_of(c) == Some(s) && sess.data(c).is_some());
    if shared.cfg.replay == Some(Replay::Inclusive) && from == at && named_stored {
        from = at.and_then(|c| c.checked_sub(1));
    }
    Ok((from, preamble))
}

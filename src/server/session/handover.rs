//! Handing a frame to a stream's connection, and what a lost connection
//! means for the stream: the writer and a polling pause both hand frames
//! over and both lose connections, so this sits below the two.

use crate::guard::StreamIdx;
use crate::history::{ConnId, Record, ServerClose, SessionId};
use crate::server::Shared;
use bytes::Bytes;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Why a frame could not be handed over.
pub(in crate::server) enum Lost {
    /// The connection ended (the peer went away).
    Closed,
    /// The write deadline passed.
    Deadline,
}

/// Hands `frame` to the connection within `deadline`.
pub(in crate::server) async fn send(
    tx: &mpsc::Sender<Bytes>,
    frame: Bytes,
    deadline: Duration,
) -> Result<(), Lost> {
    tokio::select! {
        biased;
        _ = tx.closed() => Err(Lost::Closed),
        r = tokio::time::timeout(deadline, tx.send(frame)) => match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Lost::Closed),
            Err(_) => Err(Lost::Deadline),
        },
    }
}

/// The connection is lost for `why`: record it as the guard sees it.
pub(in crate::server) fn lost(
    shared: &Rc<Shared>,
    sid: &SessionId,
    s: StreamIdx,
    conn: ConnId,
    why: Lost,
) {
    match why {
        Lost::Closed => on_close(shared, sid, s, conn, None),
        Lost::Deadline => deadline_passed(shared, sid, s, conn),
    }
}

fn deadline_passed(shared: &Rc<Shared>, sid: &SessionId, s: StreamIdx, conn: ConnId) {
    shared.close_conn(conn);
    on_close(shared, sid, s, conn, Some(ServerClose::WriteDeadline));
}

/// The stream's connection ended (or the server ended it): a drop, unless
/// the stream had changed hands already.
pub(in crate::server) fn on_close(
    shared: &Rc<Shared>,
    sid: &SessionId,
    s: StreamIdx,
    conn: ConnId,
    why: Option<ServerClose>,
) {
    with_session(shared, sid, |sess| {
        let Some(rt) = sess.streams.get_mut(s).filter(|rt| rt.conn == Some(conn)) else {
            return;
        };
        rt.conn = None;
        let rt_kind = rt.kind;
        // Idle from now on, not from the request that opened the stream.
        sess.last_active.set(tokio::time::Instant::now());
        if let Some(why) = why {
            shared.history.record(Record::ServerClosed {
                session: sid.clone(),
                stream: s,
                conn,
                why,
            });
        }
        shared.history.record(Record::CloseSeen {
            session: sid.clone(),
            stream: s,
            conn,
            last_written: super::logged_id(sess.guard.stream(s).last_written),
        });
        sess.guard.close_seen(s);
        super::cancel::on_close_seen(shared, sid, sess, s, conn);
        sess.drained.notify_waiters();
        sess.room.notify_waiters();
        if rt_kind == crate::history::StreamKind::Legacy {
            super::schedule_expiry(shared.clone(), sid.clone(), s);
        }
    });
    super::life::release(shared, sid);
}

/// Runs `f` on the session if it still exists.
pub(in crate::server) fn with_session<T>(
    shared: &Shared,
    sid: &SessionId,
    f: impl FnOnce(&mut super::Session) -> T,
) -> Option<T> {
    let mut st = shared.state.borrow_mut();
    st.sessions.get_mut(sid).map(f)
}

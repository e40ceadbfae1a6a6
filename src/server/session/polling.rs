//! Polling (2025-11-25, SSE `retry:`): a stream's connection closed by the
//! server itself after `poll_after` messages, with `retry: R` as its last
//! frame. The stream is *paused*, not dropped: the client is told to come
//! back in R ms with `Last-Event-ID`, and until R plus `poll_grace_ms` has
//! passed without that resume, Rule M does not count the close against a
//! POST. Past it, the pause expires into a drop, as if the client had
//! closed.

use super::handover::{lost, send, with_session};
use crate::guard::StreamIdx;
use crate::history::{ConnId, Record, SessionId};
use crate::protocol::sse;
use crate::server::Shared;
use bytes::Bytes;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Ends connection `conn` of stream `s` on purpose: `retry:` written,
/// the stream paused, the response ended (the writer returns after this).
pub(in crate::server) async fn pause(
    shared: &Rc<Shared>,
    sid: &SessionId,
    s: StreamIdx,
    conn: ConnId,
    tx: &mpsc::Sender<Bytes>,
    deadline: Duration,
) {
    let retry_ms = shared.cfg.poll_retry_ms;
    if let Err(why) = send(tx, sse::encode_retry(retry_ms), deadline).await {
        return lost(shared, sid, s, conn, why);
    }
    let paused = with_session(shared, sid, |sess| {
        let rt = sess.streams.get_mut(s).filter(|rt| rt.conn == Some(conn))?;
        rt.conn = None;
        rt.pauses += 1;
        let pause = rt.pauses;
        sess.last_active.set(tokio::time::Instant::now());
        shared.history.record(Record::StreamPaused {
            session: sid.clone(),
            stream: s,
            conn,
            retry_ms,
        });
        sess.guard.paused(s);
        sess.drained.notify_waiters();
        sess.room.notify_waiters();
        Some(pause)
    })
    .flatten();
    if let Some(pause) = paused {
        let wait = Duration::from_millis(retry_ms + shared.cfg.poll_grace_ms);
        tokio::task::spawn_local(expire(shared.clone(), sid.clone(), s, pause, wait));
    }
}

/// After `wait`, the stream's `pause`-th pause ends in a drop unless the
/// stream was resumed (or paused again) meanwhile.
async fn expire(shared: Rc<Shared>, sid: SessionId, s: StreamIdx, pause: u32, wait: Duration) {
    tokio::time::sleep(wait).await;
    with_session(&shared, &sid, |sess| {
        let Some(rt) = sess.streams.get(s) else {
            return;
        };
        let same_pause = rt.conn.is_none() && rt.pauses == pause;
        if !same_pause || !sess.guard.stream(s).paused {
            return;
        }
        shared.history.record(Record::PauseExpired {
            session: sid.clone(),
            stream: s,
        });
        sess.guard.pause_expired(s);
        sess.room.notify_waiters();
    });
}

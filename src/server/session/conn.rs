//! Connections: which are idle (no request in service, no response still
//! being sent), closing one idle for `server_idle_ms`, and,
//! on an exposed server, closing the oldest idle one when the server
//! needs room, and the 503 a connection gets past the cap when none is
//! idle.

use super::holds::SseSlot;
use crate::protocol::jsonrpc::{self, ErrorObject, Message};
use crate::server::http::body::ServerBody;
use crate::server::Shared;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::cell::Cell;
use std::convert::Infallible;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

/// How long the accept loop waits after an accept error.
pub(in crate::server) const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How long a refused connection gets to take its 503.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(1);

/// What a connection is doing: the requests in service on it, and when
/// it last finished one (its idle time, for `server_idle_ms`).
#[derive(Default)]
pub(crate) struct Activity {
    busy: Cell<u32>,
    idle_since: Cell<Option<Instant>>,
}

impl Activity {
    /// Requests in service (0: idle).
    pub(in crate::server) fn busy(&self) -> u32 {
        self.busy.get()
    }
}

/// One request in service on a connection, from its head until its
/// response body is done (or dropped).
pub(in crate::server) struct Busy(Rc<Activity>);

impl Busy {
    pub fn enter(activity: &Rc<Activity>) -> Self {
        activity.busy.set(activity.busy.get() + 1);
        Busy(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let a = &self.0;
        a.busy.set(a.busy.get().saturating_sub(1));
        if a.busy.get() == 0 {
            a.idle_since.set(Some(Instant::now()));
        }
    }
}

/// Completes once the connection has served a request and then nothing
/// for `idle`: the caller closes it, as servers close any idle HTTP/1.1
/// connection, whatever its requests said (persistence is HTTP/1.1's
/// default; Node's `keepAliveTimeout` is 5 s, uvicorn's
/// `timeout_keep_alive` 5 s). A connection that has not finished a first
/// request is never idle here.
pub(in crate::server) async fn idle_for(activity: &Activity, idle: Duration) {
    loop {
        let due = match activity.idle_since.get() {
            Some(t) if activity.busy() == 0 => t + idle,
            _ => Instant::now() + idle,
        };
        tokio::time::sleep_until(due).await;
        if let (Some(t), 0) = (activity.idle_since.get(), activity.busy()) {
            if Instant::now() >= t + idle {
                return;
            }
        }
    }
}

/// A response body that keeps its connection busy, and an SSE response's
/// open-stream slot taken, until it is dropped; otherwise the body itself,
/// frame for frame.
pub(crate) struct Tracked {
    body: ServerBody,
    _busy: Busy,
    _slot: Option<SseSlot>,
}

impl Tracked {
    pub(in crate::server) fn new(body: ServerBody, busy: Busy, slot: Option<SseSlot>) -> Self {
        Tracked {
            body,
            _busy: busy,
            _slot: slot,
        }
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Closes the oldest connection serving nothing (one that has not sent a
/// whole request head yet, or a kept-alive one between requests). Whether
/// there was one.
pub(in crate::server) fn close_oldest_idle(shared: &Shared) -> bool {
    let mut st = shared.state.borrow_mut();
    let Some(conn) = st
        .conns
        .iter()
        .find(|(_, (_, activity))| activity.busy() == 0)
        .map(|(c, _)| *c)
    else {
        return false;
    };
    if let Some((h, _)) = st.conns.remove(&conn) {
        h.abort();
    }
    true
}

/// Answers a connection past the cap with 503 and closes it.
pub(in crate::server) fn refuse<I>(mut io: I)
where
    I: tokio::io::AsyncWrite + Unpin + 'static,
{
    let body = Message::Error {
        id: None,
        error: ErrorObject::new(
            jsonrpc::TRANSPORT_ERROR,
            "too many connections: retry later",
            None,
        ),
    }
    .encode();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    tokio::task::spawn_local(async move {
        let _ = tokio::time::timeout(REFUSAL_DEADLINE, async {
            io.write_all(head.as_bytes()).await?;
            io.write_all(body.as_bytes()).await?;
            io.shutdown().await
        })
        .await;
    });
}

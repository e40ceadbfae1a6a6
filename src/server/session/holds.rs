//! Who may hold what: a session answers only the bearer token that opened
//! it (none, when it was opened without one); sessions opened without a
//! token are counted per peer address and expire sooner; SSE responses
//! open at once are counted per session and per principal. So a client
//! that learns another's session id can neither read nor end it, and one
//! client can hold neither every session slot nor every connection. The
//! caps are `serve`'s ([`crate::server::Exposure`]); the simulator has none.

// Refusals travel as ready-made responses, as in `reply`: the cold path.
#![allow(clippy::result_large_err)]

use super::Session;
use crate::history::SessionId;
use crate::protocol::jsonrpc;
use crate::server::http::body::ServerBody;
use crate::server::http::principal::bearer;
use crate::server::http::respond::error;
use crate::server::Shared;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::Instant;

/// Whether a request with headers `h` may name `sess`: with binding on,
/// only with the bearer token that opened it, or with none when it was
/// opened with none. A refused request is answered as an unknown session
/// is, so it learns nothing.
pub(in crate::server) fn may_name(shared: &Shared, sess: &Session, h: &HeaderMap) -> bool {
    !shared.exposure.bind_sessions || bearer(h) == sess.owner
}

/// Who open streams are counted against: the session's bearer token, else
/// the peer address that opened it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Holder {
    Token(Rc<str>),
    Peer(Option<IpAddr>),
}

impl Holder {
    fn of(sess: &Session) -> Self {
        match &sess.owner {
            Some(t) => Holder::Token(t.clone()),
            None => Holder::Peer(sess.peer),
        }
    }
}

/// SSE responses open now, per session and per holder.
#[derive(Default)]
pub(crate) struct OpenStreams {
    by_session: RefCell<BTreeMap<SessionId, usize>>,
    by_holder: RefCell<BTreeMap<Holder, usize>>,
}

/// One open SSE response's place in [`OpenStreams`], given back when the
/// response body is dropped (the stream ended or its connection went).
pub(crate) struct SseSlot {
    open: Rc<OpenStreams>,
    sid: SessionId,
    holder: Holder,
}

impl Drop for SseSlot {
    fn drop(&mut self) {
        release(&mut self.open.by_session.borrow_mut(), &self.sid);
        release(&mut self.open.by_holder.borrow_mut(), &self.holder);
    }
}

fn release<K: Ord>(counts: &mut BTreeMap<K, usize>, k: &K) {
    if let Some(n) = counts.get_mut(k) {
        *n -= 1;
        if *n == 0 {
            counts.remove(k);
        }
    }
}

/// A slot for a new SSE response on `sess`, or 429 when the session or its
/// holder has as many open as it may (`None`: no cap). `takes_over`: the
/// response replaces one of the session's own (a resume of a stream still
/// attached), whose slot comes back when its connection goes; it is never
/// refused.
pub(in crate::server) fn stream_slot(
    shared: &Shared,
    sess: &Session,
    takes_over: bool,
    id: Option<&jsonrpc::RequestId>,
) -> Result<Option<SseSlot>, Response<ServerBody>> {
    let e = &shared.exposure;
    if e.max_open_streams_per_session.is_none() && e.max_open_streams_per_principal.is_none() {
        return Ok(None);
    }
    let open = &shared.open_streams;
    let holder = Holder::of(sess);
    let in_session = open.by_session.borrow().get(&sess.id).copied().unwrap_or(0);
    let held = open.by_holder.borrow().get(&holder).copied().unwrap_or(0);
    let over = |n: usize, cap: Option<usize>| !takes_over && cap.is_some_and(|c| n >= c);
    let refusal = if over(in_session, e.max_open_streams_per_session) {
        Some(format!(
            "this session has {in_session} streams open, the most allowed: close one first"
        ))
    } else if over(held, e.max_open_streams_per_principal) {
        Some(format!(
            "this client (its bearer token, else its address) has {held} streams open, the most allowed: close one first"
        ))
    } else {
        None
    };
    if let Some(m) = refusal {
        return Err(too_many(id.cloned(), &m, Duration::from_secs(1)));
    }
    *open
        .by_session
        .borrow_mut()
        .entry(sess.id.clone())
        .or_insert(0) += 1;
    *open
        .by_holder
        .borrow_mut()
        .entry(holder.clone())
        .or_insert(0) += 1;
    Ok(Some(SseSlot {
        open: shared.open_streams.clone(),
        sid: sess.id.clone(),
        holder,
    }))
}

/// 429 with a JSON-RPC error body and `Retry-After`.
pub(in crate::server) fn too_many(
    id: Option<jsonrpc::RequestId>,
    message: &str,
    after: Duration,
) -> Response<ServerBody> {
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        id,
        jsonrpc::TRANSPORT_ERROR,
        message,
    );
    let secs = after.as_secs_f64().ceil().max(1.0) as u64;
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    r
}

/// How long `sess` may stay idle before it ends (`None`: for ever): a
/// session without a token gets the shorter of the two bounds.
pub(in crate::server) fn idle_limit(shared: &Shared, sess: &Session) -> Option<Duration> {
    let idle = session_idle(shared);
    match &sess.owner {
        Some(_) => idle,
        None => shorter(idle, shared.exposure.anonymous_session_idle),
    }
}

/// The idle bound of every session: the shorter of the exposure's and
/// `server.session_idle_ms` (0: off).
fn session_idle(shared: &Shared) -> Option<Duration> {
    let ms = shared.cfg.session_idle_ms;
    let configured = (ms > 0).then(|| Duration::from_millis(ms));
    shorter(shared.exposure.session_idle, configured)
}

/// The shorter of two bounds, either of which may be off (`None`).
fn shorter(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How often idle sessions are looked for: a quarter of the shortest idle
/// bound, between 10 ms and 30 s (`None`: never).
pub(in crate::server) fn expiry_period(shared: &Shared) -> Option<Duration> {
    let shortest = shorter(session_idle(shared), shared.exposure.anonymous_session_idle)?;
    Some((shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(30)))
}

/// 429 when `peer` already holds as many sessions opened without a token
/// as it may; `Retry-After` says when the first of them that no stream
/// holds would expire.
pub(in crate::server) fn admit_anonymous(
    shared: &Shared,
    sessions: &super::table::SessionTable,
    peer: Option<IpAddr>,
    id: Option<&jsonrpc::RequestId>,
) -> Result<(), Response<ServerBody>> {
    let Some(max) = shared.exposure.max_anonymous_sessions_per_peer else {
        return Ok(());
    };
    let mine: Vec<&Session> = sessions
        .values()
        .filter(|s| s.owner.is_none() && s.peer == peer)
        .collect();
    if mine.len() < max {
        return Ok(());
    }
    let now = Instant::now();
    let period = expiry_period(shared).unwrap_or_default();
    let soonest = mine
        .iter()
        .filter(|s| s.conns().is_empty())
        .filter_map(|s| {
            let ends = s.last_active.get() + idle_limit(shared, s)?;
            Some(ends.saturating_duration_since(now))
        })
        .min()
        .or_else(|| idle_limit(shared, mine[0]))
        .unwrap_or_default();
    Err(too_many(
        id.cloned(),
        &format!(
            "this address holds {} sessions without a bearer token, the most allowed: DELETE one first or send a token",
            mine.len()
        ),
        soonest + period,
    ))
}

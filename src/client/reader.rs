//! The reader task: one HTTP exchange, what it sees forwarded to the
//! client's decision loop as [`Input`]s. Planned drops fire here, in the
//! reader, so a drop cuts the connection right after its counted event.
//! A client that keeps connections alive shares one [`Pool`] among its
//! readers: an exchange takes its idle connection, and gives its own back
//! once the response body ended.

use super::core::SlotId;
use super::http::{self, Outgoing};
use crate::fault::At;
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::{headers, mcp, sse};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::rc::Weak;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Opens connections to the server. The world implements it over
/// turmoil; [`TcpConnector`] over a real socket.
pub trait Connector: Clone + 'static {
    /// The connection type.
    type Io: AsyncRead + AsyncWrite + Unpin + 'static;
    /// Opens one connection.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Io>>;
    /// The switch that makes `io`'s close abortive (RST), where the
    /// connector can do that.
    fn closer(_io: &Self::Io) -> Option<http::Closer> {
        None
    }
}

/// A connector for a server on a real socket.
#[derive(Clone, Debug)]
pub struct TcpConnector(pub std::net::SocketAddr);

impl Connector for TcpConnector {
    type Io = tokio::net::TcpStream;
    async fn connect(&self) -> io::Result<Self::Io> {
        tokio::net::TcpStream::connect(self.0).await
    }
}

/// What a reader task saw, for the decision loop.
pub(super) enum Input {
    Json {
        slot: SlotId,
        status: u16,
        /// Boxed: the map is the largest field of any input, and every
        /// slot of the client's channel is the size of the largest.
        headers: Box<::http::HeaderMap>,
        msg: Option<Message>,
    },
    Head {
        slot: SlotId,
        status: u16,
        /// `Mcp-Stream-First-Event-Id` of a mapped resume.
        stream_first: Option<u64>,
        /// `Mcp-Session-Id` (an initialize answered with a stream).
        session: Option<String>,
    },
    Event {
        slot: SlotId,
        /// The data of a legacy `endpoint` event.
        endpoint: Option<String>,
        /// Its id as the server wrote it.
        id: Option<String>,
        marker: bool,
        msg: Option<Message>,
        /// Its `retry:` advice, ms.
        retry_ms: Option<u64>,
    },
    /// An `event: gap`: owed events the server lost and says so (`None`:
    /// its data was unreadable, so it announces nothing).
    Gap {
        slot: SlotId,
        missing: Option<Vec<(u64, u64)>>,
    },
    End {
        slot: SlotId,
    },
    Broken {
        slot: SlotId,
    },
    Dropped {
        slot: SlotId,
        tag: Rc<str>,
        after_event: u32,
    },
    Failed {
        slot: SlotId,
        /// The connection was established before the exchange failed.
        connected: bool,
        /// It was a pooled connection, and no response head came on it.
        stale: bool,
    },
    /// The exchange goes out on a pooled connection (not a new one).
    Reused {
        slot: SlotId,
    },
    /// The world says: drop the connection of call `tag`'s request now
    /// (a drop placed at a boundary only the world sees).
    Kill {
        tag: Rc<str>,
    },
}

impl Input {
    /// The exchange it reports on.
    pub(super) fn slot(&self) -> SlotId {
        match self {
            Input::Json { slot, .. }
            | Input::Head { slot, .. }
            | Input::Event { slot, .. }
            | Input::Gap { slot, .. }
            | Input::End { slot }
            | Input::Broken { slot }
            | Input::Dropped { slot, .. }
            | Input::Failed { slot, .. }
            | Input::Reused { slot } => *slot,
            Input::Kill { .. } => SlotId::MAX,
        }
    }
}

/// A client's idle connection, at most one (`connections = "keep-alive"`),
/// shared by its readers; closed by the client once idle for its
/// `pool_idle_ms`.
#[derive(Clone)]
pub(super) struct Pool(Rc<RefCell<Idle>>);

struct Idle {
    conn: Option<http::Conn>,
    /// Bumped by every take and put, so a reaper closes only the
    /// connection it was armed for.
    generation: u64,
    max_idle: Duration,
}

impl Pool {
    /// An empty pool whose connections close after `max_idle` unused.
    pub(super) fn new(max_idle: Duration) -> Pool {
        Pool(Rc::new(RefCell::new(Idle {
            conn: None,
            generation: 0,
            max_idle,
        })))
    }

    /// The idle connection, unless the pool has none or it has ended (the
    /// server closed it and the client read that): then it is dropped.
    fn take(&self) -> Option<http::Conn> {
        let mut idle = self.0.borrow_mut();
        idle.generation += 1;
        idle.conn.take().filter(|c| !c.is_closed())
    }

    /// Keeps `conn` as the idle connection (closing the one there, so the
    /// client holds at most one) and arms its idle close.
    fn put(&self, conn: http::Conn) {
        if conn.is_closed() {
            return;
        }
        let (generation, max_idle) = {
            let mut idle = self.0.borrow_mut();
            idle.generation += 1;
            idle.conn = Some(conn);
            (idle.generation, idle.max_idle)
        };
        // Weak: a client that ended drops its pool, and the connection with it.
        let pool: Weak<RefCell<Idle>> = Rc::downgrade(&self.0);
        tokio::task::spawn_local(async move {
            tokio::time::sleep(max_idle).await;
            if let Some(p) = pool.upgrade() {
                let mut idle = p.borrow_mut();
                if idle.generation == generation {
                    idle.conn = None;
                }
            }
        });
    }
}

/// Drop rules the readers apply.
pub(super) type DropRules = Rc<RefCell<Rules>>;

/// The planned drops a client's readers apply.
#[derive(Default)]
pub(super) struct Rules {
    /// Tag → (events before the drop, seen so far).
    pub(super) events: BTreeMap<Rc<str>, (u32, u32)>,
    /// Tags whose connection drops right after their result arrives.
    pub(super) results: BTreeSet<Rc<str>>,
    /// Calls run as tasks (no stream to drop): tag → (the JSON answer of
    /// its exchanges, the `CreateTaskResult` being the first and each
    /// `tasks/get` answer the next, whose connection drops unread; answers
    /// seen so far).
    pub(super) answers: BTreeMap<Rc<str>, (u32, u32)>,
    /// Tags whose planned drop closes with RST, and the close switch of
    /// each slot's connection while a drop may still reset it.
    pub(super) resets: BTreeSet<Rc<str>>,
    /// Frames without an `event:` field are dropped unread (a client
    /// setting, `require_event_field`).
    pub(super) require_event_field: bool,
    pub(super) closers: BTreeMap<SlotId, http::Closer>,
    /// Where the events the readers count are reported (a watching tap),
    /// and the count per tag so far.
    pub(super) tap: super::Tap,
    pub(super) counts: BTreeMap<Rc<str>, u32>,
}

impl Rules {
    /// One more event of call `tag` (its result, when `result`): the drop
    /// it fires, if any (the tag, and the events before it; 0 for a drop
    /// at the result).
    fn fire(&mut self, tag: &str, result: bool) -> Option<(Rc<str>, u32)> {
        self.count(tag, result);
        let at_result = result && self.results.remove(tag);
        let Some((key, rule)) = self.events.get_key_value(tag).map(|(k, r)| (k.clone(), *r)) else {
            return at_result.then(|| (Rc::from(tag), 0));
        };
        let seen = rule.1 + 1;
        if seen >= rule.0 {
            self.events.remove(&key);
            Some((key, rule.0))
        } else {
            self.events.insert(key.clone(), (rule.0, seen));
            at_result.then_some((key, 0))
        }
    }

    /// One more JSON answer of call `tag`'s exchanges (a task's): the
    /// drop it fires, if any (the tag, and the answer it drops).
    fn answer(&mut self, tag: &str) -> Option<(Rc<str>, u32)> {
        let (key, (at, seen)) = self
            .answers
            .get_key_value(tag)
            .map(|(k, r)| (k.clone(), *r))?;
        if seen + 1 >= at {
            self.answers.remove(&key);
            return Some((key, at));
        }
        self.answers.insert(key, (at, seen + 1));
        None
    }

    /// Keeps `conn`'s close switch for `slot` while a drop planned with
    /// RST may come.
    fn watch_close(&mut self, slot: SlotId, conn: &http::Conn) {
        if let (false, Some(c)) = (self.resets.is_empty(), conn.closer()) {
            self.closers.insert(slot, c);
        }
    }

    /// Makes `slot`'s close abortive if call `tag`'s planned drop closes
    /// with RST.
    pub(super) fn reset_if_planned(&mut self, slot: SlotId, tag: &str) {
        if let Some(c) = self.closers.remove(&slot) {
            if self.resets.contains(tag) {
                c.set(true);
            }
        }
    }

    /// One more event of call `tag` (its result, when `result`), reported
    /// to a watching tap.
    fn count(&mut self, tag: &str, result: bool) {
        if !self.tap.watches() {
            return;
        }
        let tag: Rc<str> = match self.counts.get_key_value(tag) {
            Some((k, _)) => k.clone(),
            None => tag.into(),
        };
        let n = self.counts.entry(tag.clone()).or_insert(0);
        *n += 1;
        let n = *n;
        self.tap.report(&tag, At::Event, n);
        if result {
            self.tap.report(&tag, At::Result, n);
        }
    }
}

/// The operation tag an event belongs to: request ids are `tag#attempt`,
/// and progress tokens are the request id.
pub(super) fn tag_of(msg: &Message) -> Option<(Cow<'_, str>, bool)> {
    fn id_tag(id: &RequestId) -> Option<Cow<'_, str>> {
        match id {
            RequestId::Str(s) => s.split_once('#').map(|(t, _)| Cow::Borrowed(t)),
            RequestId::Num(_) => None,
        }
    }
    match msg {
        Message::Result { id, .. } => id_tag(id).map(|t| (t, true)),
        Message::Error { id: Some(id), .. } => id_tag(id).map(|t| (t, true)),
        Message::Notification {
            params: Some(p), ..
        } => mcp::progress_token(p)
            .and_then(|s| match s {
                Cow::Borrowed(s) => s.split_once('#').map(|(t, _)| Cow::Borrowed(t)),
                Cow::Owned(s) => s.split_once('#').map(|(t, _)| Cow::Owned(t.to_string())),
            })
            .map(|t| (t, false)),
        _ => None,
    }
}

/// The request an event of a call answers: a result's id, or a progress
/// notification's token (the request id).
pub(super) fn rpc_of(msg: &Message) -> Option<RequestId> {
    match msg {
        Message::Result { id, .. } | Message::Error { id: Some(id), .. } => Some(id.clone()),
        Message::Notification {
            params: Some(p), ..
        } => mcp::progress_token(p).map(|t| RequestId::Str(t.into_owned())),
        _ => None,
    }
}

/// One exchange for a reader task: everything but the connector.
pub(super) struct Job {
    pub(super) slot: SlotId,
    pub(super) out: Outgoing,
    pub(super) tx: mpsc::UnboundedSender<Input>,
    pub(super) connect_timeout: Duration,
    pub(super) read_timeout: Duration,
    /// Whether the exchange owes the client events (a read timeout then
    /// counts as a broken stream); the decision loop updates it.
    pub(super) expecting: Rc<Cell<bool>>,
    pub(super) drops: DropRules,
    /// The client's pool, when this exchange takes and gives back a kept-
    /// alive connection (never for a standalone or legacy stream).
    pub(super) pool: Option<Pool>,
}

/// Starts a reader task for a [`Job`]; its abort handle.
pub(super) type Spawner = Box<dyn Fn(Job) -> AbortHandle>;

/// A [`Spawner`] on `connector`: the one place that names the connector's
/// type, so that the rest of the client is not generic over it.
pub(super) fn spawner<C: Connector>(connector: C) -> Spawner {
    Box::new(move |j: Job| tokio::task::spawn_local(reader(j, connector.clone())).abort_handle())
}

/// Sends `out` on the pooled connection when there is one (telling the
/// decision loop so), else on a new one, and waits for its response
/// head; the `Failed` input when none comes within the timeouts
/// (connect, read).
async fn exchange<C: Connector>(
    slot: SlotId,
    out: Outgoing,
    tx: &mpsc::UnboundedSender<Input>,
    connector: &C,
    (pool, drops): (Option<&Pool>, &DropRules),
    (connect_timeout, read_timeout): (Duration, Duration),
) -> Result<http::Exchange, Input> {
    let pooled = pool.and_then(Pool::take);
    let stale = pooled.is_some();
    let conn = match pooled {
        Some(conn) => {
            let _ = tx.send(Input::Reused { slot });
            Ok(conn)
        }
        None => match tokio::time::timeout(connect_timeout, connector.connect()).await {
            Ok(Ok(io)) => Err(io),
            _ => {
                return Err(Input::Failed {
                    slot,
                    connected: false,
                    stale: false,
                })
            }
        },
    };
    let sent = async {
        let conn = match conn {
            Ok(conn) => conn,
            Err(io) => {
                let closer = C::closer(&io);
                let mut conn = http::handshake(io, &Default::default()).await?;
                conn.set_closer(closer);
                conn
            }
        };
        // A drop planned to reset may come at any moment from here on.
        drops.borrow_mut().watch_close(slot, &conn);
        http::send_on(conn, out, Default::default(), pool.is_some()).await
    };
    match tokio::time::timeout(read_timeout, sent).await {
        Ok(Ok(ex)) => Ok(ex),
        _ => Err(Input::Failed {
            slot,
            connected: true,
            stale,
        }),
    }
}

/// What a JSON answer (read within the read timeout, or not) tells the
/// client: the message (its connection back in the pool), a planned drop
/// that took it (the connection closed unread), or a failed exchange.
fn json_answer(
    slot: SlotId,
    (status, headers): (u16, ::http::HeaderMap),
    answer: Option<(Option<Message>, Option<http::Conn>)>,
    drops: &DropRules,
    pool: Option<&Pool>,
) -> Input {
    let Some((msg, conn)) = answer else {
        return Input::Failed {
            slot,
            connected: true,
            stale: false,
        };
    };
    // A task's exchange: a drop planned at this answer closes the
    // connection before the client reads it.
    if let Some((tag, after_event)) = answer_drop(drops, msg.as_ref()) {
        drop(conn);
        return Input::Dropped {
            slot,
            tag,
            after_event,
        };
    }
    if let (Some(p), Some(c)) = (pool, conn) {
        p.put(c);
    }
    Input::Json {
        slot,
        status,
        headers: Box::new(headers),
        msg,
    }
}

/// The drop planned at answer `msg` (JSON, or an SSE stream's one
/// message) of a task's exchanges, if it fires (its call's tag, and the answer it takes). A `tasks/get` answer's
/// id is `tag~task#n`.
fn answer_drop(drops: &DropRules, msg: Option<&Message>) -> Option<(Rc<str>, u32)> {
    let (t, _) = tag_of(msg?)?;
    let call = t.split_once('~').map_or(&*t, |(call, _)| call);
    drops.borrow_mut().answer(call)
}

/// One exchange: on the pooled connection when the job has one, else on
/// a new connection (connect first); send, then forward the answer (JSON,
/// or SSE headers and events as they come) until it ends, breaks, times
/// out while events are expected, or a planned drop fires. A body read
/// to its end gives the connection back to the pool.
async fn reader<C: Connector>(job: Job, connector: C) {
    let Job {
        slot,
        out,
        tx,
        connect_timeout,
        read_timeout,
        expecting,
        drops,
        pool,
    } = job;
    let timeouts = (connect_timeout, read_timeout);
    let send = |i: Input| {
        let _ = tx.send(i);
    };
    let mut ex = match exchange(
        slot,
        out,
        &tx,
        &connector,
        (pool.as_ref(), &drops),
        timeouts,
    )
    .await
    {
        Ok(ex) => ex,
        Err(failed) => return send(failed),
    };
    let status = ex.status.as_u16();
    if !ex.is_sse() {
        let ex_headers = ex.headers.clone();
        let answer = tokio::time::timeout(read_timeout, ex.json_and_conn())
            .await
            .ok()
            .and_then(Result::ok);
        let input = json_answer(slot, (status, ex_headers), answer, &drops, pool.as_ref());
        return send(input);
    }
    let stream_first = ex
        .headers
        .get(headers::MCP_STREAM_FIRST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let session = ex
        .headers
        .get(headers::MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    send(Input::Head {
        slot,
        status,
        stream_first,
        session,
    });
    // A keep-alive comment is a sign of life: a stream silent but for
    // comments is not broken.
    let mut comments = 0;
    loop {
        match tokio::time::timeout(read_timeout, ex.next_event()).await {
            Err(_) if expecting.get() && ex.comments() == comments => {
                return send(Input::Broken { slot })
            }
            Err(_) => comments = ex.comments(),
            Ok(Err(_)) => return send(Input::Broken { slot }),
            Ok(Ok(None)) => {
                send(Input::End { slot });
                if let (Some(p), Some(c)) = (&pool, ex.into_conn()) {
                    p.put(c);
                }
                return;
            }
            Ok(Ok(Some(ev))) if !ev.typed && drops.borrow().require_event_field => {}
            Ok(Ok(Some(ev))) if ev.event == sse::GAP_EVENT => send(Input::Gap {
                slot,
                missing: sse::parse_gap(&ev.data).ok(),
            }),
            Ok(Ok(Some(ev))) => {
                let marker = ev.event == "replay-end";
                let msg = (!ev.data.is_empty() && !marker)
                    .then(|| Message::decode(ev.data.as_bytes()).ok())
                    .flatten();
                // A task's exchange answered on SSE (the server's choice):
                // a drop planned at this answer takes it, as it takes a
                // JSON one.
                let answer = matches!(msg, Some(Message::Result { .. } | Message::Error { .. }));
                if let Some((tag, after_event)) =
                    answer.then(|| answer_drop(&drops, msg.as_ref())).flatten()
                {
                    drop(ex);
                    return send(Input::Dropped {
                        slot,
                        tag,
                        after_event,
                    });
                }
                let fire = msg
                    .as_ref()
                    .and_then(tag_of)
                    .and_then(|(tag, result)| drops.borrow_mut().fire(&tag, result));
                send(Input::Event {
                    endpoint: (ev.event == "endpoint").then(|| ev.data.clone()),
                    slot,
                    id: ev.id.clone(),
                    marker,
                    msg,
                    retry_ms: ev.retry_ms,
                });
                if let Some((tag, after_event)) = fire {
                    // The planned drop: close the connection right here.
                    drops.borrow_mut().reset_if_planned(slot, &tag);
                    drop(ex);
                    return send(Input::Dropped {
                        slot,
                        tag,
                        after_event,
                    });
                }
            }
        }
    }
}

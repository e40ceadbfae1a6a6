//! A virtual MCP client: a workload of tool calls with think time, and a
//! behaviour for dropped streams (DESIGN §4). It is an actor: every HTTP
//! exchange runs as a reader task that forwards what it sees over a
//! channel, and one loop decides what to do next, so there is exactly one
//! place where the client's state changes.
//!
//! The client honors the server: a 409 with a hint makes it resume that
//! stream; a 404 makes it re-initialize and re-issue what is unresolved; a
//! 410 makes it re-issue the operation. While a resume is in progress it
//! holds results arriving on other streams until `replay-end` (or the
//! resume stream ends, breaks, or the hold times out).

use super::http::{self, Outgoing};
use crate::history::{ClientRecord, History, Outcome, Sent, SessionId, Transport};
use crate::protocol::headers::{self, CursorEntry, CursorList};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use crate::scenario::{Behaviour, ClientGroup};
use crate::server::Delivery;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::io;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// Opens connections to the server. The world implements it over
/// turmoil; [`TcpConnector`] over a real socket.
pub trait Connector: Clone + 'static {
    /// The connection type.
    type Io: AsyncRead + AsyncWrite + Unpin + 'static;
    /// Opens one connection.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Io>>;
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

/// Everything one client needs to run.
#[derive(Clone, Debug)]
pub struct ClientSpec {
    /// Global client index.
    pub index: u32,
    /// Workload, behaviour, timeouts.
    pub group: ClientGroup,
    /// The server's delivery mode (known from the deployment).
    pub delivery: Delivery,
    /// Planned drops: call index → counted events before the drop.
    pub drops: BTreeMap<u32, u32>,
    /// Delay before the first call, ms.
    pub start_delay_ms: u64,
    /// transport-switch: the call after which the network changes.
    pub switch_after: Option<u32>,
}

type SlotId = u32;

#[derive(Clone, Debug)]
enum SlotKind {
    Init,
    /// `GET /sse`: the legacy stream.
    LegacyOpen,
    /// A POST to the legacy `/messages` endpoint (its answer rides the stream).
    LegacyPost,
    /// A streamable `resources/subscribe` (JSON answer).
    Subscribe,
    Call {
        op: usize,
    },
    Resume {
        stream: u64,
    },
    Open,
}

struct Slot {
    kind: SlotKind,
    /// The client stream this slot's events belong to, once known.
    stream: Option<u64>,
    last_activity_us: u64,
    expecting: Rc<Cell<bool>>,
    task: AbortHandle,
    /// A resume slot whose `replay-end` has not arrived yet.
    marker_pending: bool,
    /// Its response headers arrived.
    answered: bool,
}

/// A stream as the client knows it, named by its first (priming) event id.
struct CStream {
    last_seen: u64,
    live: Option<SlotId>,
    finished: bool,
    standalone: bool,
    /// Operations whose events rode it.
    ops: BTreeSet<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpState {
    Pending,
    Active,
    Done,
    Abandoned,
}

struct Op {
    tag: Rc<str>,
    posts: u32,
    attempts: u32,
    state: OpState,
    interrupted: bool,
    /// The stream its response rides, once known.
    stream: Option<u64>,
    /// Earlier POSTs of it whose response stream the client never saw
    /// begin (no headers, or no priming event).
    unseen: Vec<RequestId>,
    /// The request id of its latest POST.
    rpc: Option<RequestId>,
    /// The call went out (`OpStarted`).
    started: bool,
    /// Its result came as a JSON response (no events).
    json_result: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Init,
    StartNext,
    Post(usize),
    Resume(u64),
    Open,
    /// The hold of that generation timed out (if it still holds).
    ReleaseHolds(u64),
    /// The planned network change: leave the legacy transport.
    Switch,
    /// (Re-)subscribe to the clock resource.
    Subscribe,
}

enum Input {
    Json {
        slot: SlotId,
        status: u16,
        headers: ::http::HeaderMap,
        msg: Option<Message>,
    },
    Head {
        slot: SlotId,
        status: u16,
        /// `Mcp-Stream-First-Event-Id` of a mapped resume.
        stream_first: Option<u64>,
    },
    Event {
        slot: SlotId,
        /// The data of a legacy `endpoint` event.
        endpoint: Option<String>,
        id: Option<u64>,
        marker: bool,
        msg: Option<Message>,
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
    },
}

/// A result as the client got it: the request id it answered, the chunk
/// its payload names, and whether the server marked it as a replay.
#[derive(Clone, Debug)]
struct Got {
    rpc: RequestId,
    chunk: Option<mcp::ChunkRef>,
    replayed: bool,
}

impl Got {
    fn of(rpc: RequestId, msg: &Message) -> Got {
        Got {
            rpc,
            chunk: mcp::chunk_of(msg),
            replayed: mcp::is_replayed(msg),
        }
    }
}

/// Drop rules the readers apply: tag → (events before the drop, seen so far).
type DropRules = Rc<RefCell<BTreeMap<Rc<str>, (u32, u32)>>>;

/// The operation tag an event belongs to: request ids are `tag#attempt`,
/// and progress tokens are the request id.
fn tag_of(msg: &Message) -> Option<(&str, bool)> {
    fn id_tag(id: &RequestId) -> Option<&str> {
        match id {
            RequestId::Str(s) => s.split_once('#').map(|(t, _)| t),
            RequestId::Num(_) => None,
        }
    }
    match msg {
        Message::Result { id, .. } => id_tag(id).map(|t| (t, true)),
        Message::Error { id: Some(id), .. } => id_tag(id).map(|t| (t, true)),
        Message::Notification {
            params: Some(p), ..
        } => p
            .get("progressToken")
            .and_then(Value::as_str)
            .and_then(|s| s.split_once('#'))
            .map(|(t, _)| (t, false)),
        _ => None,
    }
}

/// The request an event of a call answers: a result's id, or a progress
/// notification's token (the request id).
fn rpc_of(msg: &Message) -> Option<RequestId> {
    match msg {
        Message::Result { id, .. } | Message::Error { id: Some(id), .. } => Some(id.clone()),
        Message::Notification {
            params: Some(p), ..
        } => p
            .get("progressToken")
            .and_then(Value::as_str)
            .map(|t| RequestId::Str(t.to_string())),
        _ => None,
    }
}

/// Runs one virtual client to completion (every operation done or
/// abandoned). Must run inside a `LocalSet`.
pub async fn run<C: Connector>(spec: ClientSpec, connector: C, history: History) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut c = Client {
        ops: (0..spec.group.calls)
            .map(|n| Op {
                tag: format!("c{}-op{n}", spec.index).into(),
                posts: 0,
                attempts: 0,
                state: OpState::Pending,
                interrupted: false,
                stream: None,
                unseen: Vec::new(),
                rpc: None,
                started: false,
                json_result: false,
            })
            .collect(),
        spec,
        connector,
        history,
        tx,
        session: None,
        slots: BTreeMap::new(),
        next_slot: 0,
        streams: BTreeMap::new(),
        standalone: None,
        timers: BTreeMap::new(),
        timer_seq: 0,
        next_op: 0,
        held: VecDeque::new(),
        holding: None,
        hold_gen: 0,
        resend_after_resume: BTreeMap::new(),
        drop_rules: Rc::default(),
        init_attempts: 0,
        open_before_next: false,
        next_on_resume: false,
        transport: Transport::Streamable,
        switch_pending: false,
        legacy_endpoint: None,
        drops_fired: BTreeSet::new(),
        drops_missed: BTreeMap::new(),
        switch_due: false,
        legacy_dropped: None,
        switched: None,
        names: BTreeMap::new(),
    };
    if c.g().behaviour == Behaviour::TransportSwitch {
        c.transport = Transport::Legacy;
    }
    c.schedule(Duration::ZERO, Action::Init);
    c.run(rx).await;
}

struct Client<C> {
    spec: ClientSpec,
    connector: C,
    history: History,
    tx: mpsc::UnboundedSender<Input>,
    session: Option<SessionId>,
    slots: BTreeMap<SlotId, Slot>,
    next_slot: SlotId,
    streams: BTreeMap<u64, CStream>,
    standalone: Option<u64>,
    timers: BTreeMap<(Instant, u64), Action>,
    timer_seq: u64,
    ops: Vec<Op>,
    next_op: usize,
    held: VecDeque<(usize, Got)>,
    /// The stream being resumed whose `replay-end` has not arrived: results
    /// on other streams wait for it (with a generation for its timeout).
    holding: Option<(u64, u64)>,
    hold_gen: u64,
    resend_after_resume: BTreeMap<u64, Vec<usize>>,
    drop_rules: DropRules,
    init_attempts: u32,
    /// A new op waits for the standalone stream to open (session-stream).
    open_before_next: bool,
    /// resume-then-post: the next call goes out once a resume's headers arrive.
    next_on_resume: bool,
    /// The transport the client speaks now.
    transport: Transport,
    /// A switch's resume is in flight: hold the workload until it resolves.
    switch_pending: bool,
    /// The legacy `/messages` URI from the endpoint event.
    legacy_endpoint: Option<String>,
    /// Calls whose planned drop fired.
    drops_fired: BTreeSet<u32>,
    /// Calls that ended with their planned drop still waiting: (counted
    /// events seen, events the drop waited for, how the call ended).
    drops_missed: BTreeMap<u32, (u32, u32, Outcome)>,
    /// The planned switch is scheduled (its call completed on legacy).
    switch_due: bool,
    /// A planned drop closed the legacy stream during this call.
    legacy_dropped: Option<u32>,
    /// The client left the legacy transport: `Some(None)` at its planned
    /// point, `Some(Some(why))` before it.
    switched: Option<Option<String>>,
    /// Streams the server names otherwise than the client does: its
    /// legacy stream, after a mapped resume, by its first event id in the
    /// streamable namespace (server's name → client's key).
    names: BTreeMap<u64, u64>,
}

impl<C: Connector> Client<C> {
    async fn run(&mut self, mut rx: mpsc::UnboundedReceiver<Input>) {
        loop {
            if self.finished() {
                break;
            }
            let due = self.timers.keys().next().map(|(t, _)| *t);
            tokio::select! {
                biased;
                Some(input) = rx.recv() => self.on_input(input),
                _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => self.fire_timers(),
            }
        }
        // A drop that fired on a call's last event arrives after the event
        // that finished the client: it was applied all the same.
        while let Ok(input) = rx.try_recv() {
            if let Input::Dropped {
                tag, after_event, ..
            } = input
            {
                self.dropped(tag, after_event);
            }
        }
        for slot in self.slots.values() {
            slot.task.abort();
        }
        self.report_unapplied();
    }

    fn dropped(&mut self, tag: Rc<str>, after_event: u32) {
        if let Some(op) = self.op_by_tag(&tag) {
            self.drops_fired.insert(op as u32);
            if self.transport == Transport::Legacy {
                self.legacy_dropped = Some(op as u32);
            }
        }
        self.record(ClientRecord::Dropped {
            client: self.spec.index,
            tag,
            after_event,
        });
    }

    /// One `FaultNotApplied` record per planned drop or switch that did not
    /// happen, with why.
    fn report_unapplied(&self) {
        let index = self.spec.index;
        let calls = self.ops.len() as u32;
        let mut out: Vec<(&'static str, u32, Option<u32>, String)> = Vec::new();
        for (&call, &after) in &self.spec.drops {
            if self.drops_fired.contains(&call) {
                continue;
            }
            let reason = match self.ops.get(call as usize) {
                None => format!("client {index} makes only {calls} calls"),
                Some(o) if !o.started => format!(
                    "call {call} never started: the client gave up after {} failed initializations",
                    self.init_attempts
                ),
                Some(o) => match self.drops_missed.get(&call) {
                    Some(&(seen, _, Outcome::Done)) if o.json_result => format!(
                        "call {call} got its result as a JSON response (no events) after \
                         {seen} counted events, before event {after}"
                    ),
                    Some(&(seen, _, Outcome::Done)) => {
                        let per_call = if after > self.g().chunks {
                            format!(" (a call has {})", self.g().chunks)
                        } else {
                            String::new()
                        };
                        format!(
                            "call {call} ended after {seen} counted events, before event \
                             {after}{per_call}"
                        )
                    }
                    Some(&(seen, _, _)) => format!(
                        "call {call} was abandoned after {} attempts and {seen} counted events, \
                         before event {after}",
                        o.attempts
                    ),
                    None => format!("call {call} ended without reaching event {after}"),
                },
            };
            out.push(("drop", call, Some(after), reason));
        }
        if let Some(after) = self.spec.switch_after {
            let reason = match (&self.switched, self.ops.get(after as usize)) {
                (Some(None), _) => None,
                _ if self.g().behaviour != Behaviour::TransportSwitch => Some(format!(
                    "client {index} is a {} client: only transport-switch clients switch",
                    self.g().behaviour.as_str()
                )),
                (_, None) => Some(format!("client {index} makes only {calls} calls")),
                (Some(Some(why)), _) => Some(format!(
                    "the client had already left the legacy transport before call {after} \
                     ended: {why}"
                )),
                (None, Some(o)) if !o.started => Some(format!(
                    "call {after} never started: the client gave up after {} failed \
                     initializations",
                    self.init_attempts
                )),
                (None, Some(o)) if o.state == OpState::Abandoned => Some(format!(
                    "call {after} was abandoned after {} attempts",
                    o.attempts
                )),
                (None, Some(_)) if after + 1 == calls => Some(format!(
                    "call {after} is the client's last: it finished before switching"
                )),
                (None, Some(_)) => {
                    Some(format!("call {after} ended but the client never switched"))
                }
            };
            if let Some(reason) = reason {
                out.push(("switch", after, None, reason));
            }
        }
        for (kind, call, after_event, reason) in out {
            self.record(ClientRecord::FaultNotApplied {
                client: index,
                kind,
                call,
                after_event,
                reason,
            });
        }
    }

    fn finished(&self) -> bool {
        self.next_op >= self.ops.len()
            && self
                .ops
                .iter()
                .all(|o| matches!(o.state, OpState::Done | OpState::Abandoned))
    }

    fn g(&self) -> &ClientGroup {
        &self.spec.group
    }

    fn record(&self, r: ClientRecord) {
        self.history.record(r);
    }

    fn schedule(&mut self, after: Duration, action: Action) {
        self.timer_seq += 1;
        self.timers
            .insert((Instant::now() + after, self.timer_seq), action);
    }

    fn backoff(&self, attempts: u32) -> Duration {
        let exp = self
            .g()
            .backoff_ms
            .saturating_mul(1u64 << attempts.saturating_sub(1).min(16));
        Duration::from_millis(exp.min(self.g().backoff_max_ms))
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let action = entry.remove();
            self.act(action);
        }
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::Init => self.send_init(),
            Action::StartNext => self.start_next(false),
            Action::Post(op) => {
                if self.ops[op].state == OpState::Active {
                    self.send_call(op);
                }
            }
            Action::Resume(stream) => self.send_resume(stream),
            Action::Open => self.send_open(),
            Action::Switch => self.switch(),
            Action::Subscribe => self.subscribe(),
            Action::ReleaseHolds(generation) => {
                if self.holding.is_some_and(|(_, g)| g == generation) {
                    self.release_holds();
                }
            }
        }
    }

    // ---- sending -------------------------------------------------------

    fn spawn(&mut self, kind: SlotKind, out: Outgoing, expecting: bool) -> SlotId {
        let slot = self.next_slot;
        self.next_slot += 1;
        let expecting = Rc::new(Cell::new(expecting));
        let task = tokio::task::spawn_local(reader(
            slot,
            self.connector.clone(),
            out,
            self.tx.clone(),
            Duration::from_millis(self.g().connect_timeout_ms),
            Duration::from_millis(self.g().read_timeout_ms),
            expecting.clone(),
            self.drop_rules.clone(),
        ));
        self.slots.insert(
            slot,
            Slot {
                kind,
                stream: None,
                last_activity_us: self.history.now_us(),
                expecting,
                task: task.abort_handle(),
                marker_pending: false,
                answered: false,
            },
        );
        slot
    }

    fn send_init(&mut self) {
        // Every way to a new session (a failed initialize, a 404, a lost
        // legacy stream) comes here: the bound holds on all of them.
        if self.inits_exhausted() {
            return self.give_up();
        }
        self.init_attempts += 1;
        if self.transport == Transport::Legacy {
            // Legacy: the session is born with its stream; initialize goes
            // to /messages once the endpoint event names it.
            let mut h = ::http::HeaderMap::new();
            h.insert(
                ::http::header::ACCEPT,
                ::http::HeaderValue::from_static("text/event-stream"),
            );
            let out = Outgoing {
                method: ::http::Method::GET,
                path: "/sse".into(),
                headers: h,
                body: None,
            };
            self.spawn(SlotKind::LegacyOpen, out, true);
            return;
        }
        let msg = self.init_message();
        self.spawn(SlotKind::Init, Outgoing::post(None, &msg), true);
    }

    /// `initialize` as this client sends it on its current transport (and
    /// the record that it went out): a
    /// transport-switch client asks for the legacy revision and one
    /// capability set there, and a newer revision and another set on
    /// streamable HTTP.
    fn init_message(&self) -> Message {
        let msg = self.init_request();
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Initialize,
            tag: None,
            rpc_id: msg.id().cloned(),
            cursor: None,
            keyed: false,
        });
        msg
    }

    fn init_request(&self) -> Message {
        init_request(
            self.g().behaviour,
            self.transport,
            self.spec.index,
            self.init_attempts,
        )
    }

    /// A POST to the legacy `/messages` endpoint.
    fn legacy_post(&mut self, msg: &Message) -> Option<SlotId> {
        let path = self.legacy_endpoint.clone()?;
        let mut out = Outgoing::post(None, msg);
        out.path = path;
        Some(self.spawn(SlotKind::LegacyPost, out, true))
    }

    /// The planned network change: leave the legacy stream and reconnect
    /// over streamable HTTP with the same session id and the last legacy
    /// event id as `Last-Event-ID`.
    fn switch(&mut self) {
        let planned = std::mem::take(&mut self.switch_due);
        if self.transport != Transport::Legacy {
            return;
        }
        self.switched = Some((!planned).then(|| {
            let during = self
                .next_op
                .checked_sub(1)
                .map_or("before its first call".to_string(), |c| {
                    format!("during call {c}")
                });
            match self.legacy_dropped {
                Some(c) => format!("a planned drop closed its legacy stream during call {c}"),
                None => format!("its legacy stream broke {during}"),
            }
        }));
        let stream = self.standalone;
        let cursor = stream
            .and_then(|k| self.streams.get(&k))
            .map(|st| st.last_seen);
        self.record(ClientRecord::Switched {
            client: self.spec.index,
            from: Transport::Legacy,
            cursor,
        });
        self.transport = Transport::Streamable;
        if let Some(k) = stream {
            if let Some(old) = self.streams.get_mut(&k).and_then(|st| st.live.take()) {
                if let Some(o) = self.slots.remove(&old) {
                    o.task.abort();
                }
            }
            self.switch_pending = true;
            self.send_resume(k);
        } else {
            self.reinit();
        }
    }

    fn with_session(&self, out: Outgoing) -> Outgoing {
        out.header(headers::MCP_PROTOCOL_VERSION, mcp::LATEST_VERSION)
    }

    /// Starts the next call. Unless `concurrent` (resume-then-post moving
    /// on during a resume), only when no call is active.
    fn start_next(&mut self, concurrent: bool) {
        if self.next_op >= self.ops.len() || self.session.is_none() {
            return;
        }
        if !concurrent && self.ops.iter().any(|o| o.state == OpState::Active) {
            return;
        }
        if self.switch_pending || (self.transport == Transport::Legacy && self.standalone.is_none())
        {
            return; // a switch resolves first; legacy calls need the stream
        }
        if self.ops[self.next_op].state != OpState::Pending {
            return;
        }
        if self.spec.delivery == Delivery::SessionStream && !self.standalone_live() {
            self.open_before_next = true;
            // Only an open in flight brings the standalone stream (and
            // starts the call on its priming event). A resume in flight does
            // not: one of the current standalone stream makes it live
            // already, and one of an older standalone stream (a 409 named
            // it) never becomes the session's standalone stream again.
            if !self
                .slots
                .values()
                .any(|s| matches!(s.kind, SlotKind::Open))
            {
                self.send_open();
            }
            return;
        }
        let op = self.next_op;
        self.next_op += 1;
        self.ops[op].state = OpState::Active;
        self.ops[op].started = true;
        self.record(ClientRecord::OpStarted {
            client: self.spec.index,
            tag: self.ops[op].tag.clone(),
        });
        if let Some(&after) = self.spec.drops.get(&(op as u32)) {
            self.drop_rules
                .borrow_mut()
                .insert(self.ops[op].tag.clone(), (after, 0));
        }
        self.send_call(op);
    }

    fn standalone_live(&self) -> bool {
        self.standalone
            .and_then(|s| self.streams.get(&s))
            .is_some_and(|s| s.live.is_some())
    }

    fn send_call(&mut self, op: usize) {
        let Some(session) = self.session.clone() else {
            return;
        };
        if !self.take_attempt(op) {
            return;
        }
        let o = &mut self.ops[op];
        o.posts += 1;
        o.stream = None;
        let rpc = RequestId::Str(format!("{}#{}", o.tag, o.posts));
        o.rpc = Some(rpc.clone());
        let tag = o.tag.clone();
        let msg = call_request(&tag, &rpc, self.g());
        let mut out = if self.transport == Transport::Legacy {
            let mut o = Outgoing::post(None, &msg);
            o.path = self
                .legacy_endpoint
                .clone()
                .unwrap_or_else(|| format!("/messages?sessionId={session}"));
            o
        } else {
            self.with_session(Outgoing::post(Some(&session), &msg))
        };
        let keyed = self.g().behaviour == Behaviour::DedupRetry;
        if keyed {
            out = out.header(headers::IDEMPOTENCY_KEY, &tag);
        }
        let cursor = self
            .g()
            .cursor_on_post
            .then(|| self.cursor_list())
            .flatten();
        if let Some(c) = &cursor {
            out = out.header(headers::LAST_EVENT_ID, c);
        }
        if self.g().cursor_on_post {
            let unseen: Vec<&RequestId> = self
                .ops
                .iter()
                .filter(|o| o.state == OpState::Active)
                .flat_map(|o| o.unseen.iter())
                .collect();
            if !unseen.is_empty() {
                let list = serde_json::to_string(&unseen).expect("ids serialize");
                out = out.header(headers::MCP_LOST_REQUESTS, &list);
            }
        }
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Call,
            tag: Some(tag),
            rpc_id: Some(rpc),
            cursor,
            keyed,
        });
        self.spawn(SlotKind::Call { op }, out, true);
    }

    /// The cursor list for a POST: every unfinished stream's last seen id,
    /// `;lost` where the client has no live connection to it.
    fn cursor_list(&self) -> Option<String> {
        let list: Vec<CursorEntry> = self
            .streams
            .values()
            .filter(|s| {
                !s.finished
                    && (s.standalone || s.ops.iter().any(|&o| self.ops[o].state == OpState::Active))
            })
            .map(|s| CursorEntry {
                event_id: s.last_seen,
                lost: s.live.is_none(),
            })
            .collect();
        (!list.is_empty()).then(|| CursorList(list).to_string())
    }

    fn send_resume(&mut self, stream: u64) {
        let Some(session) = self.session.clone() else {
            return;
        };
        let Some(st) = self.streams.get(&stream) else {
            return;
        };
        if st.live.is_some_and(|l| {
            self.slots
                .get(&l)
                .is_some_and(|s| matches!(s.kind, SlotKind::Resume { .. }))
        }) {
            return; // never two resumes of one stream at once
        }
        let cursor = st.last_seen;
        // The resume is an attempt of every operation it resumes for; past
        // the bound they are abandoned, and with none left it is not sent
        // (unless a transport switch waits on it).
        let waiting = self.resuming_for(stream);
        if !waiting.is_empty() {
            for &op in &waiting {
                self.take_attempt(op);
            }
            if self.resuming_for(stream).is_empty() && !self.switch_pending {
                return;
            }
        }
        let waiting = self.ops_on(stream);
        let tag = waiting.first().map(|&o| self.ops[o].tag.clone());
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Resume,
            tag,
            rpc_id: None,
            cursor: Some(cursor.to_string()),
            keyed: false,
        });
        let out = self.with_session(Outgoing::get(&session, Some(cursor)));
        let slot = self.spawn(SlotKind::Resume { stream }, out, true);
        let s = self.slots.get_mut(&slot).expect("just inserted");
        s.stream = Some(stream);
        s.marker_pending = true;
        if let Some(old) = self
            .streams
            .get_mut(&stream)
            .and_then(|st| st.live.replace(slot))
        {
            if let Some(o) = self.slots.remove(&old) {
                o.task.abort();
            }
        }
        // Hold results on other streams until this stream's replay-end. A
        // resume that breaks before its marker keeps the hold: the next
        // resume brings the marker.
        // Only a stream that owes us a result has an order to protect.
        if self.holding.is_none_or(|(h, _)| h == stream) && !self.ops_on(stream).is_empty() {
            self.arm_hold(stream);
        }
    }

    /// (Re-)arms the hold on `stream`: it lasts until the marker, or until
    /// the resume has been silent for the read timeout (re-armed by each
    /// resume attempt, its headers, and each event it brings).
    fn arm_hold(&mut self, stream: u64) {
        self.arm_hold_for(stream, Duration::ZERO);
    }

    /// [`Self::arm_hold`], with the silence counted from `after` from now.
    fn arm_hold_for(&mut self, stream: u64, after: Duration) {
        self.hold_gen += 1;
        self.holding = Some((stream, self.hold_gen));
        let generation = self.hold_gen;
        self.schedule(
            after + Duration::from_millis(self.g().read_timeout_ms),
            Action::ReleaseHolds(generation),
        );
    }

    /// Resumes `stream` after `wait`. A hold on it lasts until that resume
    /// has been silent for the read timeout (the backoff grows with the
    /// attempts, beyond the read timeout).
    fn schedule_resume(&mut self, wait: Duration, stream: u64) {
        self.schedule(wait, Action::Resume(stream));
        if self.holding.is_some_and(|(h, _)| h == stream) {
            self.arm_hold_for(stream, wait);
        }
    }

    fn send_open(&mut self) {
        let Some(session) = self.session.clone() else {
            return;
        };
        self.record(ClientRecord::Sent {
            client: self.spec.index,
            what: Sent::Open,
            tag: None,
            rpc_id: None,
            cursor: None,
            keyed: false,
        });
        let out = self.with_session(Outgoing::get(&session, None));
        self.spawn(SlotKind::Open, out, false);
    }

    /// Takes one attempt of `op` for a request about to go out (a POST of
    /// it, or a resume for it): false, and the operation abandoned, past
    /// the bound.
    fn take_attempt(&mut self, op: usize) -> bool {
        if !self.count_attempt(op) {
            return false;
        }
        self.ops[op].attempts += 1;
        true
    }

    /// The active operations a resume of `stream` is for: those whose
    /// result rides it, and those to re-send once it is accepted.
    fn resuming_for(&self, stream: u64) -> Vec<usize> {
        let mut ops = self.ops_on(stream);
        for &op in self.resend_after_resume.get(&stream).into_iter().flatten() {
            if self.ops[op].state == OpState::Active && !ops.contains(&op) {
                ops.push(op);
            }
        }
        ops
    }

    /// Whether `op` may make another attempt; abandons it past the bound.
    fn count_attempt(&mut self, op: usize) -> bool {
        let max = self.g().max_attempts;
        let o = &mut self.ops[op];
        if o.attempts >= max {
            self.finish(op, Outcome::Abandoned);
            return false;
        }
        true
    }

    fn ops_on(&self, stream: u64) -> Vec<usize> {
        (0..self.ops.len())
            .filter(|&i| self.ops[i].state == OpState::Active && self.ops[i].stream == Some(stream))
            .collect()
    }

    // ---- receiving -----------------------------------------------------

    fn on_input(&mut self, input: Input) {
        match input {
            Input::Json {
                slot,
                status,
                headers,
                msg,
            } => self.on_json(slot, status, &headers, msg),
            Input::Head {
                slot,
                status,
                stream_first,
            } => self.on_head(slot, status, stream_first),
            Input::Event {
                slot,
                id,
                marker,
                msg,
                endpoint,
            } => {
                if let Some(e) = endpoint {
                    self.on_endpoint(slot, &e);
                } else {
                    self.on_event(slot, id, marker, msg);
                }
            }
            Input::End { slot } => self.on_end(slot, true),
            Input::Broken { slot } => self.on_end(slot, false),
            Input::Dropped {
                slot,
                tag,
                after_event,
            } => {
                self.dropped(tag, after_event);
                self.on_end(slot, false);
            }
            Input::Failed { slot, connected } => self.on_failed(slot, connected),
        }
    }

    fn on_json(&mut self, slot: SlotId, status: u16, h: &::http::HeaderMap, msg: Option<Message>) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        match s.kind {
            // A legacy stream answered without SSE: it failed to open.
            SlotKind::LegacyOpen => self.retry_init(),
            SlotKind::LegacyPost => match status {
                202 => {}
                404 => {
                    self.status(None, status, None, None);
                    self.reinit()
                }
                _ => self.status(None, status, None, None),
            },
            SlotKind::Subscribe => {
                if status == 404 {
                    self.reinit();
                }
            }
            SlotKind::Init => {
                let sid = h.get(headers::MCP_SESSION_ID).and_then(|v| v.to_str().ok());
                match (status, sid) {
                    (200, Some(sid)) => {
                        let sid: SessionId = sid.into();
                        self.session = Some(sid.clone());
                        self.record(ClientRecord::Session {
                            client: self.spec.index,
                            session: sid.clone(),
                        });
                        if let Some(Message::Result { result, .. }) = &msg {
                            let version = result
                                .get("protocolVersion")
                                .and_then(Value::as_str)
                                .unwrap_or("");
                            self.record(ClientRecord::Negotiated {
                                client: self.spec.index,
                                session: sid,
                                transport: Transport::Streamable,
                                protocol_version: version.to_string(),
                            });
                        }
                        self.after_init();
                    }
                    _ => self.retry_init(),
                }
            }
            SlotKind::Call { op } => self.on_call_reply(op, status, h, msg),
            SlotKind::Resume { stream } => {
                let op = self.ops_on(stream).first().copied();
                self.status(op, status, None, None);
                if let Some(st) = self.streams.get_mut(&stream) {
                    if st.live == Some(slot) {
                        st.live = None;
                    }
                }
                self.end_hold(stream);
                match status {
                    404 => self.reinit(),
                    _ => {
                        // 410 (evicted), or any refusal: re-issue by POST.
                        let waiting: Vec<usize> = self
                            .ops_on(stream)
                            .into_iter()
                            .chain(self.resend_after_resume.remove(&stream).unwrap_or_default())
                            .collect();
                        if let Some(st) = self.streams.get_mut(&stream) {
                            st.finished = true;
                        }
                        for op in waiting {
                            self.reissue(op);
                        }
                    }
                }
            }
            SlotKind::Open => match status {
                404 => self.reinit(),
                _ => {
                    let n = self.init_attempts;
                    self.schedule(self.backoff(n), Action::Open);
                }
            },
        }
    }

    fn status(&self, op: Option<usize>, status: u16, hint: Option<u64>, stream_first: Option<u64>) {
        self.record(ClientRecord::Status {
            client: self.spec.index,
            tag: op.map(|o| self.ops[o].tag.clone()),
            session: self.session.clone(),
            status,
            hint,
            stream_first,
        });
    }

    fn on_call_reply(
        &mut self,
        op: usize,
        status: u16,
        h: &::http::HeaderMap,
        msg: Option<Message>,
    ) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        let data = match &msg {
            Some(Message::Error { error, .. }) => error.data.clone(),
            _ => None,
        };
        let hint = h
            .get(headers::LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let stream_first = data
            .as_ref()
            .and_then(|d| d.get("streamFirstEventId"))
            .and_then(Value::as_u64);
        match status {
            200 => match msg {
                Some(m @ Message::Result { .. }) => {
                    self.ops[op].json_result = true;
                    let got = Got::of(m.id().cloned().expect("a result has an id"), &m);
                    self.deliver(op, got, None)
                }
                _ => {
                    self.status(Some(op), status, None, None);
                    self.finish(op, Outcome::Abandoned);
                }
            },
            202 => {
                // The response rides the standalone stream.
                if let Some(s) = self.standalone {
                    self.ops[op].stream = Some(s);
                    if let Some(st) = self.streams.get_mut(&s) {
                        st.ops.insert(op);
                    }
                    self.set_expecting(s);
                }
            }
            409 => {
                self.status(Some(op), status, hint, stream_first);
                match hint {
                    Some(hint) => self.on_conflict(op, hint, stream_first),
                    None => self.retry_post(op),
                }
            }
            404 => {
                self.status(Some(op), status, None, None);
                self.reinit();
            }
            410 => {
                self.status(Some(op), status, None, stream_first);
                let key = stream_first.map(|f| self.key_of(f));
                if let Some(st) = key.and_then(|k| self.streams.get_mut(&k)) {
                    st.finished = true;
                }
                self.reissue(op);
            }
            503 => {
                self.status(Some(op), status, None, None);
                self.retry_post(op);
            }
            _ => {
                self.status(Some(op), status, None, None);
                self.finish(op, Outcome::Abandoned);
            }
        }
    }

    /// A Rule M 409: resume the named stream from our own last seen id
    /// there (the hint only if we have none).
    fn on_conflict(&mut self, op: usize, hint: u64, stream_first: Option<u64>) {
        let key = self.key_of(stream_first.unwrap_or(hint));
        let known = self.streams.contains_key(&key);
        let st = self.streams.entry(key).or_insert(CStream {
            // A stream we never saw: nothing of it arrived, so resume from
            // its first event (the hint only when it does not say).
            last_seen: stream_first.unwrap_or(hint),
            live: None,
            finished: false,
            standalone: false,
            ops: BTreeSet::new(),
        });
        st.finished = false;
        // The rejected POST retried the operation whose stream is named: the
        // stream it rode, or one of its earlier POSTs we never saw begin.
        let retried_here = self.ops[op].stream == Some(key)
            || st.ops.contains(&op)
            || (!known && !self.ops[op].unseen.is_empty());
        if retried_here {
            st.ops.insert(op);
        }
        if retried_here {
            // The rejected POST retried the operation being resumed: wait
            // for its result on the resumed stream.
            self.ops[op].stream = Some(key);
        } else {
            self.resend_after_resume.entry(key).or_default().push(op);
        }
        // A resume on its way brings the stream (and, at its headers, the
        // re-sends). One the server answered already has a connection the
        // server no longer counts (it names the stream): take it over.
        let live = st.live;
        let resume = live.and_then(|l| {
            self.slots
                .get(&l)
                .filter(|s| matches!(s.kind, SlotKind::Resume { .. }))
                .map(|s| s.answered)
        });
        match resume {
            Some(false) => {}
            Some(true) => {
                if let Some(old) = live.and_then(|l| self.slots.remove(&l)) {
                    old.task.abort();
                }
                if let Some(st) = self.streams.get_mut(&key) {
                    st.live = None;
                }
                self.send_resume(key);
            }
            None => self.send_resume(key),
        }
    }

    /// The client's key for a stream the server names by `first`.
    fn key_of(&self, first: u64) -> u64 {
        self.names.get(&first).copied().unwrap_or(first)
    }

    fn on_head(&mut self, slot: SlotId, status: u16, stream_first: Option<u64>) {
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        s.answered = true;
        if let (SlotKind::Resume { stream }, 200) = (&s.kind, status) {
            let stream = *stream;
            // A mapped resume says how Rule M names this stream from now on.
            if let Some(first) = stream_first.filter(|&f| f != stream) {
                self.names.insert(first, stream);
            }
            if self.holding.is_some_and(|(h, _)| h == stream) {
                self.arm_hold(stream);
            }
            // The resume's headers arrived: re-send new calls it held up.
            for op in self.resend_after_resume.remove(&stream).unwrap_or_default() {
                if self.ops[op].state == OpState::Active {
                    self.send_call(op);
                }
            }
            self.set_expecting(stream);
            if std::mem::take(&mut self.next_on_resume) {
                self.start_next(true);
            }
            if std::mem::take(&mut self.switch_pending) {
                // The server took the session over the new transport.
                self.schedule(Duration::ZERO, Action::StartNext);
            }
        }
    }

    /// The legacy `endpoint` event: the session exists; initialize there.
    fn on_endpoint(&mut self, slot: SlotId, uri: &str) {
        let Some(sid) = uri
            .split_once("sessionId=")
            .map(|(_, v)| v.split('&').next().unwrap_or(v))
        else {
            return;
        };
        let sid: SessionId = sid.into();
        if let Some(s) = self.slots.get_mut(&slot) {
            s.last_activity_us = self.history.now_us();
        }
        self.session = Some(sid.clone());
        self.legacy_endpoint = Some(uri.to_string());
        self.record(ClientRecord::Session {
            client: self.spec.index,
            session: sid,
        });
        let msg = self.init_message();
        self.legacy_post(&msg);
    }

    /// The initialize result arrived on the legacy stream.
    fn on_legacy_init(&mut self, result: &Value) {
        let Some(sid) = self.session.clone() else {
            return;
        };
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        self.record(ClientRecord::Negotiated {
            client: self.spec.index,
            session: sid,
            transport: Transport::Legacy,
            protocol_version: version,
        });
        let initialized = Message::Notification {
            method: mcp::INITIALIZED.into(),
            params: None,
        };
        self.legacy_post(&initialized);
        self.after_init();
    }

    /// `resources/subscribe` to the clock on the current transport.
    fn subscribe(&mut self) {
        let Some(session) = self.session.clone() else {
            return;
        };
        let msg = Message::Request {
            id: RequestId::Str(format!("c{}-sub#{}", self.spec.index, self.init_attempts)),
            method: mcp::RESOURCES_SUBSCRIBE.into(),
            params: Some(json!({"uri": mcp::CLOCK_URI})),
        };
        if self.transport == Transport::Legacy {
            self.legacy_post(&msg);
        } else {
            let out = self.with_session(Outgoing::post(Some(&session), &msg));
            self.spawn(SlotKind::Subscribe, out, true);
        }
    }

    fn on_event(&mut self, slot: SlotId, id: Option<u64>, marker: bool, msg: Option<Message>) {
        let now = self.history.now_us();
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        s.last_activity_us = now;
        let kind = s.kind.clone();
        // Events of a call keep the hold alive; notifications do not (a
        // steady notification stream without a marker would hold forever).
        let call_event = msg.as_ref().and_then(tag_of).is_some();
        if let (SlotKind::Resume { stream }, Some((h, _)), true) = (&kind, self.holding, call_event)
        {
            if *stream == h {
                self.arm_hold(h);
            }
        }
        let Some(s) = self.slots.get_mut(&slot) else {
            return;
        };
        if let Some(id) = id {
            let key = match s.stream {
                Some(k) => k,
                None => {
                    s.stream = Some(id);
                    let standalone = matches!(kind, SlotKind::Open | SlotKind::LegacyOpen);
                    self.streams.insert(
                        id,
                        CStream {
                            last_seen: id,
                            live: Some(slot),
                            finished: false,
                            standalone,
                            ops: BTreeSet::new(),
                        },
                    );
                    if let SlotKind::Call { op } = kind {
                        self.ops[op].stream = Some(id);
                        self.streams
                            .get_mut(&id)
                            .expect("just inserted")
                            .ops
                            .insert(op);
                    }
                    if standalone {
                        self.standalone = Some(id);
                        if std::mem::take(&mut self.open_before_next) {
                            self.start_next(false);
                        }
                    }
                    id
                }
            };
            if let Some(st) = self.streams.get_mut(&key) {
                st.last_seen = st.last_seen.max(id);
            }
            if let (Some(session), Some(m)) = (self.session.clone(), &msg) {
                let (tag, result) = match tag_of(m) {
                    Some((t, r)) => (self.op_by_tag(t).map(|o| self.ops[o].tag.clone()), r),
                    None => (None, false),
                };
                let transport = if matches!(kind, SlotKind::LegacyOpen) {
                    Transport::Legacy
                } else {
                    Transport::Streamable
                };
                self.record(ClientRecord::Received {
                    client: self.spec.index,
                    session,
                    event: id,
                    tag,
                    chunk: mcp::chunk_of(m),
                    result,
                    transport,
                    stream: key,
                });
            }
        }
        // An event of a POST we never saw begin: its stream is seen now.
        if let Some(m) = &msg {
            if let (Some(op), Some(rpc)) =
                (tag_of(m).and_then(|(t, _)| self.op_by_tag(t)), rpc_of(m))
            {
                self.ops[op].unseen.retain(|r| *r != rpc);
            }
        }
        if marker {
            if let Some(s) = self.slots.get_mut(&slot) {
                s.marker_pending = false;
                if let Some(stream) = s.stream {
                    self.end_hold(stream);
                }
            }
        }
        if let (
            SlotKind::LegacyOpen,
            Some(Message::Result {
                id: RequestId::Str(rid),
                result,
            }),
        ) = (&kind, &msg)
        {
            if rid.starts_with(&format!("c{}-init#", self.spec.index)) {
                let result = result.clone();
                self.on_legacy_init(&result);
                return;
            }
        }
        if let Some(m @ Message::Result { id: rpc, .. }) = &msg {
            if let Some(op) = tag_of(m).and_then(|(t, _)| self.op_by_tag(t)) {
                self.deliver(op, Got::of(rpc.clone(), m), Some(slot));
            }
        }
    }

    fn op_by_tag(&self, tag: &str) -> Option<usize> {
        let n = tag.rsplit_once("-op")?.1.parse::<usize>().ok()?;
        (self.ops.get(n)?.tag.as_ref() == tag).then_some(n)
    }

    /// A result arrived for `op`: handle it, or hold it behind a resume.
    fn deliver(&mut self, op: usize, got: Got, via: Option<SlotId>) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        if let Some((held_stream, _)) = self.holding {
            let via_stream = via.and_then(|v| self.slots.get(&v)).and_then(|s| s.stream);
            if via_stream != Some(held_stream) {
                if !self.held.iter().any(|(o, _)| *o == op) {
                    self.held.push_back((op, got));
                }
                return;
            }
        }
        self.handle(op, got);
    }

    fn handle(&mut self, op: usize, got: Got) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        self.record(ClientRecord::Handled {
            client: self.spec.index,
            tag: self.ops[op].tag.clone(),
            rpc_id: got.rpc,
            chunk: got.chunk,
            replayed: got.replayed,
        });
        self.finish(op, Outcome::Done);
    }

    fn finish(&mut self, op: usize, outcome: Outcome) {
        let o = &mut self.ops[op];
        if matches!(o.state, OpState::Done | OpState::Abandoned) {
            return;
        }
        o.state = if outcome == Outcome::Done {
            OpState::Done
        } else {
            OpState::Abandoned
        };
        o.unseen.clear();
        let missed = self.drop_rules.borrow_mut().remove(&o.tag);
        if let Some((after, seen)) = missed {
            self.drops_missed.insert(op as u32, (seen, after, outcome));
        }
        if outcome == Outcome::Done
            && self.spec.switch_after == Some(op as u32)
            && self.transport == Transport::Legacy
        {
            self.switch_due = true;
            self.schedule(Duration::ZERO, Action::Switch);
        }
        // Nothing left to wait for on the held stream: stop holding.
        if let Some((held, _)) = self.holding {
            if self.ops_on(held).is_empty() {
                self.release_holds();
            }
        }
        self.record(ClientRecord::Outcome {
            client: self.spec.index,
            tag: self.ops[op].tag.clone(),
            outcome,
            attempts: self.ops[op].attempts,
        });
        for s in self.streams.keys().copied().collect::<Vec<_>>() {
            self.set_expecting(s);
        }
        // The sequential workload moves on once nothing is active
        // (resume-then-post already moved on at its resume).
        if self.next_op < self.ops.len() && self.ops.iter().all(|o| o.state != OpState::Active) {
            self.next_on_resume = false;
            let think = Duration::from_millis(self.g().think_ms);
            self.schedule(think, Action::StartNext);
        }
    }

    fn set_expecting(&self, stream: u64) {
        let Some(st) = self.streams.get(&stream) else {
            return;
        };
        let expecting = !self.ops_on(stream).is_empty();
        if let Some(s) = st.live.and_then(|l| self.slots.get(&l)) {
            s.expecting.set(expecting || s.marker_pending);
        }
    }

    fn on_end(&mut self, slot: SlotId, clean: bool) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        if matches!(s.kind, SlotKind::LegacyOpen)
            && self.transport == Transport::Legacy
            && self.session.is_some()
        {
            // The legacy stream is gone: that is the network change.
            self.schedule(Duration::ZERO, Action::Switch);
        }
        if clean {
            // The replay is over (the unguarded server sends no marker).
            if let Some(stream) = s.stream {
                self.end_hold(stream);
            }
        }
        let Some(stream) = s.stream else {
            // Ended before any event: treat as a failed exchange.
            self.slots.insert(slot, s);
            return self.on_failed(slot, true);
        };
        // An op whose result is held behind a resume has its result.
        let waiting: Vec<usize> = self
            .ops_on(stream)
            .into_iter()
            .filter(|op| !self.held.iter().any(|(o, _)| o == op))
            .collect();
        if let Some(st) = self.streams.get_mut(&stream) {
            if st.live == Some(slot) {
                st.live = None;
            }
            if clean && waiting.is_empty() && !st.standalone {
                st.finished = true;
            }
        }
        let fault_us = s.last_activity_us;
        for op in waiting {
            self.interrupted(op, stream, fault_us);
        }
    }

    fn interrupted(&mut self, op: usize, stream: u64, fault_us: u64) {
        if !self.ops[op].interrupted {
            self.ops[op].interrupted = true;
            self.record(ClientRecord::Interrupted {
                client: self.spec.index,
                tag: self.ops[op].tag.clone(),
                fault_us,
            });
        }
        let wait = self.backoff(self.ops[op].attempts);
        match self.g().behaviour {
            Behaviour::RetryByPost | Behaviour::DedupRetry => {
                self.ops[op].stream = None;
                if self.count_attempt(op) {
                    self.schedule(wait, Action::Post(op));
                }
            }
            Behaviour::Resume => self.schedule_resume(wait, stream),
            // A broken legacy stream is the network change; afterwards it
            // resumes like `resume`.
            Behaviour::TransportSwitch if self.transport == Transport::Legacy => {
                self.schedule(Duration::ZERO, Action::Switch)
            }
            Behaviour::TransportSwitch => self.schedule_resume(wait, stream),
            Behaviour::ResumeThenPost => {
                self.schedule_resume(wait, stream);
                // The next call goes out as soon as the resume is accepted
                // (its headers arrive), without waiting for the owed result.
                if op + 1 == self.next_op {
                    self.next_on_resume = true;
                }
            }
        }
    }

    fn on_failed(&mut self, slot: SlotId, connected: bool) {
        let Some(s) = self.slots.remove(&slot) else {
            return;
        };
        match s.kind {
            SlotKind::LegacyOpen if self.session.is_some() => {
                self.schedule(Duration::ZERO, Action::Switch)
            }
            SlotKind::LegacyOpen => self.retry_init(),
            // A lost legacy message (initialize, subscribe): start over.
            SlotKind::LegacyPost => self.reinit_now(),
            SlotKind::Subscribe => {
                let wait = self.backoff(self.init_attempts);
                self.schedule(wait, Action::Subscribe);
            }
            SlotKind::Init => self.retry_init(),
            SlotKind::Call { op } => {
                // The request may have run; its stream never began for us.
                if let Some(rpc) = self.ops[op].rpc.clone() {
                    if self.ops[op].state == OpState::Active {
                        self.record(ClientRecord::NoResponse {
                            client: self.spec.index,
                            tag: self.ops[op].tag.clone(),
                            rpc_id: rpc.clone(),
                            connected,
                        });
                        self.ops[op].unseen.push(rpc);
                        if !self.ops[op].interrupted {
                            self.ops[op].interrupted = true;
                            self.record(ClientRecord::Interrupted {
                                client: self.spec.index,
                                tag: self.ops[op].tag.clone(),
                                fault_us: s.last_activity_us,
                            });
                        }
                    }
                }
                self.retry_post(op)
            }
            SlotKind::Resume { stream } => {
                if let Some(st) = self.streams.get_mut(&stream) {
                    if st.live == Some(slot) {
                        st.live = None;
                    }
                }
                // Again, for what it resumes for (each try an attempt), or
                // for a transport switch waiting on it.
                let waiting = self.resuming_for(stream);
                if waiting.is_empty() && !self.switch_pending {
                    return;
                }
                let attempts = waiting.first().map_or(1, |&o| self.ops[o].attempts);
                self.schedule_resume(self.backoff(attempts), stream);
            }
            SlotKind::Open => {
                let n = self.init_attempts.max(1);
                self.schedule(self.backoff(n), Action::Open);
            }
        }
    }

    fn retry_post(&mut self, op: usize) {
        if self.ops[op].state == OpState::Active && self.count_attempt(op) {
            let wait = self.backoff(self.ops[op].attempts);
            self.schedule(wait, Action::Post(op));
        }
    }

    /// Re-issues an operation (same tag and key) after a 410 or a failed resume.
    fn reissue(&mut self, op: usize) {
        self.ops[op].stream = None;
        self.retry_post(op);
    }

    fn retry_init(&mut self) {
        if self.inits_exhausted() {
            return self.give_up();
        }
        let wait = self.backoff(self.init_attempts);
        self.schedule(wait, Action::Init);
    }

    /// The bound on `initialize` attempts (over the run) is reached.
    fn inits_exhausted(&self) -> bool {
        self.init_attempts >= self.g().max_attempts.saturating_mul(4)
    }

    /// No session can be had: every unresolved operation is abandoned (on
    /// the record), and the workload ends.
    fn give_up(&mut self) {
        for op in 0..self.ops.len() {
            if matches!(self.ops[op].state, OpState::Active | OpState::Pending) {
                self.ops[op].state = OpState::Active;
                self.finish(op, Outcome::Abandoned);
            }
        }
        self.next_op = self.ops.len();
    }

    /// Starts over on the current transport, whatever the session state.
    fn reinit_now(&mut self) {
        if self.session.is_none() {
            let wait = self.backoff(self.init_attempts);
            self.schedule(wait, Action::Init);
        } else {
            self.reinit();
        }
    }

    /// A 404: the session is gone. Start a new one, then re-issue every
    /// unresolved operation with the same tag and key.
    fn reinit(&mut self) {
        if self.session.is_none() {
            return; // already re-initializing
        }
        self.session = None;
        self.switch_pending = false;
        for s in std::mem::take(&mut self.slots).into_values() {
            s.task.abort();
        }
        self.streams.clear();
        self.names.clear();
        self.standalone = None;
        self.holding = None;
        self.resend_after_resume.clear();
        for (op, got) in std::mem::take(&mut self.held) {
            self.handle(op, got);
        }
        self.timers.retain(|_, a| matches!(a, Action::StartNext));
        for o in &mut self.ops {
            o.stream = None;
        }
        self.send_init();
    }

    fn after_init(&mut self) {
        if self.g().behaviour == Behaviour::TransportSwitch {
            // Re-negotiated (or first negotiated): (re-)subscribe, and on
            // streamable HTTP open the stream notifications ride.
            self.subscribe();
            if self.transport == Transport::Streamable
                && self.spec.delivery != Delivery::SessionStream
            {
                self.send_open();
            }
        }
        // (A legacy session's stream is the session stream already; a GET
        // on /mcp would be refused under Rule T.)
        if self.spec.delivery == Delivery::SessionStream && self.transport == Transport::Streamable
        {
            self.send_open();
            self.open_before_next = true;
        }
        let unresolved: Vec<usize> = (0..self.ops.len())
            .filter(|&i| self.ops[i].state == OpState::Active)
            .collect();
        if self.init_attempts == 1 && unresolved.is_empty() {
            self.schedule(
                Duration::from_millis(self.spec.start_delay_ms),
                Action::StartNext,
            );
        } else {
            for op in unresolved {
                self.retry_post(op);
            }
            if self.next_op < self.ops.len() && self.ops.iter().all(|o| o.state != OpState::Active)
            {
                self.schedule(Duration::ZERO, Action::StartNext);
            }
        }
    }

    fn end_hold(&mut self, stream: u64) {
        if self.holding.is_some_and(|(s, _)| s == stream) {
            self.release_holds();
        }
    }

    fn release_holds(&mut self) {
        self.holding = None;
        for (op, got) in std::mem::take(&mut self.held) {
            self.handle(op, got);
        }
    }
}

/// `initialize` as a client of `behaviour` sends it on `transport`: a
/// transport-switch client asks for the legacy revision and one capability
/// set there, and a newer revision and another set on streamable HTTP.
fn init_request(behaviour: Behaviour, transport: Transport, index: u32, attempt: u32) -> Message {
    let (version, caps) = match (behaviour, transport) {
        (Behaviour::TransportSwitch, Transport::Legacy) => {
            (mcp::LEGACY_VERSION, json!({"sampling": {}}))
        }
        (Behaviour::TransportSwitch, Transport::Streamable) => {
            (mcp::LATEST_VERSION, json!({"roots": {"listChanged": true}}))
        }
        _ => (mcp::LATEST_VERSION, json!({})),
    };
    Message::Request {
        id: RequestId::Str(format!("c{index}-init#{attempt}")),
        method: mcp::INITIALIZE.into(),
        params: Some(mcp::initialize_params(
            version,
            caps,
            "mcp-chaos-virtual-client",
        )),
    }
}

/// The `tools/call` of one attempt (`rpc`) of operation `tag`.
fn call_request(tag: &str, rpc: &RequestId, g: &ClientGroup) -> Message {
    Message::Request {
        id: rpc.clone(),
        method: mcp::TOOLS_CALL.into(),
        params: Some(json!({
            "name": mcp::LEDGER_APPEND,
            "arguments": {"tag": tag, "chunks": g.chunks, "chunk_interval_ms": g.chunk_interval_ms},
            "_meta": {"progressToken": rpc},
        })),
    }
}

/// The largest request body (bytes) client `index` of group `g` can send:
/// its `initialize` on either transport and its last call, with counters at
/// their widest. A server whose `max_body_bytes` is below it refuses the
/// client's requests with 413.
pub fn largest_request_body(g: &ClientGroup, index: u32) -> usize {
    let widest = u32::MAX;
    let mut sizes = vec![
        init_request(g.behaviour, Transport::Streamable, index, widest)
            .encode()
            .len(),
        init_request(g.behaviour, Transport::Legacy, index, widest)
            .encode()
            .len(),
    ];
    let tag = format!("c{index}-op{}", g.calls.saturating_sub(1));
    let rpc = RequestId::Str(format!("{tag}#{widest}"));
    sizes.push(call_request(&tag, &rpc, g).encode().len());
    sizes.into_iter().max().unwrap_or(0)
}

#[allow(clippy::too_many_arguments)]
async fn reader<C: Connector>(
    slot: SlotId,
    connector: C,
    out: Outgoing,
    tx: mpsc::UnboundedSender<Input>,
    connect_timeout: Duration,
    read_timeout: Duration,
    expecting: Rc<Cell<bool>>,
    drops: DropRules,
) {
    let send = |i: Input| {
        let _ = tx.send(i);
    };
    let io = match tokio::time::timeout(connect_timeout, connector.connect()).await {
        Ok(Ok(io)) => io,
        _ => {
            return send(Input::Failed {
                slot,
                connected: false,
            })
        }
    };
    let mut ex = match tokio::time::timeout(read_timeout, http::send(io, out)).await {
        Ok(Ok(ex)) => ex,
        _ => {
            return send(Input::Failed {
                slot,
                connected: true,
            })
        }
    };
    let status = ex.status.as_u16();
    if !ex.is_sse() {
        let headers = ex.headers.clone();
        return match tokio::time::timeout(read_timeout, ex.json()).await {
            Ok(Ok(msg)) => send(Input::Json {
                slot,
                status,
                headers,
                msg,
            }),
            _ => send(Input::Failed {
                slot,
                connected: true,
            }),
        };
    }
    let stream_first = ex
        .headers
        .get(headers::MCP_STREAM_FIRST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    send(Input::Head {
        slot,
        status,
        stream_first,
    });
    loop {
        match tokio::time::timeout(read_timeout, ex.next_event()).await {
            Err(_) if expecting.get() => return send(Input::Broken { slot }),
            Err(_) => continue,
            Ok(Err(_)) => return send(Input::Broken { slot }),
            Ok(Ok(None)) => return send(Input::End { slot }),
            Ok(Ok(Some(ev))) => {
                let id = ev.id.as_deref().and_then(|i| i.parse::<u64>().ok());
                let marker = ev.event == "replay-end";
                let msg = (!ev.data.is_empty() && !marker)
                    .then(|| Message::decode(ev.data.as_bytes()).ok())
                    .flatten();
                let fire = msg.as_ref().and_then(tag_of).and_then(|(tag, _)| {
                    let mut rules = drops.borrow_mut();
                    let (key, rule) = rules.get_key_value(tag).map(|(k, r)| (k.clone(), *r))?;
                    let seen = rule.1 + 1;
                    if seen >= rule.0 {
                        rules.remove(&key);
                        Some((key, rule.0))
                    } else {
                        rules.insert(key, (rule.0, seen));
                        None
                    }
                });
                send(Input::Event {
                    endpoint: (ev.event == "endpoint").then(|| ev.data.clone()),
                    slot,
                    id,
                    marker,
                    msg,
                });
                if let Some((tag, after_event)) = fire {
                    // The planned drop: close the connection right here.
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

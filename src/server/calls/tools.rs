//! The tools: `ledger_append` (not idempotent, streams `chunks` events) and
//! `ledger_read` (idempotent). A tool runs as its own task, appending to
//! the event store; writers drain it. A dropped connection does not stop a
//! tool (MCP: disconnection is not cancellation); `notifications/cancelled`
//! does.

use crate::guard::StreamIdx;
use crate::history::{EventKind, Record, SessionId, StreamKind};
use crate::ledger::{Commit, Principal};
use crate::protocol::jsonrpc::{ErrorObject, Message, INVALID_PARAMS};
use crate::protocol::mcp::{self, LedgerAppendArgs, LedgerReadArgs};
use crate::protocol::Json;
use crate::server::dedup;
use crate::server::session::{InFlight, Scope, ToolCall};
use crate::server::{Effects, Pacing, Shared};
use serde_json::{json, Value};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// A validated tool invocation.
pub(crate) enum Invocation {
    Append(LedgerAppendArgs),
    /// The continuation of execution `n` of an append that asked for
    /// input (guarded, on the retry that answers): no new effect.
    Resumed(LedgerAppendArgs, u32),
    Read(LedgerReadArgs),
    /// One of the conformance fixtures' tools (`serve --fixtures`), which
    /// runs in [`super::fixtures`].
    Fixture(super::fixtures::Call),
}

impl Invocation {
    /// The operation tag, if the tool has one.
    pub fn tag(&self) -> Option<&str> {
        match self {
            Invocation::Append(a) | Invocation::Resumed(a, _) => Some(&a.tag),
            Invocation::Read(r) => r.tag.as_deref(),
            Invocation::Fixture(_) => None,
        }
    }

    /// Whether re-running it has no further side effect (the fixtures
    /// touch no ledger).
    pub fn idempotent(&self) -> bool {
        matches!(self, Invocation::Read(_) | Invocation::Fixture(_))
    }
}

/// A ledger tool's invocation, as its task runs it.
enum LedgerCall {
    Append(LedgerAppendArgs),
    Read(LedgerReadArgs),
}

/// Reads and bounds a tool call's arguments.
pub(crate) fn validate(
    shared: &Shared,
    tool: &str,
    args: &Value,
) -> Result<Invocation, ErrorObject> {
    let bad = |m: String| ErrorObject::new(INVALID_PARAMS, m, None);
    match tool {
        mcp::LEDGER_APPEND => {
            let a: LedgerAppendArgs = serde_json::from_value(args.clone())
                .map_err(|e| bad(format!("ledger_append arguments: {e}")))?;
            if a.chunks == 0 || a.chunks > shared.cfg.max_chunks {
                return Err(bad(format!(
                    "chunks must be 1..={}, got {}",
                    shared.cfg.max_chunks, a.chunks
                )));
            }
            if a.chunk_interval_ms > crate::server::MAX_CHUNK_INTERVAL_MS {
                return Err(bad(format!(
                    "chunk_interval_ms must be at most {}",
                    crate::server::MAX_CHUNK_INTERVAL_MS
                )));
            }
            Ok(Invocation::Append(a))
        }
        mcp::LEDGER_READ => serde_json::from_value(if args.is_null() {
            json!({})
        } else {
            args.clone()
        })
        .map(Invocation::Read)
        .map_err(|e| bad(format!("ledger_read arguments: {e}"))),
        other if shared.exposure.fixtures.offered() => {
            super::fixtures::validate(other, args).map(Invocation::Fixture)
        }
        other => Err(bad(format!(
            "unknown tool {other:?}: use ledger_append or ledger_read"
        ))),
    }
}

/// Starts the tool on stream `s`: records the execution, then produces its
/// events from a local task.
pub(crate) fn start(
    shared: Rc<Shared>,
    sid: SessionId,
    s: StreamIdx,
    call: ToolCall,
    inv: Invocation,
) {
    let (inv, resumed) = match inv {
        Invocation::Append(a) => (LedgerCall::Append(a), None),
        Invocation::Resumed(a, n) => (LedgerCall::Append(a), Some(n)),
        Invocation::Read(r) => (LedgerCall::Read(r), None),
        Invocation::Fixture(f) => return super::fixtures::start(shared, sid, s, call, f),
    };
    let cancelled = register(&shared, &sid, s, &call);
    let execution = match &inv {
        LedgerCall::Append(_) if resumed.is_some() => resumed.unwrap_or_default(),
        LedgerCall::Append(a) => shared.ledger.execute(
            &a.tag,
            &call.principal,
            call.dedup_key.as_deref(),
            &call.rpc_id,
            shared.cfg.effects == Effects::Transactional,
        ),
        LedgerCall::Read(_) => 0,
    };
    started(&shared, &sid, s, &call, inv.tag());
    tokio::task::spawn_local(run(shared, sid, s, call, inv, execution, cancelled));
}

impl LedgerCall {
    fn tag(&self) -> Option<&str> {
        match self {
            LedgerCall::Append(a) => Some(&a.tag),
            LedgerCall::Read(r) => r.tag.as_deref(),
        }
    }
}

/// A call's execution begins on stream `s`: the guard learns of it, a POST
/// stream's result is routed to it, and it is in flight under its id. The
/// flag it returns cancels it.
pub(in crate::server) fn register(
    shared: &Shared,
    sid: &SessionId,
    s: StreamIdx,
    call: &ToolCall,
) -> Rc<Cell<bool>> {
    let cancelled = Rc::new(Cell::new(false));
    {
        let mut st = shared.state.borrow_mut();
        let sess = st
            .sessions
            .get_mut(sid)
            .expect("session exists when its tool starts");
        sess.guard.request_started(s);
        // A POST stream's result is routed by request id to the latest
        // POST's stream: a reused id still routed (its result not yet
        // produced) cross-wires the two.
        if sess.streams[s].kind == StreamKind::Post {
            sess.route_tokens
                .insert(call.rpc_id.clone(), call.progress_token.clone());
            if let Some(from) = sess.routes.insert(call.rpc_id.clone(), s) {
                shared.history.record(Record::CrossWired {
                    session: sid.clone(),
                    rpc_id: call.rpc_id.clone(),
                    from_stream: from,
                    to_stream: s,
                });
            }
        }
        // Guarded, in a request's context: an execution under a key whose
        // effect is taken at its start is not undone by a close.
        let outlives_close = sess.scope == Scope::Request
            && shared.guarded()
            && call.dedup_key.is_some()
            && shared.cfg.effects == Effects::Immediate;
        sess.in_flight
            .entry(call.rpc_id.clone())
            .or_default()
            .push(InFlight {
                stream: s,
                cancelled: cancelled.clone(),
                outlives_close,
            });
    }
    cancelled
}

/// Records that the execution of `call` (operation `tag`) started.
pub(in crate::server) fn started(
    shared: &Shared,
    sid: &SessionId,
    s: StreamIdx,
    call: &ToolCall,
    tag: Option<&str>,
) {
    crate::server::replica::stored::execution_started(shared, sid, s);
    shared.history.record(Record::ToolStarted {
        session: sid.clone(),
        stream: s,
        rpc_id: call.rpc_id.clone(),
        tool: call.tool.clone(),
        tag: tag.map(str::to_string),
    });
}

async fn run(
    shared: Rc<Shared>,
    sid: SessionId,
    s: StreamIdx,
    call: ToolCall,
    inv: LedgerCall,
    execution: u32,
    cancelled: Rc<Cell<bool>>,
) {
    let tag: Option<Rc<str>> = inv.tag().map(Rc::from);
    let (chunks, interval) = match &inv {
        LedgerCall::Append(a) => (a.chunks, Duration::from_millis(a.chunk_interval_ms)),
        LedgerCall::Read(_) => (1, Duration::ZERO),
    };
    let mut finished = false;
    for k in 1..=chunks {
        if matches!(inv, LedgerCall::Append(_)) {
            pace(&shared.pacing, interval).await;
        }
        if cancelled.get() {
            break;
        }
        let last = k == chunks;
        let chunk = mcp::ChunkRef {
            tag: tag.as_deref().unwrap_or("").into(),
            execution,
            index: k,
        };
        // Transactional: the effect commits with the result, or not at all
        // (nor when its session is gone: nobody is owed the result).
        let commit = match &inv {
            LedgerCall::Append(a) if last && shared.cfg.effects == Effects::Transactional => {
                if !shared.state.borrow().sessions.contains_key(&sid) {
                    break;
                }
                Some(shared.ledger.commit(
                    &a.tag,
                    execution,
                    &call.principal,
                    call.dedup_key.as_deref(),
                    |n| append_result(&a.tag, n, &chunk),
                ))
            }
            _ => None,
        };
        if let LedgerCall::Append(a) = &inv {
            if !matches!(commit, Some(Commit::Refused(_))) {
                shared.ledger.chunk(&a.tag, execution, k, chunks);
            }
        }
        let (kind, msg) = if last {
            let (stored, sent) = match (commit, &inv) {
                // Its key committed first (another execution won): this
                // one committed nothing and answers with the stored result,
                // marked as a replay.
                (Some(Commit::Refused(stored)), _) => {
                    let key = call.dedup_key.as_deref().unwrap_or_default();
                    let sent =
                        dedup::replayed_result(&shared, &sid, &call.rpc_id, key, stored.clone());
                    (stored, sent)
                }
                (Some(Commit::Committed(r)), _) => (r.clone(), r),
                (None, LedgerCall::Append(a)) => {
                    let r = append_result(
                        &a.tag,
                        shared.ledger.executions_for(&a.tag, &call.principal),
                        &chunk,
                    );
                    (r.clone(), r)
                }
                (None, LedgerCall::Read(r)) => {
                    let r = read_result(&shared, &call.principal, r);
                    (r.clone(), r)
                }
            };
            let result = match call.dress {
                Some(dress) => dress(&sent),
                None => sent,
            };
            if let Some(key) = &call.dedup_key {
                crate::server::replica::stored::key_done(&shared, &call.principal, key, &stored);
                shared
                    .state
                    .borrow_mut()
                    .dedup
                    .complete(&call.principal, key, stored);
            }
            (
                EventKind::Result,
                Message::Result {
                    id: call.rpc_id.clone(),
                    result,
                },
            )
        } else {
            let (method, params) = mcp::progress_notification(
                call.progress_token.as_ref(),
                &call.rpc_id,
                &chunk,
                chunks,
            );
            (
                EventKind::Progress,
                Message::Notification {
                    method,
                    params: Some(params),
                },
            )
        };
        let encoded = msg.encode();
        room_for(&shared, &sid, encoded.len()).await;
        // Progress without a token travels as an `info` log message.
        let level = (kind == EventKind::Progress && call.progress_token.is_none())
            .then_some(mcp::PROGRESS_LOG_LEVEL);
        let ev = Event {
            kind,
            encoded: &encoded,
            level,
            tag: &tag,
        };
        let delivered = deliver(&shared, &sid, s, &call, ev);
        finished = last;
        if delivered == Delivered::SessionGone {
            // Nothing to deliver to. The tool still ends (a key it had not
            // completed is given back).
            break;
        }
    }
    ended(&shared, sid, s, call, &cancelled, finished);
}

/// What became of one event of a call ([`deliver`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::server) enum Delivered {
    /// Stored on its stream.
    Stored,
    /// Not sent: a log message below the session's level, or the stream
    /// is done (recorded as discarded).
    Dropped,
    /// The session is gone.
    SessionGone,
}

/// One event a call produced, as [`deliver`] takes it.
pub(in crate::server) struct Event<'a> {
    pub kind: EventKind,
    /// The message as it travels.
    pub encoded: &'a str,
    /// A log message's rank in [`mcp::LOG_LEVELS`] (`None`: not one).
    pub level: Option<u8>,
    /// The operation tag the trace gives the event.
    pub tag: &'a Option<Rc<str>>,
}

/// Puts one event of `call` (produced on stream `s`) where it goes:
/// progress and other messages on the execution's own stream, a POST
/// stream's result on the stream its id is routed to, which it ends. A log
/// message (`level`: its rank in [`mcp::LOG_LEVELS`]) is not sent to a
/// session that asked for more severe ones only.
pub(in crate::server) fn deliver(
    shared: &Shared,
    sid: &SessionId,
    s: StreamIdx,
    call: &ToolCall,
    ev: Event,
) -> Delivered {
    let Event {
        kind,
        encoded,
        level,
        tag,
    } = ev;
    let mut st = shared.state.borrow_mut();
    let Some(sess) = st.sessions.get_mut(sid) else {
        return Delivered::SessionGone;
    };
    if level.is_some_and(|l| sess.log_level > l) {
        return Delivered::Dropped;
    }
    let post = sess.streams[s].kind == StreamKind::Post;
    // Under an id a later POST reused with the same progress token (or
    // none, as this one), this execution's progress goes where the id is
    // routed, as the SDKs send it.
    let moved =
        sess.routes.get(&call.rpc_id).copied().filter(|&r| {
            r != s && sess.route_tokens.get(&call.rpc_id) == Some(&call.progress_token)
        });
    let to = match (kind, moved) {
        (EventKind::Result, _) if post => {
            sess.route_tokens.remove(&call.rpc_id);
            sess.routes.remove(&call.rpc_id)
        }
        (_, Some(r)) if post && !sess.streams[r].done_producing => Some(r),
        _ if post && sess.streams[s].done_producing => None,
        _ => Some(s),
    };
    let Some(to) = to else {
        shared.history.record(Record::Discarded {
            session: sid.clone(),
            stream: s,
            rpc_id: call.rpc_id.clone(),
            kind,
            tag: tag.clone(),
        });
        return Delivered::Dropped;
    };
    sess.produce(
        to,
        kind,
        encoded,
        Some(call.rpc_id.clone()),
        tag.clone(),
        &shared.history,
    );
    if kind == EventKind::Result && post {
        sess.streams[to].done_producing = true;
        sess.streams[to].wake.notify_waiters();
    }
    Delivered::Stored
}

/// The execution of `call` on stream `s` ended (`finished`: with its
/// result): a key it had not completed is given back, it is no longer in
/// flight, and its own POST stream ends when nothing more will come.
pub(in crate::server) fn ended(
    shared: &Shared,
    sid: SessionId,
    s: StreamIdx,
    call: ToolCall,
    cancelled: &Rc<Cell<bool>>,
    finished: bool,
) {
    let mut st = shared.state.borrow_mut();
    if !finished {
        if let Some(key) = &call.dedup_key {
            st.dedup.abandon(&call.principal, key);
            crate::server::replica::stored::key_dropped(shared, &call.principal, key);
        }
    }
    if let Some(sess) = st.sessions.get_mut(&sid) {
        let others = match sess.in_flight.get_mut(&call.rpc_id) {
            Some(runs) => {
                runs.retain(|r| !Rc::ptr_eq(&r.cancelled, cancelled));
                !runs.is_empty()
            }
            None => false,
        };
        if !others {
            sess.in_flight.remove(&call.rpc_id);
        }
        sess.guard.request_ended(s);
        // Ended without a result (cancelled): its own POST stream ends
        // with nothing more, unless the id is routed to it and another
        // execution under the id is still running (its result will end
        // it). A finished execution's result ended its stream already.
        let routed_here = sess.routes.get(&call.rpc_id) == Some(&s);
        let rt = &mut sess.streams[s];
        if rt.kind == StreamKind::Post && !finished && !(routed_here && others) {
            rt.done_producing = true;
            if routed_here {
                sess.routes.remove(&call.rpc_id);
                sess.route_tokens.remove(&call.rpc_id);
            }
        }
        sess.streams[s].wake.notify_waiters();
        sess.release_if_done(s);
    }
    drop(st);
    crate::server::replica::stored::execution_ended(shared, &sid, s);
    shared.history.record(Record::ToolEnded {
        session: sid.clone(),
        stream: s,
        rpc_id: call.rpc_id,
        cancelled: !finished,
    });
    crate::server::session::life::release(shared, &sid);
}

/// Waits until the session's store can take an event of `len` bytes
/// without evicting one a live connection has yet to write (or the session
/// is gone). A tool that outruns its writers waits for them, as one behind
/// an SDK's bounded channel does; it never waits on a connection the
/// server saw close or whose write deadline passed.
pub(in crate::server) async fn room_for(shared: &Shared, sid: &SessionId, len: usize) {
    loop {
        let room = match shared.state.borrow().sessions.get(sid) {
            Some(sess) if sess.would_evict_unsent(len) => sess.room.clone(),
            _ => return,
        };
        // Nothing else runs between the look and this wait (one thread):
        // a writer's notification cannot fall between them.
        room.notified().await;
    }
}

pub(in crate::server) async fn pace(pacing: &Pacing, interval: Duration) {
    match pacing {
        Pacing::Timer => {
            if !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
        }
        Pacing::Gate(sem) => sem
            .acquire()
            .await
            .expect("the gate is never closed")
            .forget(),
    }
}

/// `ledger_append`'s result as a tool result.
pub(in crate::server) fn append_result(tag: &str, executions: u32, chunk: &mcp::ChunkRef) -> Json {
    mcp::text_result(mcp::append_text(tag, executions, chunk))
}

/// `ledger_read` answers for the caller's principal alone: executions that
/// ran for another principal are not its business.
fn read_result(shared: &Shared, who: &Principal, r: &LedgerReadArgs) -> Json {
    let ledger = &shared.ledger;
    mcp::text_result(mcp::read_text(
        ledger.snapshot_for(who),
        |t| ledger.finished(t),
        r,
    ))
}

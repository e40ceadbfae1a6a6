//! A replica on a shared store ([`crate::store`]): what it writes there
//! and what it reads back. `initialize` stores the session before it is
//! answered; a request for a session this replica lacks loads it first;
//! every event goes to the store behind the replica's other writes; a
//! resume of a stream this replica does not hold replays the stream from
//! the store and follows it there until its result; the key table is the
//! store's, begun with a compare-and-set. Without a store none of this
//! runs and the server is the one-replica server.

use crate::guard::{EventId, StreamIdx};
use crate::history::{ConnId, EmptyResume, Record, SessionId, Transport};
use crate::protocol::{headers, jsonrpc, sse, Json};
use crate::server::dedup::{KeyState, Lookup};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::error;
use crate::server::session::reply::header_str;
use crate::server::session::Session;
use crate::server::{Replica, Shared};
use crate::store::{
    Answer, Connect, KeyRec, Op, SessionRec, StoreClient, StoredEvent, Word, WordKind,
};
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

/// How a replica reaches the shared store.
#[derive(Clone)]
pub struct StoreLink {
    /// Opens a connection to the store host.
    pub connect: Connect,
    /// How long a request may take before the store counts as down.
    pub timeout: Duration,
    /// How long a key begun by a replica stays its own without a result
    /// (past it, another replica may run the key again: its runner is
    /// presumed dead).
    pub key_lease: Duration,
}

/// How long a resume elsewhere waits on the store for the next event
/// before asking again.
const TAIL_WAIT_MS: u64 = 1_000;

/// The replica's store, built per incarnation (its write-behind task dies
/// with the host).
pub(crate) struct OnStore {
    pub client: StoreClient,
    pub replica: u32,
    pub key_lease_ms: u64,
    /// Added to the session's first event id: ids unique in a session
    /// across replicas and their incarnations.
    pub event_base: EventId,
    /// The first stream index this incarnation gives a session.
    pub stream_base: StreamIdx,
    /// The keys this incarnation began and the streams whose executions
    /// it runs, whose leases it renews while it lives; and whether its
    /// renewing task runs.
    running: Rc<RefCell<BTreeSet<Leased>>>,
    renewing: Cell<bool>,
}

/// What a replica holds a lease on in the store.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Leased {
    /// A key it began (principal, key).
    Key(String, String),
    /// A stream whose execution it runs (session, stream).
    Stream(String, u32),
}

/// The renewal of `leased`.
fn renew(leased: &BTreeSet<Leased>, replica: u32, lease_ms: u64) -> Op {
    let (mut keys, mut streams) = (Vec::new(), Vec::new());
    for l in leased {
        match l {
            Leased::Key(w, k) => keys.push((w.clone(), k.clone())),
            Leased::Stream(s, i) => streams.push((s.clone(), *i)),
        }
    }
    Op::Renew {
        keys,
        streams,
        replica,
        lease_ms,
    }
}

impl OnStore {
    /// `what` runs here now: its lease is renewed until it ends.
    fn runs(&self, what: Leased) {
        self.running.borrow_mut().insert(what);
        if !self.renewing.replace(true) {
            let (client, running) = (self.client.clone(), self.running.clone());
            let (replica, lease_ms) = (self.replica, self.key_lease_ms);
            tokio::task::spawn_local(async move {
                let every = Duration::from_millis((lease_ms / 3).max(1));
                loop {
                    tokio::time::sleep(every).await;
                    if !running.borrow().is_empty() {
                        let op = renew(&running.borrow(), replica, lease_ms);
                        // A renewal the store missed: the next one may
                        // come in time; if not, the lease ran out.
                        let _ = client.call(&op).await;
                    }
                }
            });
        }
    }

    fn ended(&self, what: &Leased) {
        self.running.borrow_mut().remove(what);
    }
}

impl OnStore {
    pub fn of(r: &Replica) -> Option<OnStore> {
        let link = r.store.as_ref()?;
        Some(OnStore {
            client: StoreClient::new(link.connect.clone(), link.timeout),
            replica: r.index,
            key_lease_ms: link.key_lease.as_millis() as u64,
            event_base: crate::store::event_base(r.index, r.incarnation),
            stream_base: crate::store::stream_base(r.index, r.incarnation),
            running: Rc::default(),
            renewing: Cell::new(false),
        })
    }
}

/// 503: the store did not answer.
fn store_down(id: Option<jsonrpc::RequestId>) -> Response<ServerBody> {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        jsonrpc::TRANSPORT_ERROR,
        "the session store did not answer: retry later",
    )
}

fn rec_of(s: &Session, replica: u32) -> SessionRec {
    SessionRec {
        legacy: s.issued == Transport::Legacy,
        protocol_version: s.protocol_version.clone(),
        capabilities: s.capabilities.to_string(),
        owner: s.owner.as_deref().map(str::to_string),
        replica,
    }
}

/// Stores a session `initialize` just opened, before its answer goes:
/// a store that does not answer undoes the session (503).
pub(in crate::server) async fn publish(
    shared: &Shared,
    sid: &SessionId,
) -> Result<(), Response<ServerBody>> {
    let Some(on) = &shared.store else {
        return Ok(());
    };
    let rec = match shared.state.borrow().sessions.get(sid) {
        Some(s) => rec_of(s, on.replica),
        None => return Ok(()),
    };
    let op = Op::PutSession {
        sid: sid.to_string(),
        rec,
    };
    match on.client.call(&op).await {
        Ok(_) => Ok(()),
        Err(_) => {
            shared.state.borrow_mut().sessions.remove(sid);
            Err(store_down(None))
        }
    }
}

/// Before a request naming a session this replica does not hold: loads
/// it from the store (none there: the request finds no session, 404).
pub(in crate::server) async fn adopt(
    shared: &Shared,
    h: &HeaderMap,
) -> Result<(), Response<ServerBody>> {
    let Some(on) = &shared.store else {
        return Ok(());
    };
    let Ok(Some(sid)) = header_str(h, headers::MCP_SESSION_ID) else {
        return Ok(());
    };
    if shared.state.borrow().sessions.contains_key(sid) {
        return Ok(());
    }
    let op = Op::GetSession {
        sid: sid.to_string(),
    };
    let rec = match on.client.call(&op).await {
        Ok(Answer::Session { rec }) => rec,
        Ok(_) | Err(_) => return Err(store_down(None)),
    };
    let Some(rec) = rec else { return Ok(()) };
    let sid: SessionId = sid.into();
    let issued = if rec.legacy {
        Transport::Legacy
    } else {
        Transport::Streamable
    };
    let mut s = shared.new_session(sid.clone(), issued);
    s.protocol_version = rec.protocol_version;
    s.capabilities = serde_json::from_str(&rec.capabilities).unwrap_or(Value::Null);
    s.owner = rec.owner.map(Into::into);
    let mut st = shared.state.borrow_mut();
    // Another request may have loaded it meanwhile.
    if !st.sessions.contains_key(&sid) {
        st.sessions.insert(sid.clone(), s);
        shared.history.record(Record::SessionAdopted {
            session: sid,
            from: rec.replica,
        });
    }
    Ok(())
}

/// A session ended here: the store forgets it too.
pub(in crate::server) fn forget(shared: &Shared, sid: &SessionId) {
    if let Some(on) = &shared.store {
        on.client.write_behind(Op::DelSession {
            sid: sid.to_string(),
        });
    }
}

/// Whether a resume from `cursor` is for the store: the session is on a
/// store and the cursor names no stream this incarnation holds.
pub(in crate::server) fn resumes_elsewhere(
    shared: &Shared,
    sess: &Session,
    cursor: EventId,
) -> bool {
    shared.store.is_some() && sess.stream_of(cursor).is_none() && !sess.released(cursor)
}

/// A resume of a stream another replica (or an earlier incarnation of
/// this one) produced: its events after `cursor` from the store, then the
/// ones the store receives until the stream's result. A store without the
/// cursor is a cold resume: 410 on the guarded arm, an empty stream on
/// the others (as the SDKs' event stores answer an id they lack).
pub(in crate::server) async fn resume_elsewhere(
    shared: Rc<Shared>,
    sid: SessionId,
    cursor: EventId,
    conn: ConnId,
) -> Response<ServerBody> {
    let on = shared.store.as_ref().expect("resumes_elsewhere checked");
    let first = on
        .client
        .call(&Op::Tail {
            sid: sid.to_string(),
            cursor,
            wait_ms: 0,
        })
        .await;
    let (events, ended) = match first {
        // The replica running the stream's execution is gone, and every
        // event it stored is past the cursor: the guarded arm says so, so
        // the client re-issues (under its key) instead of waiting.
        Ok(Answer::Events {
            known: true,
            events,
            orphaned: true,
            ..
        }) if events.is_empty() && shared.guarded() => {
            gone(&shared, &sid, cursor);
            return error(
                StatusCode::GONE,
                None,
                jsonrpc::GONE,
                "the replica running this stream's request is gone and nothing more of it is stored: re-issue the operation",
            );
        }
        Ok(Answer::Events {
            known: true,
            events,
            ended,
            orphaned,
        }) => (events, ended || orphaned),
        Ok(Answer::Events { known: false, .. }) => {
            shared.history.record(Record::ResumedEmpty {
                session: sid.clone(),
                stream: None,
                conn,
                why: EmptyResume::Cold,
            });
            if shared.guarded() {
                gone(&shared, &sid, cursor);
                return error(
                    StatusCode::GONE,
                    None,
                    jsonrpc::GONE,
                    "no event store this replica reaches holds Last-Event-ID: re-issue the operation if its result did not arrive",
                );
            }
            return crate::server::http::respond::event_stream(ServerBody::empty());
        }
        _ => return store_down(None),
    };
    let stream = events.first().map(|e| e.stream);
    shared.history.record(Record::ResumedElsewhere {
        session: sid.clone(),
        stream,
        cursor,
        backlog: events.len() as u32,
        conn,
    });
    super::shared_guard::tell(
        &shared,
        &sid,
        Word {
            event: cursor,
            kind: WordKind::Resumed,
        },
    );
    let (tx, body) = ServerBody::sse();
    tokio::task::spawn_local(follow(shared.clone(), sid, cursor, conn, tx, events, ended));
    crate::server::http::respond::event_stream(body)
}

/// A guarded 410 for a resume of another replica's stream: the replica
/// holding it lets it go from Rule M's view (the client re-issues).
fn gone(shared: &Shared, sid: &SessionId, cursor: EventId) {
    let word = Word {
        event: cursor,
        kind: WordKind::Reported,
    };
    super::shared_guard::tell(shared, sid, word);
}

/// Writes what the store gives, asking for more until the stream's result
/// is written or the client leaves.
async fn follow(
    shared: Rc<Shared>,
    sid: SessionId,
    mut cursor: EventId,
    conn: ConnId,
    tx: tokio::sync::mpsc::Sender<Bytes>,
    mut events: Vec<StoredEvent>,
    mut ended: bool,
) {
    let on = shared.store.as_ref().expect("resumes_elsewhere checked");
    let mut replay = true;
    // Ended short of the stream's result: the replica holding it hears so.
    let left = |cursor: EventId| {
        super::shared_guard::tell(
            &shared,
            &sid,
            Word {
                event: cursor,
                kind: WordKind::Lost,
            },
        )
    };
    loop {
        for e in &events {
            let frame = if e.data.is_empty() {
                sse::encode(Some(e.id), None, "", None)
            } else {
                sse::encode(Some(e.id), Some("message"), &e.data, None)
            };
            if tx.send(frame).await.is_err() {
                return left(cursor);
            }
            cursor = e.id;
            shared.history.record(Record::Written {
                session: sid.clone(),
                stream: e.stream,
                event: e.id,
                conn,
                replay,
                transport: Transport::Streamable,
            });
        }
        if ended {
            return;
        }
        if tx.is_closed() {
            return left(cursor);
        }
        replay = false;
        let op = Op::Tail {
            sid: sid.to_string(),
            cursor,
            wait_ms: TAIL_WAIT_MS,
        };
        match on.client.call(&op).await {
            // An orphaned stream ends here: nothing more will come, and
            // the client's next resume learns why.
            Ok(Answer::Events {
                known: true,
                events: more,
                ended: e,
                orphaned,
            }) => (events, ended) = (more, e || orphaned),
            // The stream's events left the store (the session ended), or
            // the store is gone: the stream ends, the client resumes again.
            _ => return left(cursor),
        }
    }
}

/// The key table's look, from the store under a shared store: the entry
/// the (possibly lagging) store shows, copied into the local table so the
/// server's looks see it.
pub(in crate::server) async fn load_key(
    shared: &Shared,
    who: &Rc<str>,
    key: &str,
) -> Result<(), Response<ServerBody>> {
    let Some(on) = &shared.store else {
        return Ok(());
    };
    let op = Op::KeyLook {
        scope: who.to_string(),
        key: key.to_string(),
    };
    match on.client.call(&op).await {
        Ok(Answer::Key { rec }) => {
            if let Some(rec) = rec {
                adopt_key(shared, who, key, rec);
            }
            Ok(())
        }
        _ => Err(store_down(None)),
    }
}

fn adopt_key(shared: &Shared, who: &Rc<str>, key: &str, rec: KeyRec) {
    let call: Value = serde_json::from_str(&rec.call).unwrap_or(Value::Null);
    let state = match rec.result {
        Some(r) => KeyState::Done(Json::from(
            serde_json::from_str::<Value>(&r).unwrap_or(Value::Null),
        )),
        None => KeyState::InFlight,
    };
    shared.state.borrow_mut().dedup.adopt(who, key, call, state);
}

/// Begins `key` in the store (compare-and-set): `Lookup::Unknown` when
/// this replica began it, else what the store holds (then copied into the
/// local table). Without a store: what the local table says.
pub(in crate::server) async fn begin_key(
    shared: &Shared,
    who: &Rc<str>,
    key: &str,
    call: &Value,
) -> Result<Lookup, Response<ServerBody>> {
    let Some(on) = &shared.store else {
        return Ok(crate::server::dedup::key_lookup(shared, who, key, call));
    };
    let op = Op::KeyBegin {
        scope: who.to_string(),
        key: key.to_string(),
        call: call.to_string(),
        replica: on.replica,
        lease_ms: on.key_lease_ms,
    };
    match on.client.call(&op).await {
        Ok(Answer::Began) => {
            on.runs(Leased::Key(who.to_string(), key.to_string()));
            Ok(Lookup::Unknown)
        }
        Ok(Answer::Key { rec: Some(rec) }) => {
            adopt_key(shared, who, key, rec);
            Ok(crate::server::dedup::key_lookup(shared, who, key, call))
        }
        _ => Err(store_down(None)),
    }
}

/// A key's execution completed here: the store keeps its result.
pub(in crate::server) fn key_done(shared: &Shared, who: &str, key: &str, result: &Json) {
    if let Some(on) = &shared.store {
        on.ended(&Leased::Key(who.to_string(), key.to_string()));
        on.client.write_behind(Op::KeyDone {
            scope: who.to_string(),
            key: key.to_string(),
            result: result.text().to_string(),
        });
    }
}

/// A key's execution ended without a result here: the store forgets it.
pub(in crate::server) fn key_dropped(shared: &Shared, who: &str, key: &str) {
    if let Some(on) = &shared.store {
        on.ended(&Leased::Key(who.to_string(), key.to_string()));
        on.client.write_behind(Op::KeyDrop {
            scope: who.to_string(),
            key: key.to_string(),
        });
    }
}

/// The execution on stream `s` started here: the store learns that it
/// runs (behind the stream's first events), and its lease is renewed
/// until it ends.
pub(in crate::server) fn execution_started(shared: &Shared, sid: &SessionId, s: StreamIdx) {
    if let Some(on) = &shared.store {
        let leased = Leased::Stream(sid.to_string(), s);
        let one = BTreeSet::from([leased.clone()]);
        on.client
            .write_behind(renew(&one, on.replica, on.key_lease_ms));
        on.runs(leased);
    }
}

/// The execution on stream `s` ended here.
pub(in crate::server) fn execution_ended(shared: &Shared, sid: &SessionId, s: StreamIdx) {
    if let Some(on) = &shared.store {
        on.ended(&Leased::Stream(sid.to_string(), s));
    }
}

//! Rule M across the replicas of a shared store (guarded). Each replica
//! publishes its own dropped streams to the session's record in the store
//! and renews them while it lives (a dead replica's lapse); before a
//! decision it loads the record, applies to its own streams what the
//! client said about them at other replicas (cursors, resumes served from
//! the store, 410s given), holds the other replicas' dropped streams as
//! foreign streams, decides, and writes its view, the client's words here
//! about other replicas' streams and any loss it reports back with a
//! compare-and-set on the record's version: a write refused because
//! another replica wrote meanwhile loads and decides again. The guard
//! stays sans-IO: this file is the I/O around it.

// Refusals travel as ready-made responses, as in `rule_m.rs`.
#![allow(clippy::result_large_err)]

use crate::guard::{EventId, Limits, PostFacts, Reason, Verdict};
use crate::history::{Record, SessionId, WordKind};
use crate::protocol::jsonrpc;
use crate::server::http::body::ServerBody;
use crate::server::http::respond::error;
use crate::server::Shared;
use crate::store::{Answer, Dropped, GuardRec, GuardWrite, Op, Word};
use http::{Response, StatusCode};
use std::rc::Rc;
use std::time::Duration;

/// How long a published view holds without renewal: a replica that stops
/// renewing (it died) no longer blocks the session on the others.
pub(in crate::server) const VIEW_LEASE_MS: u64 = 3_000;

/// How often a replica publishes what changed and learns what the client
/// said elsewhere about its dropped streams.
const TICK_MS: u64 = 20;

/// Ticks between renewals of every published view.
const RENEW_TICKS: u64 = 50;

/// The publisher's turns a decision waits for a paused stream's holder
/// to publish it once the client said here it lost it.
const HOLDER_TICKS: u32 = 5;

/// Loads and writes a decision may take before it gives up (503).
const CAS_TRIES: u32 = 8;

/// Whether Rule M decides across replicas here.
pub(in crate::server) fn on(shared: &Shared) -> bool {
    shared.store.is_some() && shared.guarded()
}

fn busy() -> Response<ServerBody> {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        jsonrpc::TRANSPORT_ERROR,
        "the session's shared state did not settle (the session store did not answer, or kept changing): retry later",
    )
}

/// Loads the record, applies it (see the module docs), and writes this
/// replica's view and words back with a compare-and-set, until a write
/// lands: then the session's guard holds the view a decision may be made
/// from at once.
pub(in crate::server) async fn settle(
    shared: &Rc<Shared>,
    sid: &SessionId,
    facts: PostFacts,
    limits: Limits,
) -> Result<(), Response<ServerBody>> {
    let on = shared.store.as_ref().expect("on() checked");
    let mut unheard = None;
    for _ in 0..CAS_TRIES {
        let rec = load(shared, sid).await.ok_or_else(busy)?;
        let Some((op, (words, view))) = ({
            let mut st = shared.state.borrow_mut();
            st.sessions.get_mut(sid).map(|sess| {
                absorb(shared, sid, sess, &rec);
                for w in &sess.sync.pending {
                    let lost = w.kind == WordKind::Lost;
                    if sess.guard.foreign_cursor(w.event, lost).is_none()
                        && lost
                        && !foreign_holds(sess, w.event)
                    {
                        // A stream no replica published: its holder
                        // has not heard yet that the client lost it.
                        unheard = Some(w.event);
                    }
                }
                let d = sess.guard.check(facts, limits);
                let reported = match (d.verdict, d.stream) {
                    (Verdict::Reject(Reason::StreamLost), Some(s)) => vec![s],
                    _ => Vec::new(),
                };
                let view = own_view(sess);
                let words = sess.sync.pending.clone();
                // What a landed write publishes: this view, these words.
                let sent = (words.len(), view.clone());
                let write = GuardWrite {
                    expect: Some(rec.version),
                    view: Some(view),
                    seq: sess.sync.next_seq(shared.history.now_us()),
                    words,
                    reported,
                    ..write(on.replica)
                };
                (put(sid, write), sent)
            })
        }) else {
            // The session ended meanwhile: the decision says so.
            return Ok(());
        };
        match on.client.call(&op).await {
            Ok(Answer::GuardPut { written: true, .. }) => {
                if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
                    sess.sync.pending.drain(..words);
                    sess.sync.published = view;
                    sess.sync.unsent = false;
                }
                if let Some(id) = unheard {
                    await_holder(shared, sid, id).await;
                }
                return Ok(());
            }
            Ok(Answer::GuardPut { written: false, .. }) => continue,
            _ => return Err(busy()),
        }
    }
    Err(busy())
}

/// Whether a foreign stream this session's guard holds may hold `id`.
fn foreign_holds(sess: &crate::server::session::Session, id: EventId) -> bool {
    sess.guard
        .foreign_may_hold(id, |s| sess.sync.foreign_first(s))
}

/// The client said here that it lost a stream of another replica's that
/// no replica published (a paused stream: its holder still waits for the
/// resume it advised). Single, the guard would hold the POST until the
/// stream is drained; here the holder must hear the word first. It loads
/// the record while it holds a paused stream, applies the word and
/// publishes the stream as dropped: wait for that, a few of its turns at
/// most, reloading, so the decision is made on it (a holder that died
/// never publishes: the decision goes on without it).
async fn await_holder(shared: &Shared, sid: &SessionId, id: EventId) {
    for _ in 0..HOLDER_TICKS {
        tokio::time::sleep(Duration::from_millis(TICK_MS)).await;
        let Some(rec) = load(shared, sid).await else {
            return;
        };
        let mut st = shared.state.borrow_mut();
        let Some(sess) = st.sessions.get_mut(sid) else {
            return;
        };
        absorb(shared, sid, sess, &rec);
        if foreign_holds(sess, id) {
            return;
        }
    }
}

/// A write of `replica`'s that changes nothing yet: no version expected,
/// no view, no words, no losses.
fn write(replica: u32) -> GuardWrite {
    GuardWrite {
        replica,
        expect: None,
        view: None,
        words: Vec::new(),
        reported: Vec::new(),
        lease_ms: VIEW_LEASE_MS,
        seq: 0,
    }
}

fn put(sid: &SessionId, write: GuardWrite) -> Op {
    Op::GuardPut {
        sid: sid.to_string(),
        write,
    }
}

async fn load(shared: &Shared, sid: &SessionId) -> Option<GuardRec> {
    let on = shared.store.as_ref()?;
    let op = Op::GuardLoad {
        sid: sid.to_string(),
    };
    match on.client.call(&op).await {
        Ok(Answer::Guard { rec }) => Some(rec),
        _ => None,
    }
}

/// Applies a loaded record to the session: the words and reported losses
/// about its own streams (each once, recorded), the other replicas'
/// dropped streams as foreign ones.
fn absorb(
    shared: &Shared,
    sid: &SessionId,
    sess: &mut crate::server::session::Session,
    rec: &GuardRec,
) {
    let me = shared.store.as_ref().map_or(0, |on| on.replica);
    let sync = &mut sess.sync;
    if rec.version < sync.seen_version {
        sync.applied = 0;
    }
    sync.seen_version = rec.version;
    let from = sync.applied.min(rec.words.len());
    sync.applied = rec.words.len();
    for w in &rec.words[from..] {
        let Some(s) = sess.stream_of(w.event) else {
            continue;
        };
        if !sess.guard.holds(s) {
            continue;
        }
        // A word arrives late, after whatever this replica saw since: a
        // cursor at or before the client's own later word here (a resume
        // from it) is stale, and must not drop the stream again.
        let stale = sess.guard.stream(s).client_cursor >= Some(w.event);
        if stale && w.kind != WordKind::Resumed {
            continue;
        }
        match w.kind {
            WordKind::Cursor => sess.guard.cursor(s, w.event, false),
            WordKind::Lost => sess.guard.cursor(s, w.event, true),
            WordKind::Resumed => sess.guard.resumed(s, Some(w.event), 0),
            // Another replica answered a resume of it 410 (nothing of it
            // in the store): the client re-issues, Rule M lets it go.
            WordKind::Reported => sess.guard.report_lost(s),
        }
        shared.history.record(Record::StoreWord {
            session: sid.clone(),
            stream: s,
            event: w.event,
            kind: w.kind,
            replica: me,
        });
        sess.release_if_done(s);
    }
    for &s in &rec.reported {
        if sess.guard.holds(s) && !sess.guard.is_foreign(s) && !sess.guard.stream(s).lost_reported {
            sess.guard.report_lost(s);
            shared.history.record(Record::StoreWord {
                session: sid.clone(),
                stream: s,
                event: sess.guard.stream(s).watermark.unwrap_or(0),
                kind: WordKind::Reported,
                replica: me,
            });
        }
    }
    let foreign: Vec<Dropped> = rec
        .views
        .iter()
        .filter(|(r, _)| **r != me)
        .flat_map(|(_, v)| v.streams.iter().copied())
        .filter(|d| !rec.reported.contains(&d.stream))
        .collect();
    sess.sync.foreign_first = foreign.iter().map(|d| (d.stream, d.first)).collect();
    sess.guard
        .set_foreign(foreign.iter().map(|d| (d.stream, d.state)));
}

/// This replica's own dropped streams, as it publishes them.
fn own_view(sess: &crate::server::session::Session) -> Vec<Dropped> {
    sess.guard
        .published()
        .into_iter()
        .map(|(s, state)| Dropped {
            stream: s,
            first: sess
                .streams
                .get(s)
                .and_then(|rt| rt.ids.first().copied())
                .unwrap_or(0),
            state,
        })
        .collect()
}

/// What the client did at this replica with a stream another replica
/// holds (a resume served from the store, or its end short of the
/// result), or what this replica told it (410: nothing of the stream
/// is stored): written behind this replica's other writes.
pub(in crate::server) fn tell(shared: &Shared, sid: &SessionId, word: Word) {
    let Some(on) = shared.store.as_ref().filter(|_| shared.guarded()) else {
        return;
    };
    on.client.write_behind(put(
        sid,
        GuardWrite {
            words: vec![word],
            ..write(on.replica)
        },
    ));
}

/// The replica's publisher: every tick, each session with own dropped
/// streams (or a published view still to withdraw) loads its record,
/// applies what the client said elsewhere, and publishes its view when it
/// changed, or every `RENEW_TICKS` ticks to renew its lease.
pub(in crate::server) async fn publish(shared: Rc<Shared>) {
    if shared.store.is_none() {
        return;
    }
    let mut tick = 0u64;
    loop {
        tokio::time::sleep(Duration::from_millis(TICK_MS)).await;
        tick += 1;
        let renew = tick.is_multiple_of(RENEW_TICKS);
        let due: Vec<SessionId> = shared
            .state
            .borrow()
            .sessions
            .iter()
            .filter(|(_, s)| {
                !s.sync.published.is_empty()
                    || s.sync.unsent
                    || s.guard.has_own_dropped()
                    || s.guard.has_own_paused()
            })
            .map(|(sid, _)| sid.clone())
            .collect();
        for sid in due {
            publish_one(&shared, &sid, renew).await;
        }
    }
}

/// One session's turn of the publisher: load its record, apply what the
/// client said elsewhere, and write this replica's view when it changed
/// (or `renew`).
async fn publish_one(shared: &Shared, sid: &SessionId, renew: bool) {
    let Some(on) = shared.store.as_ref() else {
        return;
    };
    let Some(rec) = load(shared, sid).await else {
        return;
    };
    let (view, seq) = {
        let mut st = shared.state.borrow_mut();
        let Some(sess) = st.sessions.get_mut(sid) else {
            return;
        };
        absorb(shared, sid, sess, &rec);
        let view = own_view(sess);
        if view == sess.sync.published && !renew && !sess.sync.unsent {
            return;
        }
        sess.sync.published = view.clone();
        (view, sess.sync.next_seq(shared.history.now_us()))
    };
    let landed = matches!(
        on.client
            .call(&put(
                sid,
                GuardWrite {
                    view: Some(view),
                    seq,
                    ..write(on.replica)
                },
            ))
            .await,
        Ok(Answer::GuardPut { written: true, .. })
    );
    if let Some(sess) = shared.state.borrow_mut().sessions.get_mut(sid) {
        sess.sync.unsent = !landed;
    }
}

/// A stream this replica published as dropped was resumed here: its view
/// is withdrawn now rather than at the publisher's next turn, which under
/// a herd of sessions comes long after the other replicas have refused
/// the client's next POST on the stale view again and again.
pub(in crate::server) fn withdraw_soon(shared: &Rc<Shared>, sid: &SessionId) {
    let due = on(shared)
        && shared
            .state
            .borrow()
            .sessions
            .get(sid)
            .is_some_and(|s| !s.sync.published.is_empty());
    if due {
        let (shared, sid) = (shared.clone(), sid.clone());
        tokio::task::spawn_local(async move { publish_one(&shared, &sid, false).await });
    }
}

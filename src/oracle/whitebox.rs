//! A second count of the black-box event metrics from the built-in
//! server's own records (which tool started for which tag, which events it
//! stored, by its own event ids), matched to what clients received by
//! event id. The black-box oracle must agree with it on every built-in
//! run; the property tests check that they do. It is not used for
//! verdicts.
//!
//! An execution counts once it took its effect. With immediate effects
//! that is when the tool starts; with transactional ones (the ledger marks
//! its executions deferred: the one thing read from it here) when it ends
//! with its own result, not cancelled, killed, or answered with another
//! execution's stored result (`DedupReplayed` while it ran).

use super::intern::FxMap;
use super::transport::Receipts;
use crate::history::{ClientRecord, Entry, EventKind, LedgerRecord, Rec, Record, SessionId};
use crate::protocol::mcp;
use crate::protocol::RequestId;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// The counts recomputed from the server's side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recount {
    /// Σ (executions − 1)⁺ over operations.
    pub duplicate_side_effects: u64,
    /// Operations that ran more than once.
    pub ops_duplicated: u64,
    /// Counted events stored for handled operations and never received.
    pub orphaned_events: u64,
}

impl Recount {
    /// The same three counts as the black box has them in `m`.
    pub fn of_black_box(m: &super::Metrics) -> Recount {
        Recount {
            duplicate_side_effects: m.duplicate_side_effects,
            ops_duplicated: m.ops_duplicated,
            orphaned_events: m.orphaned_events,
        }
    }
}

/// Recounts a built-in run from its server records.
pub fn recount(entries: &[Entry]) -> Recount {
    let mut receipts = Receipts::default();
    let mut ops: BTreeSet<Rc<str>> = BTreeSet::new();
    let mut handled: BTreeSet<Rc<str>> = BTreeSet::new();
    let mut executions: BTreeMap<String, u64> = BTreeMap::new();
    let deferred = entries.iter().any(|e| {
        matches!(
            e.record,
            Rec::Ledger(LedgerRecord::Execution { deferred: true, .. })
        )
    });
    // Deferred executions running: (session, request) → (tag, refused).
    let mut running: BTreeMap<(SessionId, RequestId), (String, bool)> = BTreeMap::new();
    let mut produced: BTreeMap<Rc<str>, Vec<(SessionId, u64, RequestId)>> = BTreeMap::new();
    // Deferred executions that committed nothing: their events are owed
    // to nobody.
    let mut void: BTreeSet<(SessionId, RequestId)> = BTreeSet::new();
    for e in entries {
        receipts.observe(e);
        match &e.record {
            Rec::Server(r) => match r {
                Record::ToolStarted {
                    session,
                    rpc_id,
                    tool,
                    tag: Some(tag),
                    ..
                } if tool == mcp::LEDGER_APPEND => {
                    if deferred {
                        running.insert((session.clone(), rpc_id.clone()), (tag.clone(), false));
                    } else {
                        *executions.entry(tag.clone()).or_insert(0) += 1;
                    }
                }
                Record::DedupReplayed {
                    session, rpc_id, ..
                } => {
                    if let Some((_, refused)) = running.get_mut(&(session.clone(), rpc_id.clone()))
                    {
                        *refused = true;
                    }
                }
                Record::ToolEnded {
                    session,
                    rpc_id,
                    cancelled,
                    ..
                } => {
                    let run = (session.clone(), rpc_id.clone());
                    if let Some((tag, refused)) = running.remove(&run) {
                        if !cancelled && !refused {
                            *executions.entry(tag).or_insert(0) += 1;
                        } else {
                            void.insert(run);
                        }
                    }
                }
                Record::Produced {
                    session,
                    event,
                    kind: EventKind::Progress | EventKind::Result,
                    tag: Some(tag),
                    rpc_id: Some(rpc_id),
                    ..
                } => produced.entry(tag.clone()).or_default().push((
                    session.clone(),
                    *event,
                    rpc_id.clone(),
                )),
                _ => {}
            },
            Rec::Client(ClientRecord::OpStarted { tag, .. }) => {
                ops.insert(tag.clone());
            }
            Rec::Client(ClientRecord::Handled { tag, .. }) => {
                handled.insert(tag.clone());
            }
            _ => {}
        }
    }
    // Still running at the end: killed by a restart, or never finished.
    void.extend(running.into_keys());
    let mut out = Recount::default();
    for tag in &ops {
        let n = executions.get(&**tag).copied().unwrap_or(0);
        out.duplicate_side_effects += n.saturating_sub(1);
        out.ops_duplicated += u64::from(n > 1);
        if handled.contains(tag) {
            out.orphaned_events += produced
                .get(&**tag)
                .into_iter()
                .flatten()
                .filter(|(s, ev, id)| {
                    !void.contains(&(s.clone(), id.clone()))
                        && !receipts
                            .sessions
                            .get(s)
                            .is_some_and(|s| receipts.received(&(s, *ev)))
                })
                .count() as u64;
        }
    }
    out
}

/// Operations whose result the built-in server wrote on a connection and
/// their client never received: the server wrote the end of a stream into
/// a connection the client had lost (a half-open write). The server's own
/// records refine a failure's cause with this; they never replace it.
pub fn half_open_writes(entries: &[Entry]) -> BTreeSet<Rc<str>> {
    let mut receipts = Receipts::default();
    // (session, result event) → its tag (the latest produced), and
    // whether it was written (at any time).
    let mut results: FxMap<(u32, u64), (&str, bool)> = FxMap::default();
    for e in entries {
        receipts.observe(e);
        if let Rec::Server(Record::Produced {
            session,
            event,
            kind: EventKind::Result,
            tag: Some(tag),
            ..
        }) = &e.record
        {
            let ev = (receipts.sessions.id(session), *event);
            results.entry(ev).or_insert(("", false)).0 = tag;
        }
    }
    if results.is_empty() {
        return BTreeSet::new();
    }
    for e in entries {
        if let Rec::Server(Record::Written { session, event, .. }) = &e.record {
            if let Some(s) = receipts.sessions.get(session) {
                if let Some((_, w)) = results.get_mut(&(s, *event)) {
                    *w = true;
                }
            }
        }
    }
    results
        .into_iter()
        .filter(|&(ev, (_, written))| written && !receipts.received(&ev))
        .map(|(_, (tag, _))| tag.into())
        .collect()
}

/// [`half_open_writes`] one entry at a time, for operations judged as they
/// become final: each result event the server stored, whether it was
/// written and whether its client received it, kept until its operation is
/// judged ([`HalfOpen::take`]). A result written before its operation was
/// final can still reach the client after (a replay to a client that had
/// given up): a failed operation's half-open writes are watched
/// ([`HalfOpen::watch`]) until the run ends, and a receipt of the last of
/// them says the refinement no longer holds.
#[derive(Default)]
pub(super) struct HalfOpen {
    receipts: Receipts,
    /// (session, result event) → (its tag, the latest produced; written;
    /// received).
    results: FxMap<(u32, u64), (Rc<str>, bool, bool)>,
    /// Tag → the result events stored for it.
    by_tag: FxMap<Rc<str>, Vec<(u32, u64)>>,
    /// Result events written and not received, of judged operations whose
    /// cause they refine → the watch they belong to.
    watched: FxMap<(u32, u64), usize>,
    /// Per watch: its events not received yet, and what to undo when none
    /// is left.
    watches: Vec<(usize, Undo)>,
}

/// What a refinement that no longer holds takes back: the verdict's index
/// among the findings, its client, its cause's index.
#[derive(Clone, Copy, Debug)]
pub(super) struct Undo {
    pub verdict: usize,
    pub client: u32,
    pub cause: usize,
}

impl HalfOpen {
    /// Nothing kept yet; legacy numbering only, no receipt kept.
    pub fn new() -> HalfOpen {
        let mut h = HalfOpen::default();
        h.receipts.firsts = super::transport::Firsts::None;
        h
    }

    /// Takes the next entry; a refinement to take back when it was the
    /// receipt of the last half-open write a watch waited for.
    pub fn entry(&mut self, e: &Entry) -> Option<Undo> {
        self.receipts.observe(e);
        match &e.record {
            Rec::Server(Record::Produced {
                session,
                event,
                kind: EventKind::Result,
                tag: Some(tag),
                ..
            }) => {
                let ev = (self.receipts.sessions.id(session), *event);
                let r = self
                    .results
                    .entry(ev)
                    .or_insert_with(|| (tag.clone(), false, false));
                r.0 = tag.clone();
                self.by_tag.entry(tag.clone()).or_default().push(ev);
            }
            Rec::Server(Record::Written { session, event, .. }) if !self.results.is_empty() => {
                if let Some(s) = self.receipts.sessions.get(session) {
                    if let Some(r) = self.results.get_mut(&(s, *event)) {
                        r.1 = true;
                    }
                }
            }
            Rec::Client(ClientRecord::Received {
                session,
                event,
                transport,
                ..
            }) if !self.results.is_empty() || !self.watched.is_empty() => {
                let ev = self.receipts.event_of(session, *event, *transport)?;
                if let Some(r) = self.results.get_mut(&ev) {
                    r.2 = true;
                }
                let w = self.watched.remove(&ev)?;
                let (left, undo) = &mut self.watches[w];
                *left -= 1;
                return (*left == 0).then_some(*undo);
            }
            _ => {}
        }
        None
    }

    /// The result events of `tag` the server wrote and its client has not
    /// received (so far); forgets `tag`'s results.
    pub fn take(&mut self, tag: &str) -> Vec<(u32, u64)> {
        let mut half_open = Vec::new();
        for ev in self.by_tag.remove(tag).unwrap_or_default() {
            if let Some(r) = self.results.get(&ev).filter(|r| &*r.0 == tag) {
                if r.1 && !r.2 {
                    half_open.push(ev);
                }
                self.results.remove(&ev);
            }
        }
        half_open
    }

    /// Watches half-open writes `events` (from [`HalfOpen::take`]) until
    /// the run ends: `undo` is returned by [`HalfOpen::entry`] if the
    /// client receives every one of them after all.
    pub fn watch(&mut self, events: Vec<(u32, u64)>, undo: Undo) {
        let w = self.watches.len();
        let mut n = 0;
        for ev in events {
            if self.watched.insert(ev, w).is_none() {
                n += 1;
            }
        }
        self.watches.push((n, undo));
    }
}

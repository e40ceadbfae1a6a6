//! A second count of the black-box event metrics from the built-in
//! server's own records (which tool started for which tag, which events it
//! stored, by its own event ids), matched to what clients received by
//! event id. The black-box oracle must agree with it on every built-in
//! run; the property tests check that they do. It is not used for
//! verdicts.

use super::transport::Receipts;
use crate::history::{ClientRecord, Entry, EventKind, Rec, Record, SessionId};
use crate::protocol::mcp;
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

/// Recounts a built-in run from its server records.
pub fn recount(entries: &[Entry]) -> Recount {
    let mut receipts = Receipts::default();
    let mut ops: BTreeSet<Rc<str>> = BTreeSet::new();
    let mut handled: BTreeSet<Rc<str>> = BTreeSet::new();
    let mut executions: BTreeMap<String, u64> = BTreeMap::new();
    let mut produced: BTreeMap<String, Vec<(SessionId, u64)>> = BTreeMap::new();
    for e in entries {
        receipts.observe(e);
        match &e.record {
            Rec::Server(r) => match r {
                Record::ToolStarted {
                    tool,
                    tag: Some(tag),
                    ..
                } if tool == mcp::LEDGER_APPEND => {
                    *executions.entry(tag.clone()).or_insert(0) += 1;
                }
                Record::Produced {
                    session,
                    event,
                    kind: EventKind::Progress | EventKind::Result,
                    tag: Some(tag),
                    rpc_id: Some(_),
                    ..
                } => produced
                    .entry(tag.clone())
                    .or_default()
                    .push((session.clone(), *event)),
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
                .filter(|ev| !receipts.received(ev))
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
    let mut results: BTreeMap<(SessionId, u64), Rc<str>> = BTreeMap::new();
    let mut written: BTreeSet<(SessionId, u64)> = BTreeSet::new();
    for e in entries {
        receipts.observe(e);
        match &e.record {
            Rec::Server(Record::Produced {
                session,
                event,
                kind: EventKind::Result,
                tag: Some(tag),
                ..
            }) => {
                results.insert((session.clone(), *event), tag.as_str().into());
            }
            Rec::Server(Record::Written { session, event, .. }) => {
                written.insert((session.clone(), *event));
            }
            _ => {}
        }
    }
    results
        .into_iter()
        .filter(|(ev, _)| written.contains(ev) && !receipts.received(ev))
        .map(|(_, tag)| tag)
        .collect()
}

//! A session's hooks into its replica's shared store, below the session
//! so that the session's own file knows nothing of the replica floor:
//! what it knows of its shared Rule M record ([`GuardSync`], worked by
//! `shared_guard.rs`) and the mirroring of each event it stores
//! ([`mirror`]; `stored.rs` reads them back).

use crate::guard::{EventId, StreamIdx};
use crate::history::{SessionId, WordKind};
use crate::store::{Dropped, Op, StoreClient, StoredEvent, Word};
use bytes::Bytes;
use std::collections::BTreeMap;

/// What a session on this replica knows of its shared record.
#[derive(Default)]
pub(crate) struct GuardSync {
    /// The record's words applied so far.
    pub(in crate::server) applied: usize,
    /// The version last loaded (a lower one: the store lost the record).
    pub(in crate::server) seen_version: u64,
    /// The view as last published.
    pub(in crate::server) published: Vec<Dropped>,
    /// The first event id of each foreign stream (how a 409 names it).
    pub(in crate::server) foreign_first: BTreeMap<StreamIdx, EventId>,
    /// The client's words here about other replicas' streams, not yet
    /// written.
    pub(in crate::server) pending: Vec<Word>,
    /// The sequence number of the last view written: views are written
    /// by decisions and by the publisher, concurrently, and may cross on
    /// the way to the store, which keeps the latest.
    pub(in crate::server) view_seq: u64,
    /// The publisher's last write of the view did not land: it writes
    /// again at its next turn.
    pub(in crate::server) unsent: bool,
}

impl GuardSync {
    /// The next view's sequence number: above the last one, and above
    /// any an earlier incarnation of this replica gave (it grows with the
    /// clock).
    pub(in crate::server) fn next_seq(&mut self, now_us: u64) -> u64 {
        self.view_seq = (self.view_seq + 1).max(now_us << 8);
        self.view_seq
    }

    /// The first event id of a foreign stream, as its replica published it.
    pub fn foreign_first(&self, s: StreamIdx) -> Option<EventId> {
        self.foreign_first.get(&s).copied()
    }

    /// A cursor the client presented here for an event another replica
    /// gave: written with the next decision.
    pub fn heard(&mut self, event: u64, lost: bool) {
        let kind = if lost {
            WordKind::Lost
        } else {
            WordKind::Cursor
        };
        self.pending.push(Word { event, kind });
    }
}

/// One event produced here, for the store.
pub(in crate::server) fn mirror(
    client: &StoreClient,
    sid: &SessionId,
    s: StreamIdx,
    id: EventId,
    data: &Bytes,
    result: bool,
) {
    client.write_behind(Op::Append {
        sid: sid.to_string(),
        events: vec![StoredEvent {
            stream: s,
            id,
            data: String::from_utf8_lossy(data).into_owned(),
            result,
        }],
    });
}

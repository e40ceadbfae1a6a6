//! A session's shared Rule M record: each replica's published dropped
//! streams, what the client said at replicas that do not hold the streams
//! it named, and the losses already reported. Versioned, so that a
//! replica's decision is written back only if nothing changed since it
//! loaded the record (compare-and-set): two replicas never both decide
//! on the same view.

use crate::guard::StreamState;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One session's record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardRec {
    /// Bumped by every write.
    pub version: u64,
    /// Each replica's dropped streams, as it last published them (on the
    /// wire as pairs: the store's answers are internally tagged, and such
    /// an enum cannot read a map's integer keys back).
    #[serde(with = "pairs")]
    pub views: BTreeMap<u32, Published>,
    /// The client's words about streams another replica holds, in the
    /// order they were given.
    pub words: Vec<Word>,
    /// Streams whose loss a 410 already reported, at any replica.
    pub reported: BTreeSet<u32>,
}

/// What a client said about a stream at a replica that does not hold it
/// (a cursor on POST, a `;lost` cursor or a resume that ended short of the
/// result, a resume served from the shared store), or that replica's 410
/// for the stream's loss; the replica that holds it applies it once it
/// loads it from the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WordKind {
    /// It has the stream up to the event.
    Cursor,
    /// It lost the stream after the event.
    Lost,
    /// Another replica serves it the stream's events from the event on.
    Resumed,
    /// Another replica answered the client 410 for the stream's loss (a
    /// migration on a lost stream, or a resume nothing of it was stored
    /// for): Rule M lets the stream go.
    Reported,
}

/// One replica's published dropped streams.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Published {
    /// When (µs of simulated time) they lapse unless renewed: a replica
    /// that died stops renewing, and its streams leave the view.
    pub until: u64,
    /// Its dropped streams.
    pub streams: Vec<Dropped>,
    /// The sequence number of the write that published them (0: none).
    #[serde(default)]
    pub seq: u64,
}

/// One published dropped stream.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// Its index in the session.
    pub stream: u32,
    /// Its first (priming) event id: how a 409 about it names it to the
    /// client, at whichever replica the 409 is given.
    pub first: u64,
    /// Its state as the replica holding it observes it.
    pub state: StreamState,
}

/// What a client said about an event of a stream another replica holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Word {
    /// The event it named.
    pub event: u64,
    /// What it said.
    pub kind: WordKind,
}

impl GuardRec {
    /// Applies a write at `now` (µs) unless `expect` names another
    /// version; returns whether it was applied. The version moves only
    /// when something a decision reads changed: a renewal of the same
    /// view does not refuse another replica's compare-and-set.
    pub(super) fn put(&mut self, now: u64, put: GuardWrite) -> bool {
        if put.expect.is_some_and(|v| v != self.version) {
            return false;
        }
        let mut changed = !put.words.is_empty();
        let prev = self.views.get(&put.replica);
        // A view older than the one held (two writes of one replica that
        // crossed on the network) is not applied: it would bring back
        // streams the replica has since let go.
        let stale = put.seq != 0 && prev.is_some_and(|p| put.seq < p.seq);
        if let Some(streams) = put.view.filter(|_| !stale) {
            let held = prev.map_or(&[][..], |p| &p.streams[..]);
            changed |= held != &streams[..];
            // An empty view is kept, lapsed, for its sequence number.
            let until = if streams.is_empty() {
                now
            } else {
                now + put.lease_ms * 1000
            };
            self.views.insert(
                put.replica,
                Published {
                    until,
                    streams,
                    seq: put.seq,
                },
            );
        }
        self.words.extend(put.words);
        for s in put.reported {
            changed |= self.reported.insert(s);
        }
        if changed || put.expect.is_some() {
            self.version += 1;
        }
        true
    }

    /// The record as a reader at `now` (µs) sees it: lapsed views left out.
    pub(super) fn live(&self, now: u64) -> GuardRec {
        let mut rec = self.clone();
        rec.views.retain(|_, p| p.until > now);
        rec
    }
}

/// A write to a [`GuardRec`] ([`super::Op::GuardPut`]): `view` (when
/// given) replaces `replica`'s published dropped streams for `lease_ms`,
/// `words` are appended, `reported` joins the reported losses; all or
/// nothing, and only if the record is still at version `expect` (when
/// given). `seq` orders one replica's views: a view whose `seq` is below
/// the held one's is dropped (0: unordered, always applied).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuardWrite {
    pub replica: u32,
    pub expect: Option<u64>,
    pub view: Option<Vec<Dropped>>,
    pub words: Vec<Word>,
    pub reported: Vec<u32>,
    pub lease_ms: u64,
    #[serde(default)]
    pub seq: u64,
}

/// A map with integer keys as a list of (key, value) pairs.
mod pairs {
    use super::Published;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(m: &BTreeMap<u32, Published>, s: S) -> Result<S::Ok, S::Error> {
        m.iter().collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<u32, Published>, D::Error> {
        Ok(Vec::<(u32, Published)>::deserialize(d)?
            .into_iter()
            .collect())
    }
}

//! A session's streams: what each one's connection is, which of its events
//! it has written ([`Sent`], what backpressure reads), and the streams by
//! index, the released ones gone.

use crate::guard::{EventId, StreamIdx};
use crate::history::{ConnId, StreamKind};
use crate::protocol::RequestId;
use std::collections::BTreeMap;
use std::rc::Rc;
use tokio::sync::Notify;

/// Runtime state of one stream, beside its [`crate::guard::StreamState`].
pub(crate) struct StreamRt {
    pub kind: StreamKind,
    /// The request whose POST opened it (POST streams).
    pub rpc: Option<RequestId>,
    /// Every event id ever produced for the stream, increasing.
    pub ids: Vec<EventId>,
    /// The connection currently writing it.
    pub conn: Option<ConnId>,
    /// Wakes its writer when an event is produced or the stream changes hands.
    pub wake: Rc<Notify>,
    /// No more events will be produced (POST streams, after the result).
    pub done_producing: bool,
    /// Ids of the stream's result events, increasing.
    pub results: Vec<EventId>,
    /// How far its current connection's writer has got.
    pub sent: Sent,
    /// How many polling closes paused it: the pause an expiry timer
    /// belongs to (a kept-alive connection can carry several pauses).
    pub pauses: u32,
}

/// How far a stream's writer has got on its connection: which of the
/// stream's events it has yet to write. Until its writer starts, a stream
/// owes every event (even the priming one is not on the wire yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    /// Written (or passed over, when evicted) in id order up to here; in an
    /// interleaved replay, the backlog walked so far.
    pub last: Option<EventId>,
    /// An interleaved replay (the unguarded resume: live events go out
    /// between backlog events): the live events written up to here, and
    /// where its backlog ends.
    pub interleaved: Option<(Option<EventId>, Option<EventId>)>,
}

impl Sent {
    /// Whether event `id` of the stream is still to be written.
    pub fn owes(&self, id: EventId) -> bool {
        let id = Some(id);
        match self.interleaved {
            None => id > self.last,
            Some((live_last, replay_until)) => {
                (id > self.last && id <= replay_until) || id > live_last
            }
        }
    }
}

/// A session's streams by index: every stream opened, but those released
/// (finished, nothing of them stored: see `Session::release_if_done`).
#[derive(Default)]
pub(crate) struct Streams(BTreeMap<StreamIdx, StreamRt>);

impl Streams {
    /// A stream opened and not released.
    pub fn get(&self, s: StreamIdx) -> Option<&StreamRt> {
        self.0.get(&s)
    }

    /// A stream opened and not released.
    pub fn get_mut(&mut self, s: StreamIdx) -> Option<&mut StreamRt> {
        self.0.get_mut(&s)
    }

    /// The streams not released, by index.
    pub fn iter(&self) -> impl Iterator<Item = (StreamIdx, &StreamRt)> + '_ {
        self.0.iter().map(|(&s, rt)| (s, rt))
    }

    /// How many are not released.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A stream just opened.
    pub(in crate::server) fn insert(&mut self, s: StreamIdx, rt: StreamRt) {
        let fresh = self.0.insert(s, rt).is_none();
        debug_assert!(fresh, "stream indices are never reused");
    }

    /// Forgets a stream (its release).
    pub(in crate::server) fn remove(&mut self, s: StreamIdx) -> Option<StreamRt> {
        self.0.remove(&s)
    }
}

impl std::ops::Index<StreamIdx> for Streams {
    type Output = StreamRt;
    fn index(&self, s: StreamIdx) -> &StreamRt {
        self.0.get(&s).expect("a stream opened and not released")
    }
}

impl std::ops::IndexMut<StreamIdx> for Streams {
    fn index_mut(&mut self, s: StreamIdx) -> &mut StreamRt {
        self.0
            .get_mut(&s)
            .expect("a stream opened and not released")
    }
}

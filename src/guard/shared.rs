//! Rule M across replicas: a session's guard on one replica holds, beside
//! the streams it opened, the dropped streams the other replicas published
//! to the shared store (*foreign* streams). The server loads them before a
//! decision ([`SessionGuard::set_foreign`]), checks as usual, and writes
//! the decision back with a compare-and-set; what this replica's own
//! dropped streams are is what it publishes ([`SessionGuard::published`]).
//! Foreign streams change only by a new load: no observation of this
//! replica names them, since each replica numbers its streams apart.

use super::{EventId, SessionGuard, Slot, StreamIdx, StreamState, NOT_DROPPED};

impl SessionGuard {
    /// Replaces the foreign streams with `streams` (another replica's
    /// dropped streams, as the store holds them). Each counts as Rule M
    /// counts a dropped stream; none carries a replay of this replica.
    pub fn set_foreign(&mut self, streams: impl IntoIterator<Item = (StreamIdx, StreamState)>) {
        for s in std::mem::take(&mut self.foreign) {
            if self.streams.contains_key(&s) {
                self.tracked(s, |g| g.set_dropped(s, false));
                self.streams.remove(&s);
            }
        }
        for (s, mut st) in streams {
            if self.streams.contains_key(&s) {
                // One of ours (a stale publication of our own index): ours wins.
                continue;
            }
            st.replay_backlog = 0;
            st.connected = false;
            let dropped = std::mem::replace(&mut st.dropped, false);
            self.streams.insert(
                s,
                Slot {
                    st,
                    dropped_at: NOT_DROPPED,
                },
            );
            self.foreign.insert(s);
            self.tracked(s, |g| g.set_dropped(s, dropped));
        }
    }

    /// The foreign streams held now, by index.
    pub fn foreign(&self) -> impl Iterator<Item = StreamIdx> + '_ {
        self.foreign.iter().copied()
    }

    /// Whether the guard holds stream `s` (opened here and not released,
    /// or foreign).
    pub fn holds(&self, s: StreamIdx) -> bool {
        self.streams.contains_key(&s)
    }

    /// Whether `s` is a foreign stream.
    pub fn is_foreign(&self, s: StreamIdx) -> bool {
        self.foreign.contains(&s)
    }

    /// A cursor the client presented here for an event of another
    /// replica: it drains the foreign stream whose last produced event it
    /// is (the client has all of it). Which foreign stream an earlier
    /// event belongs to is not published, and needs not be: that stream
    /// is owed either way. Returns the stream it drained.
    pub fn foreign_cursor(&mut self, id: EventId, lost: bool) -> Option<StreamIdx> {
        let s = self
            .foreign
            .iter()
            .copied()
            .find(|&s| self.stream(s).last_produced == Some(id))?;
        self.cursor(s, id, lost);
        Some(s)
    }

    /// Whether any of this replica's own streams is one Rule M counts
    /// (what [`SessionGuard::published`] would list), without listing them.
    pub fn has_own_dropped(&self) -> bool {
        self.dropped.iter().any(|s| !self.foreign.contains(s))
    }

    /// Whether any of this replica's own streams is paused (a polling
    /// close): a client that lost it may say so at another replica, which
    /// cannot decide on it until this one hears the word and publishes.
    pub fn has_own_paused(&self) -> bool {
        self.streams
            .iter()
            .any(|(s, slot)| slot.st.paused && !self.foreign.contains(s))
    }

    /// Whether a foreign stream counted by Rule M may hold event `id`:
    /// its first event (`first_of`, as published) at or before `id` and
    /// its last produced one at or after it.
    pub fn foreign_may_hold(
        &self,
        id: EventId,
        first_of: impl Fn(StreamIdx) -> Option<EventId>,
    ) -> bool {
        self.foreign.iter().any(|&s| {
            let st = self.stream(s);
            st.dropped && first_of(s).is_some_and(|f| f <= id) && st.last_produced >= Some(id)
        })
    }

    /// This replica's own streams Rule M counts, in index order, with
    /// their state: what it publishes for the other replicas.
    pub fn published(&self) -> Vec<(StreamIdx, StreamState)> {
        let mut v: Vec<_> = self
            .dropped_streams()
            .filter(|(s, _)| !self.foreign.contains(s))
            .map(|(s, st)| (s, *st))
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Limits, PostFacts, Reason, Verdict};
    use super::*;

    const LIMITS: Limits = Limits { queue_capacity: 4 };

    /// A replica whose stream 0 dropped with events owed.
    fn owner() -> SessionGuard {
        let mut g = SessionGuard::new();
        let s = g.open_stream(1);
        g.request_started(s);
        g.produced(s, 2);
        g.written(s, 2);
        g.produced(s, 3);
        g.close_seen(s);
        g
    }

    #[test]
    fn another_replicas_dropped_stream_rejects_here_as_one_of_ours_would() {
        let a = owner();
        let published = a.published();
        assert_eq!(published.len(), 1, "the owed stream is published");
        let mut b = SessionGuard::new();
        b.first_stream(1 << 16);
        let facts = PostFacts::default();
        assert_eq!(b.check(facts, LIMITS).verdict, Verdict::Fresh);
        b.set_foreign(published.clone());
        let d = b.check(facts, LIMITS);
        assert_eq!(d.verdict, Verdict::Reject(Reason::NotDrained));
        assert_eq!((d.stream, d.hint), (Some(0), Some(2)));
        assert!(
            b.published().is_empty() && !b.has_own_dropped(),
            "foreign streams are not ours to publish"
        );
        assert!(a.has_own_dropped());
        // A newer load without it: the stream is gone from the view.
        b.set_foreign(Vec::new());
        assert_eq!(b.check(facts, LIMITS).verdict, Verdict::Fresh);
        assert_eq!(b.foreign().count(), 0);
    }

    #[test]
    fn a_cursor_at_a_foreign_streams_last_event_drains_it() {
        let mut a = owner();
        a.request_ended(0);
        let mut b = SessionGuard::new();
        b.first_stream(1 << 16);
        b.set_foreign(a.published());
        let facts = PostFacts {
            idempotent: true,
            dedup_honored: true,
        };
        assert_eq!(
            b.check(facts, LIMITS).verdict,
            Verdict::Reject(Reason::NotDrained)
        );
        assert_eq!(b.foreign_cursor(2, false), None, "2 is not its last event");
        assert_eq!(b.foreign_cursor(3, false), Some(0));
        assert_eq!(b.check(facts, LIMITS).verdict, Verdict::Fresh);
    }

    #[test]
    fn our_own_index_is_never_replaced_by_a_publication() {
        let mut a = owner();
        let mine = a.published();
        a.set_foreign(mine);
        assert_eq!(a.foreign().count(), 0);
        assert_eq!(a.published().len(), 1);
    }
}

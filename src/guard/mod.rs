//! The guard: Rule M (migration) as a sans-IO state machine.
//!
//! The server reports what it observes (events produced and written,
//! connections seen closed, cursors presented, replays, evictions) and asks
//! [`SessionGuard::check`] for a [`Verdict`] on every POST. This module
//! imports neither tokio nor hyper, and `check` neither allocates nor
//! mutates: [`SessionGuard::apply`] commits a decision's side effects.
//!
//! Words: a *dropped* stream is one whose current connection
//! ended before the stream finished, or that a client reported `;lost`; its
//! *watermark* is the highest cursor the client presented for it, else the
//! last event written on its connection before the close was seen (an
//! estimate); a dropped stream with nothing in flight *retires* (counts as
//! finished) once the client's own cursor for it (a resume's
//! `Last-Event-ID`, or a cursor on POST) is at or past its last produced
//! event, never on the estimate; a
//! *migration* is a POST on a session that has a dropped stream; a *lost*
//! stream had its owed result evicted (evicted progress is announced to the
//! resuming client as a `gap`, and is no loss to Rule M). Only *response streams* take part: every
//! POST stream, and a standalone GET stream that carries responses
//! (`session-stream` delivery); a stream of notifications only
//! ([`SessionGuard::notifications_only`]) is never a migration's cause,
//! however it ends.

mod rule_t;
mod shared;
pub mod table;

pub use rule_t::{check_transport, Transport, TransportVerdict};

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A session-scoped event id.
pub type EventId = u64;

/// Index of a stream within its session.
pub type StreamIdx = u32;

/// Why a POST was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Row 0: a replay backlog is pending and the queue is full or the wait ran out.
    ReplayInProgress,
    /// Row 2: the dropped stream's watermark is below its last produced event.
    NotDrained,
    /// Row 3: a request is still producing events for the dropped stream.
    InFlight,
    /// Row 4: a non-idempotent POST without an honored dedup token.
    NonIdempotent,
    /// A migration met a lost stream (its owed result evicted): 410, once.
    StreamLost,
}

impl Reason {
    /// Every reason, in table order.
    pub const ALL: [Reason; 5] = [
        Reason::ReplayInProgress,
        Reason::NotDrained,
        Reason::InFlight,
        Reason::NonIdempotent,
        Reason::StreamLost,
    ];

    /// The snake_case name used in JSON and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ReplayInProgress => "replay_in_progress",
            Reason::NotDrained => "not_drained",
            Reason::InFlight => "in_flight",
            Reason::NonIdempotent => "non_idempotent",
            Reason::StreamLost => "stream_lost",
        }
    }
}

/// The guard's answer for one POST.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "snake_case")]
pub enum Verdict {
    /// Not a migration: serve it.
    Fresh,
    /// A migration that is legal now: serve it.
    Allow,
    /// A replay backlog is pending: hold the POST and ask again when written.
    Queue,
    /// Refuse it (409, or 410 for [`Reason::StreamLost`]).
    Reject(Reason),
}

/// A verdict and the stream it concerns (the owed stream for a rejection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// The dropped stream the verdict is about, if any.
    pub stream: Option<StreamIdx>,
    /// The resume point to name in the 409's `Last-Event-ID` (the watermark).
    pub hint: Option<EventId>,
}

/// What the server knows about the POST being checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PostFacts {
    /// The called tool (or method) is idempotent.
    pub idempotent: bool,
    /// The POST carries a dedup token the server honors.
    pub dedup_honored: bool,
}

/// Bounds the server sets on Rule M's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most POSTs a session may hold queued behind a replay.
    pub queue_capacity: u32,
}

/// Per-stream state, as the server observes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamState {
    /// Highest event id produced for the stream (the priming event counts);
    /// `None` before a stream without priming (legacy) produced any.
    pub last_produced: Option<EventId>,
    /// Highest event id written on the current connection (`None`: none).
    pub last_written: Option<EventId>,
    /// Delivered watermark (meaningful while dropped; `None`: nothing
    /// delivered). `None` orders below every id, event id 0 included.
    pub watermark: Option<EventId>,
    /// A client presented a cursor for it since its current connection began.
    pub cursor_presented: bool,
    /// The client's own word on what it has of the stream: the last
    /// resume's `Last-Event-ID`, raised by cursors on POST (`None`: it never
    /// said). Only this retires a dropped stream.
    pub client_cursor: Option<EventId>,
    /// A connection is currently writing it.
    pub connected: bool,
    /// Dropped (see the module docs).
    pub dropped: bool,
    /// Its owed result was evicted.
    pub lost: bool,
    /// The 410 for its loss has been given; Rule M ignores it from now on.
    pub lost_reported: bool,
    /// Requests still producing events for it.
    pub in_flight: u32,
    /// Final event written and response ended, or drained by a cursor.
    pub finished: bool,
    /// Events of a replay on it not yet written.
    pub replay_backlog: u32,
    /// It carries responses, so it takes part in Rule M (false: a stream of
    /// notifications only).
    pub response: bool,
    /// The server closed its connection on purpose after `retry:` (a
    /// polling close): not dropped until the pause runs out unresumed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
}

impl StreamState {
    fn opened(priming: Option<EventId>) -> Self {
        StreamState {
            last_produced: priming,
            last_written: priming,
            watermark: priming,
            cursor_presented: false,
            client_cursor: None,
            connected: true,
            dropped: false,
            lost: false,
            lost_reported: false,
            in_flight: 0,
            finished: false,
            replay_backlog: 0,
            response: true,
            paused: false,
        }
    }

    /// Whether Rule M must consider it: a response stream, dropped, and not
    /// a reported loss.
    fn counts(&self) -> bool {
        self.response && self.dropped && !self.lost_reported
    }

    /// Events produced past its watermark are owed (row 2).
    fn owes(&self) -> bool {
        self.watermark < self.last_produced
    }

    /// The last event the server believes the client has (`None`: none).
    pub fn delivered(&self) -> Option<EventId> {
        if self.connected && !self.dropped {
            self.last_written.max(self.watermark)
        } else {
            self.watermark
        }
    }
}

/// Rule M state for one session.
#[derive(Clone, Debug, Default)]
pub struct SessionGuard {
    /// Every stream opened and not released, by index.
    streams: BTreeMap<StreamIdx, Slot>,
    /// The index the next stream gets.
    next_stream: StreamIdx,
    /// Streams that Rule M must consider (dropped, loss not yet reported).
    dropped: Vec<StreamIdx>,
    /// How many of `dropped` are lost, owed events, and have requests in
    /// flight (rows 2–3 and the 410): kept as events happen, so that `check`
    /// looks for a stream to name only when one exists.
    marks: Marks,
    replay_backlog: u64,
    queued: u32,
    /// Streams another replica published (see `shared.rs`).
    foreign: BTreeSet<StreamIdx>,
}

/// A stream's `dropped_at` when it is not in `dropped`.
const NOT_DROPPED: u32 = u32::MAX;

/// One stream's state and its position in `dropped` (`NOT_DROPPED` when
/// absent), so that a stream joins or leaves it in O(1).
#[derive(Clone, Debug)]
struct Slot {
    st: StreamState,
    dropped_at: u32,
}

/// Counts of dropped streams by what Rule M rejects them for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Marks {
    lost: u32,
    owed: u32,
    in_flight: u32,
}

impl Marks {
    /// What one stream adds (nothing unless Rule M considers it).
    fn of(st: &StreamState) -> Marks {
        if !st.counts() {
            return Marks::default();
        }
        Marks {
            lost: u32::from(st.lost),
            owed: u32::from(st.owes()),
            in_flight: u32::from(st.in_flight > 0),
        }
    }

    fn add(&mut self, m: Marks) {
        self.lost += m.lost;
        self.owed += m.owed;
        self.in_flight += m.in_flight;
    }

    fn sub(&mut self, m: Marks) {
        self.lost -= m.lost;
        self.owed -= m.owed;
        self.in_flight -= m.in_flight;
    }
}

/// A copy of what a decision was made from, for the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct View {
    /// Replay events not yet written, session-wide.
    pub replay_backlog: u64,
    /// POSTs queued behind the replay.
    pub queued: u32,
    /// The dropped streams Rule M considered, with their state.
    pub dropped: Vec<(StreamIdx, StreamState)>,
}

impl SessionGuard {
    /// An empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a stream whose priming event `priming` was produced and written.
    pub fn open_stream(&mut self, priming: EventId) -> StreamIdx {
        self.push_stream(StreamState::opened(Some(priming)))
    }

    /// Opens a stream without a priming event (legacy HTTP+SSE): nothing of
    /// it is produced or delivered yet.
    pub fn open_unprimed(&mut self) -> StreamIdx {
        self.push_stream(StreamState::opened(None))
    }

    /// The stream carries notifications only (a standalone GET stream in
    /// `post-stream` delivery): Rule M never considers it, however its
    /// connections end.
    pub fn notifications_only(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.notifications_only_inner(s))
    }

    fn notifications_only_inner(&mut self, s: StreamIdx) {
        self.st(s).response = false;
        let dropped = self.st(s).dropped;
        self.set_dropped(s, dropped);
    }

    /// The next stream opened gets index `first` (a replica on a shared
    /// store numbers a session's streams apart from the other replicas).
    pub fn first_stream(&mut self, first: StreamIdx) {
        debug_assert!(self.streams.is_empty(), "before any stream opens");
        self.next_stream = first;
    }

    fn push_stream(&mut self, st: StreamState) -> StreamIdx {
        let idx = self.next_stream;
        self.next_stream = idx
            .checked_add(1)
            .expect("fewer than 2^32 streams a session");
        self.streams.insert(
            idx,
            Slot {
                st,
                dropped_at: NOT_DROPPED,
            },
        );
        idx
    }

    /// The state of one stream (opened, not released).
    pub fn stream(&self, s: StreamIdx) -> &StreamState {
        &self.slot(s).st
    }

    fn slot(&self, s: StreamIdx) -> &Slot {
        self.streams
            .get(&s)
            .expect("a stream opened and not released")
    }

    fn slot_mut(&mut self, s: StreamIdx) -> &mut Slot {
        self.streams
            .get_mut(&s)
            .expect("a stream opened and not released")
    }

    /// Forgets a finished stream that nothing is owed on, nothing is in
    /// flight for and no replay is writing: Rule M never considers it again,
    /// and its state is released. Returns whether it was.
    pub fn release(&mut self, s: StreamIdx) -> bool {
        let slot = self.slot(s);
        let st = &slot.st;
        let done = st.finished
            && !st.connected
            && st.in_flight == 0
            && st.replay_backlog == 0
            && slot.dropped_at == NOT_DROPPED;
        if done {
            self.streams.remove(&s);
        }
        done
    }

    /// Whether any stream is dropped (and not a reported loss).
    pub fn has_dropped(&self) -> bool {
        !self.dropped.is_empty()
    }

    /// Replay events not yet written, session-wide.
    pub fn replay_backlog(&self) -> u64 {
        self.replay_backlog
    }

    fn st(&mut self, s: StreamIdx) -> &mut StreamState {
        &mut self.slot_mut(s).st
    }

    /// Runs one observation of stream `s`, keeping the marks in step with
    /// what it changed (every public observation goes through here once).
    fn tracked<R>(&mut self, s: StreamIdx, f: impl FnOnce(&mut Self) -> R) -> R {
        let before = Marks::of(self.stream(s));
        let r = f(self);
        self.marks.sub(before);
        self.marks.add(Marks::of(self.stream(s)));
        r
    }

    fn set_dropped(&mut self, s: StreamIdx, dropped: bool) {
        let st = self.st(s);
        st.dropped = dropped;
        let counts = st.counts();
        let at = self.slot(s).dropped_at;
        match (counts, at == NOT_DROPPED) {
            (true, true) => {
                self.slot_mut(s).dropped_at = self.dropped.len() as u32;
                self.dropped.push(s);
            }
            (false, false) => {
                self.dropped.swap_remove(at as usize);
                if let Some(&moved) = self.dropped.get(at as usize) {
                    self.slot_mut(moved).dropped_at = at;
                }
                self.slot_mut(s).dropped_at = NOT_DROPPED;
            }
            _ => {}
        }
    }

    /// A request began producing events for the stream.
    pub fn request_started(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.request_started_inner(s))
    }

    fn request_started_inner(&mut self, s: StreamIdx) {
        self.st(s).in_flight += 1;
    }

    /// A request stopped producing events for the stream.
    pub fn request_ended(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.request_ended_inner(s))
    }

    fn request_ended_inner(&mut self, s: StreamIdx) {
        let st = self.st(s);
        assert!(st.in_flight > 0, "request_ended without request_started");
        st.in_flight -= 1;
        self.retire_if_caught_up(s);
    }

    /// Retires a dropped stream with nothing in flight whose client cursor
    /// is at or past its last produced event: nothing is owed, nothing will
    /// be, and the client said so itself.
    fn retire_if_caught_up(&mut self, s: StreamIdx) {
        let st = self.st(s);
        if st.dropped
            && !st.finished
            && st.in_flight == 0
            && st.client_cursor.is_some()
            && st.client_cursor >= st.last_produced
        {
            st.finished = true;
            self.set_dropped(s, false);
        }
    }

    /// An event was produced (stored) for the stream.
    pub fn produced(&mut self, s: StreamIdx, id: EventId) {
        self.tracked(s, |g| g.produced_inner(s, id))
    }

    fn produced_inner(&mut self, s: StreamIdx, id: EventId) {
        let st = self.st(s);
        debug_assert!(Some(id) > st.last_produced, "event ids increase");
        st.last_produced = Some(id);
    }

    /// An event was written on the stream's current connection.
    pub fn written(&mut self, s: StreamIdx, id: EventId) {
        self.tracked(s, |g| g.written_inner(s, id))
    }

    fn written_inner(&mut self, s: StreamIdx, id: EventId) {
        let st = self.st(s);
        st.last_written = st.last_written.max(Some(id));
    }

    /// The stream's final event was written and its response ended.
    pub fn finished(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.finished_inner(s))
    }

    fn finished_inner(&mut self, s: StreamIdx) {
        let st = self.st(s);
        st.finished = true;
        st.connected = false;
        st.paused = false;
        self.set_dropped(s, false);
    }

    /// The server saw the stream's current connection end (EOF, write
    /// error, deadline, RST). Before the stream finished, that is a drop.
    pub fn close_seen(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.close_seen_inner(s))
    }

    fn close_seen_inner(&mut self, s: StreamIdx) {
        let st = self.st(s);
        st.connected = false;
        if st.finished {
            return;
        }
        if !st.cursor_presented {
            st.watermark = st.last_written;
        }
        self.abort_replay(s);
        self.set_dropped(s, true);
        self.retire_if_caught_up(s);
    }

    /// The server ended the stream's connection on purpose after its
    /// last written event, having sent `retry:` (a polling close): the
    /// stream is paused, not dropped, so a POST meanwhile is no migration.
    pub fn paused(&mut self, s: StreamIdx) {
        let st = self.st(s);
        if st.finished {
            return;
        }
        st.connected = false;
        st.paused = true;
    }

    /// The pause ran out (its `retry:` wait plus the grace) with no
    /// resume: from now on the stream is dropped, as if the close had been
    /// the client's, with the last event written as its estimate.
    pub fn pause_expired(&mut self, s: StreamIdx) {
        if !std::mem::take(&mut self.st(s).paused) {
            return;
        }
        self.close_seen(s);
    }

    /// The server itself closed the older connection of a stream that a
    /// resume took over. Not a drop: the new connection carries on.
    pub fn taken_over(&mut self, s: StreamIdx) {
        self.abort_replay(s);
    }

    fn abort_replay(&mut self, s: StreamIdx) {
        let left = std::mem::take(&mut self.st(s).replay_backlog);
        self.replay_backlog -= u64::from(left);
    }

    /// A client presented a cursor for the stream: a plain entry raises the
    /// watermark; a `;lost` entry also marks the stream dropped.
    pub fn cursor(&mut self, s: StreamIdx, id: EventId, lost: bool) {
        self.tracked(s, |g| g.cursor_inner(s, id, lost))
    }

    fn cursor_inner(&mut self, s: StreamIdx, id: EventId, lost: bool) {
        let st = self.st(s);
        if st.finished {
            // The server wrote the end, but a client that reports the
            // stream lost short of it never got it (half-open): the
            // client's word wins. Anything else changes nothing.
            if !(lost && Some(id) < st.last_produced) {
                return;
            }
            st.finished = false;
        }
        st.watermark = if st.cursor_presented {
            st.watermark.max(Some(id))
        } else {
            Some(id)
        };
        st.cursor_presented = true;
        st.client_cursor = st.client_cursor.max(Some(id));
        if lost {
            self.st(s).paused = false;
            self.set_dropped(s, true);
        }
        // Drained and nothing more will come: the stream is finished.
        self.retire_if_caught_up(s);
    }

    /// A GET with `Last-Event-ID` = `cursor` resumed the stream on a new
    /// connection (`None`: from before its first event, as a translated
    /// legacy cursor 0 says); `backlog` events are to be replayed before
    /// live ones.
    pub fn resumed(&mut self, s: StreamIdx, cursor: Option<EventId>, backlog: u32) {
        self.tracked(s, |g| g.resumed_inner(s, cursor, backlog))
    }

    fn resumed_inner(&mut self, s: StreamIdx, cursor: Option<EventId>, backlog: u32) {
        self.abort_replay(s);
        let st = self.st(s);
        st.connected = true;
        st.watermark = cursor;
        st.last_written = cursor;
        st.cursor_presented = false;
        st.client_cursor = cursor;
        st.replay_backlog = backlog;
        st.paused = false;
        self.replay_backlog += u64::from(backlog);
        self.set_dropped(s, false);
    }

    /// One backlog event of the stream's replay was written.
    pub fn replay_written(&mut self, s: StreamIdx) {
        let st = self.st(s);
        assert!(st.replay_backlog > 0, "replay_written beyond the backlog");
        st.replay_backlog -= 1;
        self.replay_backlog -= 1;
    }

    /// The result of the stream the client was owed was evicted (the server
    /// reports only that: evicted progress is announced as a `gap`).
    pub fn evicted_owed(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.evicted_owed_inner(s))
    }

    fn evicted_owed_inner(&mut self, s: StreamIdx) {
        self.st(s).lost = true;
    }

    /// A queued POST left the queue (to be checked afresh, or rejected).
    pub fn dequeued(&mut self) {
        assert!(self.queued > 0, "dequeued with an empty queue");
        self.queued -= 1;
    }

    /// POSTs currently queued.
    pub fn queued(&self) -> u32 {
        self.queued
    }

    /// Rule M, rows 0–5 in order (docs/rules.md). Pure: no allocation, no
    /// mutation; commit the result with [`SessionGuard::apply`].
    pub fn check(&self, post: PostFacts, limits: Limits) -> Decision {
        let decide = |verdict, s: Option<StreamIdx>| Decision {
            verdict,
            stream: s,
            hint: s.and_then(|s| self.stream(s).watermark),
        };
        // Row 0: a replay backlog is pending.
        if self.replay_backlog > 0 {
            return if self.queued < limits.queue_capacity {
                decide(Verdict::Queue, None)
            } else {
                decide(Verdict::Reject(Reason::ReplayInProgress), None)
            };
        }
        // Row 1: not a migration.
        if self.dropped.is_empty() {
            return decide(Verdict::Fresh, None);
        }
        debug_assert_eq!(self.marks, self.recount(), "marks kept in step");
        debug_assert!(
            self.dropped
                .iter()
                .enumerate()
                .all(|(i, &s)| self.slot(s).dropped_at as usize == i)
                && self
                    .streams
                    .values()
                    .filter(|slot| slot.dropped_at != NOT_DROPPED)
                    .count()
                    == self.dropped.len(),
            "positions kept in step"
        );
        // The first dropped stream (in `dropped`'s order) with `mark`; looked
        // for only when the marks say one exists.
        let first = |n: u32, mark: fn(&StreamState) -> bool| {
            (n > 0)
                .then(|| self.dropped.iter().copied().find(|&s| mark(self.stream(s))))
                .flatten()
        };
        // A lost stream answers its first migration with 410.
        if let Some(s) = first(self.marks.lost, |st| st.lost) {
            return decide(Verdict::Reject(Reason::StreamLost), Some(s));
        }
        // Row 2: events are owed now.
        if let Some(s) = first(self.marks.owed, StreamState::owes) {
            return decide(Verdict::Reject(Reason::NotDrained), Some(s));
        }
        // Row 3: events will be owed.
        if let Some(s) = first(self.marks.in_flight, |st| st.in_flight > 0) {
            return decide(Verdict::Reject(Reason::InFlight), Some(s));
        }
        // Row 4: the stream ended abnormally; this POST may retry work whose
        // end the client missed.
        if !post.idempotent && !post.dedup_honored {
            return decide(
                Verdict::Reject(Reason::NonIdempotent),
                Some(self.dropped[0]),
            );
        }
        decide(Verdict::Allow, None)
    }

    /// Commits a decision: counts a queued POST; marks a reported loss.
    pub fn apply(&mut self, d: &Decision) {
        match d.verdict {
            Verdict::Queue => self.queued += 1,
            Verdict::Reject(Reason::StreamLost) => {
                let s = d.stream.expect("a StreamLost decision names its stream");
                self.report_lost(s);
            }
            _ => {}
        }
    }

    /// A 410 was given for the stream's loss (on a migration or a resume).
    pub fn report_lost(&mut self, s: StreamIdx) {
        self.tracked(s, |g| g.report_lost_inner(s))
    }

    fn report_lost_inner(&mut self, s: StreamIdx) {
        self.st(s).lost_reported = true;
        let dropped = self.st(s).dropped;
        self.set_dropped(s, dropped);
    }

    /// The streams Rule M considers, with their state, in no particular
    /// order (what a logged view is built from without a copy).
    pub fn dropped_streams(&self) -> impl Iterator<Item = (StreamIdx, &StreamState)> + '_ {
        self.dropped.iter().map(|&s| (s, self.stream(s)))
    }

    /// The marks counted afresh (what `check` asserts against in debug
    /// builds).
    fn recount(&self) -> Marks {
        let mut m = Marks::default();
        for &s in &self.dropped {
            m.add(Marks::of(self.stream(s)));
        }
        m
    }

    /// The view a decision is made from, for the trace (allocates).
    pub fn view(&self) -> View {
        let mut dropped: Vec<_> = self.dropped_streams().map(|(s, st)| (s, *st)).collect();
        dropped.sort_by_key(|(s, _)| *s);
        View {
            replay_backlog: self.replay_backlog,
            queued: self.queued,
            dropped,
        }
    }
}

#[cfg(test)]
mod tests;

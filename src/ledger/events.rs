//! The event source (the Events extension): `clock-tick` occurrences on a
//! fixed period, kept beside the ledger, outside the server host, as an
//! upstream an event store reads from: a server restart loses none of
//! them, and the oracle learns each one from its record
//! ([`LedgerRecord::Occurred`]), never from the server.
//!
//! The source is a function of the clock: the `seq`-th tick occurs at
//! `seq × period`. It is produced (recorded) when someone first reads past
//! it, and the world produces the rest at the end of a run, so the
//! history holds every tick of the run, each stamped with the time it
//! occurred. It keeps the newest [`KEPT`] ticks; a server serves the
//! newest `retention` of them.

use crate::history::{History, LedgerRecord};
use crate::protocol::events::CLOCK_TICK;
use std::collections::VecDeque;

/// Occurrences the source keeps: a server's retention is at most this.
pub const KEPT: usize = crate::settings::MAX_EVENTS_RETENTION as usize;

/// The source's ticks so far (the newest [`KEPT`]).
#[derive(Debug, Default)]
pub struct EventLog {
    /// Ticks produced so far (the newest's `seq`).
    produced: u64,
    /// (seq, µs it occurred), oldest first.
    kept: VecDeque<(u64, u64)>,
}

/// What a read after a cursor found.
#[derive(Debug, PartialEq, Eq)]
pub struct Read {
    /// (seq, µs it occurred) of each occurrence returned, oldest first.
    pub events: Vec<(u64, u64)>,
    /// The position the reader is at after them.
    pub cursor: u64,
    /// Occurrences between the cursor asked for and the first returned
    /// are no longer retained.
    pub truncated: bool,
    /// More are retained past the last returned.
    pub has_more: bool,
}

impl EventLog {
    /// Produces every tick of `period_us` that occurred by `now_us`.
    pub fn advance(&mut self, history: &History, period_us: u64, now_us: u64) {
        if period_us == 0 {
            return;
        }
        let due = now_us / period_us;
        while self.produced < due {
            self.produced += 1;
            let at = self.produced * period_us;
            self.kept.push_back((self.produced, at));
            if self.kept.len() > KEPT {
                self.kept.pop_front();
            }
            history.record(LedgerRecord::Occurred {
                name: CLOCK_TICK.into(),
                seq: self.produced,
                at_us: at,
            });
        }
    }

    /// The newest tick's `seq` (0: none yet).
    pub fn newest(&self) -> u64 {
        self.produced
    }

    /// The ticks after `cursor`, at most `max`, from the newest `retention`
    /// (a cursor behind them is reset to the oldest retained: `truncated`).
    pub fn read(&self, cursor: u64, retention: usize, max: usize) -> Read {
        let window = retention.min(self.kept.len());
        let oldest = self.produced - window as u64 + 1;
        let (from, truncated) = match cursor + 1 < oldest {
            true => (oldest - 1, true),
            false => (cursor, false),
        };
        let events: Vec<(u64, u64)> = self
            .kept
            .iter()
            .filter(|(s, _)| *s > from)
            .take(max)
            .copied()
            .collect();
        let last = events.last().map_or(from, |(s, _)| *s);
        Read {
            has_more: last < self.produced,
            cursor: last,
            truncated,
            events,
        }
    }

    /// When the next tick occurs, µs.
    pub fn next_at(&self, period_us: u64) -> u64 {
        (self.produced + 1) * period_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(ticks: u64) -> (EventLog, History) {
        let h = History::new(std::rc::Rc::new(|| std::time::Duration::ZERO));
        let mut l = EventLog::default();
        l.advance(&h, 100, ticks * 100 + 50);
        (l, h)
    }

    #[test]
    fn ticks_are_produced_once_each_and_recorded_with_their_time() {
        let (mut l, h) = log(3);
        l.advance(&h, 100, 310);
        assert_eq!(l.newest(), 3);
        assert_eq!(l.next_at(100), 400);
        let recs: Vec<LedgerRecord> = h
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                crate::history::Rec::Ledger(r) => Some(r.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(recs.len(), 3);
        assert!(matches!(
            recs[2],
            LedgerRecord::Occurred {
                seq: 3,
                at_us: 300,
                ..
            }
        ));
    }

    #[test]
    fn a_read_resumes_after_its_cursor_and_pages() {
        let (l, _) = log(5);
        let r = l.read(2, 64, 2);
        assert_eq!(r.events, vec![(3, 300), (4, 400)]);
        assert_eq!((r.cursor, r.truncated, r.has_more), (4, false, true));
        let r = l.read(4, 64, 10);
        assert_eq!((r.cursor, r.has_more), (5, false));
        let r = l.read(5, 64, 10);
        assert!(r.events.is_empty());
        assert_eq!(r.cursor, 5);
    }

    #[test]
    fn a_cursor_behind_the_retention_is_reset_and_says_so() {
        let (l, _) = log(10);
        let r = l.read(1, 3, 10);
        assert!(r.truncated);
        assert_eq!(r.events.first(), Some(&(8, 800)));
        // At the window's edge nothing was lost.
        let r = l.read(7, 3, 10);
        assert!(!r.truncated);
        assert_eq!(r.events.len(), 3);
    }
}

//! Deliveries (the Events extension, docs/events.md): each occurrence the
//! event source produced while a client's reader was reading is owed to
//! that reader; the judge counts each delivery once. Black-box: it reads
//! the source's records (beside the ledger) and the readers' own, never
//! the server's.
//!
//! A reader's window opens when its first answer arrives and closes when
//! its final poll (the drain) went out; without a drain answered, at the
//! run's end. An occurrence produced in it is owed; one applied outside it
//! is owed too (it was delivered). An owed occurrence is
//! - **ok** when the reader applied it (once: a reader keeps the ids it
//!   applied), its latency from production to application;
//! - **announced lost** when a `truncated` the reader was told covers it
//!   (it lies between the last occurrence applied before and the first
//!   applied after);
//! - **failed** otherwise: `cursor_truncated_silently` when the reader
//!   applied a later occurrence (its cursor moved past this one unwarned),
//!   else `run_ended` (it never came).

use super::metrics::Metrics;
use crate::history::{ClientRecord, Entry, LedgerRecord, Rec};
use std::collections::BTreeMap;

/// The cause of a delivery skipped unwarned: the reader's cursor moved
/// past it and no `truncated` said so.
pub const CURSOR_TRUNCATED_SILENTLY: &str = "cursor_truncated_silently";

/// One reader's records.
#[derive(Debug, Default)]
struct Reader {
    started_us: Option<u64>,
    /// Source positions applied, in the order applied, with when.
    applied: Vec<(u64, u64)>,
    /// Truncations told: how many had been applied before each.
    marks: Vec<usize>,
    drained_us: Option<u64>,
}

/// The deliveries of one run, as its records arrive.
#[derive(Debug, Default)]
pub struct Deliveries {
    /// Per event type: (source position, µs it occurred), in order.
    occurred: BTreeMap<String, Vec<(u64, u64)>>,
    readers: BTreeMap<u32, Reader>,
}

/// What a run's deliveries came to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Owed occurrences.
    pub owed: u64,
    /// Applied once.
    pub ok: u64,
    /// Lost with a `truncated` covering them.
    pub announced: u64,
    /// Failed, by cause.
    pub failed: BTreeMap<&'static str, u64>,
    /// Production to application, µs, of each ok delivery.
    pub latency_us: Vec<u64>,
}

impl Deliveries {
    /// Whether `e` is a record deliveries are judged from.
    pub fn concerns(e: &Entry) -> bool {
        matches!(
            &e.record,
            Rec::Ledger(LedgerRecord::Occurred { .. })
                | Rec::Client(
                    ClientRecord::EventsStarted { .. }
                        | ClientRecord::EventApplied { .. }
                        | ClientRecord::EventsTruncated { .. }
                        | ClientRecord::EventsDrained { .. }
                )
        )
    }

    /// Takes one record of the run.
    pub fn entry(&mut self, e: &Entry) {
        match &e.record {
            Rec::Ledger(LedgerRecord::Occurred { name, seq, at_us }) => {
                let list = self.occurred.entry(name.to_string()).or_default();
                list.push((*seq, *at_us));
            }
            Rec::Client(ClientRecord::EventsStarted { client }) => {
                self.readers.entry(*client).or_default().started_us = Some(e.t_us);
            }
            Rec::Client(ClientRecord::EventApplied { client, event_id }) => {
                if let Some(seq) =
                    crate::protocol::events::seq_of(event_id, crate::protocol::events::CLOCK_TICK)
                {
                    let r = self.readers.entry(*client).or_default();
                    r.applied.push((seq, e.t_us));
                }
            }
            Rec::Client(ClientRecord::EventsTruncated { client }) => {
                let r = self.readers.entry(*client).or_default();
                r.marks.push(r.applied.len());
            }
            Rec::Client(ClientRecord::EventsDrained { client, sent_us }) => {
                self.readers.entry(*client).or_default().drained_us = Some(*sent_us);
            }
            _ => {}
        }
    }

    /// Every reader's deliveries judged, the run having ended at
    /// `end_us`.
    pub fn finish(&self, end_us: u64) -> Tally {
        let mut t = Tally::default();
        let none = Vec::new();
        let ticks = self
            .occurred
            .get(crate::protocol::events::CLOCK_TICK)
            .unwrap_or(&none);
        for r in self.readers.values() {
            let Some(start) = r.started_us else { continue };
            let end = r.drained_us.unwrap_or(end_us);
            let applied: BTreeMap<u64, u64> = r.applied.iter().copied().collect();
            let last_applied = applied.keys().next_back().copied().unwrap_or(0);
            for &(seq, at) in ticks {
                let owed = (at >= start && at < end) || applied.contains_key(&seq);
                if !owed {
                    continue;
                }
                t.owed += 1;
                if let Some(&when) = applied.get(&seq) {
                    t.ok += 1;
                    t.latency_us.push(when.saturating_sub(at));
                } else if announced(r, seq) {
                    t.announced += 1;
                } else {
                    let cause = match last_applied > seq {
                        true => CURSOR_TRUNCATED_SILENTLY,
                        false => "run_ended",
                    };
                    *t.failed.entry(cause).or_default() += 1;
                }
            }
        }
        t
    }
}

/// Whether a truncation the reader was told covers `seq`: it lies after
/// the last occurrence applied before the mark and before the first
/// applied after it.
fn announced(r: &Reader, seq: u64) -> bool {
    r.marks.iter().any(|&m| {
        let before = r.applied[..m].iter().map(|&(s, _)| s).max().unwrap_or(0);
        let after = r.applied[m..]
            .iter()
            .map(|&(s, _)| s)
            .min()
            .unwrap_or(u64::MAX);
        before < seq && seq < after
    })
}

impl Tally {
    /// Adds the deliveries to a run's metrics: their counts, and each
    /// failed one under its cause.
    pub fn add_to(&self, m: &mut Metrics) {
        m.deliveries += self.owed;
        m.deliveries_ok += self.ok;
        m.deliveries_announced_lost += self.announced;
        for (cause, n) in &self.failed {
            m.deliveries_failed += n;
            *m.deliveries_by_cause.entry(cause.to_string()).or_default() += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(applied: &[u64], marks: &[usize]) -> Reader {
        Reader {
            started_us: Some(0),
            applied: applied.iter().map(|&s| (s, s * 10)).collect(),
            marks: marks.to_vec(),
            drained_us: None,
        }
    }

    #[test]
    fn a_truncation_covers_the_gap_it_was_told_of_and_no_other() {
        let r = reader(&[1, 2, 6, 7], &[2]);
        assert!(!announced(&r, 2));
        assert!(announced(&r, 3) && announced(&r, 5));
        assert!(!announced(&r, 6));
        // Told at the end: everything after the last applied.
        let r = reader(&[1, 2], &[2]);
        assert!(announced(&r, 9));
    }

    #[test]
    fn a_skip_unwarned_fails_and_what_never_came_ended_with_the_run() {
        let mut d = Deliveries {
            occurred: [(
                "clock-tick".to_string(),
                (1..=6).map(|s| (s, s * 10)).collect(),
            )]
            .into(),
            ..Deliveries::default()
        };
        d.readers.insert(0, reader(&[1, 2, 4], &[]));
        let t = d.finish(100);
        assert_eq!((t.owed, t.ok, t.announced), (6, 3, 0));
        assert_eq!(t.failed.get("cursor_truncated_silently"), Some(&1));
        assert_eq!(t.failed.get("run_ended"), Some(&2));
    }
}

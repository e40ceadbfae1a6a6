//! Deliveries (the Events extension, docs/events.md): each occurrence the
//! event source produced while a client's reader was reading is owed to
//! that reader; the judge counts each delivery once. It reads the
//! source's records (beside the ledger) and the readers' own; of the
//! server's, only what a webhook sender says it gave up and which
//! subscriptions lapsed, to name a cause.
//!
//! A reader's window opens when its first answer arrives and closes when
//! its final poll (the drain) went out, or its webhook subscription was
//! given up; without either, at the run's end. An occurrence produced in
//! it is owed, unless every webhook subscription the reader had begun had
//! lapsed by then (it was owed to nobody); one applied is owed
//! too (it was delivered). An
//! owed occurrence is
//! - **ok** when the reader applied it once, its latency from production
//!   to (first) application;
//! - **failed**, applied twice or more: `dedup_window_lost` when the
//!   receiver deduplicates and should have known it (the same
//!   `webhook-id`, or it keys on `eventId`), else `webhook_duplicate`;
//! - **announced lost** when, never applied, a `truncated` (or `gap`) the
//!   reader was told covers it (it lies between the last occurrence
//!   applied before and the first applied after);
//! - **failed**, never applied, otherwise: `retry_exhausted` when the
//!   sender gave its delivery up, `subscription_lapsed` when the
//!   subscription lapsed after it was produced, `envelope_dropped` when
//!   the server sent the reader's push stream a `truncated` covering it
//!   that the reader never heard (a proxy dropped it),
//!   `cursor_truncated_silently` when the reader applied a later
//!   occurrence (its cursor moved past this one unwarned), else
//!   `run_ended` (it never came).

use super::causes::Cause;
use super::metrics::Metrics;
use crate::history::{ClientRecord, Entry, LedgerRecord, Rec, Record};
use crate::protocol::RequestId;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// One reader's records.
#[derive(Debug, Default)]
struct Reader {
    started_us: Option<u64>,
    /// Source positions applied, in the order applied, with when and the
    /// delivery's `webhook-id` (a webhook receiver's).
    applied: Vec<(u64, u64, Option<Rc<str>>)>,
    /// Truncations the server sent its push streams: the positions each
    /// said were lost (after, upto].
    sent: Vec<(u64, u64)>,
    /// Truncations told: how many had been applied before each, and the
    /// positions it said were lost (after, upto], when it said which.
    marks: Vec<(usize, Option<(u64, u64)>)>,
    drained_us: Option<u64>,
    /// A webhook receiver's deduplication (`none`, `webhook-id`,
    /// `event-id`).
    dedup: Option<Rc<str>>,
    /// Positions whose webhook delivery the sender gave up.
    abandoned: BTreeSet<u64>,
    /// When each of its webhook subscriptions lapsed, µs.
    lapsed: Vec<u64>,
    /// Its webhook subscriptions begun (+1) and lapsed (−1), in time
    /// order, µs (behind a balancer each replica may hold one). What the
    /// source produced while none was live was owed to nobody.
    live: Vec<(u64, i32)>,
}

/// The deliveries of one run, as its records arrive.
#[derive(Debug, Default)]
pub struct Deliveries {
    /// Per event type: (source position, µs it occurred), in order.
    occurred: BTreeMap<String, Vec<(u64, u64)>>,
    readers: BTreeMap<u32, Reader>,
    /// Webhook readers by their receiver's URL.
    by_url: BTreeMap<Rc<str>, u32>,
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
    pub failed: BTreeMap<Cause, u64>,
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
                        | ClientRecord::ReceiverListening { .. }
                )
                | Rec::Server(
                    Record::DeliveryAbandoned { .. }
                        | Record::SubscriptionLapsed { .. }
                        | Record::Subscribed { .. }
                        | Record::TruncationSent { .. }
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
            Rec::Client(ClientRecord::EventApplied {
                client,
                event_id,
                webhook_id,
            }) => {
                if let Some(seq) = tick(event_id) {
                    let r = self.readers.entry(*client).or_default();
                    r.applied.push((seq, e.t_us, webhook_id.clone()));
                }
            }
            Rec::Client(ClientRecord::ReceiverListening { client, url, dedup }) => {
                self.by_url.insert(url.clone(), *client);
                self.readers.entry(*client).or_default().dedup = Some(dedup.clone());
            }
            Rec::Server(Record::DeliveryAbandoned { url, event_id }) => {
                if let (Some(r), Some(seq)) = (self.reader_at(url), tick(event_id)) {
                    r.abandoned.insert(seq);
                }
            }
            Rec::Server(Record::SubscriptionLapsed { url }) => {
                if let Some(r) = self.reader_at(url) {
                    r.lapsed.push(e.t_us);
                    r.live.push((e.t_us, -1));
                }
            }
            Rec::Server(Record::Subscribed { url }) => {
                if let Some(r) = self.reader_at(url) {
                    r.live.push((e.t_us, 1));
                }
            }
            Rec::Server(Record::TruncationSent {
                stream: RequestId::Str(id),
                after,
                upto,
            }) => {
                if let Some(client) = crate::protocol::events::reader_of(id) {
                    let r = self.readers.entry(client).or_default();
                    r.sent.push((*after, *upto));
                }
            }
            Rec::Client(ClientRecord::EventsTruncated { client, lost }) => {
                let r = self.readers.entry(*client).or_default();
                r.marks.push((r.applied.len(), *lost));
            }
            Rec::Client(ClientRecord::EventsDrained { client, sent_us }) => {
                self.readers.entry(*client).or_default().drained_us = Some(*sent_us);
            }
            _ => {}
        }
    }

    fn reader_at(&mut self, url: &str) -> Option<&mut Reader> {
        let client = *self.by_url.get(url)?;
        self.readers.get_mut(&client)
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
            let mut applied: BTreeMap<u64, Vec<(u64, Option<&str>)>> = BTreeMap::new();
            for (seq, when, id) in &r.applied {
                applied
                    .entry(*seq)
                    .or_default()
                    .push((*when, id.as_deref()));
            }
            let last_applied = applied.keys().next_back().copied().unwrap_or(0);
            for &(seq, at) in ticks {
                let taken = applied.get(&seq).map_or(&[][..], Vec::as_slice);
                let live = at >= start && at < end && !r.lapsed_at(at);
                let owed = live || !taken.is_empty();
                if !owed {
                    continue;
                }
                t.owed += 1;
                let cause = match taken {
                    [(when, _)] => {
                        t.ok += 1;
                        t.latency_us.push(when.saturating_sub(at));
                        continue;
                    }
                    [] if announced(r, seq) => {
                        t.announced += 1;
                        continue;
                    }
                    [] => never_came(r, seq, at, last_applied),
                    twice => twice_applied(r, twice),
                };
                *t.failed.entry(cause).or_default() += 1;
            }
        }
        t
    }
}

impl Reader {
    /// Whether every webhook subscription it had begun had lapsed by `t`
    /// (none had begun since).
    fn lapsed_at(&self, t: u64) -> bool {
        let before = self.live.iter().take_while(|&&(at, _)| at <= t);
        let (mut n, mut lapses) = (0, 0);
        for &(_, d) in before {
            n += d;
            lapses += i32::from(d < 0);
        }
        lapses > 0 && n <= 0
    }
}

/// The `clock-tick` position of an `eventId`.
fn tick(event_id: &str) -> Option<u64> {
    crate::protocol::events::seq_of(event_id, crate::protocol::events::CLOCK_TICK)
}

/// Why an owed occurrence never reached the application.
fn never_came(r: &Reader, seq: u64, at: u64, last_applied: u64) -> Cause {
    if r.abandoned.contains(&seq) {
        Cause::RetryExhausted
    } else if r.lapsed.iter().any(|&l| l >= at) {
        Cause::SubscriptionLapsed
    } else if r
        .sent
        .iter()
        .any(|&(after, upto)| after < seq && seq <= upto)
    {
        Cause::EnvelopeDropped
    } else if last_applied > seq {
        Cause::CursorTruncatedSilently
    } else {
        Cause::RunEnded
    }
}

/// Why an occurrence was applied more than once: a receiver that keys on
/// `eventId`, or saw one `webhook-id` every time, should have known it.
fn twice_applied(r: &Reader, taken: &[(u64, Option<&str>)]) -> Cause {
    let one_id = taken.windows(2).all(|w| w[0].1 == w[1].1);
    match r.dedup.as_deref() {
        Some("event-id") => Cause::DedupWindowLost,
        Some("webhook-id") if one_id => Cause::DedupWindowLost,
        _ => Cause::WebhookDuplicate,
    }
}

/// Whether a truncation the reader was told covers `seq`: it lies in the
/// range the truncation named, or, when it named none, after the last
/// occurrence applied before the mark and before the first applied after.
fn announced(r: &Reader, seq: u64) -> bool {
    r.marks.iter().any(|&(m, lost)| match lost {
        Some((after, upto)) => after < seq && seq <= upto,
        None => {
            let before = r.applied[..m].iter().map(|a| a.0).max().unwrap_or(0);
            let after = r.applied[m..].iter().map(|a| a.0).min().unwrap_or(u64::MAX);
            before < seq && seq < after
        }
    })
}

impl Tally {
    /// Adds the deliveries to a run's metrics: their counts, and each
    /// failed one under its cause; returns the latency histogram as
    /// (value, count) pairs (lossless: merging runs re-records them).
    pub fn add_to(&self, m: &mut Metrics) -> Vec<(u64, u64)> {
        let mut pairs = Vec::new();
        m.deliveries += self.owed;
        m.deliveries_ok += self.ok;
        m.deliveries_announced_lost += self.announced;
        if !self.latency_us.is_empty() {
            let mut h = super::new_hist();
            for &us in &self.latency_us {
                h.saturating_record(us.max(1));
            }
            m.delivery_latency_us = super::metrics::Latency::of(&h);
            pairs = super::pairs(&h);
        }
        for (cause, n) in &self.failed {
            m.deliveries_failed += n;
            *m.failures_by_cause
                .entry(cause.as_str().to_string())
                .or_default() += n;
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(applied: &[u64], marks: &[usize]) -> Reader {
        Reader {
            started_us: Some(0),
            applied: applied.iter().map(|&s| (s, s * 10, None)).collect(),
            marks: marks.iter().map(|&m| (m, None)).collect(),
            ..Reader::default()
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
        // A range told, whatever was applied around it (webhook deliveries
        // arrive out of order).
        let mut r = reader(&[1, 2, 50, 51], &[]);
        r.marks.push((4, Some((2, 5))));
        assert!(!announced(&r, 2) && announced(&r, 3) && announced(&r, 5) && !announced(&r, 6));
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
        assert_eq!(t.failed.get(&Cause::CursorTruncatedSilently), Some(&1));
        assert_eq!(t.failed.get(&Cause::RunEnded), Some(&2));
    }

    #[test]
    fn a_webhook_delivery_applied_twice_is_the_senders_or_the_windows() {
        let twice = |dedup: &str, ids: [&str; 2]| {
            let r = Reader {
                dedup: Some(dedup.into()),
                ..Reader::default()
            };
            twice_applied(&r, &[(1, Some(ids[0])), (2, Some(ids[1]))])
        };
        // A new id per attempt: no webhook-id window could know it.
        assert_eq!(
            twice("webhook-id", ["msg_a_0", "msg_a_1"]),
            Cause::WebhookDuplicate
        );
        assert_eq!(twice("none", ["a", "a"]), Cause::WebhookDuplicate);
        // One id, or a receiver keying on eventId: its window forgot.
        assert_eq!(twice("webhook-id", ["a", "a"]), Cause::DedupWindowLost);
        assert_eq!(
            twice("event-id", ["msg_a_0", "msg_a_1"]),
            Cause::DedupWindowLost
        );
    }

    #[test]
    fn a_webhook_delivery_never_applied_is_given_up_lapsed_skipped_or_ended() {
        let mut r = reader(&[1, 5], &[]);
        r.abandoned.insert(2);
        r.lapsed.push(35);
        r.live = vec![(0, 1), (30, 1), (33, -1), (35, -1), (45, 1)];
        assert!(!r.lapsed_at(34), "one of two still live");
        assert!(r.lapsed_at(35) && r.lapsed_at(44) && !r.lapsed_at(45));
        assert_eq!(never_came(&r, 2, 20, 5), Cause::RetryExhausted);
        assert_eq!(never_came(&r, 3, 30, 5), Cause::SubscriptionLapsed);
        assert_eq!(never_came(&r, 4, 40, 5), Cause::CursorTruncatedSilently);
        assert_eq!(never_came(&r, 6, 60, 5), Cause::RunEnded);
        // A truncation the server sent and the reader never heard: the
        // envelope was dropped on the way, for the positions it named.
        r.sent.push((3, 4));
        assert_eq!(never_came(&r, 4, 40, 5), Cause::EnvelopeDropped);
        assert_eq!(never_came(&r, 3, 30, 5), Cause::SubscriptionLapsed);
        assert_eq!(never_came(&r, 6, 60, 5), Cause::RunEnded);
    }
}

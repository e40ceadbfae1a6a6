//! The durable webhook sender's outbox (the Events extension,
//! `server.events_sender = "durable"`), kept beside the ledger as the
//! application's database would keep it: one row per subscription with
//! its receiver, secret, TTL, the watermark its deliveries are settled up
//! to, and which incarnation sends it, under a lease. It outlives
//! incarnations and every replica of a deployment reads it. The
//! occurrences themselves are the event source's (retained there), so a
//! row holds a position, not a queue: its size is one row per
//! subscription, and subscriptions are capped per principal and in total.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The key a subscription is known by (the draft's: principal, URL,
/// event type, arguments as canonical JSON).
pub type SubKey = (Rc<str>, Rc<str>, String, String);

/// Which incarnation of which replica sends a subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The replica (`None`: the one server).
    pub replica: Option<u32>,
    /// The incarnation, counted across the deployment from 1.
    pub incarnation: u32,
}

impl Holder {
    /// Whether `self` is a later incarnation of the replica `other` ran
    /// on: a replica runs one incarnation at a time, so `other` is dead.
    pub fn succeeds(&self, other: &Holder) -> bool {
        self.replica == other.replica && self.incarnation > other.incarnation
    }
}

/// One subscription as its sender, and every server that reads the
/// outbox, knows it.
#[derive(Debug)]
pub struct Row {
    /// Its id (`sub_…`).
    pub id: String,
    /// The receiver's URL.
    pub url: Rc<str>,
    /// The signing key (the secret's bytes).
    pub key: Vec<u8>,
    /// When it lapses unless refreshed, µs.
    pub expires_us: u64,
    /// Every occurrence at or before it was acknowledged or given up.
    pub watermark: u64,
    /// Unsubscribed: deliver up to this position, then end.
    pub closing: Option<u64>,
    /// Who sends it now.
    pub holder: Holder,
    /// Until when the holder's claim stands without a renewal, µs.
    pub lease_until_us: u64,
}

/// A row, shared by whoever reads it.
pub type Shared = Rc<RefCell<Row>>;

/// Every durable subscription, and the incarnations counted.
#[derive(Debug, Default)]
pub struct Outbox {
    rows: BTreeMap<SubKey, Shared>,
    incarnations: u32,
}

impl Outbox {
    /// The row of `k`.
    pub fn get(&self, k: &SubKey) -> Option<Shared> {
        self.rows.get(k).cloned()
    }

    /// Stores a new subscription's row.
    pub fn insert(&mut self, k: SubKey, row: Shared) {
        self.rows.insert(k, row);
    }

    /// Forgets `k` if its row is still `row`.
    pub fn remove(&mut self, k: &SubKey, row: &Shared) {
        if self.rows.get(k).is_some_and(|r| Rc::ptr_eq(r, row)) {
            self.rows.remove(k);
        }
    }

    /// Rows held by `principal`.
    pub fn held_by(&self, principal: &str) -> usize {
        self.rows.keys().filter(|k| &*k.0 == principal).count()
    }

    /// Rows in all.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every row, in key order.
    pub fn rows(&self) -> Vec<(SubKey, Shared)> {
        self.rows
            .iter()
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    }

    /// A new incarnation's number (1 first).
    pub fn next_incarnation(&mut self) -> u32 {
        self.incarnations += 1;
        self.incarnations
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_incarnation_of_the_same_replica_succeeds_the_holder_and_no_other_does() {
        let h = |replica, incarnation| Holder {
            replica,
            incarnation,
        };
        assert!(h(Some(0), 3).succeeds(&h(Some(0), 1)));
        assert!(!h(Some(1), 3).succeeds(&h(Some(0), 1)));
        assert!(!h(Some(0), 1).succeeds(&h(Some(0), 1)));
        assert!(h(None, 2).succeeds(&h(None, 1)));
    }

    #[test]
    fn a_row_is_removed_only_by_whoever_holds_that_row() {
        let mut o = Outbox::default();
        let k: SubKey = ("p".into(), "u".into(), "n".into(), "{}".into());
        let row = |w| {
            Rc::new(RefCell::new(Row {
                id: "sub".into(),
                url: "u".into(),
                key: vec![],
                expires_us: 0,
                watermark: w,
                closing: None,
                holder: Holder {
                    replica: None,
                    incarnation: 1,
                },
                lease_until_us: 0,
            }))
        };
        let (old, new) = (row(1), row(2));
        o.insert(k.clone(), new.clone());
        o.remove(&k, &old);
        assert_eq!(o.held_by("p"), 1);
        o.remove(&k, &new);
        assert!(o.is_empty());
    }
}

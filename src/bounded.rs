//! Bounds, oldest first. [`Bounded`]: a map bounded in entries: past its
//! capacity, inserting a new key evicts the oldest. The key table of the
//! arms that honor `Idempotency-Key` and the completed keys kept beside the
//! ledger (`durable_dedup`) are both one. [`Budget`]: a byte budget over
//! keys that live in other maps, which evicts the oldest keys past its
//! limit (what `serve` holds per principal: the ledger and the key table).

use std::collections::{BTreeMap, VecDeque};

/// At most `capacity` entries (at least 1); the oldest key goes first.
pub(crate) struct Bounded<K, V> {
    entries: BTreeMap<K, V>,
    /// Keys in insertion order.
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Ord + Clone, V> Bounded<K, V> {
    /// An empty map of at most `capacity` entries (0 counts as 1).
    pub fn new(capacity: usize) -> Self {
        Bounded {
            entries: BTreeMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Its capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.entries.get(k)
    }

    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.entries.get_mut(k)
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.entries.contains_key(k)
    }

    /// Inserts `v` under `k`. A key already there keeps its place (its value
    /// is replaced); a new one evicts the oldest keys to make room. Returns
    /// the keys evicted.
    pub fn insert(&mut self, k: K, v: V) -> Vec<K> {
        let mut evicted = Vec::new();
        if let Some(old) = self.entries.get_mut(&k) {
            *old = v;
            return evicted;
        }
        while self.entries.len() >= self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.entries.remove(&oldest);
            evicted.push(oldest);
        }
        self.order.push_back(k.clone());
        self.entries.insert(k, v);
        evicted
    }

    /// Removes `k` (and its place in the order).
    pub fn remove(&mut self, k: &K) -> Option<V> {
        let v = self.entries.remove(k)?;
        self.order.retain(|x| x != k);
        Some(v)
    }
}

/// A byte budget over keys kept elsewhere: each key costs what it was last
/// charged, and past `limit` the oldest keys are evicted, for their owner to
/// drop. It holds only the keys (cheap to clone: `Rc`s), their ages and
/// sizes.
pub(crate) struct Budget<K> {
    limit: usize,
    used: usize,
    /// The next key's age.
    next: u64,
    /// Key → (its age, bytes charged).
    charged: BTreeMap<K, (u64, usize)>,
    /// Age → key: the oldest first.
    by_age: BTreeMap<u64, K>,
}

impl<K: Ord + Clone> Budget<K> {
    /// An empty budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Budget {
            limit,
            used: 0,
            next: 0,
            charged: BTreeMap::new(),
            by_age: BTreeMap::new(),
        }
    }

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Charges `k` `bytes`: a new key is the newest; a key charged before
    /// keeps its age and costs `bytes` from now on. Returns the keys evicted
    /// to stay within the limit, oldest first (`k` itself only when it alone
    /// exceeds the limit).
    pub fn charge(&mut self, k: K, bytes: usize) -> Vec<K> {
        match self.charged.get_mut(&k) {
            Some((_, was)) => {
                self.used = self.used - *was + bytes;
                *was = bytes;
            }
            None => {
                self.next += 1;
                self.by_age.insert(self.next, k.clone());
                self.charged.insert(k, (self.next, bytes));
                self.used += bytes;
            }
        }
        let mut evicted = Vec::new();
        while self.used > self.limit {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            if let Some((_, bytes)) = self.charged.remove(&oldest) {
                self.used -= bytes;
            }
            evicted.push(oldest);
        }
        evicted
    }

    /// Stops charging `k`: its owner dropped it.
    pub fn release(&mut self, k: &K) {
        if let Some((age, bytes)) = self.charged.remove(k) {
            self.by_age.remove(&age);
            self.used -= bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Bounded, Budget};

    #[test]
    fn evicts_the_oldest_and_keeps_a_replaced_key_in_place() {
        let mut b = Bounded::new(2);
        b.insert("a", 1);
        b.insert("b", 2);
        b.insert("a", 10); // replaced, still the oldest
        b.insert("c", 3);
        assert_eq!(
            (b.get(&"a"), b.get(&"b"), b.get(&"c")),
            (None, Some(&2), Some(&3))
        );
        assert_eq!(b.remove(&"b"), Some(2));
        b.insert("d", 4);
        b.insert("e", 5);
        assert_eq!(
            (b.get(&"c"), b.get(&"d"), b.get(&"e")),
            (None, Some(&4), Some(&5))
        );
        assert_eq!(Bounded::<u8, u8>::new(0).capacity(), 1);
        assert_eq!(b.insert("f", 6), ["d"], "an insertion says what it evicted");
    }

    #[test]
    fn a_budget_evicts_the_oldest_bytes_first() {
        let mut b = Budget::new(10);
        assert!(b.charge("a", 4).is_empty());
        assert!(b.charge("b", 4).is_empty());
        assert_eq!(b.charge("c", 4), ["a"], "12 > 10: the oldest goes");
        assert_eq!(b.used(), 8);
        // A key charged again keeps its age: `b` is still the oldest.
        assert_eq!(b.charge("c", 7), ["b"]);
        assert_eq!(b.used(), 7);
        b.release(&"c");
        assert_eq!(b.used(), 0);
        assert!(b.charge("d", 10).is_empty(), "exactly the limit fits");
        assert_eq!(b.charge("e", 11), ["d", "e"], "too big alone: itself too");
        assert_eq!(b.used(), 0);
        b.release(&"e");
        assert_eq!(b.used(), 0, "releasing an evicted key is a no-op");
    }
}

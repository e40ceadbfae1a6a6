//! A map bounded in size: past its capacity, inserting a new key evicts the
//! oldest. The key table of the arms that honor `Idempotency-Key` and the
//! completed keys kept beside the ledger (`durable_dedup`) are both one.

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
    /// is replaced); a new one evicts the oldest keys to make room.
    pub fn insert(&mut self, k: K, v: V) {
        if let Some(old) = self.entries.get_mut(&k) {
            *old = v;
            return;
        }
        while self.entries.len() >= self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        self.order.push_back(k.clone());
        self.entries.insert(k, v);
    }

    /// Removes `k` (and its place in the order).
    pub fn remove(&mut self, k: &K) -> Option<V> {
        let v = self.entries.remove(k)?;
        self.order.retain(|x| x != k);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::Bounded;

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
    }
}

//! Bounds, oldest first. [`Bounded`]: a map bounded in entries: past its
//! capacity, inserting a new key evicts the oldest. The key table of the
//! arms that honor `Idempotency-Key` and the completed keys kept beside the
//! ledger (`durable_dedup`) are both one. [`Budget`]: a byte budget over
//! keys that live in other maps, which evicts the oldest keys past its
//! limit (what `serve` holds per principal: the ledger and the key table).

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::hash::Hash;

/// At most `capacity` entries (at least 1); the oldest key goes first.
/// Looked up by hashing (a key table holds tens of thousands of keys, and
/// an ordered map would compare strings at every level of its tree);
/// nothing walks the entries, so their order in memory reaches no output.
pub(crate) struct Bounded<K, V> {
    entries: FxHashMap<K, V>,
    /// Keys in insertion order.
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    /// An empty map of at most `capacity` entries (0 counts as 1).
    pub fn new(capacity: usize) -> Self {
        Bounded {
            entries: FxHashMap::default(),
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

/// A byte budget over keys kept elsewhere, each charged to an owner (the
/// principal it is held for): each key costs what it was last charged.
/// Past `per_owner`, an owner's own oldest keys are evicted; past `limit`
/// in all, the owner holding the most bytes loses its oldest first, so one
/// owner's traffic evicts only its own entries until the total forces a
/// fair choice. It holds only the keys (cheap to clone: `Rc`s), their
/// owners, ages and sizes.
pub(crate) struct Budget<K, O> {
    limit: usize,
    per_owner: usize,
    used: usize,
    /// The next key's age.
    next: u64,
    /// Key → (its age, bytes charged, its owner).
    charged: BTreeMap<K, (u64, usize, O)>,
    /// Owner → (its bytes, its keys by age, the oldest first).
    owners: BTreeMap<O, (usize, BTreeMap<u64, K>)>,
    /// (bytes, the age of its oldest key reversed, owner): the owner
    /// holding the most last; between equals, the one whose oldest key is
    /// the oldest.
    by_size: BTreeSet<(usize, Reverse<u64>, O)>,
}

impl<K: Ord + Clone, O: Ord + Clone> Budget<K, O> {
    /// An empty budget of `limit` bytes in all, and `per_owner` for one.
    pub fn new(limit: usize, per_owner: usize) -> Self {
        Budget {
            limit,
            per_owner,
            used: 0,
            next: 0,
            charged: BTreeMap::new(),
            owners: BTreeMap::new(),
            by_size: BTreeSet::new(),
        }
    }

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.used
    }

    /// Bytes charged to `owner` now.
    pub fn used_by(&self, owner: &O) -> usize {
        self.owners.get(owner).map_or(0, |(b, _)| *b)
    }

    /// `owner`'s place in `by_size`, as it stands.
    fn rank(&self, owner: &O) -> Option<(usize, Reverse<u64>, O)> {
        let (bytes, keys) = self.owners.get(owner)?;
        let (&oldest, _) = keys.first_key_value()?;
        Some((*bytes, Reverse(oldest), owner.clone()))
    }

    /// Changes `owner`'s entry by `f`, keeping `by_size` and emptied
    /// owners in step.
    fn update(&mut self, owner: &O, f: impl FnOnce(&mut (usize, BTreeMap<u64, K>))) {
        if let Some(r) = self.rank(owner) {
            self.by_size.remove(&r);
        }
        let entry = self.owners.entry(owner.clone()).or_default();
        f(entry);
        if entry.1.is_empty() {
            self.owners.remove(owner);
        }
        if let Some(r) = self.rank(owner) {
            self.by_size.insert(r);
        }
    }

    /// Charges `k`, held for `owner`, `bytes`: a new key is its owner's
    /// newest; a key charged before keeps its age and owner and costs
    /// `bytes` from now on. Returns the keys evicted to stay within the
    /// bounds (`k` itself only when it alone exceeds its owner's).
    pub fn charge(&mut self, k: K, owner: O, bytes: usize) -> Vec<K> {
        let owner = match self.charged.get_mut(&k) {
            Some((_, was, o)) => {
                let (was, o) = (std::mem::replace(was, bytes), o.clone());
                self.used = self.used + bytes - was;
                self.update(&o, |(b, _)| *b = *b + bytes - was);
                o
            }
            None => {
                self.next += 1;
                let age = self.next;
                self.charged.insert(k.clone(), (age, bytes, owner.clone()));
                self.used += bytes;
                self.update(&owner, |(b, keys)| {
                    *b += bytes;
                    keys.insert(age, k);
                });
                owner
            }
        };
        let mut evicted = Vec::new();
        while self.used_by(&owner) > self.per_owner {
            evicted.extend(self.evict_oldest_of(&owner));
        }
        while self.used > self.limit {
            let Some((_, _, largest)) = self.by_size.last().cloned() else {
                break;
            };
            evicted.extend(self.evict_oldest_of(&largest));
        }
        evicted
    }

    /// Evicts `owner`'s oldest key.
    fn evict_oldest_of(&mut self, owner: &O) -> Option<K> {
        let (&age, _) = self.owners.get(owner)?.1.first_key_value()?;
        let oldest = self.owners[owner].1[&age].clone();
        self.release(&oldest);
        Some(oldest)
    }

    /// Stops charging `k`: its owner dropped it.
    pub fn release(&mut self, k: &K) {
        if let Some((age, bytes, owner)) = self.charged.remove(k) {
            self.used -= bytes;
            self.update(&owner, |(b, keys)| {
                *b -= bytes;
                keys.remove(&age);
            });
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
        let mut b = Budget::new(10, 10);
        assert!(b.charge("a", 0, 4).is_empty());
        assert!(b.charge("b", 0, 4).is_empty());
        assert_eq!(b.charge("c", 0, 4), ["a"], "12 > 10: the oldest goes");
        assert_eq!(b.used(), 8);
        // A key charged again keeps its age: `b` is still the oldest.
        assert_eq!(b.charge("c", 0, 7), ["b"]);
        assert_eq!(b.used(), 7);
        b.release(&"c");
        assert_eq!(b.used(), 0);
        assert!(b.charge("d", 0, 10).is_empty(), "exactly the limit fits");
        assert_eq!(
            b.charge("e", 0, 11),
            ["d", "e"],
            "too big alone: itself too"
        );
        assert_eq!(b.used(), 0);
        b.release(&"e");
        assert_eq!(b.used(), 0, "releasing an evicted key is a no-op");
    }

    #[test]
    fn one_owner_evicts_only_its_own_until_the_total_forces_the_largest() {
        let mut b = Budget::new(20, 8);
        assert!(b.charge(1000, 'A', 4).is_empty());
        // B's traffic past its share evicts B's own oldest, never A's.
        for i in 0..10 {
            let ev = b.charge(i, 'B', 4);
            assert!(ev.iter().all(|k| *k < i), "{ev:?}");
        }
        assert_eq!((b.used_by(&'A'), b.used_by(&'B')), (4, 8));
        // The total bound: C and D fill it; the largest owner pays first.
        let mut b = Budget::new(12, 12);
        b.charge(1, 'A', 2);
        b.charge(2, 'B', 4);
        b.charge(3, 'B', 4);
        assert_eq!(b.charge(4, 'A', 4), [2], "B holds the most: its oldest");
        assert_eq!((b.used_by(&'A'), b.used_by(&'B')), (6, 4));
        assert_eq!(b.charge(5, 'C', 4), [1], "now A holds the most");
        assert_eq!(b.used(), 12);
        b.release(&4);
        assert_eq!(b.used_by(&'A'), 0, "released: A holds nothing");
    }
}

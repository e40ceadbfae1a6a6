//! Small integers for the strings the oracle keys on, so that its maps
//! hash and compare integers: operation tags (a dense slot per workload
//! operation, parsed from `c{client}-op{n}`, any other string interned)
//! and session ids (interned). Lookups only: nothing iterates a hash map
//! here, so no output depends on hash order.

use crate::history::OpId;
use std::rc::Rc;

/// A hash map with rustc-hash's Fx hashing, fast and non-keyed, for
/// integer keys and short strings from the run's own records (lookups
/// only: never iterated on an output path).
pub(super) type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Session ids as small integers, in order of first sight.
#[derive(Default)]
pub(super) struct Sessions {
    ids: FxMap<Rc<str>, u32>,
    /// The last id looked up, by the allocation that named it: records of
    /// one session come in runs and share the server's `Rc`, so most
    /// lookups compare a pointer instead of hashing and comparing the
    /// string. Holding the `Rc` keeps its address from being reused.
    last: Option<(Rc<str>, u32)>,
}

impl Sessions {
    /// The id of `s`, assigned on first sight.
    pub fn id(&mut self, s: &Rc<str>) -> u32 {
        if let Some((l, i)) = &self.last {
            if Rc::ptr_eq(l, s) {
                return *i;
            }
        }
        let i = match self.ids.get(s) {
            Some(&i) => i,
            None => {
                let i = self.ids.len() as u32;
                self.ids.insert(s.clone(), i);
                i
            }
        };
        self.last = Some((s.clone(), i));
        i
    }

    /// The id of `s`, if it was seen.
    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }
}

/// Operation tags as small integers: the workload's operations
/// (`c{client}-op{n}` with `n < calls[client]`) get a dense slot each,
/// computed from the tag; any other string (a foreign server's echo, a
/// client beyond the workload) is interned after them.
pub(super) struct Tags {
    /// First slot of client c; one more entry than clients.
    base: Vec<u32>,
    others: FxMap<Rc<str>, u32>,
}

impl Tags {
    /// Slots for a workload of `calls[c]` operations per client.
    pub fn new(calls: &[u32]) -> Tags {
        let mut base = Vec::with_capacity(calls.len() + 1);
        let mut n = 0u32;
        base.push(0);
        for &c in calls {
            n = n.saturating_add(c);
            base.push(n);
        }
        Tags {
            base,
            others: FxMap::default(),
        }
    }

    fn dense(&self, tag: &str) -> Option<u32> {
        let OpId { client, call: n } = OpId::of_tag(tag)?;
        let c = client as usize;
        let from = *self.base.get(c)?;
        let to = *self.base.get(c + 1)?;
        (n < to - from).then_some(from + n)
    }

    /// The id of `tag`, if it has one (a workload slot, or interned).
    pub fn get(&self, tag: &str) -> Option<u32> {
        self.dense(tag).or_else(|| self.others.get(tag).copied())
    }

    /// The id of `tag`, interning it when it is not a workload slot.
    pub fn id(&mut self, tag: &Rc<str>) -> u32 {
        if let Some(i) = self.dense(tag) {
            return i;
        }
        if let Some(&i) = self.others.get(&**tag) {
            return i;
        }
        let i = self.base[self.base.len() - 1] + self.others.len() as u32;
        self.others.insert(tag.clone(), i);
        i
    }

    /// One more than the largest id given so far.
    pub fn len(&self) -> usize {
        self.base[self.base.len() - 1] as usize + self.others.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_tags_are_dense_and_others_interned_after_them() {
        let mut t = Tags::new(&[2, 0, 3]);
        assert_eq!(t.len(), 5);
        assert_eq!(t.id(&"c0-op1".into()), 1);
        assert_eq!(t.id(&"c2-op0".into()), 2);
        assert_eq!(t.get("c2-op2"), Some(4));
        // Beyond the workload: interned, once.
        assert_eq!(t.get("c0-op2"), None);
        assert_eq!(t.id(&"c0-op2".into()), 5);
        assert_eq!(t.id(&"foreign".into()), 6);
        assert_eq!(t.id(&"c0-op2".into()), 5);
        assert_eq!(t.get("c9-op0"), None);
        assert_eq!(t.len(), 7);
    }
}

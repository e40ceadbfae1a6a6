//! The side-effect ledger (see docs/causes.md): where a tool's effects land,
//! outside the server host, so that it survives a restart and so that the
//! oracle can judge any server from it without reading the server's own
//! records.
//!
//! The ledger records each execution of an operation (tag, execution
//! number, principal, key, request id) when the tool starts, and each chunk
//! the tool emits. With `effects = immediate` an execution takes its effect
//! when it starts; with `effects = transactional` it is *deferred* and
//! takes it only when it commits at the end, together with its key: a key
//! commits at most once per principal, and an execution killed or
//! cancelled first commits nothing. The ledger also keeps completed keys
//! for servers with `durable_dedup`, so they outlive a restart. A chunk's payload on the wire names the same
//! `(tag, execution, index)` ([`ChunkRef`]), so the oracle matches what a
//! client received to what the tool emitted without the server's event ids.

use crate::bounded::Bounded;
use crate::history::{History, LedgerRecord};
pub use crate::protocol::mcp::ChunkRef;
use crate::protocol::Json;
use crate::protocol::RequestId;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Who an execution ran for: the bearer token when the request carried one,
/// else the session.
pub type Principal = Rc<str>;

/// A key as the ledger and the key table know it: its principal and the
/// header's value.
pub type Scoped = (Principal, String);

/// What a commit did.
#[derive(Clone, Debug, PartialEq)]
pub enum Commit {
    /// The execution committed its effect; its result.
    Committed(Json),
    /// Its key had committed already: nothing committed; the stored result
    /// of the execution that did.
    Refused(Json),
}

#[derive(Default)]
struct Inner {
    /// Executions begun per tag (they number executions).
    started: BTreeMap<String, u32>,
    /// Executions that took their effect, per tag.
    committed: BTreeMap<String, u32>,
    /// Effects taken per principal, then per tag.
    by_principal: BTreeMap<Principal, BTreeMap<String, u32>>,
    /// Keys under which a deferred execution committed, with its result:
    /// a key commits at most once.
    committed_keys: BTreeMap<Scoped, Json>,
    /// Completed keys kept beside the ledger (`durable_dedup`): they
    /// outlive server incarnations. Key → (tool name and arguments,
    /// result); bounded by the first server's key-table capacity.
    durable: Option<Bounded<Scoped, (Value, Json)>>,
    /// Most tags remembered (a server on a real socket): past it the
    /// oldest tag is forgotten, its counts with it. `None`: every tag.
    max_tags: Option<usize>,
    /// Tags in the order first seen, while `max_tags` is set.
    tag_order: VecDeque<String>,
}

/// The side-effect ledger: executions per operation tag. Cloning shares it.
#[derive(Clone)]
pub struct Ledger {
    inner: Rc<RefCell<Inner>>,
    history: History,
}

impl Ledger {
    /// An empty ledger writing to `history`.
    pub fn new(history: History) -> Self {
        Ledger {
            inner: Rc::default(),
            history,
        }
    }

    /// Records one execution of `tag`; returns its number (1 = first). An
    /// immediate execution takes its effect now; a `deferred` one only when
    /// it [commits](Ledger::commit).
    pub fn execute(
        &self,
        tag: &str,
        principal: &Principal,
        key: Option<&str>,
        rpc_id: &RequestId,
        deferred: bool,
    ) -> u32 {
        let mut inner = self.inner.borrow_mut();
        if inner.max_tags.is_some() && !inner.started.contains_key(tag) {
            inner.remember_tag(tag);
        }
        let n = inner.started.entry(tag.to_string()).or_insert(0);
        *n += 1;
        let n = *n;
        if !deferred {
            inner.take_effect(tag, principal);
        }
        drop(inner);
        self.history.record(LedgerRecord::Execution {
            tag: tag.into(),
            n,
            principal: principal.clone(),
            key: key.map(Into::into),
            rpc_id: rpc_id.clone(),
            deferred,
        });
        n
    }

    /// Commits deferred execution `n` of `tag` together with its key: its
    /// effect lands and `result` (given the tag's effects, this one
    /// included) is stored under the key. A key that committed already
    /// refuses: nothing lands, and the stored result comes back.
    pub fn commit(
        &self,
        tag: &str,
        n: u32,
        principal: &Principal,
        key: Option<&str>,
        result: impl FnOnce(u32) -> Json,
    ) -> Commit {
        let scoped = key.map(|k| (principal.clone(), k.to_string()));
        let mut inner = self.inner.borrow_mut();
        if let Some(stored) = scoped.as_ref().and_then(|k| inner.committed_keys.get(k)) {
            return Commit::Refused(stored.clone());
        }
        let effects = inner.take_effect(tag, principal);
        let result = result(effects);
        if let Some(k) = scoped {
            inner.committed_keys.insert(k, result.clone());
        }
        drop(inner);
        self.history
            .record(LedgerRecord::Commit { tag: tag.into(), n });
        Commit::Committed(result)
    }

    /// Records that execution `n` of `tag` emitted chunk `index` of
    /// `total` (the last one is the result).
    pub fn chunk(&self, tag: &str, n: u32, index: u32, total: u32) {
        self.history.record(LedgerRecord::Chunk {
            tag: tag.into(),
            n,
            index,
            last: index == total,
        });
    }

    /// Remembers at most `max` tags from now on (a server on a real socket,
    /// where nothing reads the whole ledger): the oldest tag is forgotten,
    /// its executions and effects with it, so a later execution of it is
    /// numbered from 1 again.
    pub fn bound_tags(&self, max: usize) {
        let mut inner = self.inner.borrow_mut();
        inner.max_tags = Some(max.max(1));
        inner.tag_order = inner.started.keys().cloned().collect();
    }

    /// Forgets the effects taken for `principal` (its session ended, and a
    /// session's principal never comes back), and keys it committed.
    pub fn forget_principal(&self, principal: &str) {
        let mut inner = self.inner.borrow_mut();
        inner.by_principal.remove(principal);
        inner.committed_keys.retain(|(p, _), _| &**p != principal);
    }

    /// Effects taken for one tag (executions that committed).
    pub fn executions(&self, tag: &str) -> u32 {
        self.inner.borrow().committed.get(tag).copied().unwrap_or(0)
    }

    /// Effects taken for `principal`, per tag, in tag order.
    pub fn snapshot_for(&self, principal: &str) -> BTreeMap<String, u32> {
        self.inner
            .borrow()
            .by_principal
            .get(principal)
            .cloned()
            .unwrap_or_default()
    }

    /// A completed key kept beside the ledger: (call, result).
    pub fn durable_key(&self, who: &Principal, key: &str) -> Option<(Value, Json)> {
        self.inner
            .borrow()
            .durable
            .as_ref()?
            .get(&(who.clone(), key.to_string()))
            .cloned()
    }

    /// Keeps a completed key beside the ledger, evicting the oldest beyond
    /// `capacity` keys.
    pub fn keep_key(&self, who: &Principal, key: &str, call: Value, result: Json, capacity: usize) {
        self.inner
            .borrow_mut()
            .durable
            .get_or_insert_with(|| Bounded::new(capacity))
            .insert((who.clone(), key.to_string()), (call, result));
    }
}

impl Inner {
    /// A new tag under `max_tags`: forgets the oldest ones to make room.
    fn remember_tag(&mut self, tag: &str) {
        let max = self.max_tags.unwrap_or(usize::MAX);
        while self.tag_order.len() >= max {
            let Some(old) = self.tag_order.pop_front() else {
                break;
            };
            self.started.remove(&old);
            self.committed.remove(&old);
            self.by_principal.retain(|_, tags| {
                tags.remove(&old);
                !tags.is_empty()
            });
        }
        self.tag_order.push_back(tag.to_string());
    }

    /// Counts one effect of `tag` for `principal`; returns the tag's total.
    fn take_effect(&mut self, tag: &str, principal: &Principal) -> u32 {
        *self
            .by_principal
            .entry(principal.clone())
            .or_default()
            .entry(tag.to_string())
            .or_insert(0) += 1;
        let c = self.committed.entry(tag.to_string()).or_insert(0);
        *c += 1;
        *c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_filter_by_principal() {
        let l = Ledger::new(History::new(Rc::new(|| std::time::Duration::ZERO)));
        let (a, b): (Principal, Principal) = ("a".into(), "b".into());
        let id = RequestId::Num(1);
        assert_eq!(l.execute("t", &a, None, &id, false), 1);
        assert_eq!(
            l.execute("t", &b, Some("k"), &id, false),
            2,
            "numbered per tag"
        );
        l.execute("u", &a, None, &id, false);
        assert_eq!(l.executions("t"), 2);
        assert_eq!(l.snapshot_for("a").get("t"), Some(&1));
        assert_eq!(l.snapshot_for("c").get("t"), None);
        assert_eq!(
            l.snapshot_for("a"),
            BTreeMap::from([("t".to_string(), 1), ("u".to_string(), 1)])
        );
        assert_eq!(l.snapshot_for("b"), BTreeMap::from([("t".to_string(), 1)]));
        assert!(l.snapshot_for("c").is_empty());
    }

    fn ledger() -> (Ledger, History) {
        let h = History::new(Rc::new(|| std::time::Duration::ZERO));
        (Ledger::new(h.clone()), h)
    }

    fn ledger_records(h: &History) -> Vec<LedgerRecord> {
        h.entries()
            .iter()
            .filter_map(|e| match &e.record {
                crate::history::Rec::Ledger(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_deferred_execution_takes_its_effect_only_when_it_commits() {
        let (l, h) = ledger();
        let a: Principal = "a".into();
        let id = RequestId::Num(1);
        assert_eq!(l.execute("t", &a, Some("k"), &id, true), 1);
        assert_eq!(l.executions("t"), 0, "started, not committed");
        assert!(l.snapshot_for("a").is_empty());
        // Killed: never commits. A second execution under the same key
        // commits, then a third is refused with the stored result.
        assert_eq!(l.execute("t", &a, Some("k"), &id, true), 2);
        let r = l.commit("t", 2, &a, Some("k"), |n| {
            serde_json::json!({ "n": n }).into()
        });
        assert_eq!(r, Commit::Committed(serde_json::json!({"n": 1}).into()));
        assert_eq!(l.execute("t", &a, Some("k"), &id, true), 3);
        let r = l.commit("t", 3, &a, Some("k"), |_| unreachable!("refused"));
        assert_eq!(r, Commit::Refused(serde_json::json!({"n": 1}).into()));
        assert_eq!(l.executions("t"), 1);
        assert_eq!(l.snapshot_for("a"), BTreeMap::from([("t".to_string(), 1)]));
        // Another principal's same key is another key; no key, no limit.
        let b: Principal = "b".into();
        l.execute("t", &b, Some("k"), &id, true);
        assert!(matches!(
            l.commit("t", 4, &b, Some("k"), |n| serde_json::json!(n).into()),
            Commit::Committed(_)
        ));
        l.execute("t", &b, None, &id, true);
        l.execute("t", &b, None, &id, true);
        l.commit("t", 5, &b, None, |n| serde_json::json!(n).into());
        assert_eq!(
            l.commit("t", 6, &b, None, |n| serde_json::json!(n).into()),
            Commit::Committed(serde_json::json!(4).into())
        );
        let commits: Vec<u32> = ledger_records(&h)
            .into_iter()
            .filter_map(|r| match r {
                LedgerRecord::Commit { n, .. } => Some(n),
                _ => None,
            })
            .collect();
        assert_eq!(commits, [2, 4, 5, 6], "a refused commit writes nothing");
    }

    #[test]
    fn durable_keys_are_bounded_oldest_first() {
        let (l, _) = ledger();
        let p: Principal = "p".into();
        let call = serde_json::json!({"name": "x"});
        for k in ["k1", "k2", "k3"] {
            l.keep_key(&p, k, call.clone(), serde_json::json!(k).into(), 2);
        }
        assert_eq!(l.durable_key(&p, "k1"), None);
        assert_eq!(
            l.durable_key(&p, "k3"),
            Some((call.clone(), serde_json::json!("k3").into()))
        );
        assert_eq!(l.durable_key(&"q".into(), "k3"), None, "per principal");
    }
}

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

pub mod events;
pub mod outbox;
pub mod tasks;

use crate::base::bounded::{Bounded, Budget};
use crate::history::{History, LedgerRecord, OpId};
pub use crate::protocol::mcp::ChunkRef;
use crate::protocol::Json;
use crate::protocol::RequestId;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
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

/// What one thing held costs beyond the bytes of its strings: its slots in
/// the nodes of the maps that hold it (about 60 bytes) and of the budget's
/// two (about 210), and an `Rc`'s header. Reckoned from the maps' layouts
/// and rounded up, so the budget overstates rather than understates what
/// is held.
pub const ENTRY_OVERHEAD: usize = 320;

/// A tag as the ledger keys it: an operation's tag (`c{client}-op{call}`,
/// what every simulated client sends) by its two numbers, without an
/// allocation or a string comparison per lookup; any other tag (a real
/// client's, under `serve`) by its text. [`OpId::of_tag`] reads only the
/// canonical spelling, so two different strings are never one key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tag {
    Op(OpId),
    Text(Rc<str>),
}

impl Tag {
    fn of(tag: &str) -> Tag {
        OpId::of_tag(tag).map_or_else(|| Tag::Text(tag.into()), Tag::Op)
    }

    /// Its text.
    fn text(&self) -> String {
        match self {
            Tag::Op(id) => id.tag(),
            Tag::Text(t) => t.to_string(),
        }
    }

    /// The bytes of its text, what the budget charges for it.
    fn len(&self) -> usize {
        match self {
            Tag::Op(id) => {
                let digits = |n: u32| n.checked_ilog10().map_or(1, |d| d as usize + 1);
                "c-op".len() + digits(id.client) + digits(id.call)
            }
            Tag::Text(t) => t.len(),
        }
    }
}

/// A tag's execution counters.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Executions begun (they number executions).
    started: u32,
    /// Executions that took their effect.
    committed: u32,
    /// Executions that emitted their result (whoever ran them).
    finished: u32,
}

/// One thing a bounded ledger holds, charged to its [`Budget`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Held {
    /// A tag's execution counters.
    Tag(Tag),
    /// A principal's effects of one tag.
    Effect(Principal, Tag),
    /// A committed key's result.
    Committed(Scoped),
    /// A completed key kept beside the ledger (`durable_dedup`).
    Durable(Scoped),
    /// An entry of a server's key table (`DedupTable`), which drops it
    /// itself ([`Ledger::take_evicted_keys`]).
    Key(Scoped),
}

#[derive(Default)]
struct Inner {
    /// Each tag's execution counters.
    tags: BTreeMap<Tag, Counts>,
    /// Effects taken per principal, then per tag.
    by_principal: BTreeMap<Principal, BTreeMap<Tag, u32>>,
    /// Keys under which a deferred execution committed, with its result:
    /// a key commits at most once.
    committed_keys: BTreeMap<Scoped, Json>,
    /// Completed keys kept beside the ledger (`durable_dedup`): they
    /// outlive server incarnations. Key → (tool name and arguments,
    /// result); bounded by the first server's key-table capacity.
    durable: Option<Bounded<Scoped, (Value, Json)>>,
    /// A server on a real socket, where nothing reads the whole ledger:
    /// everything above, and the key table's entries, within one byte
    /// budget, oldest evicted first. `None` (the simulator): all kept.
    budget: Option<Budget<Held, Principal>>,
    /// Key-table entries the budget evicted, for the table to drop.
    evicted_keys: Vec<Scoped>,
}

/// The side-effect ledger: executions per operation tag. Cloning shares it.
#[derive(Clone)]
pub struct Ledger {
    inner: Rc<RefCell<Inner>>,
    history: History,
    /// The replica this handle serves, in a deployment: the ledger records
    /// which replica ran each execution, as a store records its caller.
    replica: Option<u32>,
    /// The tasks servers created (the tasks extension), kept beside the
    /// ledger: they outlive an incarnation.
    tasks: Rc<RefCell<tasks::TaskTable>>,
    /// The event source (the Events extension), beside the ledger: it
    /// outlives an incarnation.
    events: Rc<RefCell<events::EventLog>>,
    /// The durable webhook sender's outbox, beside the ledger: it
    /// outlives an incarnation and every replica reads it.
    outbox: Rc<RefCell<outbox::Outbox>>,
    /// The key input-required states are signed with, kept beside the
    /// ledger so that a restarted server still verifies the states its
    /// incarnation before signed (drawn on first use).
    state_key: Rc<std::cell::Cell<Option<[u8; 32]>>>,
}

impl Ledger {
    /// An empty ledger writing to `history`.
    pub fn new(history: History) -> Self {
        Ledger {
            inner: Rc::default(),
            history,
            replica: None,
            tasks: Rc::default(),
            events: Rc::default(),
            outbox: Rc::default(),
            state_key: Rc::default(),
        }
    }

    /// The key input-required states are signed with: the one set or
    /// drawn before (by any incarnation), else drawn now by `draw`.
    pub fn state_key(&self, draw: impl FnOnce(&mut [u8; 32])) -> [u8; 32] {
        if let Some(k) = self.state_key.get() {
            return k;
        }
        let mut k = [0u8; 32];
        draw(&mut k);
        self.state_key.set(Some(k));
        k
    }

    /// Sets the state key (`serve --state-key-file`).
    pub fn set_state_key(&self, k: [u8; 32]) {
        self.state_key.set(Some(k));
    }

    /// The same ledger, as replica `r` of a deployment calls it.
    pub fn for_replica(&self, r: u32) -> Ledger {
        Ledger {
            replica: Some(r),
            ..self.clone()
        }
    }

    /// The replica this handle serves (`None`: the one server).
    pub fn replica(&self) -> Option<u32> {
        self.replica
    }

    /// The task table (the tasks extension), shared by every handle.
    pub fn tasks(&self) -> std::cell::RefMut<'_, tasks::TaskTable> {
        self.tasks.borrow_mut()
    }

    /// The event source, produced up to now (`period_us` 0: no source).
    pub fn events(&self, period_us: u64) -> std::cell::Ref<'_, events::EventLog> {
        self.events
            .borrow_mut()
            .advance(&self.history, period_us, self.history.now_us());
        self.events.borrow()
    }

    /// The durable webhook sender's outbox, shared by every handle.
    pub fn outbox(&self) -> std::cell::RefMut<'_, outbox::Outbox> {
        self.outbox.borrow_mut()
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
        let held = inner.hold_tag(tag, principal);
        let counts = inner.tags.entry(held.clone()).or_default();
        counts.started += 1;
        let n = counts.started;
        if !deferred {
            inner.take_effect(&held, principal);
        }
        drop(inner);
        self.history.record(LedgerRecord::Execution {
            tag: tag.into(),
            n,
            principal: principal.clone(),
            key: key.map(Into::into),
            rpc_id: rpc_id.clone(),
            deferred,
            replica: self.replica,
        });
        n
    }

    /// Commits deferred execution `n` of `tag` together with its key: its
    /// effect lands and `result` (given `principal`'s effects of the tag,
    /// this one included) is stored under the key. A key that committed
    /// already refuses: nothing lands, and the stored result comes back.
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
        let held = inner.hold_tag(tag, principal);
        let effects = inner.take_effect(&held, principal);
        let result = result(effects);
        if let Some(k) = scoped {
            let bytes = k.0.len() + k.1.len() + result.text().len();
            inner.committed_keys.insert(k.clone(), result.clone());
            inner.charge(Held::Committed(k), principal, bytes);
        }
        drop(inner);
        self.history
            .record(LedgerRecord::Commit { tag: tag.into(), n });
        Commit::Committed(result)
    }

    /// Records that execution `n` of `tag` emitted chunk `index` of
    /// `total` (the last one is the result).
    pub fn chunk(&self, tag: &str, n: u32, index: u32, total: u32) {
        if index == total {
            let mut inner = self.inner.borrow_mut();
            // Held already (its execution holds it), else nobody's.
            let t = inner.hold_tag(tag, &Principal::from(""));
            inner.tags.entry(t).or_default().finished += 1;
        }
        self.history.record(LedgerRecord::Chunk {
            tag: tag.into(),
            n,
            index,
            last: index == total,
        });
    }

    /// Holds at most `limit` bytes from now on, and at most `per_principal`
    /// for one principal (a server on a real socket, where nothing reads
    /// the whole ledger): tags, principals' effects and keys, each costing
    /// its strings' bytes (tokens, tags, keys, stored results) and
    /// [`ENTRY_OVERHEAD`], each charged to the principal it is held for (a
    /// tag to the principal whose execution first held it). Past its share
    /// a principal's own oldest are forgotten; past `limit`, the oldest of
    /// the principal holding the most. A forgotten tag's next execution is
    /// numbered from 1 again, a forgotten effect counted from 0, a
    /// forgotten key runs again.
    pub fn bound_bytes(&self, limit: usize, per_principal: usize) {
        let mut inner = self.inner.borrow_mut();
        if inner.budget.is_none() {
            inner.budget = Some(Budget::new(limit, per_principal));
        }
    }

    /// Bytes the budget holds charged (0 when unbounded).
    pub fn held_bytes(&self) -> usize {
        self.inner.borrow().budget.as_ref().map_or(0, Budget::used)
    }

    /// Whether the ledger is byte-bounded ([`Ledger::bound_bytes`]).
    pub fn bounded(&self) -> bool {
        self.inner.borrow().budget.is_some()
    }

    /// Forgets the effects taken for `principal` (its session ended, and a
    /// session's principal never comes back), and keys it committed.
    pub fn forget_principal(&self, principal: &str) {
        let mut inner = self.inner.borrow_mut();
        let Inner {
            by_principal,
            committed_keys,
            budget,
            ..
        } = &mut *inner;
        if let Some((p, tags)) = by_principal.remove_entry(principal) {
            for t in tags.into_keys() {
                if let Some(b) = budget.as_mut() {
                    b.release(&Held::Effect(p.clone(), t));
                }
            }
        }
        committed_keys.retain(|k, _| {
            let keep = &*k.0 != principal;
            if let (false, Some(b)) = (keep, budget.as_mut()) {
                b.release(&Held::Committed(k.clone()));
            }
            keep
        });
    }

    /// Effects taken for one tag (executions that committed), whoever they
    /// ran for: the whole ledger's view, for tests and the oracle's side.
    pub fn executions(&self, tag: &str) -> u32 {
        let inner = self.inner.borrow();
        inner.tags.get(&Tag::of(tag)).map_or(0, |c| c.committed)
    }

    /// Effects of `tag` taken for `principal`: what a tool's result tells
    /// its caller (whether anyone else ran the tag is not its business).
    pub fn executions_for(&self, tag: &str, principal: &str) -> u32 {
        let inner = self.inner.borrow();
        let tags = inner.by_principal.get(principal);
        tags.and_then(|t| t.get(&Tag::of(tag)))
            .copied()
            .unwrap_or(0)
    }

    /// Effects taken for `principal`, per tag, in tag order.
    pub fn snapshot_for(&self, principal: &str) -> BTreeMap<String, u32> {
        let inner = self.inner.borrow();
        let tags = inner.by_principal.get(principal).into_iter().flatten();
        tags.map(|(t, n)| (t.text(), *n)).collect()
    }

    /// Executions of `tag` that emitted their result (whoever ran them):
    /// with [`Ledger::executions_for`], whether a close stopped one.
    pub fn finished(&self, tag: &str) -> u32 {
        let inner = self.inner.borrow();
        inner.tags.get(&Tag::of(tag)).map_or(0, |c| c.finished)
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
        let k: Scoped = (who.clone(), key.to_string());
        let mut inner = self.inner.borrow_mut();
        let bytes = inner
            .budget
            .is_some()
            .then(|| who.len() + key.len() + call.to_string().len() + result.text().len());
        let durable = inner.durable.get_or_insert_with(|| Bounded::new(capacity));
        let evicted = durable.insert(k.clone(), (call, result));
        if let Some(b) = inner.budget.as_mut() {
            for old in evicted {
                b.release(&Held::Durable(old));
            }
        }
        if let Some(bytes) = bytes {
            inner.charge(Held::Durable(k), who, bytes);
        }
    }

    /// Charges an entry of a server's key table, `bytes` besides
    /// [`ENTRY_OVERHEAD`], to the budget (charged again, it keeps its age);
    /// no-op when unbounded. What the budget evicts for it comes back from
    /// [`Ledger::take_evicted_keys`].
    pub fn charge_key(&self, key: &Scoped, bytes: usize) {
        self.inner
            .borrow_mut()
            .charge(Held::Key(key.clone()), &key.0, bytes);
    }

    /// A key-table entry dropped by its table: no longer charged.
    /// Forgets the completed `key` kept durably (a question stored under
    /// it gave way to the execution its answer continues).
    pub fn forget_kept_key(&self, key: &Scoped) {
        let mut inner = self.inner.borrow_mut();
        let removed = inner.durable.as_mut().and_then(|d| d.remove(key));
        if let (Some(_), Some(b)) = (removed, inner.budget.as_mut()) {
            b.release(&Held::Durable(key.clone()));
        }
    }

    pub fn release_key(&self, key: &Scoped) {
        if let Some(b) = self.inner.borrow_mut().budget.as_mut() {
            b.release(&Held::Key(key.clone()));
        }
    }

    /// Key-table entries the budget evicted since the last call, oldest
    /// first: the table drops them.
    pub fn take_evicted_keys(&self) -> Vec<Scoped> {
        std::mem::take(&mut self.inner.borrow_mut().evicted_keys)
    }
}

impl Inner {
    /// `tag` as the ledger holds it (a text tag's `Rc` shared by every map
    /// that names it); a tag not held yet is charged to the budget before
    /// its counters are kept.
    fn hold_tag(&mut self, tag: &str, who: &Principal) -> Tag {
        let key = Tag::of(tag);
        if let Some((t, _)) = self.tags.get_key_value(&key) {
            return t.clone();
        }
        self.charge(Held::Tag(key.clone()), who, key.len());
        key
    }

    /// Charges `held`, held for `who`, `bytes` and [`ENTRY_OVERHEAD`] when
    /// bounded; drops what the budget evicts for it.
    fn charge(&mut self, held: Held, who: &Principal, bytes: usize) {
        let Some(budget) = self.budget.as_mut() else {
            return;
        };
        for old in budget.charge(held, who.clone(), bytes + ENTRY_OVERHEAD) {
            match old {
                Held::Tag(t) => {
                    self.tags.remove(&t);
                }
                Held::Effect(p, t) => {
                    if let Some(tags) = self.by_principal.get_mut(&p) {
                        tags.remove(&t);
                        if tags.is_empty() {
                            self.by_principal.remove(&p);
                        }
                    }
                }
                Held::Committed(k) => {
                    self.committed_keys.remove(&k);
                }
                Held::Durable(k) => {
                    if let Some(d) = self.durable.as_mut() {
                        d.remove(&k);
                    }
                }
                Held::Key(k) => self.evicted_keys.push(k),
            }
        }
    }

    /// Counts one effect of `tag` (held: [`Inner::hold_tag`]) for
    /// `principal`; returns `principal`'s effects of it.
    fn take_effect(&mut self, tag: &Tag, principal: &Principal) -> u32 {
        self.tags.entry(tag.clone()).or_default().committed += 1;
        let mine = self
            .by_principal
            .entry(principal.clone())
            .or_default()
            .entry(tag.clone())
            .or_insert(0);
        *mine += 1;
        let mine = *mine;
        if mine == 1 {
            let held = Held::Effect(principal.clone(), tag.clone());
            self.charge(held, principal, principal.len() + tag.len());
        }
        mine
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
            Commit::Committed(serde_json::json!(3).into()),
            "b's third effect of the tag: a's is none of b's business"
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

    #[test]
    fn results_count_the_callers_effects_alone() {
        let (l, _) = ledger();
        let (a, b): (Principal, Principal) = ("a".into(), "b".into());
        let id = RequestId::Num(1);
        l.execute("t", &a, None, &id, false);
        l.execute("t", &b, None, &id, false);
        l.execute("t", &b, None, &id, false);
        assert_eq!(l.executions("t"), 3, "the whole ledger's view");
        assert_eq!(l.executions_for("t", "a"), 1, "a's own");
        assert_eq!(l.executions_for("t", "b"), 2);
        assert_eq!(l.executions_for("t", "c"), 0);
        // A commit's result is given the committer's effects, not the tag's.
        l.execute("u", &a, Some("k"), &id, true);
        l.execute("u", &b, Some("k"), &id, false);
        let r = l.commit("u", 1, &a, Some("k"), |n| serde_json::json!(n).into());
        assert_eq!(r, Commit::Committed(serde_json::json!(1).into()));
    }

    #[test]
    fn a_bounded_ledger_forgets_its_oldest_bytes_first() {
        let (l, _) = ledger();
        let id = RequestId::Num(1);
        let token = |i: usize| -> Principal { format!("{i:04}{}", "t".repeat(996)).into() };
        let tag = |i: usize| format!("{i:04}{}", "g".repeat(496));
        // One call costs its tag (500 bytes) once for the tag's counters and
        // once with its token (1,000) for the effect, plus two overheads.
        let per_call = 500 + 1_500 + 2 * ENTRY_OVERHEAD;
        let limit = 10 * per_call;
        l.bound_bytes(limit, limit);
        for i in 0..100 {
            assert_eq!(l.execute(&tag(i), &token(i), None, &id, false), 1);
            assert!(l.held_bytes() <= limit, "{} > {limit}", l.held_bytes());
        }
        // Each token holds one call's worth: at the bound the largest
        // holder whose oldest entry is the oldest pays, so the ledger
        // stays full to within one call.
        assert!(
            l.held_bytes() > limit - per_call,
            "full: {}",
            l.held_bytes()
        );
        assert_eq!(l.executions_for(&tag(99), &token(99)), 1, "the newest kept");
        assert_eq!(l.executions_for(&tag(90), &token(90)), 1);
        for i in 0..80 {
            assert_eq!(
                l.executions_for(&tag(i), &token(i)),
                0,
                "older ones gone: {i}"
            );
        }
        assert_eq!(l.executions(&tag(0)), 0);
        assert_eq!(
            l.execute(&tag(0), &token(0), None, &id, false),
            1,
            "a forgotten tag is numbered from 1 again"
        );
        // A session's end releases what it held.
        let before = l.held_bytes();
        l.forget_principal(&token(99));
        assert_eq!(l.held_bytes(), before - (500 + 1_000 + ENTRY_OVERHEAD));
        assert!(l.snapshot_for(&token(99)).is_empty());
        // Keys share the budget: a key evicts calls, and calls evict keys,
        // which the key table collects. (A key bigger than its holder's
        // neighbours would go first: the principal holding the most pays.)
        let k: Scoped = (token(1), "key".into());
        l.charge_key(&k, per_call - ENTRY_OVERHEAD);
        assert!(l.held_bytes() <= limit);
        assert!(l.take_evicted_keys().is_empty(), "the newest stays");
        for i in 100..110 {
            l.execute(&tag(i), &token(i), None, &id, false);
        }
        assert_eq!(
            l.take_evicted_keys(),
            vec![k.clone()],
            "then it is the oldest"
        );
        let held = l.held_bytes();
        assert!(held <= limit);
        l.release_key(&k);
        assert_eq!(l.held_bytes(), held, "releasing an evicted key is a no-op");
    }

    #[test]
    fn operation_tags_are_keyed_by_their_numbers_and_others_by_their_text() {
        for t in ["c0-op0", "c12-op345", "c4294967295-op7"] {
            let k = Tag::of(t);
            assert!(matches!(k, Tag::Op(_)), "{t}");
            assert_eq!((k.text(), k.len()), (t.to_string(), t.len()));
        }
        // Another spelling of the same numbers is another tag.
        for t in ["c01-op2", "c1-op02", "c1-op", "x1-op2", "", "c1-op2 "] {
            let k = Tag::of(t);
            assert!(matches!(k, Tag::Text(_)), "{t:?}");
            assert_eq!((k.text(), k.len()), (t.to_string(), t.len()));
        }
        let (l, _) = ledger();
        let (a, id) = (Principal::from("a"), RequestId::Num(1));
        l.execute("c1-op2", &a, None, &id, false);
        l.execute("c01-op2", &a, None, &id, false);
        assert_eq!((l.executions("c1-op2"), l.executions("c01-op2")), (1, 1));
        assert_eq!(
            l.snapshot_for("a"),
            BTreeMap::from([("c01-op2".to_string(), 1), ("c1-op2".to_string(), 1)])
        );
    }

    #[test]
    fn an_unbounded_ledger_keeps_everything() {
        let (l, _) = ledger();
        let id = RequestId::Num(1);
        for i in 0..1_000 {
            l.execute(&format!("t{i}"), &format!("p{i}").into(), None, &id, false);
        }
        assert_eq!(l.held_bytes(), 0);
        assert!(!l.bounded());
        assert_eq!(l.executions_for("t0", "p0"), 1);
        l.charge_key(&("p".into(), "k".into()), usize::MAX);
        assert!(l.take_evicted_keys().is_empty());
    }
}

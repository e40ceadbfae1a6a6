//! The side-effect ledger (see docs/causes.md): where a tool's effects land,
//! outside the server host, so that it survives a restart and so that the
//! oracle can judge any server from it without reading the server's own
//! records.
//!
//! The ledger records each execution of an operation (tag, execution
//! number, principal, key, request id) when the tool starts, and each chunk
//! the tool emits. A chunk's payload on the wire names the same
//! `(tag, execution, index)` ([`ChunkRef`]), so the oracle matches what a
//! client received to what the tool emitted without the server's event ids.

use crate::history::{History, LedgerRecord};
pub use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Who an execution ran for: the bearer token when the request carried one,
/// else the session.
pub type Principal = Rc<str>;

/// The side-effect ledger: executions per operation tag. Cloning shares it.
#[derive(Clone)]
pub struct Ledger {
    counts: Rc<RefCell<BTreeMap<String, u32>>>,
    /// Executions per principal, then per tag.
    by_principal: Rc<RefCell<BTreeMap<Principal, BTreeMap<String, u32>>>>,
    history: History,
}

impl Ledger {
    /// An empty ledger writing to `history`.
    pub fn new(history: History) -> Self {
        Ledger {
            counts: Rc::default(),
            by_principal: Rc::default(),
            history,
        }
    }

    /// Records one execution of `tag`; returns its number (1 = first).
    pub fn execute(
        &self,
        tag: &str,
        principal: &Principal,
        key: Option<&str>,
        rpc_id: &RequestId,
    ) -> u32 {
        let mut counts = self.counts.borrow_mut();
        let n = counts.entry(tag.to_string()).or_insert(0);
        *n += 1;
        let n = *n;
        drop(counts);
        *self
            .by_principal
            .borrow_mut()
            .entry(principal.clone())
            .or_default()
            .entry(tag.to_string())
            .or_insert(0) += 1;
        self.history.record(LedgerRecord::Execution {
            tag: tag.into(),
            n,
            principal: principal.clone(),
            key: key.map(Into::into),
            rpc_id: rpc_id.clone(),
        });
        n
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

    /// Executions of one tag.
    pub fn executions(&self, tag: &str) -> u32 {
        self.counts.borrow().get(tag).copied().unwrap_or(0)
    }

    /// Executions that ran for `principal`, per tag, in tag order.
    pub fn snapshot_for(&self, principal: &str) -> BTreeMap<String, u32> {
        self.by_principal
            .borrow()
            .get(principal)
            .cloned()
            .unwrap_or_default()
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
        assert_eq!(l.execute("t", &a, None, &id), 1);
        assert_eq!(l.execute("t", &b, Some("k"), &id), 2, "numbered per tag");
        l.execute("u", &a, None, &id);
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
}

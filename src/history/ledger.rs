//! The ledger's records: side effects outside the server host (each
//! execution, its commit, each chunk it emitted).

use crate::protocol::RequestId;
use serde::Serialize;
use std::rc::Rc;

/// Side-effect ledger records (outside the server host): what the oracle
/// judges any server by.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LedgerRecord {
    /// A tool execution began. With `effects = immediate` it took its
    /// effect now; with `effects = transactional` (`deferred`) it takes it
    /// only with a later [`LedgerRecord::Commit`], or never (killed,
    /// cancelled, or its key had committed already).
    Execution {
        /// Operation tag.
        tag: Rc<str>,
        /// The how-many-th execution of the tag (1 = first).
        n: u32,
        /// Who it ran for (bearer token, else session).
        principal: Rc<str>,
        /// The `Idempotency-Key` the request carried.
        key: Option<Rc<str>>,
        /// The request that ran it.
        rpc_id: RequestId,
        /// Its effect waits for a commit (`effects = transactional`).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        deferred: bool,
        /// The replica that ran it, in a deployment.
        #[serde(skip_serializing_if = "Option::is_none")]
        replica: Option<u32>,
    },
    /// A deferred execution finished and committed its effect, together
    /// with its key (a key commits at most once per principal).
    Commit {
        /// Operation tag.
        tag: Rc<str>,
        /// Execution number.
        n: u32,
    },
    /// The event source produced an occurrence (the Events extension):
    /// the `seq`-th of event type `name`, which occurred at `at_us` (it is
    /// recorded when first read past, or at the run's end).
    Occurred {
        /// Event type.
        name: Rc<str>,
        /// Its position in the source (1 = first).
        seq: u64,
        /// When it occurred, µs since the run began.
        at_us: u64,
    },
    /// An execution emitted a chunk (its payload names `(tag, n, index)`).
    Chunk {
        /// Operation tag.
        tag: Rc<str>,
        /// Execution number.
        n: u32,
        /// 1-based chunk index.
        index: u32,
        /// The result (the execution's last chunk).
        last: bool,
    },
}

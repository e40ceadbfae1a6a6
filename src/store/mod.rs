//! The shared store: a host holding what the replicas of a deployment
//! share (sessions, the event store, the key table), as a Redis would,
//! reached over the simulated network. [`serve`] runs on the store host;
//! each replica talks to it through a [`StoreClient`].
//!
//! Writes go to the primary at once; reads ([`Op::GetSession`],
//! [`Op::KeyLook`], [`Op::Tail`]) see a copy that lags the primary by the
//! current lag (`store_lag_ms`, raised by a `store_lag_window`): a write
//! made at `t` is visible to them from `t + lag`. The key table's
//! [`Op::KeyBegin`] is a compare-and-set on the primary, so two replicas
//! never both begin one key, whatever the lag.
//!
//! The wire is one JSON object per line each way, an answer per request,
//! in order. The store imports nothing of the server.

mod client;
mod data;
mod guard;

pub use client::{Connect, StoreClient, StoreDown, StoreIo};
pub use data::{StoreData, StoreState};
pub use guard::{Dropped, GuardRec, GuardWrite, Published, Word, WordKind};

use serde::{Deserialize, Serialize};

/// A session as the store holds it: what a replica needs to serve a
/// session another replica opened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRec {
    /// The transport that issued it: `streamable` or `legacy`.
    pub legacy: bool,
    /// The negotiated protocol version.
    pub protocol_version: Option<String>,
    /// The client's capabilities (JSON text).
    pub capabilities: String,
    /// The bearer token that opened it, if any.
    pub owner: Option<String>,
    /// The replica that opened it.
    pub replica: u32,
}

/// One event as the store holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// The stream it belongs to (unique in its session across replicas).
    pub stream: u32,
    /// Its event id (unique in its session across replicas).
    pub id: u64,
    /// Its data (one JSON-RPC message; empty for a priming event).
    pub data: String,
    /// It is a result: the stream's last event.
    pub result: bool,
}

/// A key's entry in the shared key table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyRec {
    /// The call it was first presented with (JSON text).
    pub call: String,
    /// The stored result (JSON text) once the execution completed;
    /// `None` while it runs.
    pub result: Option<String>,
    /// While it runs: the replica running it, and when its lease ends
    /// (µs of simulated time): past it, another replica may begin the key
    /// again (the runner died with it).
    pub runner: Option<(u32, u64)>,
}

/// A request to the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Stores a session (initialize).
    PutSession { sid: String, rec: SessionRec },
    /// Reads a session (a request for a session this replica lacks).
    GetSession { sid: String },
    /// Forgets a session (DELETE).
    DelSession { sid: String },
    /// Appends events of a session, in order.
    Append {
        sid: String,
        events: Vec<StoredEvent>,
    },
    /// The events of the stream `cursor` belongs to after `cursor`; when
    /// none is visible yet, waits up to `wait_ms` for one.
    Tail {
        sid: String,
        cursor: u64,
        wait_ms: u64,
    },
    /// Reads a key.
    KeyLook { scope: String, key: String },
    /// Begins a key's execution on `replica` unless an entry exists (or
    /// only one whose lease ran out): compare-and-set on the primary.
    KeyBegin {
        scope: String,
        key: String,
        call: String,
        replica: u32,
        lease_ms: u64,
    },
    /// Extends the leases of the keys and streams `replica` is running
    /// (it renews them while it lives; a dead replica's run out). A
    /// stream's first lease is taken so, when its execution starts.
    Renew {
        keys: Vec<(String, String)>,
        streams: Vec<(String, u32)>,
        replica: u32,
        lease_ms: u64,
    },
    /// Completes a key's execution with its result.
    KeyDone {
        scope: String,
        key: String,
        result: String,
    },
    /// Forgets a key whose execution ended without a result.
    KeyDrop { scope: String, key: String },
    /// Reads a session's shared Rule M record, from the primary (a
    /// compare-and-set needs the version the primary holds).
    GuardLoad { sid: String },
    /// Writes to a session's shared Rule M record (see [`GuardWrite`]).
    GuardPut { sid: String, write: GuardWrite },
    /// Several writes, applied in order (a replica's write-behind batch).
    Batch { ops: Vec<Op> },
}

/// The store's answer to one [`Op`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// A write was applied.
    Done,
    /// [`Op::GetSession`]'s answer.
    Session { rec: Option<SessionRec> },
    /// [`Op::Tail`]'s answer: whether the cursor is known (visible), the
    /// events after it, and whether the stream's result is among the
    /// events up to the last one given.
    Events {
        known: bool,
        events: Vec<StoredEvent>,
        ended: bool,
        /// The stream has not ended and the lease of the replica running
        /// its execution ran out: nothing more will come.
        #[serde(default)]
        orphaned: bool,
    },
    /// [`Op::KeyLook`]'s answer, and [`Op::KeyBegin`]'s when an entry
    /// was there.
    Key { rec: Option<KeyRec> },
    /// [`Op::KeyBegin`] began the key.
    Began,
    /// [`Op::GuardLoad`]'s answer (an empty record at version 0 when none).
    Guard { rec: GuardRec },
    /// [`Op::GuardPut`]'s answer: whether it was written, and the version
    /// the record is at now.
    GuardPut { written: bool, version: u64 },
    /// The request was not understood (a bug, said plainly).
    Refused { why: String },
}

/// A replica incarnation's tag in the ids it gives (one per replica and
/// incarnation, at most 16 replicas and 256 incarnations apart).
fn tag(replica: u32, incarnation: u32) -> u64 {
    (u64::from(replica) << 8 | u64::from(incarnation & 0xff)) + 1
}

/// The first event id of a session, for replica `replica` in its
/// `incarnation`, on a shared store: a session's event ids are then
/// unique across replicas (and stay below 2^53).
pub fn event_base(replica: u32, incarnation: u32) -> u64 {
    tag(replica, incarnation) << 40
}

/// The first stream index of a session, likewise.
pub fn stream_base(replica: u32, incarnation: u32) -> u32 {
    (tag(replica, incarnation) as u32) << 16
}

/// The replica that gave event id `id` on a shared store (what a balancer
/// that pins resumes to their owner reads from `Last-Event-ID`).
pub fn replica_of_event(id: u64) -> Option<u32> {
    let tag = id >> 40;
    (tag > 0).then(|| ((tag - 1) >> 8) as u32)
}

/// The id of a task replica `replica` created, from `unique` (a task's
/// requests name it in `Mcp-Name`: a balancer routes them to the replica
/// that runs it, [`replica_of_task`]).
pub fn task_id(replica: u32, unique: &str) -> String {
    format!("task-r{replica}-{unique}")
}

/// The replica a task id names ([`task_id`]), if it names one.
pub fn replica_of_task(id: &str) -> Option<u32> {
    id.strip_prefix("task-r")?.split_once('-')?.0.parse().ok()
}

/// The store host's port.
pub const PORT: u16 = 6379;

/// Serves the store over `state`, each connection `accept` gives on a
/// task of its own, until accepting fails (the host goes down).
pub async fn serve<I, F>(mut accept: impl FnMut() -> F, state: StoreState) -> std::io::Result<()>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
    F: std::future::Future<Output = std::io::Result<I>>,
{
    loop {
        let io = accept().await?;
        tokio::task::spawn_local(data::serve_connection(io, state.clone()));
    }
}

#[cfg(test)]
mod tests;

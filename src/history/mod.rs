//! History: the plain records that the server, the clients and the world
//! write, and the oracle reads (docs/causes.md). Records are primitive facts
//! (produced, written, close seen, cursor presented, decision with its
//! view): the oracle rebuilds everything else from them.
//!
//! Every record gets a trace sequence number (its position in the one
//! global order) and a timestamp from an injected clock: simulated time in
//! the simulator, real elapsed time on a real socket.

mod client;
mod ledger;
mod server;
mod world;

pub use client::{ClientRecord, Outcome, Sent};
pub use ledger::LedgerRecord;
pub use server::{
    EmptyResume, EventKind, LoggedDecision, LoggedStream, LoggedView, Record, RequestReceived,
    ServerClose, StreamKind,
};
pub use world::WorldRecord;

use serde::Serialize;
use std::cell::{Ref, RefCell};
use std::io::{self, Write};
use std::rc::Rc;
use std::time::Duration;

/// A session-scoped event id.
pub type EventId = u64;

/// A stream's index within its session.
pub type StreamIdx = u32;

/// A session id as issued (`Mcp-Session-Id`).
pub type SessionId = Rc<str>;

/// The tag of client `client`'s operation `n` (0-based): clients begin
/// their operations in this order, so the oracle can name one that never
/// began.
pub fn op_tag(client: u32, n: u32) -> String {
    format!("c{client}-op{n}")
}

/// A server-side connection number, unique within one server incarnation.
pub type ConnId = u64;

/// The transport a request, a connection or a negotiation belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Streamable HTTP (`/mcp`).
    Streamable,
    /// Legacy HTTP+SSE (`/sse` + `/messages`).
    Legacy,
}

/// One history entry: sequence number, time, record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// Position in the global trace order.
    pub seq: u64,
    /// Time since the clock's origin, microseconds.
    pub t_us: u64,
    /// The record.
    #[serde(flatten)]
    pub record: Rec,
}

/// A record from the server, a client, or the world.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Rec {
    /// Written by the server.
    Server(Record),
    /// Written by a client.
    Client(ClientRecord),
    /// Written by the world.
    World(WorldRecord),
    /// Written by the side-effect ledger.
    Ledger(LedgerRecord),
}

impl From<Record> for Rec {
    fn from(r: Record) -> Self {
        Rec::Server(r)
    }
}

impl From<ClientRecord> for Rec {
    fn from(r: ClientRecord) -> Self {
        Rec::Client(r)
    }
}

impl From<LedgerRecord> for Rec {
    fn from(r: LedgerRecord) -> Self {
        Rec::Ledger(r)
    }
}

impl From<WorldRecord> for Rec {
    fn from(r: WorldRecord) -> Self {
        Rec::World(r)
    }
}

/// The time source for records.
pub type Clock = Rc<dyn Fn() -> Duration>;

struct Inner {
    entries: Vec<Entry>,
    clock: Clock,
    /// Whether records are kept (off: a server on a real socket, where
    /// nothing reads them and they would only grow).
    keep: bool,
}

/// A shared, append-only history. Cloning shares it.
#[derive(Clone)]
pub struct History {
    inner: Rc<RefCell<Inner>>,
}

impl History {
    /// A history stamped by `clock`.
    pub fn new(clock: Clock) -> Self {
        History {
            inner: Rc::new(RefCell::new(Inner {
                entries: Vec::new(),
                clock,
                keep: true,
            })),
        }
    }

    /// A history that keeps nothing (`mcp-chaos serve`: no oracle reads it,
    /// and a long-running server must not grow with its traffic); its clock
    /// is tokio's, as [`History::tokio_clock`]'s.
    pub fn off() -> Self {
        let h = Self::tokio_clock();
        h.inner.borrow_mut().keep = false;
        h
    }

    /// A history stamped with tokio's clock, from now (simulated time under
    /// a paused runtime, real time otherwise).
    pub fn tokio_clock() -> Self {
        let origin = tokio::time::Instant::now();
        Self::new(Rc::new(move || origin.elapsed()))
    }

    /// Appends a record.
    pub fn record(&self, record: impl Into<Rec>) {
        let mut inner = self.inner.borrow_mut();
        if !inner.keep {
            return;
        }
        let t_us = u64::try_from((inner.clock)().as_micros()).unwrap_or(u64::MAX);
        let seq = inner.entries.len() as u64;
        inner.entries.push(Entry {
            seq,
            t_us,
            record: record.into(),
        });
    }

    /// The clock's reading now, µs.
    pub fn now_us(&self) -> u64 {
        let inner = self.inner.borrow();
        u64::try_from((inner.clock)().as_micros()).unwrap_or(u64::MAX)
    }

    /// Server records only, with their sequence numbers.
    pub fn server_records(&self) -> Vec<(u64, Record)> {
        self.entries()
            .iter()
            .filter_map(|e| match &e.record {
                Rec::Server(r) => Some((e.seq, r.clone())),
                _ => None,
            })
            .collect()
    }

    /// All entries so far.
    pub fn entries(&self) -> Ref<'_, [Entry]> {
        Ref::map(self.inner.borrow(), |i| i.entries.as_slice())
    }

    /// Number of entries so far.
    pub fn len(&self) -> usize {
        self.inner.borrow().entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the history as JSON lines, one entry each.
    pub fn write_jsonl(&self, mut w: impl Write) -> io::Result<()> {
        for e in self.entries().iter() {
            serde_json::to_writer(&mut w, e)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// The trace's fingerprint: SHA-256 over every entry in order, each in
/// MessagePack with struct fields by position (no field names, no text
/// formatting of numbers, no escaping). Same records, same bytes, same
/// digest; computed on every run, so it must cost little next to the run.
/// It is not the digest of the JSONL file `--trace` writes.
pub fn trace_sha256(entries: &[Entry]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut buf = Vec::with_capacity(256);
    for e in entries {
        buf.clear();
        rmp_serde::encode::write(&mut buf, &(e.seq, e.t_us, &e.record)).expect("records encode");
        hasher.update(&buf);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// The history holds tens of millions of entries at scale: a new
    /// variant with large inline fields grows every one of them. Box what
    /// is rare and large (as `RequestReceived`, `Decision`).
    #[test]
    fn an_entry_stays_small() {
        assert!(
            std::mem::size_of::<Entry>() <= 112,
            "Entry is {} bytes",
            std::mem::size_of::<Entry>()
        );
    }
}

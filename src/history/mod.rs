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

pub use client::{ClientRecord, Outcome, Sent, TaskEvent};
pub use ledger::LedgerRecord;
pub use server::{
    Delivery, EmptyResume, EventKind, LoggedDecision, LoggedReason, LoggedStream, LoggedTransport,
    LoggedVerdict, LoggedView, Record, RequestReceived, ServerClose, StreamKind, WordKind,
};
pub use world::{FaultKind, SharedStoreFacts, WorldRecord};

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

/// One operation of the workload: client `client`'s call `call`
/// (0-based), as its tag ([`op_tag`]) names it. Not a field of any record
/// (the trace's bytes stay what they were): it is read back from the tag,
/// here and nowhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId {
    /// Client index.
    pub client: u32,
    /// The client's call, 0-based.
    pub call: u32,
}

impl OpId {
    /// The operation `tag` names, read only as [`op_tag`] writes it
    /// (decimal, no sign, no leading zero), so that distinct strings never
    /// name the same operation; `None` for any other string (a foreign
    /// server's echo, an initialize's id).
    pub fn of_tag(tag: &str) -> Option<OpId> {
        fn num(s: &str) -> Option<u32> {
            if s.is_empty() || (s.len() > 1 && s.starts_with('0')) {
                return None;
            }
            if !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        }
        let (c, n) = tag.strip_prefix('c')?.split_once("-op")?;
        Some(OpId {
            client: num(c)?,
            call: num(n)?,
        })
    }

    /// Its tag.
    pub fn tag(self) -> String {
        op_tag(self.client, self.call)
    }
}

/// A server-side connection number, unique within one server incarnation.
pub type ConnId = u64;

/// A deployment's replica `r` numbers its connections from `r` shifted
/// left by this: no two replicas' records share a connection id.
pub const REPLICA_CONN_SHIFT: u32 = 40;

/// The replica whose server numbered connection `conn` (0 without a
/// deployment).
pub fn replica_of_conn(conn: ConnId) -> u32 {
    (conn >> REPLICA_CONN_SHIFT) as u32
}

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
    /// The next entry's sequence number (entries recorded so far, kept or
    /// not).
    next_seq: u64,
    clock: Clock,
    /// Whether records are taken at all (off: a server on a real socket,
    /// where nothing reads them and they would only grow).
    on: bool,
    /// Whether entries are kept once observed (off: a run judged as its
    /// records arrive, whose memory must not grow with its length).
    keep: bool,
    /// Who reads each entry as it is recorded (fault triggers, fates).
    observers: Vec<Box<dyn Observer>>,
    /// Who reads the entries in batches, in trace order, once the batch
    /// fills or a reader asks (the streaming judge): its work then runs
    /// over a batch at a time rather than between every two records.
    deferred: Vec<Box<dyn Observer>>,
    /// Entries recorded and not yet hashed nor given to `deferred`.
    pending: Vec<Entry>,
    /// The trace's fingerprint so far, over the same bytes as
    /// [`trace_sha256`], so that it needs no second pass over the records.
    hash: TraceHash,
    /// Where the trace streams as JSON lines, when asked for.
    sink: Option<Sink>,
}

impl Inner {
    /// Hashes the pending entries and gives them to the deferred
    /// observers, in trace order.
    fn drain(&mut self) {
        let Inner {
            pending,
            hash,
            deferred,
            ..
        } = self;
        for e in pending.iter() {
            hash.add(e);
            for o in deferred.iter_mut() {
                o.entry(e);
            }
        }
        pending.clear();
    }
}

/// A trace file the entries stream to as they are recorded; the first
/// write error is kept and the sink stops (a record must never fail).
struct Sink {
    w: Box<dyn Write>,
    error: Option<io::Error>,
}

impl Sink {
    fn write(&mut self, e: &Entry) {
        if self.error.is_some() {
            return;
        }
        let r = serde_json::to_writer(&mut self.w, e)
            .map_err(io::Error::from)
            .and_then(|()| self.w.write_all(b"\n"));
        if let Err(err) = r {
            self.error = Some(err);
        }
    }
}

/// Reads each entry as it is recorded, in trace order. An observer must
/// not record into the history it observes.
pub trait Observer {
    /// The next entry.
    fn entry(&mut self, e: &Entry);
}

/// A shared observer: the history holds one handle, the caller another to
/// read what it gathered.
impl<T: Observer> Observer for Rc<RefCell<T>> {
    fn entry(&mut self, e: &Entry) {
        self.borrow_mut().entry(e);
    }
}

/// How a history records: whether it keeps its entries, where its trace
/// streams, and who observes each entry as it is recorded.
pub struct Recording {
    /// Keep every entry (for [`History::entries`]: the batch oracle,
    /// timelines, tests); off, memory does not grow with the run.
    pub keep: bool,
    /// Where the trace streams as JSON lines ([`History::stream_to`]).
    pub trace: Option<Box<dyn Write>>,
    /// Each reads every entry as it is recorded.
    pub observers: Vec<Box<dyn Observer>>,
    /// Each reads every entry in batches (of [`BATCH`], or at a read of
    /// the history): for observers nobody reads until the run ends.
    pub deferred: Vec<Box<dyn Observer>>,
}

/// Entries a history without kept entries gathers before it hashes them
/// and gives them to its deferred observers.
pub const BATCH: usize = 512;

impl Recording {
    /// Keeps no entry: the trace is hashed (and streamed, when given a
    /// file) and observed as it is recorded, then let go.
    pub fn streaming() -> Recording {
        Recording {
            keep: false,
            ..Recording::default()
        }
    }
}

impl Default for Recording {
    /// Keeps every entry, streams nowhere, observed by no one.
    fn default() -> Self {
        Recording {
            keep: true,
            trace: None,
            observers: Vec::new(),
            deferred: Vec::new(),
        }
    }
}

/// [`trace_sha256`] computed one entry at a time.
pub struct TraceHash {
    hasher: sha2::Sha256,
    buf: Vec<u8>,
}

impl Default for TraceHash {
    fn default() -> Self {
        use sha2::Digest;
        TraceHash {
            hasher: sha2::Sha256::new(),
            buf: Vec::with_capacity(256),
        }
    }
}

impl TraceHash {
    /// Adds the next entry (in trace order).
    pub fn add(&mut self, e: &Entry) {
        use sha2::Digest;
        self.buf.clear();
        rmp_serde::encode::write(&mut self.buf, &(e.seq, e.t_us, &e.record))
            .expect("records encode");
        self.hasher.update(&self.buf);
    }

    /// The digest of the entries added so far, lowercase hex.
    pub fn hex(&self) -> String {
        use sha2::Digest;
        self.hasher
            .clone()
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// A shared, append-only history. Cloning shares it.
#[derive(Clone)]
pub struct History {
    inner: Rc<RefCell<Inner>>,
}

impl History {
    /// A history stamped by `clock`.
    pub fn new(clock: Clock) -> Self {
        Self::recording(clock, Recording::default())
    }

    /// A history stamped by `clock` that records as `rec` says.
    pub fn recording(clock: Clock, rec: Recording) -> Self {
        History {
            inner: Rc::new(RefCell::new(Inner {
                entries: Vec::new(),
                next_seq: 0,
                clock,
                on: true,
                keep: rec.keep,
                observers: rec.observers,
                deferred: rec.deferred,
                pending: Vec::new(),
                hash: TraceHash::default(),
                sink: rec.trace.map(|w| Sink { w, error: None }),
            })),
        }
    }

    /// A history that keeps nothing (`mcp-chaos serve`: no oracle reads it,
    /// and a long-running server must not grow with its traffic); its clock
    /// is tokio's, as [`History::tokio_clock`]'s.
    pub fn off() -> Self {
        let h = Self::tokio_clock();
        h.inner.borrow_mut().on = false;
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
        if !inner.on {
            return;
        }
        let t_us = u64::try_from((inner.clock)().as_micros()).unwrap_or(u64::MAX);
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let e = Entry {
            seq,
            t_us,
            record: record.into(),
        };
        if let Some(sink) = inner.sink.as_mut() {
            sink.write(&e);
        }
        for o in &mut inner.observers {
            o.entry(&e);
        }
        if inner.keep {
            inner.hash.add(&e);
            for o in &mut inner.deferred {
                o.entry(&e);
            }
            inner.entries.push(e);
        } else {
            inner.pending.push(e);
            if inner.pending.len() >= BATCH {
                inner.drain();
            }
        }
    }

    /// Hashes the pending entries and gives them to the deferred
    /// observers (a reader of either asks first).
    fn flush(&self) {
        self.inner.borrow_mut().drain();
    }

    /// The trace's fingerprint so far: [`trace_sha256`] of
    /// [`History::entries`], kept up as records arrive.
    pub fn trace_sha256(&self) -> String {
        self.flush();
        self.inner.borrow().hash.hex()
    }

    /// Streams the trace to `w` as JSON lines (the bytes
    /// [`History::write_jsonl`] writes): the entries so far now, every
    /// later one as it is recorded. A history that keeps no entries can
    /// stream only from its first ([`Recording::trace`]).
    pub fn stream_to(&self, w: Box<dyn Write>) -> io::Result<()> {
        let mut inner = self.inner.borrow_mut();
        if !inner.keep && inner.next_seq > 0 {
            return Err(io::Error::other(
                "this history keeps no entries: its trace streams only from the start",
            ));
        }
        let mut sink = Sink { w, error: None };
        for e in &inner.entries {
            sink.write(e);
        }
        if let Some(err) = sink.error.take() {
            return Err(err);
        }
        inner.sink = Some(sink);
        Ok(())
    }

    /// Flushes the streamed trace and stops streaming; the first error a
    /// write met, if any.
    pub fn finish_stream(&self) -> io::Result<()> {
        let sink = self.inner.borrow_mut().sink.take();
        match sink {
            Some(mut s) => match s.error.take() {
                Some(err) => Err(err),
                None => s.w.flush(),
            },
            None => Ok(()),
        }
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

    /// All entries so far (none when it keeps none: [`Recording::keep`]).
    pub fn entries(&self) -> Ref<'_, [Entry]> {
        Ref::map(self.inner.borrow(), |i| i.entries.as_slice())
    }

    /// Observers stop reading: a caller can take back what they gathered.
    pub fn stop_observing(&self) {
        self.flush();
        let mut inner = self.inner.borrow_mut();
        inner.observers.clear();
        inner.deferred.clear();
    }

    /// Whether it keeps its entries.
    pub fn keeps(&self) -> bool {
        self.inner.borrow().keep
    }

    /// Number of entries recorded so far, kept or not.
    pub fn len(&self) -> usize {
        self.inner.borrow().next_seq as usize
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
    let mut hash = TraceHash::default();
    for e in entries {
        hash.add(e);
    }
    hash.hex()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_parse_only_as_op_tag_writes_them() {
        let op = |client, call| Some(OpId { client, call });
        assert_eq!(OpId::of_tag("c0-op0"), op(0, 0));
        assert_eq!(OpId::of_tag("c12-op345"), op(12, 345));
        for t in [
            "c01-op1",
            "c1-op01",
            "c-op1",
            "c1-op",
            "c+1-op1",
            "x1-op1",
            "c1-op1x",
            "c1op1",
            "c4294967296-op0",
            "c3-init#1",
        ] {
            assert_eq!(OpId::of_tag(t), None, "{t}");
        }
        for (c, n) in [(0, 0), (7, 19), (10_000, 3)] {
            assert_eq!(OpId::of_tag(&op_tag(c, n)), op(c, n));
            assert_eq!(op(c, n).map(|o| o.tag()), Some(op_tag(c, n)));
        }
    }

    #[test]
    fn a_record_names_the_operation_of_its_tag() {
        let tag: Rc<str> = op_tag(4, 2).into();
        let started = ClientRecord::OpStarted {
            client: 4,
            tag: tag.clone(),
        };
        assert_eq!(started.op(), Some(OpId { client: 4, call: 2 }));
        let untagged = ClientRecord::Status {
            client: 4,
            tag: None,
            session: None,
            status: 200,
            hint: None,
            stream_first: None,
        };
        assert_eq!(untagged.op(), None);
        let foreign = ClientRecord::Dropped {
            client: 4,
            tag: "not-a-tag".into(),
            after_event: 1,
        };
        assert_eq!(foreign.op(), None);
    }

    /// A shared buffer a sink writes into and the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The digest kept up as records arrive is the batch one over the same
    /// entries, and the streamed trace is the bytes `write_jsonl` writes,
    /// whenever streaming began.
    #[test]
    fn the_trace_streams_and_hashes_as_records_arrive() {
        let t = Rc::new(std::cell::Cell::new(0u64));
        let clock = t.clone();
        let h = History::new(Rc::new(move || Duration::from_micros(clock.get())));
        assert_eq!(h.trace_sha256(), trace_sha256(&[]));
        let tag: Rc<str> = op_tag(1, 0).into();
        h.record(ClientRecord::OpStarted {
            client: 1,
            tag: tag.clone(),
        });
        let streamed = Shared::default();
        h.stream_to(Box::new(streamed.clone())).expect("streams");
        for i in 0..5u32 {
            t.set(100 * u64::from(i) + 7);
            h.record(ClientRecord::Dropped {
                client: 1,
                tag: tag.clone(),
                after_event: i,
            });
            assert_eq!(h.trace_sha256(), trace_sha256(&h.entries()));
        }
        h.finish_stream().expect("flushes");
        h.record(ClientRecord::OpStarted { client: 2, tag });
        let mut batch = Vec::new();
        h.write_jsonl(&mut batch).expect("writes");
        let lines = batch.split(|b| *b == b'\n').count();
        let streamed = streamed.0.borrow();
        assert_eq!(streamed.split(|b| *b == b'\n').count(), lines - 1);
        assert!(
            batch.starts_with(&streamed),
            "the prefix before finish_stream"
        );
        assert_eq!(h.trace_sha256(), trace_sha256(&h.entries()));
        assert_ne!(h.trace_sha256(), trace_sha256(&h.entries()[..6]));
    }

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

//! Finality: the point in the trace after which no record can
//! change an operation's verdict, so that a streaming judge may judge it
//! there and drop its records. Decided online, from the records so far.
//!
//! An operation is final once its client recorded its `outcome` (it
//! handled or gave up its result), every request of it the server received
//! was answered or its connection closed (`responded`, `close_seen`,
//! `server_closed`, or a restart), and every execution of it the server
//! began ended (`tool_ended`, or a restart), every result event of it
//! the server stored was written (`written`), and every event of it the
//! server wrote while it was open was received by its client or met the
//! client's close of that connection (`close_seen`, or a restart): an
//! event replayed behind the result can still arrive after the outcome,
//! and the oracle counts every receipt. Every operation is final at
//! the end of the run (the heal phase's end). An operation done at time T
//! is final at the first record after T: records of the same instant
//! still concern it. [`check_prefixes`] holds the
//! rule to the batch judge: an operation's verdict on the trace cut at any
//! point after it was final is its verdict on the whole trace.

use super::intern::FxMap;
use super::transport::{Firsts, Receipts};
use super::{judge, Judgement, OpVerdict, World};
use crate::history::{ClientRecord, ConnId, Entry, EventId, EventKind, Rec, Record};
use crate::protocol::RequestId;
use std::collections::BTreeMap;
use std::rc::Rc;

/// One operation's open state while its records arrive. The sets are
/// small (an operation's few requests and executions), so they are short
/// vectors; the events a map tracks by event are counted here, the map
/// ([`Finality::by_result`], [`Finality::inflight`]) holding which ones.
#[derive(Default)]
struct Open {
    /// Its client recorded the outcome.
    outcome: bool,
    /// Server connections holding a request of it not yet answered.
    conns: Vec<ConnId>,
    /// Executions begun and not ended, by (session, JSON-RPC id).
    execs: Vec<(u32, RequestId)>,
    /// Result events stored and not yet written (its entries in
    /// `by_result`): a result written after the client gave up is a
    /// half-open write (the white-box refinement of its cause), so it
    /// keeps the operation open.
    results: u32,
    /// Events of it written and not yet received (its entries in
    /// `inflight`).
    inflight: u32,
    /// Its events produced so far, by (session, event).
    events: Vec<(u32, EventId)>,
}

impl Open {
    fn done(&self) -> bool {
        self.outcome
            && self.conns.is_empty()
            && self.execs.is_empty()
            && self.results == 0
            && self.inflight == 0
    }
}

/// Adds `x` to the short set `v`.
fn put<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// Takes `x` out of the short set `v`.
fn take<T: PartialEq>(v: &mut Vec<T>, x: &T) {
    if let Some(i) = v.iter().position(|y| y == x) {
        v.swap_remove(i);
    }
}

/// Tracks finality as records arrive.
pub struct Finality {
    /// By tag (looked up only: what leaves it is sorted by tag first).
    open: FxMap<Rc<str>, Open>,
    /// Which operations a connection's pending requests belong to.
    by_conn: FxMap<ConnId, Vec<Rc<str>>>,
    /// Which operation a running execution belongs to.
    by_exec: FxMap<(u32, RequestId), Rc<str>>,
    /// Which operation an unwritten result event belongs to.
    by_result: FxMap<(u32, EventId), Rc<str>>,
    /// Session numbering and legacy streams' event numbers, to match a
    /// receipt to the event the server wrote.
    receipts: Receipts,
    /// Which open operation an event belongs to, by (session, event).
    event_tag: FxMap<(u32, EventId), Rc<str>>,
    /// Events written and not yet received: their operation and the
    /// connection they went out on.
    inflight: FxMap<(u32, EventId), (Rc<str>, ConnId)>,
    /// Per connection, the events written on it that may be in flight,
    /// and the length at which it next forgets those delivered.
    inflight_on: FxMap<ConnId, (Vec<(u32, EventId)>, usize)>,
    /// Operations done at the time given, released once the clock moves
    /// on: a record of the same instant can still concern them (a drop the
    /// client records after the outcome, a switch at the outcome's time,
    /// which the hazards count as during it).
    done_at: Vec<(Rc<str>, u64)>,
    /// The operations the entry being read touched (kept empty between
    /// entries: a buffer, not state).
    touched: Vec<Rc<str>>,
}

impl Default for Finality {
    fn default() -> Self {
        let mut receipts = Receipts::default();
        receipts.firsts = Firsts::None;
        Finality {
            open: FxMap::default(),
            by_conn: FxMap::default(),
            by_exec: FxMap::default(),
            by_result: FxMap::default(),
            receipts,
            event_tag: FxMap::default(),
            inflight: FxMap::default(),
            inflight_on: FxMap::default(),
            done_at: Vec::new(),
            touched: Vec::new(),
        }
    }
}

impl Finality {
    /// Takes the next entry; returns the operations final before it (done
    /// at an earlier instant).
    pub fn add(&mut self, e: &Entry) -> Vec<Rc<str>> {
        // In time order: those before this instant are a prefix.
        let n = self.done_at.partition_point(|d| d.1 < e.t_us);
        let released = self.done_at.drain(..n).map(|d| d.0).collect();
        self.observe(e);
        released
    }

    /// Takes an entry; the operations it left with nothing open join
    /// `done_at` at its instant.
    fn observe(&mut self, e: &Entry) {
        self.receipts.observe(e);
        // One buffer for every entry: most touch an operation or two.
        let mut touched = std::mem::take(&mut self.touched);
        self.writes(e, &mut touched);
        match &e.record {
            Rec::Client(ClientRecord::OpStarted { tag, .. }) => {
                self.open.entry(tag.clone()).or_default();
            }
            Rec::Client(ClientRecord::Outcome { tag, .. }) => {
                self.open.entry(tag.clone()).or_default().outcome = true;
                touched.push(tag.clone());
            }
            Rec::Server(Record::RequestReceived(r)) => {
                if let Some(tag) = r.tag.as_deref() {
                    let (tag, o) = self.open_of(tag);
                    put(&mut o.conns, r.conn);
                    put(self.by_conn.entry(r.conn).or_default(), tag);
                }
            }
            Rec::Server(Record::Responded { conn, .. })
            | Rec::Server(Record::CloseSeen { conn, .. })
            | Rec::Server(Record::ServerClosed { conn, .. }) => {
                for tag in self.by_conn.remove(conn).unwrap_or_default() {
                    if let Some(o) = self.open.get_mut(&tag) {
                        take(&mut o.conns, conn);
                    }
                    touched.push(tag);
                }
            }
            Rec::Server(Record::ToolStarted {
                session,
                rpc_id,
                tag: Some(tag),
                ..
            }) => {
                let k = (self.receipts.sessions.id(session), rpc_id.clone());
                let (tag, o) = self.open_of(tag);
                put(&mut o.execs, k.clone());
                self.by_exec.insert(k, tag);
            }
            Rec::Server(Record::ToolEnded {
                session, rpc_id, ..
            }) => {
                let k = (self.receipts.sessions.id(session), rpc_id.clone());
                if let Some(tag) = self.by_exec.remove(&k) {
                    if let Some(o) = self.open.get_mut(&tag) {
                        take(&mut o.execs, &k);
                    }
                    touched.push(tag);
                }
            }
            Rec::Server(Record::Produced {
                session,
                event,
                kind: EventKind::Result,
                tag: Some(tag),
                ..
            }) => {
                let k = (self.receipts.sessions.id(session), *event);
                if let Some(old) = self.by_result.insert(k, tag.clone()) {
                    if let Some(o) = self.open.get_mut(&old) {
                        o.results -= 1;
                    }
                    touched.push(old);
                }
                self.open.entry(tag.clone()).or_default().results += 1;
            }
            Rec::Server(Record::Written { session, event, .. }) => {
                let k = (self.receipts.sessions.id(session), *event);
                if let Some(tag) = self.by_result.remove(&k) {
                    if let Some(o) = self.open.get_mut(&tag) {
                        o.results -= 1;
                    }
                    touched.push(tag);
                }
            }
            // A replica's restart ends only its own connections and
            // executions, which records do not tie to it: those operations
            // stay open until the end of the run, when every one is final.
            Rec::Server(Record::ServerStarted {
                replica: Some(_), ..
            }) => {}
            Rec::Server(Record::ServerStarted { .. }) => {
                // A restart ends every connection and execution.
                self.by_conn.clear();
                self.by_exec.clear();
                for (tag, o) in self.open.iter_mut() {
                    o.conns.clear();
                    o.execs.clear();
                    touched.push(tag.clone());
                }
            }
            _ => {}
        }
        touched.sort();
        touched.dedup();
        for t in touched.drain(..) {
            if !self.open.get(&t).is_some_and(Open::done) {
                continue;
            }
            if let Some(o) = self.open.remove(&t) {
                for ev in o.events {
                    self.event_tag.remove(&ev);
                }
            }
            self.done_at.push((t, e.t_us));
        }
        self.touched = touched;
    }

    /// Events in flight: produced for an open operation, written, then
    /// received or lost with the client's close of their connection.
    fn writes(&mut self, e: &Entry, touched: &mut Vec<Rc<str>>) {
        match &e.record {
            Rec::Server(Record::Produced {
                session,
                event,
                tag: Some(tag),
                ..
            }) => {
                let ev = (self.receipts.sessions.id(session), *event);
                let o = self.open.entry(tag.clone()).or_default();
                o.events.push(ev);
                self.event_tag.insert(ev, tag.clone());
            }
            Rec::Server(Record::Written {
                session,
                event,
                conn,
                ..
            }) => {
                let Some(s) = self.receipts.sessions.get(session) else {
                    return;
                };
                let ev = (s, *event);
                let Some(tag) = self.event_tag.get(&ev) else {
                    return;
                };
                if let Some(o) = self.open.get_mut(tag) {
                    if self.inflight.insert(ev, (tag.clone(), *conn)).is_none() {
                        o.inflight += 1;
                    }
                    self.inflight_on
                        .entry(*conn)
                        .or_insert_with(|| (Vec::new(), 64))
                        .0
                        .push(ev);
                }
            }
            Rec::Client(ClientRecord::Received {
                session,
                event,
                transport,
                ..
            }) if !self.inflight.is_empty() => {
                let Some(ev) = self.receipts.event_of(session, *event, *transport) else {
                    return;
                };
                if let Some((tag, conn)) = self.inflight.remove(&ev) {
                    if let Some(o) = self.open.get_mut(&tag) {
                        o.inflight -= 1;
                    }
                    touched.push(tag);
                    // A long-lived connection (a standalone stream, a
                    // pooled one) forgets what it delivered now and then.
                    if let Some((on, limit)) = self.inflight_on.get_mut(&conn) {
                        if on.len() >= *limit {
                            let inflight = &self.inflight;
                            on.retain(|ev| inflight.get(ev).is_some_and(|(_, c)| *c == conn));
                            *limit = (2 * on.len()).max(64);
                        }
                    }
                }
            }
            Rec::Server(Record::CloseSeen { conn, .. }) => {
                for ev in self.inflight_on.remove(conn).unwrap_or_default().0 {
                    if self.inflight.get(&ev).is_some_and(|(_, c)| c == conn) {
                        let (tag, _) = self.inflight.remove(&ev).expect("present");
                        if let Some(o) = self.open.get_mut(&tag) {
                            o.inflight -= 1;
                        }
                        touched.push(tag);
                    }
                }
            }
            Rec::Server(Record::ServerStarted {
                replica: Some(_), ..
            }) => {}
            Rec::Server(Record::ServerStarted { .. }) => {
                // A restart ends every connection: nothing is in flight.
                self.inflight.clear();
                self.inflight_on.clear();
                for o in self.open.values_mut() {
                    o.inflight = 0;
                }
            }
            _ => {}
        }
    }

    /// The open state of operation `tag` (made on first sight) and the
    /// tag as the map holds it: a record's own copy of the tag is
    /// allocated only for an operation seen first.
    fn open_of(&mut self, tag: &str) -> (Rc<str>, &mut Open) {
        let key = match self.open.get_key_value(tag) {
            Some((k, _)) => k.clone(),
            None => {
                let k: Rc<str> = tag.into();
                self.open.insert(k.clone(), Open::default());
                k
            }
        };
        let o = self.open.get_mut(&key).expect("inserted above");
        (key, o)
    }

    /// Operations still open (or done at the latest instant).
    pub fn open(&self) -> usize {
        self.open.len() + self.done_at.len()
    }
}

/// When each operation became final (its tag → the sequence number of the
/// entry that made it so); operations final only at the end are absent.
/// Also the most operations open at once.
pub fn final_at(entries: &[Entry]) -> (BTreeMap<Rc<str>, u64>, usize) {
    let mut f = Finality::default();
    let mut at = BTreeMap::new();
    let mut peak = 0;
    for e in entries {
        for tag in f.add(e) {
            at.insert(tag, e.seq);
        }
        peak = peak.max(f.open());
    }
    (at, peak)
}

/// The operations whose verdict on the trace cut after entry `cut` differs
/// from the whole trace's though they were final by then, for `cuts`
/// evenly spaced cut points: each is a record that reached an operation
/// after the rule called it final and changed its verdict.
pub fn check_prefixes(entries: &[Entry], world: World<'_>, cuts: usize) -> Vec<String> {
    let whole = judge(entries, world);
    let whole = by_tag(&whole);
    let counted = counts(entries, world);
    let (at, _) = final_at(entries);
    let mut wrong = Vec::new();
    for k in 1..=cuts {
        let cut = entries.len() * k / (cuts + 1);
        let part = judge(
            &entries[..cut],
            World {
                clients_finished: false,
                ..world
            },
        );
        let part = by_tag(&part);
        let part_counted = counts(&entries[..cut], world);
        for (tag, &seq) in &at {
            if seq as usize >= cut {
                continue;
            }
            let (p, w) = (part.get(&**tag), whole.get(&**tag));
            if p != w {
                wrong.push(format!(
                    "{tag} final at {seq}, cut at {cut}: {p:?} then {w:?}"
                ));
            }
            let (p, w) = (part_counted.get(&**tag), counted.get(&**tag));
            if p != w {
                wrong.push(format!(
                    "{tag} final at {seq}, cut at {cut}: counts {p:?} then {w:?}"
                ));
            }
        }
    }
    wrong
}

/// What each operation adds to the run's counts (everything `count_op`
/// reads beyond its verdict), by tag.
fn counts(entries: &[Entry], world: World<'_>) -> BTreeMap<String, String> {
    super::ops::judge(entries, world.calls, world.hosts, false)
        .ops
        .iter()
        .map(|op| {
            let latency = match (&op.handled, op.interrupted_us) {
                (Some(h), Some(f)) => Some(h.t_us.saturating_sub(f)),
                _ => None,
            };
            let c = (
                op.failures,
                op.announced,
                op.hazards,
                op.effects(),
                op.execs.len(),
                (op.orphaned, op.silent, op.truncated, op.order_pairs),
                latency,
            );
            (op.tag.to_string(), format!("{c:?}"))
        })
        .collect()
}

/// Each failed or degraded operation's verdict, by tag.
fn by_tag(j: &Judgement) -> BTreeMap<&str, &OpVerdict> {
    j.verdicts.iter().map(|v| (v.tag.as_str(), v)).collect()
}

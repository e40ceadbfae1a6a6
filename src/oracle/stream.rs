//! The streaming judge: the oracle of [`super::judge`] fed one entry at a
//! time as the run records it, so that a run keeps its verdicts and
//! aggregates, not its records. Each operation is judged when
//! [`Finality`] says no later record can change its verdict, then its
//! facts are dropped; whatever is still open at the end of the run is
//! judged then. Its judgement is the batch judge's on the whole trace
//! (tests hold the two equal on every committed scenario).
//!
//! What it keeps beyond the operations open at once: the verdicts of
//! failed and degraded operations, per-class tallies, the run's fault
//! windows and restarts, each client's few counters, and the server-side
//! passes' per-session state (the guard audit's view, Rule T's sessions,
//! the event numbering of legacy streams and the receipts of legacy
//! sessions, replayed events).

use super::audit::Auditor;
use super::causes::{self, Cause};
use super::finality::Finality;
use super::ops::{Builder, OpFacts};
use super::transport::Scan;
use super::whitebox::{HalfOpen, Undo};
use super::{conclude, Classes, Findings, Judgement, World};
use crate::history::{Entry, Observer};

/// A server event: (session number, event id).
type Event = (u32, u64);

/// The clients a run has and what its server is: all the judge needs to
/// know before the first record.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Client i's class label.
    pub classes: Vec<String>,
    /// Client i's workload size (operations planned; 0 when it does not
    /// run).
    pub calls: Vec<u32>,
    /// Client i's host.
    pub hosts: Vec<u32>,
    /// The server is a built-in guarded arm: audit its guard.
    pub audited: bool,
    /// The server is built in: its records may refine causes.
    pub built_in: bool,
}

impl Table {
    /// The batch judge's view of the same run.
    pub fn world(&self, clients_finished: bool) -> World<'_> {
        World {
            classes: &self.classes,
            calls: &self.calls,
            hosts: &self.hosts,
            clients_finished,
            audited: self.audited,
            built_in: self.built_in,
        }
    }
}

/// Judges a run as its records arrive ([`Observer`]); [`Judge::finish`]
/// when the run has ended.
pub struct Judge {
    table: Table,
    ops: Builder,
    finality: Finality,
    classes: Classes,
    found: Findings,
    /// Operations final before the end whose only cause is the run's end
    /// (lost, with no other rule holding): whether clients all finished is
    /// known only at the end, and with it that cause; judged then, with
    /// whether their result was a half-open write.
    deferred: Vec<(u64, OpFacts, Vec<Event>)>,
    scan: Scan,
    audit: Option<Auditor>,
    half_open: Option<HalfOpen>,
    /// Made on the first record of an events reader or the source.
    deliveries: Option<Box<super::deliveries::Deliveries>>,
    end_us: u64,
    /// The most operations held at once.
    peak: usize,
}

impl Judge {
    /// A judge for a run of `table`'s clients.
    pub fn new(table: Table) -> Judge {
        Judge {
            ops: Builder::new(&table.calls, false, true),
            finality: Finality::default(),
            classes: Classes::new(&table.classes),
            found: Findings::default(),
            deferred: Vec::new(),
            scan: Scan::new(),
            audit: table.audited.then(Auditor::default),
            half_open: table.built_in.then(HalfOpen::new),
            deliveries: None,
            end_us: 0,
            peak: 0,
            table,
        }
    }

    /// The most operations it held at once (begun and not yet judged).
    pub fn peak_open(&self) -> usize {
        self.peak
    }

    /// The judgement, once the run has ended: every operation still open
    /// judged now, `clients_finished` saying whether every client
    /// finished before the heal phase ran out.
    pub fn finish(mut self, clients_finished: bool) -> Judgement {
        let Table { calls, hosts, .. } = &self.table;
        let rest = self
            .ops
            .take_rest(calls, hosts, clients_finished, self.end_us);
        for (order, op, half_open) in std::mem::take(&mut self.deferred) {
            let cause = causes::primary(&op, self.ops.run());
            self.found
                .op(&mut self.classes, order, &op, cause, !half_open.is_empty());
        }
        for (order, op) in rest {
            self.count(order, op, true);
        }
        let world = self.table.world(clients_finished);
        self.found.clients(
            world,
            self.ops.clients(),
            self.scan.per_client(),
            &mut self.classes,
        );
        let mut j = conclude(self.classes, self.found, self.audit.map(|a| a.out));
        if let Some(d) = &self.deliveries {
            j.delivery_hist = d.finish(self.end_us).add_to(&mut j.metrics);
        }
        j
    }

    /// Counts a judged operation with its cause; before the end, one whose
    /// cause is the run's end waits for it.
    fn count(&mut self, order: u64, op: OpFacts, at_end: bool) {
        let cause = if op.failures.is_empty() {
            None
        } else {
            causes::primary(&op, self.ops.run())
        };
        let half_open = match self.half_open.as_mut() {
            Some(h) => h.take(&op.tag),
            None => Vec::new(),
        };
        if cause == Some(Cause::RunEnded) && !at_end {
            self.deferred.push((order, op, half_open));
            return;
        }
        let refined = self
            .found
            .op(&mut self.classes, order, &op, cause, !half_open.is_empty());
        if let (Some(verdict), Some(c), Some(h)) = (refined, cause, self.half_open.as_mut()) {
            let undo = Undo {
                verdict,
                client: op.client,
                cause: c as usize,
            };
            h.watch(half_open, undo);
        }
    }
}

impl Observer for Judge {
    fn entry(&mut self, e: &Entry) {
        // Judged before this entry is read: final at an earlier instant,
        // no record from here on changes their verdicts.
        for tag in self.finality.add(e) {
            // One that missed an event waits for the end: a replay may
            // still bring it (the judge counts a receipt whenever it came).
            if !self.ops.whole(&tag) {
                continue;
            }
            if let Some((order, op)) = self.ops.take(&tag, &self.table.hosts) {
                self.count(order, op, false);
            }
        }
        self.end_us = e.t_us;
        if super::deliveries::Deliveries::concerns(e) {
            self.deliveries.get_or_insert_default().entry(e);
        }
        self.ops.entry(e);
        self.scan.observe(e);
        if let Some(a) = self.audit.as_mut() {
            a.entry(e);
        }
        if let Some(undo) = self.half_open.as_mut().and_then(|h| h.entry(e)) {
            self.found
                .unrefine(&mut self.classes, undo.verdict, undo.client, undo.cause);
        }
        self.peak = self.peak.max(self.ops.open());
    }
}

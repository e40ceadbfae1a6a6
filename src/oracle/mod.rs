//! The oracle: turns a history into the metrics of DESIGN §6. It is the
//! only code that sees both sides (server records and client records), and
//! it imports neither the server nor the guard: it rebuilds the guard's
//! view at each decision from the server's primitive records, diffs it
//! against the view the server logged, and applies its own statement of
//! Rule M. A logged view that differs, or a verdict that contradicts the
//! rules, is a decision error; violations in a client's sessions are
//! guard bugs when a decision error touched them, blind spots otherwise.

mod rebuild;

use crate::history::{
    ClientRecord, Entry, EventKind, Outcome, Rec, Record, SessionId, Transport, WorldRecord,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// Migration latency summary (HdrHistogram), µs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Latency {
    /// Summarizes a histogram.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// The blind-spot part of each violation metric.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlindSpots {
    /// Of `duplicate_side_effects`.
    pub duplicate_side_effects: u64,
    /// Of `silent_losses`.
    pub silent_losses: u64,
    /// Of `truncated_responses`.
    pub truncated_responses: u64,
    /// Of `order_violations`.
    pub order_violations: u64,
}

/// Metrics of one run (or one client class of it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Logical operations begun.
    pub operations: u64,
    /// Σ over non-idempotent operations of (executions − 1)⁺.
    pub duplicate_side_effects: u64,
    /// Counted events never received, for operations not lost.
    pub orphaned_events: u64,
    /// Orphaned events no 409 hint, 410 or 404 covered.
    pub silent_losses: u64,
    /// Operations handled while an event of their first execution never arrived.
    pub truncated_responses: u64,
    /// Pairs handled out of the server's causal order.
    pub order_violations: u64,
    /// Operations with no handled result after the heal phase.
    pub lost_operations: u64,
    /// From the interrupting fault to the handled result, µs.
    pub migration_latency_us: Latency,
    /// The blind-spot part of each violation metric (guarded only).
    pub guard_blind_spots: BlindSpots,
    /// Blind spots by kind: `state_lost` (after lost server state) or
    /// `view_gap` (the server's view was inexact, e.g. half-open).
    pub blind_spot_kinds: BTreeMap<String, u64>,
    /// Violations a correct guard should have prevented (guarded only).
    pub guard_bugs: Option<u64>,
    /// Decisions whose logged view or verdict the oracle disputes.
    pub decision_errors: u64,
    /// Guard rejections by reason.
    pub rejections: BTreeMap<String, u64>,
    /// Requests or notifications served under a negotiation the client
    /// made on another transport, with no registered mapping.
    pub capability_violations: u64,
    /// Events replayed from a cursor of another namespace that were not
    /// owed, plus owed events such a replay skipped.
    pub foreign_cursor_replays: u64,
    /// Initializations beyond each client's first.
    pub reinitializations: u64,
}

impl Metrics {
    /// A metric by its JSON name (for expectations).
    pub fn get(&self, name: &str) -> Option<u64> {
        Some(match name {
            "operations" => self.operations,
            "duplicate_side_effects" => self.duplicate_side_effects,
            "orphaned_events" => self.orphaned_events,
            "silent_losses" => self.silent_losses,
            "truncated_responses" => self.truncated_responses,
            "order_violations" => self.order_violations,
            "lost_operations" => self.lost_operations,
            "guard_bugs" => self.guard_bugs?,
            "decision_errors" => self.decision_errors,
            "migration_latency_count" => self.migration_latency_us.count,
            "blind_spots" => {
                let b = &self.guard_blind_spots;
                b.duplicate_side_effects
                    + b.silent_losses
                    + b.truncated_responses
                    + b.order_violations
            }
            "rejections" => self.rejections.values().sum(),
            "capability_violations" => self.capability_violations,
            "foreign_cursor_replays" => self.foreign_cursor_replays,
            "reinitializations" => self.reinitializations,
            other => {
                let kind = other.strip_prefix("blind_spots_")?;
                self.blind_spot_kinds.get(kind).copied().unwrap_or(0)
            }
        })
    }

    /// The metric names `get` understands (for error messages).
    pub const NAMES: &'static [&'static str] = &[
        "operations",
        "duplicate_side_effects",
        "orphaned_events",
        "silent_losses",
        "truncated_responses",
        "order_violations",
        "lost_operations",
        "guard_bugs",
        "decision_errors",
        "migration_latency_count",
        "blind_spots",
        "blind_spots_state_lost",
        "blind_spots_view_gap",
        "rejections",
        "capability_violations",
        "foreign_cursor_replays",
        "reinitializations",
    ];
}

/// What the oracle concluded.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// Whole-run metrics.
    pub metrics: Metrics,
    /// The whole run's migration-latency histogram as (value, count) pairs
    /// (lossless: merging runs re-records them).
    pub latency_hist: Vec<(u64, u64)>,
    /// Per client class (label → metrics).
    pub by_class: BTreeMap<String, Metrics>,
}

/// One violation, attributed to a client.
struct Violation {
    client: u32,
    metric: fn(&mut BlindSpots) -> &mut u64,
    count: u64,
}

/// Judges a history. `classes[i]` is client `i`'s class label and
/// `calls[i]` the operations its workload holds (one never begun counts as
/// lost); `guarded` says whether decisions (and so blind spots and guard
/// bugs) exist.
pub fn judge(entries: &[Entry], classes: &[String], calls: &[u32], guarded: bool) -> Judgement {
    let idx = Index::build(entries);
    let errors = rebuild::decision_errors(entries);
    let mut per_client: BTreeMap<u32, Metrics> = BTreeMap::new();
    let mut latency: BTreeMap<u32, Histogram<u64>> = BTreeMap::new();
    let mut violations: Vec<Violation> = Vec::new();

    for (tag, op) in &idx.ops {
        let c = op.client;
        let pm = per_client.entry(c).or_default();
        pm.operations += 1;
        let execs = idx.executions.get(&**tag).map_or(0, |v| v.len() as u64);
        let dup = execs.saturating_sub(1);
        pm.duplicate_side_effects += dup;
        if dup > 0 {
            violations.push(Violation {
                client: c,
                metric: |b| &mut b.duplicate_side_effects,
                count: dup,
            });
        }
        let handled = idx.handled.get(tag);
        let lost = handled.is_none();
        if lost {
            pm.lost_operations += 1;
        }
        // Orphans: counted events of this op never received.
        if !lost {
            let mut silent = 0;
            for ev in idx.produced.get(&**tag).into_iter().flatten() {
                if idx.received.contains(&(ev.session.clone(), ev.event)) {
                    continue;
                }
                pm.orphaned_events += 1;
                if !idx.covered(c, ev) {
                    silent += 1;
                }
            }
            pm.silent_losses += silent;
            if silent > 0 {
                violations.push(Violation {
                    client: c,
                    metric: |b| &mut b.silent_losses,
                    count: silent,
                });
            }
        }
        // Truncation: handled while an event of the first execution never arrived.
        if let (Some(_), Some(first)) =
            (handled, idx.executions.get(&**tag).and_then(|v| v.first()))
        {
            let missing = idx
                .produced
                .get(&**tag)
                .into_iter()
                .flatten()
                .filter(|e| e.session == first.0 && e.rpc_id == first.1)
                .any(|e| !idx.received.contains(&(e.session.clone(), e.event)));
            if missing {
                pm.truncated_responses += 1;
                violations.push(Violation {
                    client: c,
                    metric: |b| &mut b.truncated_responses,
                    count: 1,
                });
            }
        }
        if let (Some(h), Some(&fault_us)) = (handled, idx.interrupted.get(tag)) {
            let hist = latency.entry(c).or_insert_with(new_hist);
            let _ = hist.record(h.t_us.saturating_sub(fault_us).max(1));
        }
    }
    // Operations never begun are lost too (a stuck client).
    for (c, &n) in calls.iter().enumerate() {
        let c = c as u32;
        let begun = idx.ops_by_client.get(&c).map_or(0, |v| v.len() as u64);
        per_client.entry(c).or_default().lost_operations += u64::from(n).saturating_sub(begun);
    }
    // Order violations, per client.
    for (c, tags) in &idx.ops_by_client {
        let mut n = 0;
        for a in tags {
            for b in tags {
                if a == b {
                    continue;
                }
                let (Some(ha), Some(hb)) = (idx.handled.get(a), idx.handled.get(b)) else {
                    continue;
                };
                let (Some(&ra), Some(&qb)) = (
                    idx.first_result_seq.get(&**a),
                    idx.first_request_seq.get(&**b),
                ) else {
                    continue;
                };
                if ra < qb && hb.seq < ha.seq {
                    n += 1;
                }
            }
        }
        if n > 0 {
            per_client.entry(*c).or_default().order_violations += n;
            violations.push(Violation {
                client: *c,
                metric: |b| &mut b.order_violations,
                count: n,
            });
        }
    }
    // Blind spots and guard bugs.
    if guarded {
        for v in &violations {
            let pm = per_client.entry(v.client).or_default();
            let tainted = idx
                .sessions_of_client
                .get(&v.client)
                .is_some_and(|ss| ss.iter().any(|s| errors.sessions.contains(s)));
            if !tainted {
                *(v.metric)(&mut pm.guard_blind_spots) += v.count;
                let kind = if idx.state_lost_clients.contains(&v.client) {
                    "state_lost"
                } else {
                    "view_gap"
                };
                *pm.blind_spot_kinds.entry(kind.into()).or_insert(0) += v.count;
            }
        }
    }
    // Rejections, per client (by the session that received them).
    for (session, reason) in &idx.rejections {
        if let Some(c) = idx.client_of_session.get(session) {
            *per_client
                .entry(*c)
                .or_default()
                .rejections
                .entry(reason.clone())
                .or_insert(0) += 1;
        }
    }
    for (c, n) in &idx.capability_violations {
        per_client.entry(*c).or_default().capability_violations += n;
    }
    for (c, n) in &idx.foreign_replays {
        per_client.entry(*c).or_default().foreign_cursor_replays += n;
    }
    for (c, n) in &idx.inits {
        per_client.entry(*c).or_default().reinitializations += n.saturating_sub(1);
    }
    for (c, us) in &idx.switch_latency_us {
        for &v in us {
            let _ = latency.entry(*c).or_insert_with(new_hist).record(v.max(1));
        }
    }
    let sum = |clients: &mut dyn Iterator<Item = u32>| {
        let mut total = Metrics::default();
        let mut hist = new_hist();
        for c in clients {
            if let Some(m) = per_client.get(&c) {
                add(&mut total, m);
            }
            if let Some(h) = latency.get(&c) {
                hist.add(h).expect("same bounds");
            }
        }
        total.migration_latency_us = Latency::of(&hist);
        if guarded {
            let b = &total.guard_blind_spots;
            let bugs = (total.duplicate_side_effects - b.duplicate_side_effects)
                + (total.silent_losses - b.silent_losses)
                + (total.truncated_responses - b.truncated_responses)
                + (total.order_violations - b.order_violations);
            total.guard_bugs = Some(bugs);
        }
        total
    };
    let all = classes.len() as u32;
    let mut metrics = sum(&mut (0..all));
    metrics.decision_errors = errors.count;
    if guarded {
        metrics.guard_bugs = metrics.guard_bugs.map(|b| b + errors.count);
    }
    let labels: BTreeSet<&String> = classes.iter().collect();
    let by_class = labels
        .into_iter()
        .map(|l| {
            let mut it = (0..all).filter(|&c| &classes[c as usize] == l);
            (l.clone(), sum(&mut it))
        })
        .collect();
    let mut whole = new_hist();
    for h in latency.values() {
        whole.add(h).expect("same bounds");
    }
    let latency_hist = whole
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    Judgement {
        metrics,
        by_class,
        latency_hist,
    }
}

/// An empty migration-latency histogram (1 µs .. 1 h, 3 significant digits).
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

/// Adds the integer metrics of `m` to `t` (latency is merged separately,
/// from histograms; guard bugs add when both are known).
pub fn add(t: &mut Metrics, m: &Metrics) {
    t.guard_bugs = match (t.guard_bugs, m.guard_bugs) {
        (Some(a), Some(b)) => Some(a + b),
        (a, None) => a,
        (None, b) => b,
    };
    t.decision_errors += m.decision_errors;
    t.operations += m.operations;
    t.duplicate_side_effects += m.duplicate_side_effects;
    t.orphaned_events += m.orphaned_events;
    t.silent_losses += m.silent_losses;
    t.truncated_responses += m.truncated_responses;
    t.order_violations += m.order_violations;
    t.lost_operations += m.lost_operations;
    let (a, b) = (&mut t.guard_blind_spots, &m.guard_blind_spots);
    a.duplicate_side_effects += b.duplicate_side_effects;
    a.silent_losses += b.silent_losses;
    a.truncated_responses += b.truncated_responses;
    a.order_violations += b.order_violations;
    for (k, v) in &m.blind_spot_kinds {
        *t.blind_spot_kinds.entry(k.clone()).or_insert(0) += v;
    }
    for (k, v) in &m.rejections {
        *t.rejections.entry(k.clone()).or_insert(0) += v;
    }
    t.capability_violations += m.capability_violations;
    t.foreign_cursor_replays += m.foreign_cursor_replays;
    t.reinitializations += m.reinitializations;
}

struct OpInfo {
    client: u32,
}

struct Handled {
    seq: u64,
    t_us: u64,
}

/// A counted event of an operation.
struct Counted {
    session: SessionId,
    stream: u32,
    event: u64,
    seq: u64,
    rpc_id: crate::protocol::RequestId,
}

/// A non-2xx status a client received (trace order, status, 409 hint,
/// first event of the stream it names, session).
struct Refusal {
    seq: u64,
    status: u16,
    hint: Option<u64>,
    stream_first: Option<u64>,
    session: Option<SessionId>,
}

/// Everything the metrics need, indexed once.
#[derive(Default)]
struct Index {
    ops: BTreeMap<Rc<str>, OpInfo>,
    ops_by_client: BTreeMap<u32, Vec<Rc<str>>>,
    /// tag → [(session, rpc id)] in execution order.
    executions: BTreeMap<String, Vec<(SessionId, crate::protocol::RequestId)>>,
    produced: BTreeMap<String, Vec<Counted>>,
    received: BTreeSet<(SessionId, u64)>,
    handled: BTreeMap<Rc<str>, Handled>,
    interrupted: BTreeMap<Rc<str>, u64>,
    first_result_seq: BTreeMap<String, u64>,
    first_request_seq: BTreeMap<String, u64>,
    /// (session, stream) → first event id.
    stream_first: BTreeMap<(SessionId, u32), u64>,
    /// client → the refusals it received.
    statuses: BTreeMap<u32, Vec<Refusal>>,
    client_of_session: BTreeMap<SessionId, u32>,
    sessions_of_client: BTreeMap<u32, BTreeSet<SessionId>>,
    /// Clients that lost server state: a 404 or 410, an owed eviction in
    /// one of their sessions, or a restart while they held a session.
    state_lost_clients: BTreeSet<u32>,
    rejections: Vec<(SessionId, String)>,
    /// client → capability violations.
    capability_violations: BTreeMap<u32, u64>,
    /// client → foreign-cursor replays.
    foreign_replays: BTreeMap<u32, u64>,
    /// client → initializations sent.
    inits: BTreeMap<u32, u64>,
    /// client → switch-to-first-result samples, µs.
    switch_latency_us: BTreeMap<u32, Vec<u64>>,
}

impl Index {
    fn build(entries: &[Entry]) -> Index {
        let mut ix = Index::default();
        let mut evicted_sessions: BTreeSet<SessionId> = BTreeSet::new();
        let mut restarts: Vec<u64> = Vec::new();
        let mut session_start: BTreeMap<SessionId, u64> = BTreeMap::new();
        // Transports: the legacy stream's own numbering, who issued what,
        // which sessions a mapping carried across.
        let mut legacy_streams: BTreeSet<(SessionId, u32)> = BTreeSet::new();
        let mut legacy_ids: BTreeMap<SessionId, Vec<u64>> = BTreeMap::new();
        let mut issued: BTreeMap<SessionId, Transport> = BTreeMap::new();
        let mut mapped: BTreeSet<SessionId> = BTreeSet::new();
        let mut notifications: BTreeSet<(SessionId, u64)> = BTreeSet::new();
        let mut served_across: Vec<SessionId> = Vec::new();
        let mut first_receipt: BTreeMap<(SessionId, u64), u64> = BTreeMap::new();
        let mut switches: BTreeMap<u32, (u64, Option<u64>)> = BTreeMap::new();
        // (session, stream, conn, resume seq, replayed-from)
        let mut foreign: Vec<(SessionId, u32, u64, u64, u64)> = Vec::new();
        let mut replayed: BTreeMap<(SessionId, u64), Vec<u64>> = BTreeMap::new();
        for e in entries {
            match &e.record {
                Rec::Client(r) => match r {
                    ClientRecord::Session { client, session } => {
                        ix.client_of_session.insert(session.clone(), *client);
                        ix.sessions_of_client
                            .entry(*client)
                            .or_default()
                            .insert(session.clone());
                    }
                    ClientRecord::OpStarted { client, tag } => {
                        ix.ops.insert(tag.clone(), OpInfo { client: *client });
                        ix.ops_by_client
                            .entry(*client)
                            .or_default()
                            .push(tag.clone());
                    }
                    ClientRecord::Received {
                        session,
                        event,
                        transport,
                        ..
                    } => {
                        // Legacy ids count the legacy stream's events.
                        let id = match transport {
                            Transport::Streamable => Some(*event),
                            Transport::Legacy => legacy_ids
                                .get(session)
                                .and_then(|v| v.get((*event as usize).wrapping_sub(1)))
                                .copied(),
                        };
                        if let Some(id) = id {
                            ix.received.insert((session.clone(), id));
                            first_receipt.entry((session.clone(), id)).or_insert(e.seq);
                        }
                    }
                    ClientRecord::Sent {
                        client,
                        what: crate::history::Sent::Initialize,
                        ..
                    } => *ix.inits.entry(*client).or_insert(0) += 1,
                    ClientRecord::Switched { client, cursor, .. } => {
                        switches.insert(*client, (e.t_us, *cursor));
                    }
                    ClientRecord::Handled { client, .. }
                        if switches.get(client).is_some_and(|s| s.0 > 0) =>
                    {
                        // The first result after a switch: the switch's cost.
                        let (t, cursor) = switches[client];
                        ix.switch_latency_us
                            .entry(*client)
                            .or_default()
                            .push(e.t_us.saturating_sub(t));
                        switches.insert(*client, (0, cursor));
                        if let ClientRecord::Handled { tag, .. } = r {
                            ix.handled.entry(tag.clone()).or_insert(Handled {
                                seq: e.seq,
                                t_us: e.t_us,
                            });
                        }
                    }
                    ClientRecord::Handled { tag, .. } => {
                        ix.handled.entry(tag.clone()).or_insert(Handled {
                            seq: e.seq,
                            t_us: e.t_us,
                        });
                    }
                    ClientRecord::Interrupted { tag, fault_us, .. } => {
                        ix.interrupted.entry(tag.clone()).or_insert(*fault_us);
                    }
                    ClientRecord::Status {
                        client,
                        status,
                        hint,
                        stream_first,
                        session,
                        ..
                    } => {
                        ix.statuses.entry(*client).or_default().push(Refusal {
                            seq: e.seq,
                            status: *status,
                            hint: *hint,
                            stream_first: *stream_first,
                            session: session.clone(),
                        });
                        if matches!(status, 404 | 410) {
                            ix.state_lost_clients.insert(*client);
                        }
                    }
                    ClientRecord::Outcome { tag, outcome, .. } if *outcome != Outcome::Done => {
                        ix.handled.remove(tag);
                    }
                    _ => {}
                },
                Rec::Server(r) => match r {
                    Record::ServerStarted { .. } => restarts.push(e.seq),
                    Record::SessionCreated { session, transport } => {
                        session_start.insert(session.clone(), e.seq);
                        issued.insert(session.clone(), *transport);
                    }
                    Record::MappingApplied { session, .. } => {
                        mapped.insert(session.clone());
                    }
                    Record::StreamOpened {
                        session,
                        stream,
                        kind: crate::history::StreamKind::Legacy,
                        ..
                    } => {
                        legacy_streams.insert((session.clone(), *stream));
                    }
                    Record::Responded {
                        session: Some(session),
                        status,
                        transport,
                        request: true,
                        ..
                    } if (200..300).contains(status)
                        && issued.get(session).is_some_and(|t| t != transport)
                        && !mapped.contains(session) =>
                    {
                        served_across.push(session.clone());
                    }
                    Record::Written {
                        session,
                        event,
                        conn,
                        replay,
                        transport,
                        ..
                    } => {
                        if notifications.contains(&(session.clone(), *event))
                            && issued.get(session).is_some_and(|t| t != transport)
                            && !mapped.contains(session)
                        {
                            served_across.push(session.clone());
                        }
                        if *replay {
                            replayed
                                .entry((session.clone(), *conn))
                                .or_default()
                                .push(*event);
                        }
                    }
                    Record::Resumed {
                        session,
                        stream,
                        conn,
                        from,
                        ..
                    } if issued.get(session) == Some(&Transport::Legacy)
                        && !mapped.contains(session) =>
                    {
                        // A streamable resume of a legacy session, no mapping:
                        // its cursor came from the other namespace.
                        foreign.push((session.clone(), *stream, *conn, e.seq, *from));
                    }
                    Record::Execution {
                        tag,
                        session,
                        rpc_id,
                        ..
                    } => {
                        ix.executions
                            .entry(tag.clone())
                            .or_default()
                            .push((session.clone(), rpc_id.clone()));
                    }
                    Record::Produced {
                        session,
                        stream,
                        event,
                        kind,
                        rpc_id,
                        tag,
                    } => {
                        if legacy_streams.contains(&(session.clone(), *stream)) {
                            legacy_ids.entry(session.clone()).or_default().push(*event);
                        }
                        if *kind == EventKind::Notification {
                            notifications.insert((session.clone(), *event));
                        }
                        match kind {
                            EventKind::Priming => {
                                ix.stream_first.insert((session.clone(), *stream), *event);
                            }
                            EventKind::Progress | EventKind::Result => {
                                if let (Some(tag), Some(rpc_id)) = (tag, rpc_id) {
                                    if *kind == EventKind::Result {
                                        ix.first_result_seq.entry(tag.clone()).or_insert(e.seq);
                                    }
                                    ix.produced.entry(tag.clone()).or_default().push(Counted {
                                        session: session.clone(),
                                        stream: *stream,
                                        event: *event,
                                        seq: e.seq,
                                        rpc_id: rpc_id.clone(),
                                    });
                                }
                            }
                            EventKind::Other | EventKind::Notification => {}
                        }
                    }
                    Record::RequestReceived { tag: Some(tag), .. } => {
                        ix.first_request_seq.entry(tag.clone()).or_insert(e.seq);
                    }
                    Record::Evicted {
                        session,
                        owed: true,
                        ..
                    } => {
                        evicted_sessions.insert(session.clone());
                    }
                    Record::Decision {
                        session, decision, ..
                    } => {
                        if let Some(reason) = decision.reason {
                            ix.rejections.push((session.clone(), reason.to_string()));
                        }
                    }
                    _ => {}
                },
                Rec::World(
                    WorldRecord::FaultStarted { .. }
                    | WorldRecord::FaultEnded { .. }
                    | WorldRecord::HealStarted,
                ) => {}
            }
        }
        for session in served_across {
            if let Some(&c) = ix.client_of_session.get(&session) {
                *ix.capability_violations.entry(c).or_insert(0) += 1;
            }
        }
        for (session, stream, conn, at, from) in foreign {
            let Some(&c) = ix.client_of_session.get(&session) else {
                continue;
            };
            let mut n = 0;
            // Replayed although the client already had it: not owed.
            for ev in replayed.get(&(session.clone(), conn)).into_iter().flatten() {
                if first_receipt
                    .get(&(session.clone(), *ev))
                    .is_some_and(|&r| r < at)
                {
                    n += 1;
                }
            }
            // Owed but skipped: after the client's true position, at or
            // before where the foreign cursor started the replay, never
            // received at all.
            let truth = switches.get(&c).and_then(|(_, cur)| *cur);
            if let (Some(l), true) = (truth, legacy_streams.contains(&(session.clone(), stream))) {
                let ids = legacy_ids.get(&session).cloned().unwrap_or_default();
                let true_pos = ids.get((l as usize).wrapping_sub(1)).copied().unwrap_or(0);
                n += ids
                    .iter()
                    .filter(|&&id| {
                        id > true_pos && id <= from && !ix.received.contains(&(session.clone(), id))
                    })
                    .count() as u64;
            }
            *ix.foreign_replays.entry(c).or_insert(0) += n;
        }
        for (s, c) in &ix.client_of_session {
            let started = session_start.get(s).copied().unwrap_or(0);
            if evicted_sessions.contains(s) || restarts.iter().any(|&r| r > started) {
                ix.state_lost_clients.insert(*c);
            }
        }
        ix
    }

    /// Whether an orphaned event was covered: after it was produced, its
    /// client got a 409 naming its stream at or below it, a 410 on its
    /// stream, or a 404 on its session.
    fn covered(&self, client: u32, ev: &Counted) -> bool {
        let first = self
            .stream_first
            .get(&(ev.session.clone(), ev.stream))
            .copied();
        self.statuses.get(&client).into_iter().flatten().any(|r| {
            r.seq > ev.seq
                && r.session.as_ref() == Some(&ev.session)
                && match r.status {
                    409 => {
                        r.hint.is_some_and(|h| h <= ev.event)
                            && r.stream_first.is_some()
                            && r.stream_first == first
                    }
                    410 => r.stream_first.is_none() || r.stream_first == first,
                    404 => true,
                    _ => false,
                }
        })
    }
}

#[cfg(test)]
mod tests;

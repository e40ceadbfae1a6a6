//! A run's history read as a Jepsen-style timeline: one lane per client,
//! operations as bars, faults as windows and marks. `timeline_svg.rs`
//! draws it.

use crate::history::{ClientRecord, FaultKind, History, LedgerRecord, Outcome, Rec, WorldRecord};
use crate::oracle::OpVerdict;
use std::collections::{BTreeMap, BTreeSet};

/// One operation in a timeline: a bar from its start to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpBar {
    /// Operation tag.
    pub tag: String,
    /// Began, µs.
    pub start_us: u64,
    /// Ended for its client (result handled or given up), µs; the run's
    /// end when unresolved.
    pub end_us: u64,
    /// `ok`, `degraded`, `failed` or `unresolved`.
    pub outcome: &'static str,
    /// The oracle's failures and cause, for failed ones.
    pub why: String,
}

/// One client's lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// Client index.
    pub client: u32,
    /// The client host it runs on.
    pub host: u32,
    /// Its operations, in the order they began.
    pub ops: Vec<OpBar>,
    /// Drops, transport switches and duplicate executions, with their
    /// time in µs.
    pub marks: Vec<(u64, Mark)>,
}

/// What a mark on a lane shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The client's stream dropped ([`FaultKind::Drop`]).
    Drop,
    /// The client switched transport ([`FaultKind::Switch`]).
    Switch,
    /// An operation executed again.
    Duplicate,
}

/// A timed fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultWindow {
    /// Began, µs.
    pub start_us: u64,
    /// Ended, µs (the run's end when it never ended).
    pub end_us: u64,
    /// A timed kind: partition, restart or latency.
    pub kind: FaultKind,
    /// The client host it acts on, if one.
    pub host: Option<u32>,
}

/// A run's history as a Jepsen-style timeline: one lane per client (the
/// clients with failed or degraded operations first, at most
/// [`Timeline::MAX_LANES`]), operations as bars coloured by outcome,
/// timed faults as shaded windows, drops, switches and duplicate
/// executions as marks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// What the timeline shows (scenario, seed, arm, clients).
    pub title: String,
    /// Why this run is drawn: `worst run`, `recommended configuration`,
    /// or both (empty when drawn alone).
    pub role: String,
    /// The timelines drawn stacked on one time axis share a group (the
    /// scenario and seed); empty when drawn alone.
    pub group: String,
    /// The command that reproduces the run (empty when unknown).
    pub repro: String,
    /// Simulated length, µs.
    pub end_us: u64,
    /// When the heal phase began, µs.
    pub heal_us: Option<u64>,
    /// Clients in the run.
    pub clients: u32,
    /// The lanes shown, by client.
    pub lanes: Vec<Lane>,
    /// Timed faults.
    pub faults: Vec<FaultWindow>,
    /// Operations by outcome over the whole run (not only the lanes).
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Every client's lane, shown or not (what [`share_lanes`] picks from).
    pub all_lanes: Vec<Lane>,
}

impl Timeline {
    /// Most lanes a timeline shows.
    pub const MAX_LANES: usize = 40;

    /// Reads a history, with the oracle's verdicts of the run's failed and
    /// degraded operations; client `c` runs on host `c % hosts`.
    pub fn of(title: String, h: &History, verdicts: &[OpVerdict], hosts: u32) -> Timeline {
        let verdict: BTreeMap<&str, &OpVerdict> =
            verdicts.iter().map(|v| (v.tag.as_str(), v)).collect();
        let mut t = Timeline {
            title,
            ..Timeline::default()
        };
        let mut open: BTreeMap<u32, (u64, FaultKind, Option<u32>)> = BTreeMap::new();
        let mut lanes: BTreeMap<u32, Lane> = BTreeMap::new();
        let mut started: BTreeMap<String, (u32, usize)> = BTreeMap::new();
        for e in h.entries().iter() {
            t.end_us = t.end_us.max(e.t_us);
            match &e.record {
                // A restart is an instant: it has no end record.
                Rec::World(WorldRecord::FaultStarted { kind, host, .. })
                    if *kind == FaultKind::Restart =>
                {
                    t.faults.push(FaultWindow {
                        start_us: e.t_us,
                        end_us: e.t_us,
                        kind: *kind,
                        host: *host,
                    });
                }
                Rec::World(WorldRecord::FaultStarted {
                    index, kind, host, ..
                }) => {
                    open.insert(*index, (e.t_us, *kind, *host));
                }
                Rec::World(WorldRecord::FaultEnded { index }) => {
                    if let Some((s, k, host)) = open.remove(index) {
                        t.faults.push(FaultWindow {
                            start_us: s,
                            end_us: e.t_us,
                            kind: k,
                            host,
                        });
                    }
                }
                Rec::World(WorldRecord::HealStarted) => t.heal_us = Some(e.t_us),
                Rec::Client(ClientRecord::OpStarted { client, tag }) => {
                    let l = lanes
                        .entry(*client)
                        .or_insert_with(|| new_lane(*client, hosts));
                    let (outcome, why) = match verdict.get(&**tag) {
                        Some(v) if v.cause.is_some() || !v.failures.is_empty() => (
                            "failed",
                            format!(
                                "{} (cause {})",
                                v.failures.join(", "),
                                v.cause.as_deref().unwrap_or("?")
                            ),
                        ),
                        Some(_) => ("degraded", "missed announced events".to_string()),
                        None => ("ok", String::new()),
                    };
                    started.insert(tag.to_string(), (*client, l.ops.len()));
                    l.ops.push(OpBar {
                        tag: tag.to_string(),
                        start_us: e.t_us,
                        end_us: u64::MAX,
                        outcome,
                        why,
                    });
                }
                Rec::Client(ClientRecord::Outcome {
                    tag, outcome: o, ..
                }) => {
                    if let Some(&(c, i)) = started.get(&**tag) {
                        if let Some(op) = lanes.get_mut(&c).and_then(|l| l.ops.get_mut(i)) {
                            op.end_us = e.t_us;
                            if *o == Outcome::Unresolved && op.outcome == "ok" {
                                op.outcome = "unresolved";
                            }
                        }
                    }
                }
                Rec::Client(ClientRecord::Dropped { client, .. }) => lanes
                    .entry(*client)
                    .or_insert_with(|| new_lane(*client, hosts))
                    .marks
                    .push((e.t_us, Mark::Drop)),
                Rec::Client(ClientRecord::Switched { client, .. }) => lanes
                    .entry(*client)
                    .or_insert_with(|| new_lane(*client, hosts))
                    .marks
                    .push((e.t_us, Mark::Switch)),
                Rec::Ledger(LedgerRecord::Execution { tag, n, .. }) if *n > 1 => {
                    if let Some(&(c, _)) = started.get(&**tag) {
                        if let Some(l) = lanes.get_mut(&c) {
                            l.marks.push((e.t_us, Mark::Duplicate));
                        }
                    }
                }
                _ => {}
            }
        }
        for (_, (s, k, host)) in open {
            t.faults.push(FaultWindow {
                start_us: s,
                end_us: t.end_us,
                kind: k,
                host,
            });
        }
        // By start, then by name (the order the drawing has always had).
        t.faults
            .sort_by(|a, b| (a.start_us, a.kind.name()).cmp(&(b.start_us, b.kind.name())));
        t.clients = lanes.len() as u32;
        for l in lanes.values_mut() {
            for op in &mut l.ops {
                op.end_us = op.end_us.min(t.end_us);
                *t.outcomes.entry(op.outcome).or_insert(0) += 1;
            }
        }
        t.all_lanes = lanes.into_values().collect();
        share_lanes(std::slice::from_mut(&mut t));
        t
    }
}

fn new_lane(client: u32, hosts: u32) -> Lane {
    Lane {
        client,
        host: client % hosts.max(1),
        ops: Vec::new(),
        marks: Vec::new(),
    }
}

/// How much a lane asks to be shown: failed operations first, then
/// degraded or unresolved, then marks, then the rest.
fn rank(l: &Lane) -> u8 {
    if l.ops.iter().any(|o| o.outcome == "failed") {
        0
    } else if l.ops.iter().any(|o| o.outcome != "ok") {
        1
    } else if !l.marks.is_empty() {
        2
    } else {
        3
    }
}

/// Picks the lanes the timelines of one group show: the same clients in
/// each (same seed, same workload), so they compare lane by lane. A
/// client ranks by its most telling lane in any of them (see `rank`),
/// then by index; at most [`Timeline::MAX_LANES`], in client order.
pub fn share_lanes(group: &mut [Timeline]) {
    let mut best: BTreeMap<u32, u8> = BTreeMap::new();
    for t in group.iter() {
        for l in &t.all_lanes {
            let r = best.entry(l.client).or_insert(u8::MAX);
            *r = (*r).min(rank(l));
        }
    }
    let mut chosen: Vec<(u8, u32)> = best.into_iter().map(|(c, r)| (r, c)).collect();
    chosen.sort_unstable();
    chosen.truncate(Timeline::MAX_LANES);
    let keep: BTreeSet<u32> = chosen.into_iter().map(|(_, c)| c).collect();
    for t in group.iter_mut() {
        t.lanes = t
            .all_lanes
            .iter()
            .filter(|l| keep.contains(&l.client))
            .cloned()
            .collect();
    }
}

/// The rows of one lane: each operation's row, so that no two operations
/// whose drawn extents (`extent`: left and right, in drawing units)
/// overlap share a row; the first free row wins. Returns the rows and
/// how many there are (at least 1).
pub fn rows(ops: &[OpBar], extent: impl Fn(&OpBar) -> (f64, f64)) -> (Vec<usize>, usize) {
    let mut ends: Vec<f64> = Vec::new();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let (x0, x1) = extent(op);
        let row = match ends.iter().position(|e| *e <= x0) {
            Some(r) => r,
            None => {
                ends.push(f64::MIN);
                ends.len() - 1
            }
        };
        ends[row] = x1;
        out.push(row);
    }
    (out, ends.len().max(1))
}

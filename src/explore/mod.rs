//! `explore`: every placement of one fault, and of every pair, at the
//! protocol boundaries of a small scenario, instead of a sample of seeds.
//!
//! One run without faults gives the boundaries: for each call, its
//! request sent, the server beginning it, its response head, each event
//! and its result, as the run reached them. Each kind of fault is placed
//! at each boundary ([`placements`]); every placement, and every pair of
//! them at depth 2, runs as an explicit plan (`[[faults.explicit]]` with
//! `at`), under one seed, on one arm.
//!
//! A pair is skipped only by a rule decided before it runs ([`Skip`]):
//! until a placed fault fires, a run with it is the run without it (the
//! plan's other entries do nothing before their boundary, and everything
//! else is the seed's). So if the run of placement A alone never reached
//! B's boundary, B never fires in the run of A and B together: that run
//! *is* A's run, and its verdict A's. The same with A and B swapped.
//! Whether a boundary was reached is read off the single runs, which
//! depth 2 needs anyway.

mod command;
mod report;

pub use command::{command, parse_kinds, Format, Kinds};
pub use report::{render_text, write_outputs, Summary};

use crate::fault::{At, Boundary, Close, Direction, Fault, FaultSpec};
use crate::hosts::sut::Arm;
use crate::run::{self, Options, RunReport};
use crate::scenario::{Behaviour, Scenario};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A kind of fault `explore` places: one of [`PLACEABLE`].
pub use crate::history::FaultKind as Kind;

/// The kinds `explore` places, in the order placements are made.
pub const PLACEABLE: [Kind; 10] = [
    Kind::Drop,
    Kind::Partition,
    Kind::Restart,
    Kind::Latency,
    Kind::Switch,
    Kind::ReplicaCrash,
    Kind::Oneway,
    Kind::Hold,
    Kind::Truncate,
    Kind::Stall,
];

/// The placeable kind `s` names, or a one-line error listing them.
pub fn parse_kind(s: &str) -> Result<Kind, String> {
    PLACEABLE
        .into_iter()
        .find(|k| k.name() == s)
        .ok_or_else(|| {
            let all: Vec<&str> = PLACEABLE.iter().map(|k| k.name()).collect();
            format!(
                "unknown fault kind {s:?} for --kinds: use {}",
                all.join(", ")
            )
        })
}

/// The kinds the scenario's `[faults]` names (its generators and its
/// explicit faults), else drop, partition and restart; and `switch` when
/// it has transport-switch clients.
pub fn default_kinds(s: &Scenario) -> Vec<Kind> {
    let f = &s.faults;
    let mut k = BTreeSet::new();
    if f.drop_rate > 0.0 {
        k.insert(Kind::Drop);
    }
    if f.partitions > 0 {
        k.insert(Kind::Partition);
    }
    if f.restarts > 0 {
        k.insert(Kind::Restart);
    }
    if f.latency_spikes > 0 {
        k.insert(Kind::Latency);
    }
    for x in &f.explicit {
        match x.acting() {
            Fault::Drop { .. } => k.insert(Kind::Drop),
            Fault::Partition { .. } => k.insert(Kind::Partition),
            Fault::Restart { .. } => k.insert(Kind::Restart),
            Fault::Latency { .. } => k.insert(Kind::Latency),
            Fault::ReplicaCrash { .. } => k.insert(Kind::ReplicaCrash),
            _ => false,
        };
    }
    if k.is_empty() {
        k.extend([Kind::Drop, Kind::Partition, Kind::Restart]);
    }
    if s.clients
        .iter()
        .any(|g| g.behaviour == Behaviour::TransportSwitch)
    {
        k.insert(Kind::Switch);
    }
    k.into_iter().collect()
}

/// What to explore.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The scenario file as given (for the repro commands).
    pub path: String,
    /// The scenario as loaded.
    pub scenario: Scenario,
    /// The arm.
    pub arm: Arm,
    /// Client profile and overrides.
    pub opts: Options,
    /// 1: every single placement; 2: and every pair.
    pub depth: u8,
    /// The kinds placed.
    pub kinds: Vec<Kind>,
    /// The root seed every run uses.
    pub seed: u64,
    /// Parallel simulations.
    pub jobs: usize,
    /// Shard K of N (1-based): this shard's share of the space.
    pub shard: (u64, u64),
    /// The largest space it runs (the whole space, over every shard).
    pub max_space: u64,
}

/// The two partition lengths and the budget they are chosen under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// The smallest client retry budget, `backoff_ms × max_attempts`, ms.
    pub retry_budget_ms: u64,
    /// A quarter and a half of it: their sum stays below it.
    pub partition_ms: [u64; 2],
}

impl Budget {
    /// Of the effective scenario's client groups.
    pub fn of(s: &Scenario) -> Budget {
        let retry_budget_ms = s
            .clients
            .iter()
            .map(|g| g.backoff_ms.saturating_mul(u64::from(g.max_attempts)))
            .min()
            .unwrap_or(0)
            .max(4);
        Budget {
            retry_budget_ms,
            partition_ms: [retry_budget_ms / 4, retry_budget_ms / 2],
        }
    }
}

/// What one run concluded, as far as comparing runs needs: its failed
/// operations with their causes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Failed operations.
    pub failed: u64,
    /// Each failed operation: (tag, cause).
    pub ops: Vec<(String, String)>,
    /// The run's trace fingerprint.
    #[serde(skip)]
    pub trace: String,
}

impl Verdict {
    pub fn of_report(r: &RunReport) -> Verdict {
        let ops = r
            .operations
            .iter()
            .filter_map(|o| o.cause.clone().map(|c| (o.tag.clone(), c)))
            .collect();
        Verdict {
            failed: r.metrics.ops_failed,
            ops,
            trace: r.trace_sha256.clone(),
        }
    }

    /// The same operations failed with the same causes.
    pub fn same(&self, other: &Verdict) -> bool {
        self.failed == other.failed && self.ops == other.ops
    }
}

/// One placement: one or two faults, and their boundaries.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Placement {
    /// Indices into the single placements (one, or two ascending).
    pub parts: Vec<usize>,
}

/// Every single placement of `kinds` at the `reached` boundaries of the
/// run without faults, in boundary order: each a fault and the boundary
/// it fires at. An event that was a call's result is its result boundary.
pub fn placements(
    s: &Scenario,
    reached: &[Boundary],
    kinds: &[Kind],
    budget: Budget,
) -> Vec<(Boundary, Fault)> {
    let mut last_event: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut results = BTreeSet::new();
    for b in reached {
        match b.at {
            At::Event => {
                let e = last_event.entry((b.client, b.call)).or_insert(0);
                *e = (*e).max(b.after_event);
            }
            At::Result => {
                results.insert((b.client, b.call));
            }
            _ => {}
        }
    }
    let hosts = s.network.client_hosts.max(1);
    let lat_max = s.network.latency_ms[1].max(1) * 10;
    let mut out = Vec::new();
    for &b in reached {
        let op = (b.client, b.call);
        if b.at == At::Event && results.contains(&op) && last_event.get(&op) == Some(&b.after_event)
        {
            continue;
        }
        let placed = |fault: Fault| Fault::Placed {
            on: b,
            fault: Box::new(fault),
        };
        let host = b.client % hosts;
        for &k in kinds {
            match k {
                Kind::Drop => out.push((
                    b,
                    if b.at == At::Event {
                        Fault::Drop {
                            client: b.client,
                            call: b.call,
                            after_event: b.after_event,
                            close: Close::Fin,
                        }
                    } else {
                        placed(Fault::Drop {
                            client: b.client,
                            call: b.call,
                            after_event: 0,
                            close: Close::Fin,
                        })
                    },
                )),
                Kind::Partition => {
                    for duration_ms in budget.partition_ms {
                        out.push((
                            b,
                            placed(Fault::Partition {
                                host,
                                at_ms: 0,
                                duration_ms,
                            }),
                        ));
                    }
                }
                Kind::Restart => out.push((b, placed(Fault::Restart { at_ms: 0 }))),
                Kind::Latency => out.push((
                    b,
                    placed(Fault::Latency {
                        host,
                        at_ms: 0,
                        duration_ms: budget.partition_ms[1],
                        max_ms: lat_max,
                    }),
                )),
                Kind::Switch => {
                    // After each of a transport-switch client's calls but
                    // its last.
                    let switcher = s.group_of(b.client).filter(|g| {
                        g.behaviour == Behaviour::TransportSwitch && b.call + 1 < g.calls
                    });
                    if b.at == At::Result && switcher.is_some() {
                        out.push((
                            b,
                            Fault::Switch {
                                client: b.client,
                                after_call: b.call,
                            },
                        ));
                    }
                }
                Kind::ReplicaCrash if !s.deployment.is_single() => {
                    for replica in 0..s.deployment.replicas {
                        out.push((
                            b,
                            placed(Fault::ReplicaCrash {
                                replica,
                                at_ms: 0,
                                duration_ms: budget.partition_ms[0],
                                mode: crate::fault::CrashMode::Kill,
                            }),
                        ));
                    }
                }
                Kind::Oneway | Kind::Hold | Kind::Truncate | Kind::Stall => {
                    let len = budget.partition_ms[1];
                    out.extend(chaos_kind(k, host, len).into_iter().map(|f| (b, placed(f))));
                }
                // Not placeable (`parse_kind` refuses them), or a replica
                // crash with one server.
                _ => {}
            }
        }
    }
    out
}

/// The faults of kind `k` (one of the kinds chaos tools add) that explore
/// places on client host `host`, each lasting `len` ms, before placing.
fn chaos_kind(k: Kind, host: u32, len: u64) -> Vec<Fault> {
    match k {
        // One direction at a time.
        Kind::Oneway => [Direction::ToServer, Direction::ToClient]
            .map(|direction| Fault::Oneway {
                host,
                at_ms: 0,
                duration_ms: len,
                direction,
            })
            .to_vec(),
        Kind::Hold => vec![Fault::Hold {
            host,
            at_ms: 0,
            duration_ms: len,
        }],
        // A cut 64 bytes on: mid-event for the next event.
        Kind::Truncate => vec![Fault::Truncate {
            host,
            at_ms: 0,
            duration_ms: len,
            bytes: 64,
            direction: Direction::ToClient,
            close: Close::Fin,
        }],
        Kind::Stall => vec![Fault::Stall {
            at_ms: 0,
            duration_ms: len,
            replica: None,
        }],
        _ => Vec::new(),
    }
}

/// Why a pair was not run, and whose verdict it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Skip {
    /// The pair (indices into the single placements).
    pub pair: (usize, usize),
    /// The single placement whose run it is: the other's boundary was
    /// never reached in it.
    pub same_as: usize,
}

/// One failing placement.
#[derive(Clone, Debug, Serialize)]
pub struct Failing {
    /// Its faults, described.
    pub placement: String,
    /// Its faults as `[[faults.explicit]]` tables.
    #[serde(skip)]
    pub faults: Vec<Fault>,
    /// Depth: 1 or 2.
    pub depth: u8,
    /// Every cause of its failed operations, first-failed first.
    pub causes: Vec<String>,
    /// Its verdict.
    pub verdict: Verdict,
    /// Skipped by the pruning rule: its verdict is that of the single
    /// placement named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// The boundaries of the run without faults, in order.
    pub boundaries: Vec<Boundary>,
    /// The single placements.
    pub singles: Vec<(Boundary, Fault)>,
    /// The space: every placement of depth ≤ the setup's (this shard's
    /// share).
    pub space: u64,
    /// Simulations actually run (the run without faults included).
    pub runs: u64,
    /// The pairs skipped, with their representative.
    pub skipped: Vec<Skip>,
    /// Every failing placement, smallest first.
    pub failing: Vec<Failing>,
    /// The verdict of each single placement.
    pub single_verdicts: Vec<Verdict>,
    /// The verdict without faults.
    pub baseline: Verdict,
    /// The partition lengths and the budget.
    pub budget: Budget,
    /// Wall-clock time, ms.
    pub wall_ms: u64,
    /// The plan every placement joins: the switches the seed draws for
    /// transport-switch clients, explicit ([`with_plan`]).
    pub baseline_plan: Vec<Fault>,
}

/// The scenario with `faults` as its whole plan (generators off) and the
/// baseline's switches kept (a placed switch replaces its client's).
pub fn with_plan(s: &Scenario, baseline: &[Fault], faults: &[Fault]) -> Scenario {
    let mut out = s.clone();
    let switched: BTreeSet<u32> = faults
        .iter()
        .filter_map(|f| match f {
            Fault::Switch { client, .. } => Some(*client),
            _ => None,
        })
        .collect();
    let mut explicit: Vec<Fault> = baseline
        .iter()
        .filter(|f| !matches!(f, Fault::Switch { client, .. } if switched.contains(client)))
        .cloned()
        .collect();
    explicit.extend(faults.iter().cloned());
    out.faults = FaultSpec {
        explicit,
        ..FaultSpec::default()
    };
    out
}

/// Runs one plan, watching boundaries.
fn run_plan(setup: &Setup, scenario: &Scenario) -> Result<RunReport, String> {
    run::run_arm_watching(scenario, setup.seed, setup.arm, &setup.opts).map_err(|e| e.to_string())
}

/// Whether item `i` of the space is this shard's.
fn mine(i: u64, (k, n): (u64, u64)) -> bool {
    i % n.max(1) == k.max(1) - 1
}

/// Explores `setup`: the run without faults, every single placement, and
/// at depth 2 every pair not skipped by the rule.
pub fn explore(setup: &Setup) -> Result<Exploration, String> {
    let started = std::time::Instant::now();
    let effective = run::effective(&setup.scenario, &setup.opts)?;
    let budget = Budget::of(&effective);
    let mut cleared = effective.clone();
    cleared.faults = FaultSpec::default();
    // The baseline's drawn switches (transport-switch clients switch
    // once, drawn from the seed) become explicit, so that no placement
    // changes what the seed draws.
    let baseline_plan = cleared.fault_plan(setup.seed).faults;
    let base = with_plan(&setup.scenario, &baseline_plan, &[]);
    let first = run_plan(setup, &base)?;
    let baseline = Verdict::of_report(&first);
    let boundaries = first.reached.clone();
    let singles = placements(&effective, &boundaries, &setup.kinds, budget);
    let n = singles.len() as u64;
    let whole = if setup.depth >= 2 {
        n + n * n.saturating_sub(1) / 2
    } else {
        n
    };
    if whole > setup.max_space {
        return Err(format!(
            "the space is {whole} placements of depth ≤ {} ({n} single placements at {} \
             boundaries), above --max-space {}: explore a smaller scenario (1-3 clients, 2-4 \
             calls), --depth 1, fewer --kinds, or raise --max-space",
            setup.depth,
            boundaries.len(),
            setup.max_space
        ));
    }
    let single_runs = crate::sweep::map_all(&singles, setup.jobs, &|(_, f)| {
        run_plan(
            setup,
            &with_plan(&setup.scenario, &baseline_plan, std::slice::from_ref(f)),
        )
    });
    let mut single_verdicts = Vec::new();
    let mut reached: Vec<BTreeSet<Boundary>> = Vec::new();
    for r in single_runs {
        let r = r?;
        single_verdicts.push(Verdict::of_report(&r));
        reached.push(r.reached.into_iter().collect());
    }
    let mut runs = 1 + n;
    let mut space = (0..n).filter(|&i| mine(i, setup.shard)).count() as u64;
    let mut failing = Vec::new();
    for (i, v) in single_verdicts.iter().enumerate() {
        if v.failed > 0 && mine(i as u64, setup.shard) {
            failing.push(failing_of(&singles, &[i], v.clone(), None));
        }
    }
    let mut skipped = Vec::new();
    if setup.depth >= 2 {
        let mut pairs = Vec::new();
        let mut index = n;
        for a in 0..singles.len() {
            for b in a + 1..singles.len() {
                let i = index;
                index += 1;
                if !mine(i, setup.shard) {
                    continue;
                }
                space += 1;
                // A switch replaces its client's drawn one from the start:
                // a pair with one is always run.
                let switch = |i: usize| matches!(singles[i].1, Fault::Switch { .. });
                if switch(a) || switch(b) {
                    pairs.push((a, b));
                } else if !reached[a].contains(&singles[b].0) {
                    skipped.push(Skip {
                        pair: (a, b),
                        same_as: a,
                    });
                } else if !reached[b].contains(&singles[a].0) {
                    skipped.push(Skip {
                        pair: (a, b),
                        same_as: b,
                    });
                } else {
                    pairs.push((a, b));
                }
            }
        }
        let pair_runs = crate::sweep::map_all(&pairs, setup.jobs, &|&(a, b)| {
            let faults = [singles[a].1.clone(), singles[b].1.clone()];
            run_plan(setup, &with_plan(&setup.scenario, &baseline_plan, &faults))
        });
        runs += pairs.len() as u64;
        let mut found = Vec::new();
        for (&(a, b), r) in pairs.iter().zip(pair_runs) {
            let v = Verdict::of_report(&r?);
            if v.failed > 0 {
                found.push(((a, b), failing_of(&singles, &[a, b], v, None)));
            }
        }
        for s in &skipped {
            let v = &single_verdicts[s.same_as];
            if v.failed > 0 {
                let same = describe(&singles[s.same_as].1);
                let f = failing_of(&singles, &[s.pair.0, s.pair.1], v.clone(), Some(same));
                found.push((s.pair, f));
            }
        }
        found.sort_by_key(|(p, _)| *p);
        failing.extend(found.into_iter().map(|(_, f)| f));
    }
    Ok(Exploration {
        boundaries,
        singles,
        space,
        runs,
        skipped,
        failing,
        single_verdicts,
        baseline,
        budget,
        wall_ms: started.elapsed().as_millis() as u64,
        baseline_plan,
    })
}

/// A failing placement of `parts`.
fn failing_of(
    singles: &[(Boundary, Fault)],
    parts: &[usize],
    verdict: Verdict,
    same_as: Option<String>,
) -> Failing {
    let faults: Vec<Fault> = parts.iter().map(|&i| singles[i].1.clone()).collect();
    let mut causes: Vec<String> = Vec::new();
    for (_, c) in &verdict.ops {
        if !causes.contains(c) {
            causes.push(c.clone());
        }
    }
    Failing {
        placement: faults.iter().map(describe).collect::<Vec<_>>().join(" + "),
        faults,
        depth: parts.len() as u8,
        causes,
        verdict,
        same_as,
    }
}

/// A placed fault in a few words: `partition of host 0 for 375 ms at
/// request_received of client 0's call 1`.
pub fn describe(f: &Fault) -> String {
    match f {
        Fault::Placed { on, fault } => {
            let what = match **fault {
                Fault::Drop { .. } => "drop".to_string(),
                Fault::Partition {
                    host, duration_ms, ..
                } => format!("partition of host {host} for {duration_ms} ms"),
                Fault::Latency {
                    host,
                    duration_ms,
                    max_ms,
                    ..
                } => format!("latency {max_ms} ms on host {host} for {duration_ms} ms"),
                Fault::ReplicaCrash {
                    replica,
                    duration_ms,
                    ..
                } => format!("crash of replica {replica} for {duration_ms} ms"),
                Fault::Oneway {
                    host,
                    duration_ms,
                    direction,
                    ..
                } => {
                    let way = match direction {
                        Direction::ToServer => "to the server",
                        Direction::ToClient => "to the client",
                    };
                    format!("oneway cut {way} on host {host} for {duration_ms} ms")
                }
                Fault::Hold {
                    host, duration_ms, ..
                } => format!("hold of host {host} for {duration_ms} ms"),
                Fault::Truncate { host, bytes, .. } => {
                    format!("truncate of host {host}'s connections after {bytes} bytes")
                }
                Fault::Stall { duration_ms, .. } => format!("stall for {duration_ms} ms"),
                ref other => crate::fault::kind_name(other).replace('_', " "),
            };
            if on.at == At::Event {
                format!("{what} {on}")
            } else {
                format!("{what} at {on}")
            }
        }
        Fault::Drop {
            client,
            call,
            after_event,
            ..
        } => format!("drop after event {after_event} of client {client}'s call {call}"),
        Fault::Switch { client, after_call } => {
            format!("switch of client {client} after its call {after_call}")
        }
        other => crate::run::never_applied::describe(other),
    }
}

//! What a user reads about planned faults that never applied: a timed fault
//! the run ended before is named with both times and the fix ("the run
//! ended at 979 ms, before it; move it earlier or lengthen the workload"),
//! in `run`'s report and in the warning `compare` and `sweep` give for a
//! declared hazard no seed exercised. Read from the run reports alone (each
//! not-applied fault and the run's simulated end), so the reports' JSON and
//! the committed results stay as they are.

use crate::fault::kind_name;
use crate::fault::Fault;
use crate::run::{NotApplied, RunReport};
use crate::scenario::Scenario;

/// A fault in a few words: `partition of host 0 at 1500 ms`.
pub fn describe(f: &Fault) -> String {
    match *f {
        Fault::Partition { host, at_ms, .. } => format!("partition of host {host} at {at_ms} ms"),
        Fault::Latency { host, at_ms, .. } => format!("latency of host {host} at {at_ms} ms"),
        Fault::Restart { at_ms } => format!("restart at {at_ms} ms"),
        Fault::Drop {
            client,
            call,
            after_event,
            close,
        } => format!(
            "drop{} of client {client} call {call} after event {after_event}",
            if close.is_fin() { "" } else { " (rst)" }
        ),
        Fault::Switch { client, after_call } => {
            format!("switch of client {client} after call {after_call}")
        }
        Fault::ReplicaCrash {
            replica,
            at_ms,
            mode,
            ..
        } => format!("{} of replica {replica} at {at_ms} ms", mode.as_str()),
        Fault::ReplicaDrain { replica, at_ms, .. } => {
            format!("drain of replica {replica} at {at_ms} ms")
        }
        Fault::Deploy { at_ms, .. } => format!("rolling deploy at {at_ms} ms"),
        Fault::BalancerRestart { at_ms } => format!("balancer restart at {at_ms} ms"),
        Fault::ReplicaAdd { at_ms } => format!("replica added at {at_ms} ms"),
        Fault::ReplicaRemove { replica, at_ms } => {
            format!("removal of replica {replica} at {at_ms} ms")
        }
        Fault::StorePartition { at_ms, .. } => format!("store partition at {at_ms} ms"),
        Fault::StoreLagWindow { at_ms, lag_ms, .. } => {
            format!("store lag of {lag_ms} ms at {at_ms} ms")
        }
        Fault::StoreRestart { at_ms } => format!("store restart at {at_ms} ms"),
        Fault::Skew {
            at_ms,
            offset_ms,
            on,
            host,
            clock,
        } => {
            let whose = match on {
                crate::fault::SkewOn::Client => format!("client host {host}"),
                crate::fault::SkewOn::Server => "the server".to_string(),
                crate::fault::SkewOn::Balancer => "the balancer".to_string(),
            };
            let which = match clock {
                crate::fault::SkewClock::Timers => "clock",
                crate::fault::SkewClock::Wall => "wall clock",
            };
            format!("skew of {whose}'s {which} by {offset_ms} ms at {at_ms} ms")
        }
        Fault::Stall {
            at_ms,
            replica: Some(r),
            ..
        } => format!("stall of replica {r} at {at_ms} ms"),
        Fault::Stall { at_ms, .. } => format!("stall of the server at {at_ms} ms"),
        Fault::ReceiverRestart { client, at_ms, .. } => {
            format!("restart of client {client}'s webhook receiver at {at_ms} ms")
        }
        Fault::Oneway {
            host,
            at_ms,
            direction,
            ..
        } => {
            let way = match direction {
                crate::fault::Direction::ToServer => "to the server",
                crate::fault::Direction::ToClient => "to the client",
            };
            format!("oneway cut {way} of host {host} at {at_ms} ms")
        }
        Fault::Placed { on, ref fault } => {
            let what = describe(fault);
            let what = what.split(" at ").next().unwrap_or(&what);
            format!("{what} {on}")
        }
        ref f => {
            let kind = crate::fault::kind_name(f).replace('_', " ");
            let host = f.host().unwrap_or(0);
            let at_ms = f.at_ms().unwrap_or(0);
            format!("{kind} of host {host} at {at_ms} ms")
        }
    }
}

/// Whether the run (ended at `sim_ms`) ended before `n`'s fault started.
fn ended_before(n: &NotApplied, sim_ms: u64) -> bool {
    n.fault.at_ms().is_some_and(|at| at >= sim_ms)
}

/// How `scenario` names `f`: `faults.explicit[2] (partition of host 0 at
/// 1500 ms)` when the file writes it, else the fault in a few words.
pub fn label(f: &Fault, scenario: Option<&Scenario>) -> String {
    match scenario.and_then(|s| s.faults.explicit.iter().position(|x| x == f)) {
        Some(i) => format!("faults.explicit[{i}] ({})", describe(f)),
        None => describe(f),
    }
}

/// The sentence for `n` of a run that ended at `sim_ms`, when the run
/// ended before the fault's start; `None` for any other reason.
pub fn sentence(n: &NotApplied, sim_ms: u64, scenario: Option<&Scenario>) -> Option<String> {
    ended_before(n, sim_ms).then(|| {
        format!(
            "{} was never applied: the run ended at {sim_ms} ms, before it; move it earlier or \
             lengthen the workload",
            label(&n.fault, scenario)
        )
    })
}

/// Why the runs of one scenario exercised none of `hazard`, when it is
/// because no fault of its kind was ever applied; `None` when some were
/// (or none was planned): then only more faults or seeds would help.
pub fn why_uncovered(
    hazard: &str,
    runs: &[&RunReport],
    scenario: Option<&Scenario>,
) -> Option<String> {
    let planned: u64 = runs
        .iter()
        .map(|r| r.faults.planned.get(hazard).copied().unwrap_or(0))
        .sum();
    let applied: u64 = runs
        .iter()
        .map(|r| r.faults.applied.get(hazard).copied().unwrap_or(0))
        .sum();
    if planned == 0 || applied > 0 {
        return None;
    }
    let mut late: Vec<(&Fault, u64)> = Vec::new();
    let mut other: Option<&NotApplied> = None;
    for r in runs {
        for n in r
            .faults
            .not_applied
            .iter()
            .filter(|n| kind_name(&n.fault) == hazard)
        {
            if ended_before(n, r.sim_ms) {
                late.push((&n.fault, r.sim_ms));
            } else if other.is_none() {
                other = Some(n);
            }
        }
    }
    if let Some(n) = other {
        return Some(format!(
            "no {hazard} fault was applied: {} was not: {}",
            label(&n.fault, scenario),
            n.reason
        ));
    }
    let (first, _) = *late.first()?;
    let lo = late.iter().map(|(_, e)| *e).min()?;
    let hi = late.iter().map(|(_, e)| *e).max()?;
    let ended = if lo == hi {
        format!("the run ended at {lo} ms")
    } else {
        format!("the runs ended at {lo} to {hi} ms")
    };
    if late.iter().all(|(f, _)| *f == first) {
        return Some(format!(
            "{} was never applied: {ended}, before it; move it earlier or lengthen the workload",
            label(first, scenario)
        ));
    }
    let earliest = late.iter().filter_map(|(f, _)| f.at_ms()).min()?;
    let mut distinct: Vec<&Fault> = late.iter().map(|(f, _)| *f).collect();
    distinct.sort();
    distinct.dedup();
    Some(format!(
        "none of its {} planned {hazard} faults was applied: {ended}, before each started (the \
         earliest at {earliest} ms); move them earlier (a shorter duration_ms draws generated \
         ones earlier) or lengthen the workload",
        distinct.len()
    ))
}

/// The warnings for a summary's uncovered hazards, one line per scenario
/// and cause: the hazards whose faults the runs ended before, each with
/// its sentence, then the rest together.
pub fn uncovered_warnings(
    summary: &crate::sweep::Summary,
    scenario: impl Fn(&str) -> Option<Scenario>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (sc, hz) in &summary.uncovered_hazards {
        let runs: Vec<&RunReport> = summary.runs.iter().filter(|r| &r.scenario == sc).collect();
        let file = scenario(sc);
        let mut rest = Vec::new();
        for h in hz {
            match why_uncovered(h, &runs, file.as_ref()) {
                Some(why) => out.push(format!(
                    "scenario {sc} declares hazard {h}, which no seed exercised: {why}"
                )),
                None => rest.push(h.as_str()),
            }
        }
        if !rest.is_empty() {
            out.push(format!(
                "scenario {sc} declares hazards no seed exercised: {} (its fault plan tests \
                 nothing there: add faults or seeds)",
                rest.join(", ")
            ));
        }
    }
    out
}

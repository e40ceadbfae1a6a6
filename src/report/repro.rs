//! The reproduce loop from a report: for one failing operation, the
//! command that re-runs its run and the one that shrinks the run down to
//! that failure (`shrink --until-cause` with the operation's cause); and
//! the section that lists them, one row per scenario and cause.

use super::commands::commands;
use crate::history::OpId;
use crate::oracle::OpVerdict;
use crate::sweep::Summary;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `c3-op1` as `client 3, call 1`; any other tag as it is.
fn client_and_call(op: &OpVerdict) -> String {
    match OpId::of_tag(&op.tag).map(|o| o.call) {
        Some(call) => format!("client {}, call {call} (`{}`)", op.client, op.tag),
        None => format!("client {} (`{}`)", op.client, op.tag),
    }
}

/// "Failing operations worth a look": per scenario, the run its timeline
/// draws; per cause of its failed operations one row: how many, one
/// example (client, call), the command that reproduces the run and the one
/// that shrinks it to that cause. At most one row per scenario × cause.
pub fn worth_a_look_markdown(s: &Summary) -> String {
    let mut rows = String::new();
    for r in super::picks::pick_timeline_runs(s) {
        let mut by_cause: BTreeMap<&str, (u64, &OpVerdict)> = BTreeMap::new();
        for op in &r.operations {
            let Some(c) = op.cause.as_deref() else {
                continue;
            };
            let e = by_cause.entry(c).or_insert((0, op));
            e.0 += 1;
        }
        for (cause, (n, op)) in by_cause {
            let (repro, shrink) = commands(s, r, op);
            let _ = writeln!(
                rows,
                "| {} | {} · {} · {} | {cause} | {n} | {} | `{repro}` | `{shrink}` |",
                r.scenario,
                r.seed,
                r.server,
                r.clients,
                client_and_call(op)
            );
        }
    }
    let mut out = String::from("## Failing operations worth a look\n\n");
    if rows.is_empty() {
        out.push_str("No operation failed in the runs the timelines draw.\n\n");
        return out;
    }
    out.push_str("Per scenario, the run its timeline draws (seed · arm · clients); one row per cause of its failed operations, with one example. The first command re-runs the run and writes its trace (`mcp-chaos explain --trace FILE --op TAG` then tells the example's story); the second shrinks the run to a small scenario (fewest faults, clients and calls it finds) in which an operation still fails with that cause, and prints how to run it.\n\n");
    out.push_str("| scenario | run | cause | failed ops | example | reproduce | shrink to it |\n|---|---|---|---|---|---|---|\n");
    out.push_str(&rows);
    out.push('\n');
    out
}

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

/// "Failing operations worth a look": what remains under the
/// recommendation. Per scenario, the recommended configuration's run with
/// the most failed operations (ties: the lowest seed); per cause of its
/// failed operations one row: how many, one example (client, call), the
/// command that reproduces the run and the one that shrinks it to that
/// cause. At most one row per scenario × cause.
pub fn worth_a_look_markdown(s: &Summary) -> String {
    let mut out = String::from("## Failing operations worth a look\n\n");
    let Some(rec) = super::recommend::recommend(s) else {
        out.push_str("Nothing ran.\n\n");
        return out;
    };
    let best = rec.best();
    let name = best.name();
    let mut rows = String::new();
    for sc in super::scenarios(s) {
        let run = s
            .runs
            .iter()
            .filter(|r| {
                r.scenario == sc
                    && r.server == best.server
                    && r.clients == best.clients
                    && r.overrides == best.settings
                    && r.metrics.ops_failed > 0
            })
            .max_by_key(|r| (r.metrics.ops_failed, std::cmp::Reverse(r.seed)));
        let Some(r) = run else {
            continue;
        };
        // The first example of each cause; the count from the metrics (a
        // summary keeps a few examples per cause, not every operation).
        let mut by_cause: BTreeMap<&str, &OpVerdict> = BTreeMap::new();
        for op in &r.operations {
            if let Some(c) = op.cause.as_deref() {
                by_cause.entry(c).or_insert(op);
            }
        }
        for (cause, op) in by_cause {
            let n = r.metrics.failures_by_cause.get(cause).copied().unwrap_or(0);
            let (repro, shrink) = commands(s, r, op);
            let _ = writeln!(
                rows,
                "| {} | {} | {cause} | {n} | {} | `{repro}` | `{shrink}` |",
                r.scenario,
                r.seed,
                client_and_call(op)
            );
        }
    }
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "No operation failed under the recommendation, {name}: nothing remains to look at.\n"
        );
        return out;
    }
    let _ = writeln!(out, "What remains under the recommendation, {name}: per scenario, its run with the most failed operations; one row per cause, with one example. The first command re-runs the run and writes its trace (`mcp-chaos explain --trace FILE --op TAG` then tells the example's story); the second shrinks the run to a small scenario (fewest faults, clients and calls it finds) in which an operation still fails with that cause, and prints how to run it.\n");
    out.push_str("| scenario | seed | cause | failed ops | example | reproduce | shrink to it |\n|---|---|---|---|---|---|---|\n");
    out.push_str(&rows);
    out.push('\n');
    out
}

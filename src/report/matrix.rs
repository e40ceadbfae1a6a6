//! The mechanism matrix: scenario × client profile down, arm across. Each
//! cell says how many operations failed and why (by cause), how many were
//! degraded, what migration cost in latency (p50 / p99), and what the arm
//! paid for it (extra executions, replayed events, rejections,
//! re-initializations). Reading a column against its baseline's says what
//! one mechanism buys; reading a row down the profiles says what one client
//! capability buys.

use super::{causes_line, ms, xml};
use crate::hosts::sut::ArmEntry;
use crate::run::{Profile, AS_WRITTEN};
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// The arms of a summary in report order ([`arm_rank`]), then any other,
/// by name.
pub(super) fn arms(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.server.as_str()).collect();
    v.sort_by_key(|a| (arm_rank(a), *a));
    v.dedup();
    v
}

/// Where an arm sorts: each built-in arm right after its baseline (the
/// legend's order), then any other.
pub(super) fn arm_rank(a: &str) -> usize {
    ArmEntry::in_report_order()
        .iter()
        .position(|e| e.name == a)
        .unwrap_or(usize::MAX)
}

/// The client profiles of a summary: as written first, then
/// [`Profile::ALL`] order.
pub(super) fn profiles(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.clients.as_str()).collect();
    v.sort_by_key(|p| (profile_rank(p), *p));
    v.dedup();
    v
}

/// Where a client profile sorts: as written first, then
/// [`Profile::ALL`] order, then any.
pub(super) fn profile_rank(p: &str) -> usize {
    if p == AS_WRITTEN {
        0
    } else {
        1 + Profile::ALL
            .iter()
            .position(|x| x.as_str() == p)
            .unwrap_or(usize::MAX - 1)
    }
}

fn scenarios(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    v.dedup();
    v
}

/// The `--deployments` labels of a summary, in the axis' order (the one
/// empty label without an axis).
pub(super) fn deployments(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.deployment.as_str()).collect();
    v.sort_by_key(|d| (deployment_rank(s, d), *d));
    v.dedup();
    v
}

/// Where a `--deployments` label sorts: its place in the axis.
pub(super) fn deployment_rank(s: &Summary, label: &str) -> usize {
    s.provenance
        .deployments
        .iter()
        .position(|x| x == label)
        .unwrap_or(usize::MAX)
}

/// A scenario's name in a row, with its `--deployments` label when the
/// summary has that axis.
pub(super) fn scenario_label(scenario: &str, deployment: &str) -> String {
    if deployment.is_empty() {
        scenario.to_string()
    } else {
        format!("{scenario} · {deployment}")
    }
}

fn get<'a>(
    s: &'a Summary,
    (scenario, deployment): (&str, &str),
    profile: &str,
    arm: &str,
) -> Option<&'a Aggregate> {
    s.aggregates.iter().find(|a| {
        a.scenario == scenario
            && a.deployment == deployment
            && a.clients == profile
            && a.server == arm
    })
}

/// One row of the matrix: a scenario (under a deployment of the axis)
/// under a client profile, with one cell per arm of [`arms`] (`None`
/// where that arm did not run it).
struct Row<'a> {
    scenario: String,
    profile: &'a str,
    cells: Vec<Option<&'a Aggregate>>,
}

/// The matrix's rows, scenarios in summary order, deployments in the
/// axis' order, profiles in report order; a (scenario, deployment,
/// profile) no arm ran has no row.
fn rows<'a>(s: &'a Summary, arms: &[&str]) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for scenario in scenarios(s) {
        for deployment in deployments(s) {
            for profile in profiles(s) {
                let cells: Vec<Option<&Aggregate>> = arms
                    .iter()
                    .map(|a| get(s, (scenario, deployment), profile, a))
                    .collect();
                if cells.iter().any(Option::is_some) {
                    out.push(Row {
                        scenario: scenario_label(scenario, deployment),
                        profile,
                        cells,
                    });
                }
            }
        }
    }
    out
}

/// The lines of one cell (Markdown joins them with `<br>`).
fn cell_lines(g: &Aggregate) -> [String; 3] {
    let m = &g.metrics;
    if g.not_applicable() {
        return [
            "not applicable".to_string(),
            format!("{} legacy clients not run", g.not_applicable_clients),
            "(no HTTP+SSE transport)".to_string(),
        ];
    }
    let head = if m.ops_failed == 0 {
        "0 failed".to_string()
    } else {
        format!("{} failed: {}", m.ops_failed, causes_line(m))
    };
    let l = &m.migration_latency_us;
    let latency = if l.count == 0 {
        format!("{} degraded · no migrations", m.ops_degraded)
    } else {
        format!(
            "{} degraded · p50 {} p99 {}",
            m.ops_degraded,
            ms(l.p50),
            ms(l.p99)
        )
    };
    let mut cost = format!(
        "+{} exec · {} replayed · {} rejected · {} re-init",
        m.extra_executions,
        m.replayed_events,
        m.rejections.values().sum::<u64>(),
        m.reinitializations
    );
    if g.not_applicable_clients > 0 {
        let _ = write!(cost, " · {} legacy clients n/a", g.not_applicable_clients);
    }
    [head, latency, cost]
}

/// What each arm of the summary adds to its baseline, for the legend.
fn legend(s: &Summary) -> Vec<(&'static str, &'static str)> {
    let arms = arms(s);
    ArmEntry::in_report_order()
        .into_iter()
        .filter(|e| arms.contains(&e.name))
        .map(|e| (e.name, e.adds))
        .collect()
}

const INTRO: &str = "Each cell: failed operations and their causes (each failure counted once, under its one primary cause); degraded operations (they missed only announced events); migration latency p50 and p99; and the cost: executions beyond each operation's first, events replayed from the store, rejections, re-initializations. Totals over every seed of the cell.";

/// The matrix as a Markdown section.
pub fn markdown(s: &Summary) -> String {
    let arms = arms(s);
    let mut out = format!("## Mechanism matrix\n\n{INTRO}\n\n");
    for (a, what) in legend(s) {
        let _ = writeln!(out, "- `{a}`: {what}");
    }
    let _ = write!(out, "\n| scenario | clients |");
    for a in &arms {
        let _ = write!(out, " {a} |");
    }
    let _ = writeln!(out, "\n|---|---|{}", "---|".repeat(arms.len()));
    for r in rows(s, &arms) {
        let _ = write!(out, "| {} | {} |", r.scenario, r.profile);
        for c in &r.cells {
            let text = c.map_or("–".to_string(), |g| cell_lines(g).join("<br>"));
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The headline (what `compare` prints and the README shows): the matrix
/// in one line per cell, failed operations with their causes and degraded
/// ones, plus the operations per row and the guard audit's verdict.
pub fn headline(s: &Summary) -> String {
    let arms = arms(s);
    let mut out = String::from("| scenario | clients | operations (all seeds) |");
    for a in &arms {
        let _ = write!(out, " {a} |");
    }
    let _ = writeln!(
        out,
        " guard bugs |\n|---|---|---|{}---|",
        "---|".repeat(arms.len())
    );
    for r in rows(s, &arms) {
        let ops = r
            .cells
            .iter()
            .flatten()
            .next()
            .map_or(0, |g| g.metrics.operations);
        let _ = write!(out, "| {} | {} | {ops} |", r.scenario, r.profile);
        for c in &r.cells {
            let text = c.map_or("–".to_string(), |g| {
                let m = &g.metrics;
                let head = format!(
                    "{} per 1,000 · {}",
                    super::numbers::rate_text(super::numbers::per_1000(m.ops_failed, m.operations)),
                    cell_lines(g)[0]
                );
                if g.not_applicable() {
                    cell_lines(g)[0].clone()
                } else if m.ops_degraded > 0 {
                    format!("{head}; {} degraded", m.ops_degraded)
                } else {
                    head
                }
            });
            let _ = write!(out, " {text} |");
        }
        let bugs: Vec<u64> = r
            .cells
            .iter()
            .flatten()
            .filter_map(|g| g.metrics.guard_bugs)
            .collect();
        let bugs = if bugs.is_empty() {
            "–".to_string()
        } else {
            bugs.iter().sum::<u64>().to_string()
        };
        let _ = writeln!(out, " {bugs} |");
    }
    out
}

/// The matrix as an HTML table: cells green when nothing failed, amber
/// when operations were only degraded, red when any failed.
pub fn html(s: &Summary) -> String {
    let arms = arms(s);
    let mut out = format!("<h2>Mechanism matrix</h2><p>{}</p><ul>", xml(INTRO));
    for (a, what) in legend(s) {
        let _ = write!(out, "<li>{}: {}</li>", xml(a), xml(&what.replace('`', "")));
    }
    out.push_str("</ul><table class=\"matrix\"><tr><th>scenario</th><th>clients</th>");
    for a in &arms {
        let _ = write!(out, "<th>{}</th>", xml(a));
    }
    out.push_str("</tr>");
    for r in rows(s, &arms) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            xml(&r.scenario),
            xml(r.profile)
        );
        for c in &r.cells {
            let Some(g) = c else {
                out.push_str("<td>–</td>");
                continue;
            };
            let m = &g.metrics;
            let class = if g.not_applicable() {
                "na"
            } else if m.ops_failed > 0 {
                "bad"
            } else if m.ops_degraded > 0 {
                "degraded"
            } else {
                "ok"
            };
            let [head, latency, cost] = cell_lines(g);
            let _ = write!(
                out,
                "<td class=\"{class}\"><b>{}</b><br>{}<br><small>{}</small></td>",
                xml(&head),
                xml(&latency),
                xml(&cost)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Metrics;

    fn agg(scenario: &str, server: &str, clients: &str, failed: u64) -> Aggregate {
        let metrics = Metrics {
            operations: 10,
            ops_failed: failed,
            ops_ok: 10 - failed,
            extra_executions: failed,
            ..Metrics::default()
        };
        Aggregate::for_test((scenario, server, clients), 2, metrics, "retry_without_key")
    }

    #[test]
    fn one_row_per_scenario_and_profile_one_column_per_arm_in_report_order() {
        let s = Summary {
            schema_version: 2,
            runs: vec![],
            aggregates: vec![
                agg("a", "unguarded", "plain", 3),
                agg("a", "guarded", "plain", 0),
                agg("a", "guarded", "keys+cursors", 0),
                agg("a", "unguarded", "keys+cursors", 2),
            ],
            uncovered_hazards: Default::default(),
            provenance: Default::default(),
        };
        let md = markdown(&s);
        assert!(
            md.contains("| scenario | clients | unguarded | guarded |"),
            "{md}"
        );
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| a |")).collect();
        assert_eq!(rows.len(), 2, "{md}");
        assert!(
            rows[0].starts_with("| a | plain | 3 failed: retry_without_key 3<br>"),
            "{}",
            rows[0]
        );
        assert!(rows[0].contains("| 0 failed<br>"), "{}", rows[0]);
        assert!(rows[0].contains("+3 exec"), "{}", rows[0]);
        assert!(rows[1].starts_with("| a | keys+cursors |"), "{}", rows[1]);
        let head = headline(&s);
        assert!(
            head.contains(
                "| a | plain | 10 | 300.0 per 1,000 · 3 failed: retry_without_key 3 | 0 per 1,000 · 0 failed | – |"
            ),
            "{head}"
        );
        let page = html(&s);
        assert_eq!(page.matches("class=\"bad\"").count(), 2, "{page}");
        assert_eq!(page.matches("class=\"ok\"").count(), 2, "{page}");
    }
}

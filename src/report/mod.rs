//! Reports of a sweep: the mechanism matrix and per-scenario tables in
//! Markdown for reviews, one self-contained HTML page with plots, and JUnit
//! XML for CI systems.

mod calibration;
mod commands;
mod conclude;
pub mod coverage;
mod deployments;
pub mod eras;
mod events;
mod events_table;
mod field;
mod html;
mod junit;
mod matrix;
pub mod numbers;
mod picks;
mod plots;
mod provenance;
pub mod recommend;
mod repro;
mod run_text;
mod write;

pub use calibration::{calibration, notes_of as calibration_notes, NOTES_MARKER};
pub use commands::{commands as repro_commands, repro};
pub use conclude::glossary;
pub use html::{html, html_beside, page};
pub use junit::junit;
pub use matrix::headline;
pub use picks::{pick_timeline_groups, pick_timeline_runs};
pub use plots::{
    bars_svg, cdf_panel_svg, cdf_panels, share_lanes, timeline_group_svg, timeline_svg,
    FaultWindow, Lane, OpBar, Timeline,
};
pub use provenance::{provenance, sha256_hex, Meta};
pub use recommend::{recommend, Beside, Recommendation, Standing};
pub use repro::worth_a_look_markdown;
pub use run_text::{regression_line, run_outcome, text_report};
pub use write::{timeline_of, write_reports};

use crate::oracle::Metrics;
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// The metrics reports show, in order: operations by outcome, then
/// event counts and costs. (Failed operations by cause follow them.)
pub const SHOWN: &[&str] = &[
    "operations",
    "ops_ok",
    "ops_degraded",
    "ops_failed",
    "ops_duplicated",
    "ops_silent_loss",
    "ops_announced_loss",
    "ops_out_of_order",
    "ops_wrong_result",
    "ops_lost",
    "duplicate_side_effects",
    "orphaned_events",
    "silent_losses",
    "announced_losses",
    "truncated_responses",
    "order_violations",
    "capability_violations",
    "foreign_cursor_replays",
    "reinitializations",
    "extra_executions",
    "replayed_events",
    "rejections",
    "guard_bugs",
];

/// `failures_by_cause` as one line: `cause n, cause n` (most first).
pub fn causes_line(m: &Metrics) -> String {
    counts_line(&m.failures_by_cause)
}

/// Counts by key as one line, `key n, key n` (most first), `–` when none:
/// how a table cell shows a map (never its JSON).
pub(crate) fn counts_line(map: &std::collections::BTreeMap<String, u64>) -> String {
    let v = numbers::most_first(map);
    if v.is_empty() {
        return "–".into();
    }
    v.iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cell(a: Option<&Aggregate>, name: &str) -> String {
    match a.and_then(|a| a.metrics.get(name).map(|v| (v, a.runs))) {
        Some((v, runs)) => format!("{v} ({:.2}/seed)", v as f64 / runs.max(1) as f64),
        None => "–".into(),
    }
}

fn latency(m: &Metrics) -> String {
    let l = &m.migration_latency_us;
    format!(
        "{} / {} / {} / {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.max)
    )
}

/// A latency or stall in µs, for a reader: ms below a second, s above.
fn ms(us: u64) -> String {
    run_text::duration(us)
}

/// A column's heading: the arm, with its client profile when it is not
/// the scenario's own.
fn heading(a: &Aggregate) -> String {
    let h = heading_of(&a.server, &a.clients);
    if a.deployment.is_empty() {
        h
    } else {
        format!("{h} · {}", a.deployment)
    }
}

/// `arm`, or `arm (profile)` when the profile is not the scenario's own.
fn heading_of(server: &str, clients: &str) -> String {
    if clients == crate::run::AS_WRITTEN {
        server.to_string()
    } else {
        format!("{server} ({clients})")
    }
}

/// One row per key any column has in a keyed metric.
fn keyed_rows(
    out: &mut String,
    cols: &[&Aggregate],
    metric: &str,
    label: &str,
    map: fn(&Metrics) -> &std::collections::BTreeMap<String, u64>,
) {
    let mut keys: Vec<&String> = cols.iter().flat_map(|a| map(&a.metrics).keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let name = format!("{metric}.{k}");
        row(out, &format!("{label}: {k}"), cols, |a| {
            cell(Some(a), &name)
        });
    }
}

/// One table row: a label, then one cell per column.
fn row(out: &mut String, label: &str, cols: &[&Aggregate], f: impl Fn(&Aggregate) -> String) {
    let _ = write!(out, "| {label} |");
    for a in cols {
        let _ = write!(out, " {} |", f(a));
    }
    out.push('\n');
}

/// The columns of one scenario: its aggregates, arms in the order of
/// `Variant::ALL`, then client profiles as written first.
pub(crate) fn columns<'a>(s: &'a Summary, scenario: &str) -> Vec<&'a Aggregate> {
    let mut cols: Vec<&Aggregate> = s
        .aggregates
        .iter()
        .filter(|a| a.scenario == scenario)
        .collect();
    cols.sort_by_key(|a| {
        (
            matrix::deployment_rank(s, &a.deployment),
            matrix::profile_rank(&a.clients),
            matrix::arm_rank(&a.server),
        )
    });
    cols
}

/// `report.md` with nothing beside it (see [`markdown_beside`]).
pub fn markdown(s: &Summary, timelines: &[Timeline]) -> String {
    markdown_beside(s, timelines, &Beside::default())
}

/// `report.md`: the recommendation first (what to deploy, what it removes
/// against the baseline, what remains, every configuration ranked, with
/// the matrix and zero beside it as evidence), one line per scenario,
/// warnings, the headline, the glossary, the scenarios, the provenance,
/// the timelines drawn in report.html (with how to reproduce each), every
/// run whose expectations broke, the mechanism matrix, then per scenario
/// every metric with the arms (and client profiles) side by side.
pub fn markdown_beside(s: &Summary, timelines: &[Timeline], beside: &Beside) -> String {
    let mut out = String::from("# mcp-chaos comparison\n\nThe charts (failed operations per scenario, migration latency per scenario, one timeline per affected scenario) are in report.html next to this file.\n\n");
    out.push_str(&events::markdown(s, beside));
    out.push_str(&recommend::markdown(s, beside));
    out.push_str(&field::markdown(s));
    out.push_str(&conclude::per_scenario_markdown(s));
    for w in warnings(s) {
        let _ = writeln!(out, "**Warning:** {w}\n");
    }
    out.push_str(&headline_markdown(s));
    out.push_str(&conclude::glossary());
    out.push_str(&conclude::scenarios_markdown(s));
    out.push_str(&conclude::provenance_markdown(s));
    out.push_str(&timelines_markdown(timelines));
    out.push_str(&repro::worth_a_look_markdown(s));
    out.push_str(&conclude::failing_markdown(s));
    out.push_str(&matrix::markdown(s));
    out.push_str(&deployments::markdown(s));
    out.push_str(&details(s));
    out
}

/// The headline table (what `compare` prints) as a report section.
fn headline_markdown(s: &Summary) -> String {
    format!(
        "## Headline\n\nPer scenario and client profile: its operations over all seeds, then per arm the failed operations per 1,000 operations and in total with their causes (totals over all seeds), and the guard audit's disputed decisions.\n\n{}\n",
        matrix::headline(s)
    )
}

/// The runs report.html draws as timelines, with how to reproduce each.
fn timelines_markdown(ts: &[Timeline]) -> String {
    let mut out = String::from("## Timelines\n\n");
    if ts.is_empty() {
        out.push_str("No run had a failed or degraded operation: no timeline drawn.\n\n");
        return out;
    }
    out.push_str("report.html draws per affected scenario the run with the most failed operations (across arms and seeds) and the recommended configuration's run on the same seed, on one time axis: one lane per client, operations as bars coloured by outcome, faults as shaded windows and marks:\n\n");
    for t in ts {
        let _ = writeln!(
            out,
            "- {}{}: {} (reproduce: `{}`)",
            if t.role.is_empty() {
                String::new()
            } else {
                format!("{}: ", t.role)
            },
            t.title,
            t.outcomes
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
            t.repro
        );
    }
    out.push('\n');
    out
}

/// Scenarios whose fault plans exercised none of the hazards they declare,
/// one sentence each (with the times when the runs ended before the
/// faults meant to exercise them).
fn warnings(s: &Summary) -> Vec<String> {
    crate::run::never_applied::uncovered_warnings(s, |_| None)
}

/// The scenarios of a summary, in summary order.
pub(crate) fn scenarios(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    v.dedup();
    v
}

/// Per scenario, every metric, one column per arm and profile.
fn details(s: &Summary) -> String {
    let mut out = String::from("## Every metric, per scenario\n\nTotals over all seeds (per-seed mean in parentheses). Each operation is ok, degraded (it missed only announced events) or failed; a failed operation is counted once, under its one primary cause.\n\n");
    let mut scenarios: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    scenarios.dedup();
    for sc in scenarios {
        let cols = columns(s, sc);
        let runs = cols.first().map_or(0, |a| a.runs);
        // One table per client profile and deployment (a matrix of 4
        // profiles × 6 arms is 24 columns: no page holds them side by side).
        let groups: Vec<&[&Aggregate]> = cols
            .chunk_by(|a, b| (&a.clients, &a.deployment) == (&b.clients, &b.deployment))
            .collect();
        let _ = write!(out, "### {sc}\n\n{runs} seeds per column.\n\n");
        for g in &groups {
            if groups.len() > 1 {
                let _ = write!(out, "**{}**\n\n", group_title(g[0]));
            }
            metric_table(&mut out, g);
        }
    }
    out
}

/// One table of every metric: a row per metric, a column per configuration.
fn metric_table(out: &mut String, cols: &[&Aggregate]) {
    out.push_str("| metric |");
    for a in cols {
        let _ = write!(out, " {} |", heading(a));
    }
    let _ = writeln!(out, "\n|---|{}", "---|".repeat(cols.len()));
    for name in SHOWN {
        row(out, name, cols, |a| cell(Some(a), name));
    }
    keyed_rows(out, cols, "failures_by_cause", "failed by cause", |m| {
        &m.failures_by_cause
    });
    keyed_rows(
        out,
        cols,
        "failures_by_detail",
        "of which (server records)",
        |m| &m.failures_by_detail,
    );
    row(out, "operations exposed, by hazard", cols, |a| {
        counts_line(&a.metrics.hazards)
    });
    row(out, "migration latency p50 / p90 / p99 / max", cols, |a| {
        latency(&a.metrics)
    });
    row(out, "rejections by reason", cols, |a| {
        counts_line(&a.metrics.rejections)
    });
    row(out, "faults", cols, |a| {
        format!(
            "planned: {}; applied: {}",
            counts_line(&a.faults.planned),
            counts_line(&a.faults.applied)
        )
    });
    row(out, "runs whose expectations broke", cols, |a| {
        a.failed_runs.to_string()
    });
    out.push('\n');
}

/// What a table of [`details`] holds when a scenario has several: its
/// client profile and deployment.
fn group_title(a: &Aggregate) -> String {
    let clients = if a.clients == crate::run::AS_WRITTEN {
        "the scenario's own clients".to_string()
    } else {
        format!("`{}` clients", a.clients)
    };
    if a.deployment.is_empty() {
        clients
    } else {
        format!("{clients}, deployment {}", a.deployment)
    }
}

pub(crate) fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

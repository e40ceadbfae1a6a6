//! Reports of a sweep: Markdown for reviews, JUnit XML for CI systems.

use crate::oracle::Metrics;
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// The violation metrics a report shows, in order.
pub const VIOLATIONS: &[&str] = &[
    "duplicate_side_effects",
    "orphaned_events",
    "silent_losses",
    "truncated_responses",
    "order_violations",
    "capability_violations",
    "foreign_cursor_replays",
    "lost_operations",
];

fn find<'a>(s: &'a Summary, scenario: &str, server: &str) -> Option<&'a Aggregate> {
    s.aggregates
        .iter()
        .find(|a| a.scenario == scenario && a.server == server)
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

fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// The headline: per scenario, each violation metric's total for both
/// servers (what the README shows).
pub fn headline(s: &Summary) -> String {
    let mut out = String::from("| scenario | server | runs | duplicates | orphans | silent losses | order | capability | foreign replays | lost ops | blind spots | guard bugs |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for a in &s.aggregates {
        let m = &a.metrics;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            a.scenario,
            a.server,
            a.runs,
            m.duplicate_side_effects,
            m.orphaned_events,
            m.silent_losses,
            m.order_violations,
            m.capability_violations,
            m.foreign_cursor_replays,
            m.lost_operations,
            m.get("blind_spots").unwrap_or(0),
            m.guard_bugs.map_or("–".to_string(), |b| b.to_string()),
        );
    }
    out
}

/// `report.md`: per scenario, guarded beside unguarded.
pub fn markdown(s: &Summary) -> String {
    let mut out = String::from("# mcp-chaos comparison\n\nTotals over all seeds (per-seed mean in parentheses); guard blind spots are reported apart and are not guard bugs.\n\n");
    let mut scenarios: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    scenarios.dedup();
    for sc in scenarios {
        let (g, u) = (find(s, sc, "guarded"), find(s, sc, "unguarded"));
        let runs = g.or(u).map_or(0, |a| a.runs);
        let _ = writeln!(out, "## {sc}\n\n{runs} seeds per server.\n\n| metric | guarded | unguarded |\n|---|---|---|");
        for name in VIOLATIONS {
            let _ = writeln!(out, "| {name} | {} | {} |", cell(g, name), cell(u, name));
        }
        for name in [
            "blind_spots",
            "blind_spots_state_lost",
            "blind_spots_view_gap",
            "guard_bugs",
            "reinitializations",
            "rejections",
        ] {
            let _ = writeln!(out, "| {name} | {} | {} |", cell(g, name), cell(u, name));
        }
        let lat = |a: Option<&Aggregate>| a.map_or("–".into(), |a| latency(&a.metrics));
        let _ = writeln!(
            out,
            "| migration latency p50 / p90 / p99 / max | {} | {} |",
            lat(g),
            lat(u)
        );
        let rej = |a: Option<&Aggregate>| {
            a.map_or("–".into(), |a| format!("{:?}", a.metrics.rejections))
        };
        let _ = writeln!(out, "| rejections by reason | {} | {} |", rej(g), rej(u));
        let faults = |a: Option<&Aggregate>| {
            a.map_or("–".into(), |a| {
                format!(
                    "planned {:?}, applied {:?}",
                    a.faults.planned, a.faults.applied
                )
            })
        };
        let _ = writeln!(out, "| faults | {} | {} |", faults(g), faults(u));
        let failed = |a: Option<&Aggregate>| a.map_or(0, |a| a.failed_runs);
        let _ = writeln!(
            out,
            "| runs failing expectations | {} | {} |\n",
            failed(g),
            failed(u)
        );
    }
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one test case per scenario × server; a failure lists each
/// failing seed with its expectations and the command that reproduces it.
pub fn junit(s: &Summary, repro: &dyn Fn(&str, u64, &str) -> String) -> String {
    let failures = s.aggregates.iter().filter(|a| a.failed_runs > 0).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcp-chaos\" tests=\"{}\" failures=\"{failures}\">\n<testsuite name=\"mcp-chaos\" tests=\"{}\" failures=\"{failures}\">\n",
        s.aggregates.len(),
        s.aggregates.len()
    );
    for a in &s.aggregates {
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\"",
            xml(&a.scenario),
            xml(&a.server)
        );
        if a.failed_runs == 0 {
            out.push_str("/>\n");
            continue;
        }
        let mut text = String::new();
        for r in s
            .runs
            .iter()
            .filter(|r| r.scenario == a.scenario && r.server == a.server && r.verdict != "pass")
        {
            let _ = writeln!(
                text,
                "seed {} ({}): {}\nreproduce: {}",
                r.seed,
                r.verdict,
                r.failed_expectations.join("; "),
                repro(&r.scenario, r.seed, &r.server)
            );
        }
        let _ = write!(
            out,
            ">\n    <failure message=\"{} of {} seeds failed\">{}</failure>\n  </testcase>\n",
            a.failed_runs,
            a.runs,
            xml(&text)
        );
    }
    out.push_str("</testsuite>\n</testsuites>\n");
    out
}

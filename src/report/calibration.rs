//! Calibration: a model arm (`unguarded`) beside a real SDK's server
//! (`rmcp`) on every scenario of a summary, metric by metric and failure
//! cause by cause, with where they agree and where they differ. The
//! explanations are written by hand below a marker line and kept when the
//! file is written again.

use super::SHOWN;
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

pub use crate::base::console::{notes_of, NOTES_MARKER};

/// The calibration of `model` against `sdk` over the summary's runs (as
/// the scenarios wrote their clients), with a third column when `quirks`
/// holds the model's runs with the SDK's quirks switched on (its label
/// first), and `notes` (the text from [`NOTES_MARKER`] on of an earlier
/// file, if any) appended. `None` when the summary lacks one of the two
/// arms.
pub fn calibration(
    s: &Summary,
    model: &str,
    sdk: &str,
    quirks: Option<(&str, &Summary)>,
    notes: Option<&str>,
) -> Option<String> {
    let pick = |s: &'_ Summary, arm: &str| -> Vec<Aggregate> {
        s.aggregates
            .iter()
            .filter(|a| a.server == arm && a.clients == crate::run::AS_WRITTEN)
            .cloned()
            .collect()
    };
    let (ms, ks) = (pick(s, model), pick(s, sdk));
    if ms.is_empty() || ks.is_empty() {
        return None;
    }
    let qs = quirks.map(|(_, q)| pick(q, model)).unwrap_or_default();
    let seeds = ms.first().map_or(0, |a| a.runs);
    let mut heads = vec![format!("`{model}`"), format!("`{sdk}`")];
    let mut out = format!(
        "# Calibration: `{model}` against `{sdk}`\n\n\
         Every scenario under the model arm `{model}` and the real SDK's server `{sdk}`, \
         {seeds} seeds each, same seeds and fault plans, all judged by the same black-box \
         oracle. Each table lists the metrics and failure causes that are not zero in any \
         column; the mark compares `{model}` with `{sdk}`: `=` where they agree, `≠` where \
         they differ. Totals over the seeds. Written by `mcp-chaos calibrate`.\n\n"
    );
    if let Some((label, _)) = quirks {
        let _ = writeln!(
            out,
            "The third column is `{model}` with `{label}`: the model with the SDK's own quirks switched on.\n"
        );
        heads.push(format!("`{model}` + `{label}`"));
    }
    let mut tables: Vec<Table<'_>> = Vec::new();
    for m in &ms {
        let k = ks.iter().find(|k| k.scenario == m.scenario);
        let q = qs.iter().find(|q| q.scenario == m.scenario);
        let mut cols = vec![Some(m), k];
        if quirks.is_some() {
            cols.push(q);
        }
        tables.push((m, k, rows(&cols)));
    }
    summary_table(&mut out, &tables, (model, sdk), quirks.is_some());
    scenario_tables(&mut out, &tables, sdk, &heads);
    out.push_str(NOTES_MARKER);
    out.push('\n');
    if let Some(n) = notes {
        out.push_str(n.trim_start_matches(NOTES_MARKER).trim_start_matches('\n'));
    }
    Some(out)
}

/// One scenario's table: the model's aggregate, the SDK's (if it ran),
/// and the rows that are not zero in any column.
type Table<'a> = (
    &'a Aggregate,
    Option<&'a Aggregate>,
    Vec<(String, Vec<Option<u64>>)>,
);

/// The summary: per scenario how many rows agree and which differ
/// (`model` against `sdk`, and with the quirks on when `quirks`).
fn summary_table(out: &mut String, tables: &[Table<'_>], (model, sdk): (&str, &str), quirks: bool) {
    let _ = writeln!(
        out,
        "## Summary\n\n| scenario | agree | differ | differing ({model} vs {sdk}) |{}\n|---|---|---|---|{}",
        if quirks { " differing with the quirks on |" } else { "" },
        if quirks { "---|" } else { "" }
    );
    for (m, k, rows) in tables {
        let differ = |col: usize| -> Vec<&str> {
            rows.iter()
                .filter(|r| r.1[col] != r.1[1])
                .map(|r| r.0.as_str())
                .collect()
        };
        let list = |v: Vec<&str>| {
            if v.is_empty() {
                "–".to_string()
            } else {
                v.join(", ")
            }
        };
        let na = k.is_some_and(Aggregate::not_applicable);
        let d = differ(0);
        let _ = write!(
            out,
            "| {} | {} | {} | {} |",
            m.scenario,
            rows.len() - d.len(),
            d.len(),
            if na {
                format!("not applicable to `{sdk}` (legacy clients only)")
            } else {
                list(d)
            }
        );
        if quirks {
            let _ = write!(
                out,
                " {} |",
                if na {
                    "–".to_string()
                } else {
                    list(differ(2))
                }
            );
        }
        out.push('\n');
    }
    out.push('\n');
}

/// Per scenario, every row with each column's total and the mark.
fn scenario_tables(out: &mut String, tables: &[Table<'_>], sdk: &str, heads: &[String]) {
    for (m, k, rows) in tables {
        let _ = writeln!(out, "## {}\n", m.scenario);
        if let Some(k) = k.filter(|k| k.not_applicable_clients > 0) {
            let _ = writeln!(
                out,
                "`{sdk}` did not run {} legacy HTTP+SSE clients (over all seeds): it has no such transport.\n",
                k.not_applicable_clients
            );
        }
        let _ = writeln!(
            out,
            "| metric | {} | |\n|---|{}---|",
            heads.join(" | "),
            "---|".repeat(heads.len())
        );
        for (name, vals) in rows {
            let cell = |v: &Option<u64>| v.map_or("–".into(), |v| v.to_string());
            let mark = if vals[0] == vals[1] { "=" } else { "≠" };
            let _ = writeln!(
                out,
                "| {name} | {} | {mark} |",
                vals.iter().map(cell).collect::<Vec<_>>().join(" | ")
            );
        }
        out.push('\n');
    }
}

/// The metrics and causes not zero in any column: (name, value per column).
fn rows(cols: &[Option<&Aggregate>]) -> Vec<(String, Vec<Option<u64>>)> {
    let mut names: Vec<String> = SHOWN
        .iter()
        .filter(|n| **n != "rejections")
        .map(|n| n.to_string())
        .collect();
    let mut causes: Vec<&String> = cols
        .iter()
        .flatten()
        .flat_map(|a| a.metrics.failures_by_cause.keys())
        .collect();
    causes.sort();
    causes.dedup();
    names.extend(causes.into_iter().map(|c| format!("failures_by_cause.{c}")));
    names
        .into_iter()
        .filter_map(|n| {
            let vals: Vec<Option<u64>> = cols
                .iter()
                .map(|a| a.map(|a| a.metrics.get(&n).unwrap_or(0)))
                .collect();
            vals.iter()
                .any(|v| v.unwrap_or(0) != 0)
                .then_some((n, vals))
        })
        .collect()
}

//! Calibration: a model arm (`unguarded`) beside a real SDK's server
//! (`rmcp`) on every scenario of a summary, metric by metric and failure
//! cause by cause, with where they agree and where they differ. The
//! explanations are written by hand below a marker line and kept when the
//! file is written again.

use super::SHOWN;
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// The line after which a calibration file's hand-written notes begin;
/// [`calibration`] keeps everything from it on.
pub const NOTES_MARKER: &str = "<!-- notes: kept when this file is regenerated -->";

/// The calibration of `model` against `sdk` over the summary's runs (as
/// the scenarios wrote their clients), with `notes` (the text from
/// [`NOTES_MARKER`] on of an earlier file, if any) appended. `None` when
/// the summary lacks one of the two arms.
pub fn calibration(s: &Summary, model: &str, sdk: &str, notes: Option<&str>) -> Option<String> {
    let pick = |arm: &str| -> Vec<&Aggregate> {
        s.aggregates
            .iter()
            .filter(|a| a.server == arm && a.clients == crate::run::AS_WRITTEN)
            .collect()
    };
    let (ms, ks) = (pick(model), pick(sdk));
    if ms.is_empty() || ks.is_empty() {
        return None;
    }
    let seeds = ms.first().map_or(0, |a| a.runs);
    let mut out = format!(
        "# Calibration: `{model}` against `{sdk}`\n\n\
         Every scenario under the model arm `{model}` and the real SDK's server `{sdk}`, \
         {seeds} seeds each, same seeds and fault plans, both judged by the same black-box \
         oracle. Each table lists the metrics and failure causes that are not zero under \
         either arm: `=` where they agree, `≠` where they differ. Totals over the seeds. \
         Written by `mcp-chaos calibrate` from a comparison's summary.json.\n\n"
    );
    let mut rows_all = Vec::new();
    for m in &ms {
        let k = ks.iter().find(|k| k.scenario == m.scenario).copied();
        rows_all.push((m, k, rows(m, k)));
    }
    let _ = writeln!(
        out,
        "## Summary\n\n| scenario | agree | differ | differing metrics |\n|---|---|---|---|"
    );
    for (m, k, rows) in &rows_all {
        let differ: Vec<&str> = rows
            .iter()
            .filter(|r| Some(r.1) != r.2)
            .map(|r| r.0.as_str())
            .collect();
        let na = k.is_some_and(|k| k.metrics.operations == 0 && k.not_applicable_clients > 0);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            m.scenario,
            rows.len() - differ.len(),
            differ.len(),
            if na {
                format!("not applicable to `{sdk}` (legacy clients only)")
            } else if differ.is_empty() {
                "–".to_string()
            } else {
                differ.join(", ")
            }
        );
    }
    out.push('\n');
    for (m, k, rows) in &rows_all {
        let _ = writeln!(out, "## {}\n", m.scenario);
        if let Some(k) = k.filter(|k| k.not_applicable_clients > 0) {
            let _ = writeln!(
                out,
                "`{sdk}` did not run {} legacy HTTP+SSE clients (over all seeds): it has no such transport.\n",
                k.not_applicable_clients
            );
        }
        let _ = writeln!(out, "| metric | {model} | {sdk} | |\n|---|---|---|---|");
        for (name, a, b) in rows {
            let mark = if Some(*a) == *b { "=" } else { "≠" };
            let _ = writeln!(out, "| {name} | {a} | {} | {mark} |", b.map_or("–".into(), |b| b.to_string()));
        }
        out.push('\n');
    }
    out.push_str(NOTES_MARKER);
    out.push('\n');
    if let Some(n) = notes {
        out.push_str(n.trim_start_matches(NOTES_MARKER).trim_start_matches('\n'));
    }
    Some(out)
}

/// The metrics and causes not zero under either arm: (name, model, sdk).
fn rows(m: &Aggregate, k: Option<&Aggregate>) -> Vec<(String, u64, Option<u64>)> {
    let mut names: Vec<String> = SHOWN
        .iter()
        .filter(|n| **n != "rejections")
        .map(|n| n.to_string())
        .collect();
    let mut causes: Vec<&String> = m.metrics.failures_by_cause.keys().collect();
    if let Some(k) = k {
        causes.extend(k.metrics.failures_by_cause.keys());
    }
    causes.sort();
    causes.dedup();
    names.extend(causes.into_iter().map(|c| format!("failures_by_cause.{c}")));
    names
        .into_iter()
        .filter_map(|n| {
            let a = m.metrics.get(&n).unwrap_or(0);
            let b = k.map(|k| k.metrics.get(&n).unwrap_or(0));
            (a != 0 || b.unwrap_or(0) != 0).then_some((n, a, b))
        })
        .collect()
}

/// The notes of an earlier calibration file: everything from the marker on.
pub fn notes_of(text: &str) -> Option<&str> {
    text.find(NOTES_MARKER).map(|i| &text[i..])
}

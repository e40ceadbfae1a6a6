//! Writing a comparison's reports: report.md and report.html, from the
//! summary and the timelines of the runs [`super::pick_timeline_groups`]
//! picks, drawn from histories the caller had the sweep keep
//! ([`timeline_of`] turns one into its timeline).

use super::plots::Timeline;
use crate::history::History;
use crate::run::RunReport;
use crate::sweep::Summary;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// The timeline of the summary's run `r`, from `fresh` and `history`, the
/// report and history of the same run made again; `hosts` is its
/// scenario's client host count, `role` and `group` what
/// [`super::pick_timeline_groups`] gave it.
pub fn timeline_of(
    s: &Summary,
    r: &RunReport,
    (fresh, history): (&RunReport, &History),
    hosts: u32,
    (role, group): (&str, &str),
) -> Timeline {
    let mut t = Timeline::of(
        format!(
            "{} · seed {} · {} · clients {} ({} failed ops)",
            r.scenario, r.seed, r.server, r.clients, fresh.metrics.ops_failed
        ),
        history,
        &fresh.operations,
        hosts,
    );
    t.repro = super::commands::repro(s, r);
    t.role = role.to_string();
    t.group = group.to_string();
    t
}

/// Writes `report.md` and `report.html` into `out` with the timelines
/// `ts` (in pick order, a group's lanes shared), with the comparisons
/// `beside` it (read once by the caller, [`super::Beside::under`]) as
/// evidence and as candidates of the answer; returns the paths written.
pub fn write_reports(
    out: &Path,
    s: &Summary,
    ts: &[Timeline],
    beside: &super::Beside,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create {}: check the --out path", out.display()))?;
    let md = out.join("report.md");
    let html = out.join("report.html");
    for (path, text) in [
        (&md, super::markdown_beside(s, ts, beside)),
        (&html, super::html_beside(s, ts, beside)),
    ] {
        std::fs::write(path, text).with_context(|| {
            format!(
                "cannot write {}: check the path and permissions",
                path.display()
            )
        })?;
    }
    Ok(vec![md, html])
}

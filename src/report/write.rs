//! Writing a comparison's reports: report.md and report.html, with the
//! runs drawn as timelines run again (deterministically) for their
//! histories.

use super::picks::pick_timeline_groups;
use super::plots::{share_lanes, Timeline};
use crate::run::{self, RunReport};
use crate::scenario::Scenario;
use crate::sut::Arm;
use crate::sweep::Summary;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The timelines of the picked groups (see [`pick_timeline_groups`]),
/// each run again from its scenario in `files` (path, scenario) on up to
/// `workers` threads; in pick order, a group's timelines next to each
/// other with the same `group` and the same lanes.
pub fn timelines(
    s: &Summary,
    files: &[(String, Scenario)],
    workers: usize,
) -> anyhow::Result<Vec<Timeline>> {
    let groups = pick_timeline_groups(s);
    let picks: Vec<(&RunReport, &str, String)> = groups
        .iter()
        .flat_map(|g| {
            let worst = g.last().expect("a group holds the worst run").0;
            let name = format!("{} · seed {}", worst.scenario, worst.seed);
            g.iter()
                .map(move |(r, role)| (*r, role.as_str(), name.clone()))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<Timeline>>>> =
        Mutex::new((0..picks.len()).map(|_| None).collect());
    std::thread::scope(|sc| {
        for _ in 0..workers.max(1).min(picks.len().max(1)) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((r, role, group)) = picks.get(i) else {
                    break;
                };
                let t = timeline_of(s, r, files).map(|mut t| {
                    t.role = role.to_string();
                    t.group = group.clone();
                    t
                });
                results.lock().expect("no worker panics holding it")[i] = Some(t);
            });
        }
    });
    let mut out: Vec<Timeline> = results
        .into_inner()
        .expect("workers are done")
        .into_iter()
        .map(|t| t.expect("every pick ran"))
        .collect::<anyhow::Result<_>>()?;
    let mut at = 0;
    for g in &groups {
        share_lanes(&mut out[at..at + g.len()]);
        at += g.len();
    }
    Ok(out)
}

/// Runs `r` again and reads its timeline.
fn timeline_of(
    s: &Summary,
    r: &RunReport,
    files: &[(String, Scenario)],
) -> anyhow::Result<Timeline> {
    let scenario = files
        .iter()
        .find(|(_, sc)| sc.name == r.scenario)
        .map(|(_, sc)| sc)
        .with_context(|| format!("no scenario file for {} to draw its timeline", r.scenario))?;
    let arm: Arm = r
        .server
        .parse()
        .map_err(|e| anyhow::anyhow!("timeline of {}: {e}", r.scenario))?;
    let opts = r.options();
    let (report, history) = run::run_arm(scenario, r.seed, arm, &opts).map_err(|e| {
        anyhow::anyhow!(
            "re-running {} seed {} {}: {e}",
            r.scenario,
            r.seed,
            r.server
        )
    })?;
    let mut t = Timeline::of(
        format!(
            "{} · seed {} · {} · clients {} ({} failed ops)",
            r.scenario, r.seed, r.server, r.clients, report.metrics.ops_failed
        ),
        &history,
        &report.operations,
        scenario.network.client_hosts,
    );
    t.repro = super::commands::repro(s, r);
    Ok(t)
}

/// Writes `report.md` and `report.html` into `out`, re-running one run
/// per affected scenario for its timeline (on the machine's cores), with
/// the summaries of `out/matrix` and `out/zero` as evidence beside the
/// recommendation when they exist; returns the paths written.
pub fn write_reports(
    out: &Path,
    s: &Summary,
    files: &[(String, Scenario)],
) -> anyhow::Result<Vec<PathBuf>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ts = timelines(s, files, workers)?;
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create {}: check the --out path", out.display()))?;
    let md = out.join("report.md");
    let html = out.join("report.html");
    let beside = super::Beside::under(out);
    for (path, text) in [
        (&md, super::markdown_beside(s, &ts, &beside)),
        (&html, super::html_beside(s, &ts, &beside)),
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

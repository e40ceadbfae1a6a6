//! `compare --eras`: the same scenarios, seeds and fault plans on each
//! wire, one summary per era, and `eras.md`, which sets them side by
//! side. It pools the scenarios that make sense in both eras (every arm
//! ran some operation in each), then gives failed operations per 1,000
//! with their top causes for era × client profile (rows) × arm
//! (columns), what to deploy in each era, and the same per scenario.
//! Rendered from the summaries alone: it runs nothing.

use super::matrix::{arm_rank, profile_rank};
use super::numbers::{most_first, per_1000, rate_text, thousands};
use crate::settings::Era;
use crate::sweep::{Aggregate, Summary};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Pooled runs of one cell (an era, a profile, an arm, maybe a scenario).
#[derive(Default, Clone)]
struct Cell {
    operations: u64,
    failed: u64,
    degraded: u64,
    causes: BTreeMap<String, u64>,
}

impl Cell {
    fn add(&mut self, a: &Aggregate) {
        self.operations += a.metrics.operations;
        self.failed += a.metrics.ops_failed;
        self.degraded += a.metrics.ops_degraded;
        for (c, n) in &a.metrics.failures_by_cause {
            *self.causes.entry(c.clone()).or_insert(0) += n;
        }
    }

    fn rate(&self) -> f64 {
        per_1000(self.failed, self.operations)
    }

    /// `12.3 (cause 10.1, cause 2.2)`, or `n/a` when nothing ran.
    fn text(&self) -> String {
        if self.operations == 0 {
            return "n/a".into();
        }
        let causes: Vec<String> = most_first(&self.causes)
            .into_iter()
            .take(2)
            .map(|(c, n)| format!("{c} {}", rate_text(per_1000(*n, self.operations))))
            .collect();
        if causes.is_empty() {
            rate_text(self.rate())
        } else {
            format!("{} ({})", rate_text(self.rate()), causes.join(", "))
        }
    }
}

/// (era, profile, arm) → cell.
type Table = BTreeMap<(Era, String, String), Cell>;

/// The scenarios every era's summary ran some operation of, under every
/// arm that runs in that era: those that make sense in both.
fn common_scenarios(eras: &[(Era, &Summary)]) -> BTreeSet<String> {
    let mut out: Option<BTreeSet<String>> = None;
    for (_, s) in eras {
        let ran: BTreeSet<String> = s
            .aggregates
            .iter()
            .filter(|a| a.metrics.operations > 0)
            .map(|a| a.scenario.clone())
            .collect();
        out = Some(match out {
            None => ran,
            Some(prev) => prev.intersection(&ran).cloned().collect(),
        });
    }
    out.unwrap_or_default()
}

fn pooled(eras: &[(Era, &Summary)], only: &BTreeSet<String>, scenario: Option<&str>) -> Table {
    let mut t = Table::new();
    for (era, s) in eras {
        for a in &s.aggregates {
            if !only.contains(&a.scenario) || scenario.is_some_and(|x| x != a.scenario) {
                continue;
            }
            t.entry((*era, a.clients.clone(), a.server.clone()))
                .or_default()
                .add(a);
        }
    }
    t
}

fn arms_of(eras: &[(Era, &Summary)]) -> Vec<String> {
    let mut v: Vec<String> = eras
        .iter()
        .flat_map(|(_, s)| s.aggregates.iter().map(|a| a.server.clone()))
        .collect();
    v.sort_by_key(|a| (arm_rank(a), a.clone()));
    v.dedup();
    v
}

fn profiles_of(t: &Table) -> Vec<String> {
    let mut v: Vec<String> = t.keys().map(|(_, p, _)| p.clone()).collect();
    v.sort_by_key(|p| (profile_rank(p), p.clone()));
    v.dedup();
    v
}

fn table(out: &mut String, t: &Table, arms: &[String], lead: &str) {
    let _ = writeln!(out, "| era | clients | {} |", arms.join(" | "));
    let _ = writeln!(out, "| --- | --- |{}", " --- |".repeat(arms.len()));
    for era in Era::ALL {
        for p in profiles_of(t) {
            if !arms
                .iter()
                .any(|a| t.contains_key(&(era, p.clone(), a.clone())))
            {
                continue;
            }
            let cells: Vec<String> = arms
                .iter()
                .map(|a| {
                    t.get(&(era, p.clone(), a.clone()))
                        .map_or_else(|| "–".into(), Cell::text)
                })
                .collect();
            let _ = writeln!(
                out,
                "| {lead}{} | {p} | {} |",
                era.as_str(),
                cells.join(" | ")
            );
        }
    }
}

/// `eras.md`: the summaries of one comparison made once per era.
pub fn markdown(eras: &[(Era, &Summary)]) -> String {
    let mut out = String::new();
    let names: Vec<&str> = eras.iter().map(|(e, _)| e.as_str()).collect();
    let _ = writeln!(out, "# Eras: {}\n", names.join(" and "));
    let common = common_scenarios(eras);
    let all: BTreeSet<String> = eras
        .iter()
        .flat_map(|(_, s)| s.aggregates.iter().map(|a| a.scenario.clone()))
        .collect();
    let seeds = eras
        .first()
        .map(|(_, s)| s.provenance.seeds.clone())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "The same scenarios, seeds ({seeds}) and fault plans on each wire; each era's full report is beside this file, in a directory named for it. On 2026-07-28 every client re-issues a broken request with a new id; `delivery`, cursors and `cursor_on_post` have no effect; transport-switch clients, `cancel` (that era's remedy on the old wire) and `rmcp-es` are not applicable (n/a).\n"
    );
    let left: Vec<&String> = all.difference(&common).collect();
    let _ = writeln!(
        out,
        "Pooled below: the {} scenarios that make sense in both eras ({}).{}\n",
        common.len(),
        common.iter().cloned().collect::<Vec<_>>().join(", "),
        if left.is_empty() {
            String::new()
        } else {
            format!(
                " Left out, not applicable in one era: {}.",
                left.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let arms = arms_of(eras);
    let t = pooled(eras, &common, None);
    let _ = writeln!(
        out,
        "## What to deploy\n\nPer era, over every scenario that era ran, by the rule each era's report.md states (fewest failed per 1,000; ties, within 95 % intervals over seeds, to the fewest mechanisms).\n"
    );
    for (era, summary) in eras {
        // Every scenario of the era, as its own report.md decides.
        let ranked = super::recommend::standings(summary);
        let Some(c) = ranked.first().filter(|c| c.operations > 0) else {
            let _ = writeln!(out, "- **{}**: nothing ran.", era.as_str());
            continue;
        };
        let worst = t
            .iter()
            .filter(|((e, p, _), w)| e == era && *p == c.clients && w.operations > 0)
            .max_by(|(_, a), (_, b)| a.rate().total_cmp(&b.rate()));
        let beside = worst
            .filter(|((_, _, w), _)| *w != c.server)
            .map(|((_, _, w), wc)| {
                format!(
                    "; the same clients against `{w}` fail {} per 1,000",
                    rate_text(wc.rate())
                )
            })
            .unwrap_or_default();
        let seeds = super::recommend::seeds_of(summary);
        let noise = super::recommend::decide::noise_sentence(&ranked, seeds);
        let _ = writeln!(
            out,
            "- **{}**: `{}` with `{}` clients: {} failed per 1,000 (95 % interval {}–{}; {} of {} operations; {} degraded){beside}.{}{noise}",
            era.as_str(),
            c.server,
            c.clients,
            rate_text(c.rate()),
            rate_text(c.interval.0),
            rate_text(c.interval.1),
            thousands(c.failed),
            thousands(c.operations),
            thousands(c.degraded),
            if noise.is_empty() { "" } else { " " },
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "## Failed operations per 1,000, by cause\n\nEach cell: failed per 1,000 operations, then the two largest causes per 1,000.\n"
    );
    table(&mut out, &t, &arms, "");
    let _ = writeln!(out, "\n## Per scenario\n");
    for sc in &common {
        let _ = writeln!(out, "### {sc}\n");
        let t = pooled(eras, &common, Some(sc));
        table(&mut out, &t, &arms, "");
        out.push('\n');
    }
    out
}

/// `eras.html`: `eras.md` as a page, with a chart after the answer: per
/// era and arm, the failed operations per 1,000 of its best client
/// profile over the pooled scenarios.
pub fn html(eras: &[(Era, &Summary)]) -> String {
    let md = markdown(eras);
    let common = common_scenarios(eras);
    let t = pooled(eras, &common, None);
    let mut bars = Vec::new();
    for (era, _) in eras {
        for arm in arms_of(eras) {
            let best = t
                .iter()
                .filter(|((e, _, a), c)| e == era && *a == arm && c.operations > 0)
                .min_by(|(_, a), (_, b)| a.rate().total_cmp(&b.rate()));
            if let Some(((_, p, _), c)) = best {
                bars.push(super::plots::EraBar {
                    era: era.as_str(),
                    arm: arm.clone(),
                    profile: p.clone(),
                    rate: c.rate(),
                });
            }
        }
    }
    let chart = format!(
        "<h2 id=\"chart\">Each arm with its best clients, per era</h2><p>Failed operations per 1,000 over the pooled scenarios, each arm with the client profile that fails least under it (named after the bar); linear axis.</p>{}",
        super::plots::era_bars_svg(&bars)
    );
    let mut page = super::page("mcp-chaos: the eras side by side", &md);
    // Per scenario: behind a closed section, one click away.
    if let (Some(at), Some(end)) = (
        page.find("<h2 id=\"per-scenario\">Per scenario</h2>"),
        page.rfind("</body>"),
    ) {
        let body = page[at..end].replacen(
            "<h2 id=\"per-scenario\">Per scenario</h2>",
            "<details id=\"per-scenario\"><summary>Per scenario</summary>",
            1,
        );
        page = format!("{}{body}</details>{}", &page[..at], &page[end..]);
    }
    match page.find("<h2 id=\"failed-operations-per-1-000-by-cause\">") {
        Some(at) => format!("{}{chart}{}", &page[..at], &page[at..]),
        None => page,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::recommend::tests::{run_of, template};

    #[test]
    fn pools_only_what_ran_in_both_eras_and_names_the_best_per_era() {
        let t = template();
        let cause = "cancelled_after_effect";
        let run = |sc: &str, arm: &str, seed: u64, (f, ops): (u64, u64)| {
            let mut r = run_of(&t, (sc, arm, seed), (f, ops), cause, &[]);
            r.clients = "keys".into();
            r
        };
        let mut old = Vec::new();
        let mut new = Vec::new();
        for seed in 0..2 {
            old.push(run("a", "guarded", seed, (0, 500)));
            old.push(run("a", "unguarded", seed, (10, 500)));
            old.push(run("switch", "guarded", seed, (2, 250)));
            new.push(run("a", "guarded", seed, (1 + seed, 500)));
            new.push(run("a", "unguarded", seed, (50, 500)));
            new.push(run("switch", "guarded", seed, (0, 0)));
        }
        let (old, new) = (Summary::from_runs(old), Summary::from_runs(new));
        let md = markdown(&[(Era::Y2025, &old), (Era::Y2026, &new)]);
        assert!(
            md.contains("the 1 scenarios that make sense in both eras (a)"),
            "{md}"
        );
        assert!(
            md.contains("Left out, not applicable in one era: switch."),
            "{md}"
        );
        assert!(
            md.contains("**2026-07-28**: `guarded` with `keys` clients: 3.00 failed per 1,000"),
            "{md}"
        );
        assert!(
            md.contains("against `unguarded` fail 100.0 per 1,000"),
            "{md}"
        );
        assert!(md.contains("seeds are too few"), "{md}");
        assert!(!md.contains("### switch"), "{md}");
    }
}

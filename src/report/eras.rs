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

/// The fewest failed per 1,000 in `era` (then the fewest degraded; then
/// the arm's report order), as (arm, profile, cell).
fn best(t: &Table, era: Era) -> Option<(&str, &str, &Cell)> {
    t.iter()
        .filter(|((e, _, _), c)| *e == era && c.operations > 0)
        .min_by(|((_, pa, aa), ca), ((_, pb, ab), cb)| {
            ca.rate()
                .total_cmp(&cb.rate())
                .then(
                    per_1000(ca.degraded, ca.operations)
                        .total_cmp(&per_1000(cb.degraded, cb.operations)),
                )
                .then(arm_rank(aa).cmp(&arm_rank(ab)))
                .then(profile_rank(pa).cmp(&profile_rank(pb)))
        })
        .map(|((_, p, a), c)| (a.as_str(), p.as_str(), c))
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
        "## Failed operations per 1,000, by cause\n\nEach cell: failed per 1,000 operations, then the two largest causes per 1,000.\n"
    );
    table(&mut out, &t, &arms, "");
    let _ = writeln!(out, "\n## What to deploy\n");
    for (era, _) in eras {
        let Some((arm, profile, c)) = best(&t, *era) else {
            let _ = writeln!(out, "- **{}**: nothing ran.", era.as_str());
            continue;
        };
        let worst = t
            .iter()
            .filter(|((e, p, _), c)| e == era && p == profile && c.operations > 0)
            .max_by(|(_, a), (_, b)| a.rate().total_cmp(&b.rate()));
        let beside = worst
            .filter(|((_, _, w), _)| w != arm)
            .map(|((_, _, w), wc)| {
                format!(
                    "; the same clients against `{w}` fail {} per 1,000",
                    rate_text(wc.rate())
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- **{}**: `{arm}` with `{profile}` clients: {} failed per 1,000 ({} of {} operations; {} degraded){beside}.",
            era.as_str(),
            rate_text(c.rate()),
            thousands(c.failed),
            thousands(c.operations),
            thousands(c.degraded),
        );
    }
    let _ = writeln!(out, "\n## Per scenario\n");
    for sc in &common {
        let _ = writeln!(out, "### {sc}\n");
        let t = pooled(eras, &common, Some(sc));
        table(&mut out, &t, &arms, "");
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Metrics;

    fn agg(scenario: &str, server: &str, clients: &str, ops: u64, failed: u64) -> Aggregate {
        let metrics = Metrics {
            operations: ops,
            ops_failed: failed,
            ..Metrics::default()
        };
        Aggregate::for_test(
            (scenario, server, clients),
            1,
            metrics,
            "cancelled_after_effect",
        )
    }

    fn summary(aggs: Vec<Aggregate>) -> Summary {
        Summary {
            aggregates: aggs,
            ..Summary::from_runs(Vec::new())
        }
    }

    #[test]
    fn pools_only_what_ran_in_both_eras_and_names_the_best_per_era() {
        let old = summary(vec![
            agg("a", "guarded", "keys", 1000, 0),
            agg("a", "unguarded", "keys", 1000, 20),
            agg("switch", "guarded", "keys", 500, 5),
        ]);
        let new = summary(vec![
            agg("a", "guarded", "keys", 1000, 3),
            agg("a", "unguarded", "keys", 1000, 100),
            agg("switch", "guarded", "keys", 0, 0),
        ]);
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
        assert!(!md.contains("### switch"), "{md}");
    }
}

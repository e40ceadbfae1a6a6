//! `compare --coverage`: which cells a batch of runs reached. A cell is a
//! cause (an operation failed with it) or a hazard (an operation met it)
//! × arm × client profile, and × era and × deployment when the runs
//! differ in them; the universe is every cause of the oracle's precedence
//! and every hazard a scenario declares or a run met, over the
//! configurations the runs made. Each reached cell is given with the first
//! seed (and scenario) that reached it.

use crate::oracle::causes::PRECEDENCE;
use crate::run::RunReport;
use crate::sweep::Summary;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// One configuration of the runs: arm, client profile, era, deployment.
type Config = (String, String, String, String);

/// One cell: `cause:NAME` or `hazard:NAME`, and a configuration.
pub type Cell = (String, Config);

/// What a batch reached: every cell of the universe, and for each reached
/// one the first (seed, scenario).
#[derive(Debug, Default)]
pub struct Coverage {
    /// Cells reached, with the lowest seed that did (and its scenario).
    pub reached: BTreeMap<Cell, (u64, String)>,
    /// Cells never reached.
    pub never: Vec<Cell>,
    /// The runs counted.
    pub runs: usize,
    /// Whether the era and deployment axes vary (and are shown).
    axes: (bool, bool),
}

fn era_of(r: &RunReport) -> String {
    r.overrides
        .iter()
        .find_map(|o| o.strip_prefix("era=").map(str::to_string))
        .unwrap_or_else(|| "scenario".into())
}

fn config_of(r: &RunReport) -> Config {
    (
        r.server.clone(),
        r.clients.clone(),
        era_of(r),
        if r.deployment.is_empty() {
            "as written".into()
        } else {
            r.deployment.clone()
        },
    )
}

/// The coverage of `runs`.
pub fn of(runs: &[RunReport]) -> Coverage {
    let configs: BTreeSet<Config> = runs.iter().map(config_of).collect();
    let eras: BTreeSet<&String> = configs.iter().map(|c| &c.2).collect();
    let deps: BTreeSet<&String> = configs.iter().map(|c| &c.3).collect();
    let mut kinds: BTreeSet<String> = PRECEDENCE
        .iter()
        .map(|c| format!("cause:{}", c.as_str()))
        .collect();
    let mut reached: BTreeMap<Cell, (u64, String)> = BTreeMap::new();
    for r in runs {
        kinds.extend(r.declared_hazards.iter().map(|h| format!("hazard:{h}")));
        let config = config_of(r);
        let hits = r
            .metrics
            .failures_by_cause
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(c, _)| format!("cause:{c}"))
            .chain(
                r.metrics
                    .hazards
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(h, _)| format!("hazard:{h}")),
            );
        for what in hits {
            kinds.insert(what.clone());
            let first = reached
                .entry((what, config.clone()))
                .or_insert((r.seed, r.scenario.clone()));
            if r.seed < first.0 {
                *first = (r.seed, r.scenario.clone());
            }
        }
    }
    let mut never = Vec::new();
    for c in &configs {
        for k in &kinds {
            let cell = (k.clone(), c.clone());
            if !reached.contains_key(&cell) {
                never.push(cell);
            }
        }
    }
    Coverage {
        reached,
        never,
        runs: runs.len(),
        axes: (eras.len() > 1, deps.len() > 1),
    }
}

impl Coverage {
    /// Cells in the universe.
    pub fn cells(&self) -> usize {
        self.reached.len() + self.never.len()
    }

    fn config(&self, c: &Config) -> String {
        let mut s = format!("{} · {}", c.0, c.1);
        if self.axes.0 {
            let _ = write!(s, " · era {}", c.2);
        }
        if self.axes.1 {
            let _ = write!(s, " · {}", c.3);
        }
        s
    }

    /// The coverage as Markdown: reached cells with their first seed, then
    /// the cells never reached, one line per configuration.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# Coverage\n\n{} of {} cells reached over {} runs (a cell: cause or hazard × arm × client profile{}{}).\n\n",
            self.reached.len(),
            self.cells(),
            self.runs,
            if self.axes.0 { " × era" } else { "" },
            if self.axes.1 { " × deployment" } else { "" },
        );
        out.push_str("## Reached\n\n| cell | configuration | first reached |\n|---|---|---|\n");
        for ((what, c), (seed, scenario)) in &self.reached {
            let _ = writeln!(
                out,
                "| {what} | {} | seed {seed} of {scenario} |",
                self.config(c)
            );
        }
        let _ = writeln!(out, "\n## Never reached ({})\n", self.never.len());
        let mut by: BTreeMap<&Config, Vec<&str>> = BTreeMap::new();
        for (what, c) in &self.never {
            by.entry(c).or_default().push(what);
        }
        for (c, whats) in by {
            let _ = writeln!(out, "- {}: {}", self.config(c), whats.join(", "));
        }
        out
    }
}

/// Writes `out/coverage.md` for `summary`; returns its text.
pub fn write(out: &Path, summary: &Summary) -> anyhow::Result<String> {
    let md = of(&summary.runs).markdown();
    crate::base::console::write(&out.join("coverage.md"), &md)?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Options;

    fn run(seed: u64, server: &str, causes: &[&str], hazards: &[&str]) -> RunReport {
        let sc = crate::scenario::Scenario::parse(
            "name = \"s\"\nduration_ms = 1000\nhazards = [\"drop\"]\n[[clients]]\nbehaviour = \"resume\"\n",
        )
        .unwrap();
        let mut r = RunReport::of(&sc, seed, server, &Options::default());
        for c in causes {
            r.metrics.failures_by_cause.insert(c.to_string(), 1);
        }
        for h in hazards {
            r.metrics.hazards.insert(h.to_string(), 1);
        }
        r
    }

    #[test]
    fn a_cell_is_reached_first_at_its_lowest_seed_and_the_rest_are_never_reached() {
        let runs = [
            run(4, "unguarded", &["retry_without_key"], &["drop"]),
            run(2, "unguarded", &["retry_without_key"], &[]),
            run(3, "guarded", &[], &["drop"]),
        ];
        let c = of(&runs);
        let cell = |what: &str, arm: &str| {
            (
                what.to_string(),
                (
                    arm.into(),
                    "scenario".into(),
                    "scenario".into(),
                    "as written".into(),
                ),
            )
        };
        assert_eq!(
            c.reached[&cell("cause:retry_without_key", "unguarded")].0,
            2
        );
        assert_eq!(c.reached[&cell("hazard:drop", "guarded")].0, 3);
        assert!(!c
            .reached
            .contains_key(&cell("cause:retry_without_key", "guarded")));
        assert!(c
            .never
            .contains(&cell("cause:retry_without_key", "guarded")));
        // Every cause and the declared hazard, on both arms.
        assert_eq!(c.cells(), 2 * (PRECEDENCE.len() + 1));
        assert_eq!(c.reached.len(), 3);
        let md = c.markdown();
        let line = format!(
            "3 of {} cells reached over 3 runs",
            2 * (PRECEDENCE.len() + 1)
        );
        assert!(md.contains(&line), "{md}");
        assert!(
            !md.contains("× era") && !md.contains("· era"),
            "one era: no era axis"
        );
    }
}

//! The `shrink` command over [`super::shrink_to`]: the run's scenario with
//! the command line's options baked in, shrunk, written as a scenario
//! whose header says the command that wrote it and what it pins.

use crate::base::console::{errln, outln, write};
use crate::hosts::sut::Arm;
use crate::run::catalog;
use crate::run::{self, Options};
use crate::scenario::{RegressionKind, Scenario};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// `shrink`: the run at `path` (with `opts` baked in) shrunk to `goal`,
/// written to `out`, and how to check it.
pub fn shrink(
    path: &Path,
    seed: u64,
    variant: Arm,
    opts: &Options,
    goal: &super::Goal,
    out: Option<PathBuf>,
) -> anyhow::Result<u8> {
    // The profile and overrides are baked into the shrunk scenario, so it
    // replays alone.
    let scenario = run::effective(&catalog::load(path)?, opts).map_err(anyhow::Error::msg)?;
    let mut flags = opts.flags();
    for m in &goal.until {
        flags.push_str(&format!(" --until {m}"));
    }
    flags.push_str(&format!(" --kind {}", goal.kind.as_str()));
    if goal.max_runs != super::DEFAULT_MAX_RUNS {
        flags.push_str(&format!(" --max-runs {}", goal.max_runs));
    }
    let command = format!(
        "mcp-chaos shrink --scenario {} --seed {seed} --server {}{flags}",
        path.display(),
        variant.as_str()
    );
    let (out, found) = shrink_one(&scenario, seed, variant, goal, out, &command, None)?;
    outln!(
        "shrunk {} faults to {}, {} clients to {} and {} calls to {} in {} runs (budget {}{}), \
         preserving {:?}; wrote {} ({}; check with `mcp-chaos run --scenario {} --seed {seed} \
         --server {}`)",
        found.faults_before,
        found.faults_after,
        found.clients.0,
        found.clients.1,
        found.calls.0,
        found.calls.1,
        found.runs,
        found.max_runs,
        if found.exhausted {
            ", spent: a larger --max-runs may shrink further"
        } else {
            ""
        },
        found.metrics,
        out.display(),
        promise(&found.scenario, seed),
        out.display(),
        variant.as_str()
    );
    Ok(0)
}

/// Shrinks one run and writes the scenario (default:
/// sims/regressions/NAME.toml); notes dropped bounds on stderr.
pub fn shrink_one(
    scenario: &Scenario,
    seed: u64,
    variant: Arm,
    goal: &super::Goal,
    out: Option<PathBuf>,
    command: &str,
    name: Option<String>,
) -> anyhow::Result<(PathBuf, super::Shrunk)> {
    let mut found = super::shrink_to(scenario, seed, variant, goal).map_err(anyhow::Error::msg)?;
    if let Some(n) = name {
        found.scenario.name = n;
    }
    let out =
        out.unwrap_or_else(|| PathBuf::from(format!("target/shrunk/{}.toml", found.scenario.name)));
    let text = format!(
        "# {}\n# Written by `{command}`.\n# Pins {}.\n{}",
        found.scenario.description,
        promise(&found.scenario, seed),
        toml::to_string(&found.scenario).context("printing the scenario")?
    );
    write(&out, &text)?;
    for p in &found.pruned {
        errln!(
            "mcp-chaos: {}: dropped a bound that fails on the shrunk scenario: {p}",
            out.display()
        );
    }
    Ok((out, found))
}

/// What a shrunk scenario's `[regression]` promises, one line.
pub fn promise(s: &Scenario, seed: u64) -> String {
    match &s.regression {
        Some(r) => match r.kind {
            RegressionKind::Hazard => format!(
                "a hazard: seed {seed} on {} passes while it still shows {} (and its expectations break once it no longer does)",
                r.server,
                r.metrics.join(", ")
            ),
            RegressionKind::Bug => format!(
                "a bug: seed {seed} on {}: its expectations break while it shows {} (until fixed)",
                r.server,
                r.metrics.join(", ")
            ),
        },
        None => format!("seed {seed}: its expectations pin the failure"),
    }
}

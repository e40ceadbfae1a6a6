//! What `explore` says: the space, the runs, the pruning ratio, the wall
//! time; every failing placement grouped by cause, smallest first, each
//! with the command that replays it; or, for an arm with none, the exact
//! statement. As text, JSON (for CI) and a page (`explore.html`), and as
//! regression scenarios: every failing placement in the output directory,
//! the smallest per cause beside the project's other regressions.

use super::{Exploration, Failing, Setup};
use crate::fault::{to_table, Fault};
use crate::scenario::{Regression, RegressionKind, Scenario};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One failing placement in the JSON summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingLine {
    /// The first cause of its failed operations.
    pub cause: String,
    /// Its other causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// Its faults, in words.
    pub placement: String,
    /// 1 or 2.
    pub depth: u8,
    /// Failed operations.
    pub failed: u64,
    /// The command that replays it (empty: its regression was not
    /// written, see `regression`).
    pub repro: String,
    /// Its regression scenario (in the output directory), written for the
    /// placements the pages show (the first [`SHOWN`] of each cause) or,
    /// with `--all-regressions`, for every one; empty when not written.
    pub regression: String,
    /// Not run: the single placement whose run it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

/// `explore`'s JSON: what CI reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Always `"explore"` (so `merge` can tell it from a sweep's).
    pub kind: String,
    /// The scenario's name.
    pub scenario: String,
    /// The arm.
    pub server: String,
    /// The client profile (`scenario`: as written).
    pub clients: String,
    /// The root seed of every run.
    pub seed: u64,
    /// Depth.
    pub depth: u8,
    /// The kinds placed.
    pub kinds: Vec<String>,
    /// Shard K/N, when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The `--set` overrides every run made, `KEY=VALUE` in order (not
    /// written when none): shards merge only with the same ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<String>,
    /// Boundaries of the run without faults.
    pub boundaries: u64,
    /// Each of them, in the order the run reached them.
    pub boundary_list: Vec<String>,
    /// Single placements.
    pub singles: u64,
    /// Placements of depth ≤ `depth` (this shard's share).
    pub space: u64,
    /// Simulations run.
    pub runs: u64,
    /// `space / runs`.
    pub pruning_ratio: f64,
    /// Wall-clock time, ms (the one figure that varies run to run).
    pub wall_ms: u64,
    /// The smallest client retry budget, ms.
    pub retry_budget_ms: u64,
    /// The two partition lengths, ms.
    pub partition_ms: [u64; 2],
    /// Failing placements.
    pub failing_placements: u64,
    /// Every failing placement, smallest first.
    pub failing: Vec<FailingLine>,
}

/// The file name of a failing placement's regression: its scenario, arm
/// and number among the failing.
fn regression_name(setup: &Setup, i: usize) -> String {
    format!("{}-{}-{}", stem(setup), setup.arm.as_str(), i + 1)
}

/// `explore-SCENARIO` (a scenario named `explore-…` keeps its name).
fn stem(setup: &Setup) -> String {
    let name = &setup.scenario.name;
    if name.starts_with("explore-") {
        name.clone()
    } else {
        format!("explore-{name}")
    }
}

impl Summary {
    /// Of an exploration, its regressions under `dir` (those `written`).
    pub fn of(setup: &Setup, x: &Exploration, dir: &Path, written: &[bool]) -> Summary {
        let failing = x
            .failing
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let file = dir
                    .join("regressions")
                    .join(format!("{}.toml", regression_name(setup, i)));
                let (repro, regression) = if written[i] {
                    (
                        format!(
                            "mcp-chaos run --scenario {} --seed {} --server {}",
                            file.display(),
                            setup.seed,
                            setup.arm.as_str()
                        ),
                        file.display().to_string(),
                    )
                } else {
                    (String::new(), String::new())
                };
                FailingLine {
                    cause: f.causes.first().cloned().unwrap_or_default(),
                    also: f.causes.iter().skip(1).cloned().collect(),
                    placement: f.placement.clone(),
                    depth: f.depth,
                    failed: f.verdict.failed,
                    repro,
                    regression,
                    same_as: f.same_as.clone(),
                }
            })
            .collect::<Vec<_>>();
        Summary {
            kind: "explore".into(),
            scenario: setup.scenario.name.clone(),
            server: setup.arm.as_str().into(),
            clients: setup.opts.clients_label().into(),
            seed: setup.seed,
            depth: setup.depth,
            kinds: setup.kinds.iter().map(|k| k.name().to_string()).collect(),
            shard: (setup.shard.1 > 1).then(|| format!("{}/{}", setup.shard.0, setup.shard.1)),
            sets: setup
                .opts
                .sets
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            boundaries: x.boundaries.len() as u64,
            boundary_list: x.boundaries.iter().map(|b| b.to_string()).collect(),
            singles: x.singles.len() as u64,
            space: x.space,
            runs: x.runs,
            pruning_ratio: ratio(x.space, x.runs),
            wall_ms: x.wall_ms,
            retry_budget_ms: x.budget.retry_budget_ms,
            partition_ms: x.budget.partition_ms,
            failing_placements: failing.len() as u64,
            failing,
        }
    }

    /// Shards of one exploration merged: spaces, runs and failing
    /// placements added up (wall time: the longest shard's).
    pub fn merge(parts: &[Summary]) -> Result<Summary, String> {
        let first = parts.first().ok_or("nothing to merge")?;
        let same = |s: &Summary| {
            (
                &s.scenario,
                &s.server,
                &s.clients,
                s.seed,
                s.depth,
                &s.kinds,
            ) == (
                &first.scenario,
                &first.server,
                &first.clients,
                first.seed,
                first.depth,
                &first.kinds,
            )
        };
        if let Some(other) = parts.iter().find(|s| !same(s)) {
            return Err(format!(
                "cannot merge explorations of different setups: {} on {} and {} on {}",
                first.scenario, first.server, other.scenario, other.server
            ));
        }
        if let Some(other) = parts.iter().find(|s| s.sets != first.sets) {
            return Err(format!(
                "cannot merge explorations run with different --set overrides: [{}] and [{}]: \
                 merge the shards of one explore command",
                first.sets.join(", "),
                other.sets.join(", ")
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut split = None;
        for s in parts {
            let label = s.shard.clone().unwrap_or_else(|| "1/1".into());
            let n = label.rsplit_once('/').map(|(_, n)| n.to_string());
            if split.get_or_insert_with(|| n.clone()) != &n {
                return Err(format!(
                    "cannot merge shard {label} with shards of another split ({} first): merge \
                     the shards of one explore --shard K/N",
                    first.shard.as_deref().unwrap_or("1/1")
                ));
            }
            if !seen.insert(label.clone()) {
                return Err(format!(
                    "shard {label} is given twice: merge each shard of an exploration once"
                ));
            }
        }
        let mut out = first.clone();
        out.shard = None;
        out.space = parts.iter().map(|s| s.space).sum();
        out.runs = parts.iter().map(|s| s.runs).sum();
        out.wall_ms = parts.iter().map(|s| s.wall_ms).max().unwrap_or(0);
        out.failing = parts.iter().flat_map(|s| s.failing.clone()).collect();
        out.failing
            .sort_by(|a, b| (a.depth, &a.regression).cmp(&(b.depth, &b.regression)));
        out.failing_placements = out.failing.len() as u64;
        out.pruning_ratio = ratio(out.space, out.runs);
        Ok(out)
    }
}

fn ratio(space: u64, runs: u64) -> f64 {
    if runs == 0 {
        return 0.0;
    }
    (space as f64 / runs as f64 * 100.0).round() / 100.0
}

/// Failing placements shown per cause (explore.json has them all).
const SHOWN: usize = 10;

/// The report as text (Markdown, also the page's source).
pub fn render_text(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# explore: {} on {} (clients: {}), seed {}, depth ≤ {}, kinds {}\n",
        s.scenario,
        s.server,
        s.clients,
        s.seed,
        s.depth,
        s.kinds.join(", ")
    );
    let _ = writeln!(
        out,
        "- boundaries of the run without faults: {}; single placements: {}",
        s.boundaries, s.singles
    );
    let _ = writeln!(
        out,
        "- partition lengths {} ms and {} ms (their sum below the smallest client retry budget, backoff × attempts = {} ms)",
        s.partition_ms[0], s.partition_ms[1], s.retry_budget_ms
    );
    let _ = writeln!(
        out,
        "- space: {} placements of depth ≤ {}{}; runs: {}; pruning ratio {:.2}; wall time {:.1} s\n",
        s.space,
        s.depth,
        s.shard.as_deref().map(|k| format!(" (shard {k})")).unwrap_or_default(),
        s.runs,
        s.pruning_ratio,
        s.wall_ms as f64 / 1e3
    );
    if s.failing.is_empty() {
        let _ = writeln!(
            out,
            "**0 failed operations over all {} placements of depth ≤ {} of kinds {}.**",
            s.space,
            s.depth,
            s.kinds.join(", ")
        );
        return out;
    }
    let _ = writeln!(
        out,
        "**{} of {} placements fail.** By cause, smallest first:\n",
        s.failing_placements, s.space
    );
    // Causes in the order of their smallest placement (singles, then
    // pairs, in boundary order).
    let mut by_cause: Vec<(&str, Vec<&FailingLine>)> = Vec::new();
    for f in &s.failing {
        match by_cause.iter_mut().find(|(c, _)| *c == f.cause) {
            Some((_, v)) => v.push(f),
            None => by_cause.push((&f.cause, vec![f])),
        }
    }
    for (cause, lines) in by_cause {
        let _ = writeln!(out, "## {cause}: {} placements\n", lines.len());
        for f in lines.iter().take(SHOWN) {
            let also = if f.also.is_empty() {
                String::new()
            } else {
                format!(" (also {})", f.also.join(", "))
            };
            let same = f
                .same_as
                .as_deref()
                .map(|x| format!("; not run: its run is that of {x}"))
                .unwrap_or_default();
            let _ = writeln!(out, "- {} — {} failed{also}{same}", f.placement, f.failed);
            if !f.repro.is_empty() {
                let _ = writeln!(out, "  `{}`", f.repro);
            }
        }
        if lines.len() > SHOWN {
            let _ = writeln!(
                out,
                "- … and {} more with this cause (explore.json lists every one)",
                lines.len() - SHOWN
            );
        }
        out.push('\n');
    }
    out
}

/// What every regression of one exploration is written from: its setup,
/// the scenario as run (options applied) and the baseline's drawn faults.
struct Base<'a> {
    setup: &'a Setup,
    effective: &'a Scenario,
    baseline: &'a [Fault],
}

/// The regression scenario of a failing placement: the scenario as run,
/// its plan explicit, its arm expected to fail with its first cause.
fn regression(base: &Base<'_>, f: &Failing, name: &str) -> Result<String, String> {
    let Base {
        setup,
        effective,
        baseline,
    } = *base;
    let mut s = super::with_plan(effective, baseline, &f.faults);
    let cause = f.causes.first().cloned().unwrap_or_default();
    let arm = setup.arm.as_str();
    let metric = format!("failures_by_cause.{cause}");
    s.expect = Default::default();
    let mut e = crate::scenario::Expect::default();
    e.min.insert(metric.clone(), 1);
    s.expect.set(arm, e);
    s.regression = Some(Regression {
        kind: RegressionKind::Hazard,
        server: arm.into(),
        metrics: vec![metric],
    });
    s.name = name.to_string();
    s.description = format!(
        "explore: {} fails on {arm} ({cause}), {}",
        setup.scenario.name, f.placement
    );
    let faults: Vec<String> = f.faults.iter().map(|x| to_table(x).to_string()).collect();
    let header = format!(
        "# Found by `mcp-chaos explore --scenario {} --server {arm}{}` (seed {}):\n\
         # {} makes {} operation(s) of the {arm} arm fail, cause {cause}.\n\
         # Replay: mcp-chaos run --scenario THIS_FILE --seed {} --server {arm}\n\
         # (the same trace as explore's run: {}).\n# Placed faults:\n{}",
        setup.path,
        setup.opts.flags(),
        setup.seed,
        f.placement,
        f.verdict.failed,
        setup.seed,
        f.verdict.trace.get(..16).unwrap_or(""),
        faults
            .iter()
            .flat_map(|t| t.lines().map(|l| format!("#   {l}\n")).collect::<Vec<_>>())
            .collect::<String>(),
    );
    Ok(format!(
        "{header}{}",
        toml::to_string(&s).map_err(|e| e.to_string())?
    ))
}

/// Which failing placements the pages show (the first [`SHOWN`] of each
/// first cause, in placement order): those whose regression is written.
pub fn shown(failing: &[super::Failing]) -> Vec<bool> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    failing
        .iter()
        .map(|f| {
            let n = seen
                .entry(f.causes.first().map_or("", String::as_str))
                .or_default();
            *n += 1;
            *n <= SHOWN
        })
        .collect()
}

/// Writes `explore.json`, `explore.md`, `explore.html` and the
/// regressions of the failing placements the pages show (of every one
/// with `all`) to `dir`, and the smallest failing placement per cause to
/// `smallest` (when given); returns the summary and the files written to
/// `smallest`.
pub fn write_outputs(
    setup: &Setup,
    x: &Exploration,
    (dir, all): (&Path, bool),
    smallest: Option<&Path>,
) -> Result<(Summary, Vec<PathBuf>), String> {
    let io = |p: &Path, e: std::io::Error| format!("cannot write {}: {e}", p.display());
    let regs = dir.join("regressions");
    std::fs::create_dir_all(&regs).map_err(|e| io(&regs, e))?;
    // The scenario as run, once for every regression it writes.
    let effective = crate::run::effective(&setup.scenario, &setup.opts)?;
    let base = Base {
        setup,
        effective: &effective,
        baseline: &x.baseline_plan,
    };
    let written: Vec<bool> = if all {
        vec![true; x.failing.len()]
    } else {
        shown(&x.failing)
    };
    let summary = Summary::of(setup, x, dir, &written);
    let mut first_of: BTreeMap<String, usize> = BTreeMap::new();
    for (i, f) in x.failing.iter().enumerate() {
        if written[i] {
            let name = regression_name(setup, i);
            let text = regression(&base, f, &name)?;
            let path = regs.join(format!("{name}.toml"));
            std::fs::write(&path, &text).map_err(|e| io(&path, e))?;
        }
        if let Some(c) = f.causes.first() {
            first_of.entry(c.clone()).or_insert(i);
        }
    }
    let mut written = Vec::new();
    if let Some(to) = smallest {
        std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
        for (cause, i) in first_of {
            let name = format!("{}-{}-{cause}", stem(setup), setup.arm.as_str());
            let text = regression(&base, &x.failing[i], &name)?;
            let path = to.join(format!("{name}.toml"));
            std::fs::write(&path, text).map_err(|e| io(&path, e))?;
            written.push(path);
        }
    }
    let json = serde_json::to_string_pretty(&summary).expect("the summary serializes") + "\n";
    let md = render_text(&summary);
    for (name, text) in [
        ("explore.json", json),
        ("explore.md", md.clone()),
        (
            "explore.html",
            crate::report::page(&format!("explore: {}", summary.scenario), &md),
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
    }
    Ok((summary, written))
}

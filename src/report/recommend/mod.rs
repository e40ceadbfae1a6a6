//! What a report concludes: the configuration to deploy among those run.
//!
//! A *configuration* is an arm with a client profile and the run's server
//! overrides. Each is ranked by failed operations per 1,000 operations,
//! pooled over every scenario it could serve (a rate, so a scenario of 6
//! operations and one of 79,200 both count by what they ran), with the
//! min–max of its per-seed rates as the interval. Ties go to the cheaper:
//! lower p99 migration latency, then fewer extra executions, then fewer
//! replayed events per operation. The first is the recommendation; it is
//! measured against the baseline (`unguarded` with the scenarios' own
//! clients, or plain clients when only profiles ran), and each cause of
//! what remains is paired with the mechanism that removes it, with the
//! evidence when a configuration run here or beside it (the matrix and the
//! zero under the output directory) shows it removed.

use super::matrix::{arm_rank, profile_rank};
use super::numbers::{counted, held_in_all, most_first, per_1000, rate_text, thousands};
use crate::run::{RunReport, AS_WRITTEN};
use crate::sweep::Summary;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// One configuration's standing over every run of it in a summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// The arm.
    pub server: String,
    /// The client profile (`scenario`: as each scenario writes them).
    pub clients: String,
    /// The runs' `--set` overrides, as given.
    pub settings: Vec<String>,
    /// Operations over every run.
    pub operations: u64,
    /// Failed operations over every run.
    pub failed: u64,
    /// Degraded operations over every run.
    pub degraded: u64,
    /// Lowest and highest per-seed rate (failed per 1,000 operations,
    /// pooled over the scenarios of that seed).
    pub seed_rates: (f64, f64),
    /// The rate's 95 % interval over seeds ([`decide::interval`]).
    pub interval: (f64, f64),
    /// Seeds that ran some operation of it.
    pub seeds: usize,
    /// Tied with the best configuration ([`decide::tied`]; set when the
    /// standings are ordered).
    pub tied: bool,
    /// Failed operations by their one primary cause.
    pub by_cause: BTreeMap<String, u64>,
    /// p99 of the migration latency over every run, µs (0: no migration).
    pub p99_us: u64,
    /// Executions beyond each operation's first.
    pub extra_executions: u64,
    /// Events written again from the store on resumes.
    pub replayed_events: u64,
    /// Runs, and runs whose expectations broke.
    pub runs: u64,
    /// Runs whose scenario's expectations broke.
    pub broken_runs: u64,
    /// Scenarios run, and those the arm could not serve at all.
    pub scenarios: usize,
    /// Scenarios none of whose clients the arm could serve.
    pub not_applicable: Vec<String>,
}

impl Standing {
    /// Failed operations per 1,000 operations.
    pub fn rate(&self) -> f64 {
        per_1000(self.failed, self.operations)
    }

    /// `guarded`, `guarded with keys+cursors clients`, plus the settings
    /// one deploys (the era left out: it is a condition, not a setting).
    pub fn configuration(&self) -> String {
        let mut out = format!("`{}`", self.server);
        if self.clients == AS_WRITTEN {
            out.push_str(" with the scenarios' own clients");
        } else {
            let _ = write!(out, " with `{}` clients", self.clients);
        }
        let sets: Vec<&str> = decide::deployed_settings(&self.settings)
            .map(String::as_str)
            .collect();
        if !sets.is_empty() {
            let _ = write!(out, " and `{}`", sets.join("`, `"));
        }
        out
    }

    /// [`Standing::configuration`], then the era as the wire it ran on.
    pub fn name(&self) -> String {
        let mut out = self.configuration();
        if let Some(era) = self.settings.iter().find_map(|s| s.strip_prefix("era=")) {
            let _ = write!(out, " on the {era} wire");
        }
        out
    }

    /// Its failed operations of `cause`.
    pub fn of_cause(&self, cause: &str) -> u64 {
        self.by_cause.get(cause).copied().unwrap_or(0)
    }
}

/// The recommendation: the best-ranked configuration, the baseline it is
/// measured against, and every configuration in rank order.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    /// The arm to deploy.
    pub server: String,
    /// With which client profile.
    pub clients: String,
    /// Every configuration, best first (the first is the recommendation).
    pub ranked: Vec<Standing>,
    /// The baseline's index in `ranked`, when it ran.
    pub baseline: Option<usize>,
}

impl Recommendation {
    /// The recommended configuration's standing.
    pub fn best(&self) -> &Standing {
        &self.ranked[0]
    }

    /// The baseline's standing, when it ran.
    pub fn baseline(&self) -> Option<&Standing> {
        self.baseline.map(|i| &self.ranked[i])
    }
}

/// Every configuration of `s` with its standing, best first.
pub fn standings(s: &Summary) -> Vec<Standing> {
    standings_of(s.runs.iter())
}

/// Every configuration of `runs` with its standing, in decision order:
/// the best and those tied with it first, the fewest mechanisms first
/// among them, then the rest by rate ([`decide`]).
pub fn standings_of<'a>(runs: impl Iterator<Item = &'a RunReport>) -> Vec<Standing> {
    type Key = (String, String, Vec<String>);
    let mut groups: BTreeMap<Key, Vec<&RunReport>> = BTreeMap::new();
    for r in runs {
        groups
            .entry((r.server.clone(), r.clients.clone(), r.overrides.clone()))
            .or_default()
            .push(r);
    }
    let v: Vec<Standing> = groups
        .into_iter()
        .map(|((server, clients, settings), runs)| standing(server, clients, settings, &runs))
        .collect();
    order(v)
}

/// `v` in decision order, each marked tied or not with the best.
pub fn order(mut v: Vec<Standing>) -> Vec<Standing> {
    v.sort_by(rank);
    let Some(best) = v.first().filter(|b| b.operations > 0).cloned() else {
        return v;
    };
    for x in &mut v {
        x.tied = decide::tied(x, &best);
    }
    v.sort_by(|a, b| {
        b.tied.cmp(&a.tied).then_with(|| {
            if a.tied && b.tied {
                decide::mechanisms(a)
                    .cmp(&decide::mechanisms(b))
                    .then(costs(a, b))
                    .then(rank(a, b))
            } else {
                rank(a, b)
            }
        })
    });
    v
}

fn standing(
    server: String,
    clients: String,
    settings: Vec<String>,
    runs: &[&RunReport],
) -> Standing {
    let mut by_seed: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut by_scenario: BTreeMap<&str, u64> = BTreeMap::new();
    let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
    let mut hist = crate::oracle::new_hist();
    let (mut operations, mut failed, mut degraded) = (0, 0, 0);
    let (mut extra, mut replayed, mut broken) = (0, 0, 0);
    for r in runs {
        let m = &r.metrics;
        operations += m.operations;
        failed += m.ops_failed;
        degraded += m.ops_degraded;
        extra += m.get("extra_executions").unwrap_or(0);
        replayed += m.get("replayed_events").unwrap_or(0);
        broken += u64::from(r.failed());
        *by_scenario.entry(r.scenario.as_str()).or_default() += m.operations;
        let seed = by_seed.entry(r.seed).or_default();
        seed.0 += m.ops_failed;
        seed.1 += m.operations;
        for (c, n) in &m.failures_by_cause {
            *by_cause.entry(c.clone()).or_default() += n;
        }
        for &(value, count) in &r.migration_latency_hist_us {
            // Values outside the histogram's bounds were refused when the
            // summary was read (`sweep::check_figures`).
            let _ = hist.record_n(value, count);
        }
    }
    let points: Vec<(u64, u64)> = by_seed.values().copied().collect();
    let rates: Vec<f64> = by_seed
        .values()
        .filter(|(_, ops)| *ops > 0)
        .map(|&(f, ops)| per_1000(f, ops))
        .collect();
    let seed_rates = (
        rates.iter().copied().fold(f64::INFINITY, f64::min),
        rates.iter().copied().fold(0.0, f64::max),
    );
    Standing {
        server,
        clients,
        settings,
        operations,
        failed,
        degraded,
        seed_rates: if rates.is_empty() {
            (0.0, 0.0)
        } else {
            seed_rates
        },
        interval: decide::interval(&points),
        seeds: rates.len(),
        tied: false,
        by_cause,
        p99_us: if hist.is_empty() {
            0
        } else {
            hist.value_at_quantile(0.99)
        },
        extra_executions: extra,
        replayed_events: replayed,
        runs: runs.len() as u64,
        broken_runs: broken,
        scenarios: by_scenario.len(),
        not_applicable: by_scenario
            .iter()
            .filter(|(sc, ops)| {
                **ops == 0
                    && runs
                        .iter()
                        .any(|r| r.scenario == **sc && r.verdict == crate::run::NOT_APPLICABLE)
            })
            .map(|(sc, _)| sc.to_string())
            .collect(),
    }
}

/// `n / of` against `m / mof`, compared exactly.
fn ratio(n: u64, of: u64, m: u64, mof: u64) -> std::cmp::Ordering {
    (u128::from(n) * u128::from(mof.max(1))).cmp(&(u128::from(m) * u128::from(of.max(1))))
}

/// `a` before `b`: fewer failed per operation (compared exactly), then
/// the cheaper ([`costs`]), then report order.
fn rank(a: &Standing, b: &Standing) -> std::cmp::Ordering {
    // Nothing ran (every scenario not applicable) ranks last.
    (a.operations == 0)
        .cmp(&(b.operations == 0))
        .then(ratio(a.failed, a.operations, b.failed, b.operations))
        .then(costs(a, b))
        .then(profile_rank(&a.clients).cmp(&profile_rank(&b.clients)))
        .then(arm_rank(&a.server).cmp(&arm_rank(&b.server)))
        .then(a.server.cmp(&b.server))
        .then(a.settings.cmp(&b.settings))
}

/// `a` before `b` by cost: p99 migration latency, then extra executions,
/// then replayed events per operation.
fn costs(a: &Standing, b: &Standing) -> std::cmp::Ordering {
    a.p99_us
        .cmp(&b.p99_us)
        .then(ratio(
            a.extra_executions,
            a.operations,
            b.extra_executions,
            b.operations,
        ))
        .then(ratio(
            a.replayed_events,
            a.operations,
            b.replayed_events,
            b.operations,
        ))
}

/// The configuration to deploy among those `s` ran; `None` when it ran
/// nothing.
pub fn recommend(s: &Summary) -> Option<Recommendation> {
    let ranked = standings(s);
    let first = ranked.first()?;
    // The baseline runs with the settings every configuration shares (a
    // `--set` given to the whole comparison, such as `era=`), else none.
    let shared = if ranked.iter().all(|x| x.settings == first.settings) {
        first.settings.clone()
    } else {
        Vec::new()
    };
    let baseline = [AS_WRITTEN, "plain"].iter().find_map(|p| {
        ranked
            .iter()
            .position(|x| x.server == "unguarded" && x.clients == *p && x.settings == shared)
    });
    Some(Recommendation {
        server: first.server.clone(),
        clients: first.clients.clone(),
        baseline,
        ranked,
    })
}

/// Configurations run beside this summary, as evidence: the standings of
/// `OUT/matrix/summary.json` and `OUT/zero/summary.json` when they exist.
#[derive(Clone, Debug, Default)]
pub struct Beside {
    /// (directory as the report names it, its standings best first): the
    /// matrix and the zero, the evidence of what removes a cause.
    pub dirs: Vec<(String, Vec<Standing>)>,
    /// (directory, summary) of every comparison beside this one that may
    /// answer a row of [`answer`]: the matrix, the zeros, each era.
    pub sources: Vec<(String, Summary)>,
}

/// The comparisons beside a report, under its output directory or the
/// committed `results/`: the first two are also evidence ([`Beside::dirs`]);
/// the last three compare the webhook senders over `sims/events/` (the
/// events decision table's candidates).
pub const BESIDE: [&str; 9] = [
    "matrix",
    "zero",
    "zero-2026",
    "zero-2026-tasks",
    "eras/2025-11-25",
    "eras/2026-07-28",
    "events/naive",
    "events/spec",
    "events/durable",
];

impl Beside {
    /// The matrix and zero summaries under `out`, else the committed ones
    /// under `results/` (skipped when missing or unreadable: evidence, not
    /// input).
    pub fn under(out: &Path) -> Beside {
        let mut b = Beside::default();
        let read = |path: &Path| -> Option<Summary> {
            let text = std::fs::read_to_string(path).ok()?;
            serde_json::from_str::<Summary>(&text).ok()
        };
        for (i, sub) in BESIDE.iter().enumerate() {
            for dir in [out, Path::new("results")] {
                let Some(s) = read(&dir.join(sub).join("summary.json")) else {
                    continue;
                };
                let name = dir.join(sub).display().to_string();
                if i < 2 {
                    b.dirs.push((name.clone(), standings(&s)));
                }
                b.sources.push((name, s));
                break;
            }
        }
        // The committed main comparison (the scenarios' own clients) beside
        // any other: it answers the server-only row.
        let main = Path::new("results");
        if out != main {
            if let Some(s) = read(&main.join("summary.json")) {
                b.sources.push(("results".into(), s));
            }
        }
        b
    }
}

/// Where `cause` is shown removed (or reduced most), preferring the
/// smallest change from `best`: among this summary's configurations and
/// those beside it with at most half of `best`'s share of it per
/// operation (a configuration that merely had fewer, by chance, shows
/// nothing), the one with the fewest of it, then the fewest `--set`
/// overrides, then `best`'s own arm, then the best rank.
fn evidence<'a>(
    cause: &str,
    best: &Standing,
    here: &Here<'a>,
    beside: &'a Beside,
) -> Option<(Option<&'a str>, &'a Standing)> {
    let share = |x: &Standing| per_1000(x.of_cause(cause), x.operations);
    // A comparison beside that ran none of this one's scenarios shows
    // nothing about them (the matrix never ran `sims/field/`).
    let ran_here = |d: &str| {
        beside.sources.iter().any(|(name, s)| {
            name == d && {
                let there = super::scenarios(s);
                here.scenarios.iter().any(|sc| there.contains(sc))
            }
        })
    };
    let there = beside
        .dirs
        .iter()
        .filter(|(d, _)| ran_here(d))
        .flat_map(|(d, v)| v.iter().map(move |x| (Some(d.as_str()), x)));
    let here = here.ranked.iter().map(|x| (None, x));
    here.chain(there)
        .filter(|(_, x)| x.operations > 0 && share(x) <= share(best) / 2.0)
        .min_by(|a, b| {
            share(a.1)
                .total_cmp(&share(b.1))
                .then(a.1.settings.len().cmp(&b.1.settings.len()))
                .then((a.1.server != best.server).cmp(&(b.1.server != best.server)))
                .then(rank(a.1, b.1))
        })
}

/// The seeds `s` ran.
pub(super) fn seeds_of(s: &Summary) -> usize {
    let mut v: Vec<u64> = s.runs.iter().map(|r| r.seed).collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// The report's first section, in Markdown: what to deploy, what it
/// removes against the baseline, what remains and what removes that,
/// then every configuration ranked.
pub fn markdown(s: &Summary, beside: &Beside) -> String {
    let mut out = String::from("## What to deploy\n\n");
    let Some(rec) = recommend(s) else {
        out.push_str("This summary holds no runs: nothing to recommend.\n\n");
        return out;
    };
    out.push_str(&answer::markdown(s, beside));
    out.push_str("### Among the configurations this run ran\n\n");
    let best = rec.best();
    let scenarios = super::scenarios(s).len();
    let seeds = seeds_of(s);
    let ran = format!(
        "{}, {}",
        counted(scenarios as u64, "scenario"),
        counted(seeds as u64, "seed")
    );
    let lead = lead(&rec, &ran);
    let _ = writeln!(
        out,
        "**Deploy {}.** {lead} {} per 1,000 operations (95 % interval {}; per seed {}–{}; {} of {} failed, {} degraded).\n",
        best.name(),
        rate_text(best.rate()),
        interval_text(best),
        rate_text(best.seed_rates.0),
        rate_text(best.seed_rates.1),
        thousands(best.failed),
        thousands(best.operations),
        thousands(best.degraded),
    );
    let noise = decide::noise_sentence(&rec.ranked, seeds);
    if !noise.is_empty() {
        let _ = writeln!(out, "{noise}\n");
    }
    match rec.baseline() {
        Some(_) if rec.baseline == Some(0) => {
            out.push_str("It is the baseline itself: no arm run here removes a failure it has.\n\n");
        }
        Some(base) => {
            let removed = if base.rate() > 0.0 {
                (1.0 - best.rate() / base.rate()) * 100.0
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                "Against the baseline, {} ({} per 1,000, per seed {}–{}; {} of {} failed), it removes {:.0}% of failed operations. What it costs: p99 migration latency {} (baseline {}), {} extra executions and {} replayed events per 1,000 operations (baseline {} and {}).\n",
                base.name(),
                rate_text(base.rate()),
                rate_text(base.seed_rates.0),
                rate_text(base.seed_rates.1),
                thousands(base.failed),
                thousands(base.operations),
                removed,
                super::ms(best.p99_us),
                super::ms(base.p99_us),
                rate_text(per_1000(best.extra_executions, best.operations)),
                rate_text(per_1000(best.replayed_events, best.operations)),
                rate_text(per_1000(base.extra_executions, base.operations)),
                rate_text(per_1000(base.replayed_events, base.operations)),
            );
        }
        None => out.push_str(
            "The baseline (`unguarded` with the scenarios' own or plain clients) did not run: add it to `--servers` to see what the recommendation removes.\n\n",
        ),
    }
    if !best.not_applicable.is_empty() {
        let _ = writeln!(
            out,
            "It could not serve every scenario: not applicable in {}.\n",
            best.not_applicable.join(", ")
        );
    }
    let here = Here {
        ranked: &rec.ranked,
        scenarios: &super::scenarios(s),
    };
    remaining(&mut out, best, &here, beside);
    out.push_str(&ranked_markdown(&rec));
    out
}

/// What the first sentence says of how the recommendation was chosen.
fn lead(rec: &Recommendation, ran: &str) -> String {
    let n = rec.ranked.len();
    if n == 1 {
        return format!("It is the only configuration run ({ran}), and it fails");
    }
    match decide::verdict(&rec.ranked) {
        decide::Verdict::Alone => {
            format!("Among the {n} configurations run ({ran}), it fails the fewest operations:")
        }
        decide::Verdict::Tied => format!(
            "Among the {n} configurations run ({ran}), it is tied with the fewest failed operations and has the fewest mechanisms of those tied:"
        ),
        decide::Verdict::NothingFails => format!(
            "Among the {n} configurations run ({ran}), none fails an operation, and it has the fewest mechanisms:"
        ),
    }
}

/// `lo–hi over n seeds`, or `none: one seed`.
fn interval_text(x: &Standing) -> String {
    if x.seeds < 2 {
        return "none: one seed".into();
    }
    format!(
        "{}–{} over {} seeds",
        rate_text(x.interval.0),
        rate_text(x.interval.1),
        x.seeds
    )
}

/// What remains under `best`, cause by cause, with what removes it.
/// This comparison, as [`remaining`] reads it: its configurations ranked,
/// and the scenarios it ran (a comparison beside that ran none of them is
/// no evidence).
struct Here<'a> {
    ranked: &'a [Standing],
    scenarios: &'a [&'a str],
}

fn remaining(out: &mut String, best: &Standing, here: &Here, beside: &Beside) {
    if best.failed == 0 {
        out.push_str("No operation failed under it: nothing remains to remove.\n\n");
        return;
    }
    let causes = most_first(&best.by_cause);
    let _ = writeln!(
        out,
        "What remains under it ({}), by cause, and what removes each:\n",
        counted(best.failed, "failed operation")
    );
    for (cause, n) in causes {
        let _ = write!(
            out,
            "- `{cause}`: {} ({} per 1,000). Removed by {}",
            thousands(*n),
            rate_text(per_1000(*n, best.operations)),
            remedy(cause)
        );
        match evidence(cause, best, here, beside) {
            Some((dir, x)) => {
                let _ = writeln!(
                    out,
                    "; shown by {}{}: {} of it in {} operations.",
                    x.name(),
                    dir.map_or(String::new(), |d| format!(" in `{d}`")),
                    thousands(x.of_cause(cause)),
                    thousands(x.operations)
                );
            }
            None => out.push_str(".\n"),
        }
    }
    out.push('\n');
}

/// Every configuration ranked, as a table.
fn ranked_markdown(rec: &Recommendation) -> String {
    let mut out = String::from("### Every configuration, ranked\n\nFailed operations per 1,000 operations, pooled over the scenarios each configuration could serve, with its 95 % interval over seeds (the pooled rate ± Student's t × the ratio estimator's standard error, each seed one sample). The lowest rate is the best; a configuration whose interval reaches the best's upper end is tied with it (=); among the tied, the fewest mechanisms (arm, then client profile, then settings) come first, then the lower costs: p99 migration latency, extra executions, replayed events. Expectations are the scenarios' `[expect]` tables: they say what each arm is expected to do, not what is good.\n\n| rank | configuration | failed per 1,000 (95 % interval) | failed / operations | degraded per 1,000 | top causes | costs: p99 migration, extra executions and replayed events per 1,000 | expectations |\n|---|---|---|---|---|---|---|---|\n");
    for (i, x) in rec.ranked.iter().enumerate() {
        let causes = most_first(&x.by_cause);
        let top = if causes.is_empty() {
            "–".to_string()
        } else {
            causes
                .iter()
                .take(3)
                .map(|(c, n)| format!("{c} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let expectations = if x.broken_runs == 0 {
            held_in_all(x.runs)
        } else {
            format!("break in {} of {}", x.broken_runs, counted(x.runs, "run"))
        };
        let mut name = x.name().replace(" with the scenarios' own clients", "");
        if rec.baseline == Some(i) {
            name.push_str(" (baseline)");
        }
        let rank = if x.tied && rec.ranked.iter().filter(|y| y.tied).count() > 1 {
            format!("={}", i + 1)
        } else {
            (i + 1).to_string()
        };
        let interval = if x.seeds < 2 {
            String::new()
        } else {
            format!(" ({}–{})", rate_text(x.interval.0), rate_text(x.interval.1))
        };
        let _ = writeln!(
            out,
            "| {rank} | {name} | {}{interval} | {} / {} | {} | {top} | {}, {}, {} | {expectations} |",
            rate_text(x.rate()),
            thousands(x.failed),
            thousands(x.operations),
            rate_text(per_1000(x.degraded, x.operations)),
            super::ms(x.p99_us),
            rate_text(per_1000(x.extra_executions, x.operations)),
            rate_text(per_1000(x.replayed_events, x.operations)),
        );
    }
    out.push('\n');
    out
}

/// The recommendation as a few lines for a terminal: what `compare`
/// prints first.
pub fn text(s: &Summary, beside: &Beside) -> String {
    let Some(rec) = recommend(s) else {
        return "nothing ran: nothing to recommend\n".into();
    };
    let best = rec.best();
    let mut out = format!(
        "recommendation: deploy {} — {} failed per 1,000 operations (95 % interval {}; per seed {}–{})",
        best.name().replace('`', ""),
        rate_text(best.rate()),
        interval_text(best),
        rate_text(best.seed_rates.0),
        rate_text(best.seed_rates.1)
    );
    if let Some(base) = rec.baseline().filter(|_| rec.baseline != Some(0)) {
        let _ = write!(out, "; baseline {} {}", base.server, rate_text(base.rate()));
    }
    out.push('\n');
    let noise = decide::noise_sentence(&rec.ranked, seeds_of(s));
    if !noise.is_empty() {
        let _ = writeln!(out, "  {}", noise.replace('`', ""));
    }
    if best.failed > 0 {
        let causes = most_first(&best.by_cause);
        for (cause, n) in causes.iter().take(3) {
            let _ = writeln!(
                out,
                "  remains: {cause} {n}: removed by {}",
                remedy(cause).replace('`', "")
            );
        }
    }
    out.push_str(&answer::text(s, beside));
    out
}

pub mod answer;
pub mod decide;
pub(super) mod remedies;
pub use remedies::{remedy, REMEDIES};

#[cfg(test)]
pub(super) mod tests;

//! `compare`, `sweep` and `calibrate`: batches of runs through
//! the sweep's pool (`Matrix`: scenario x seed x arm x profile), their
//! summaries, the reports written from them, the failing runs said on
//! standard error and, with `--shrink`, shrunk. It stands above `sweep`,
//! `shrink` and `report`: the one place a batch meets its reports.

use crate::base::console::{errln, outln, write};
use crate::hosts::sut::Arm;
use crate::report;
use crate::run::catalog;
use crate::run::deployments::AS_WRITTEN;
use crate::run::{self, RunReport};
use crate::scenario::{RegressionKind, Scenario};
use crate::server::Variant;
use crate::shrink;
use crate::sweep::{self, Control, Job, Seeds, Summary};
use anyhow::{bail, Context};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

mod matrix;
pub use matrix::Matrix;

/// What one run of `s` is expected to cost, for the progress line's
/// estimate: its calls' events (each call's chunks, its request and its
/// result), over every client. The runs of a comparison differ by three
/// orders of magnitude (a fleet against a seed case), so counting runs
/// alone misleads.
pub fn expected_cost(s: &Scenario) -> f64 {
    let events: f64 = s
        .clients
        .iter()
        .map(|g| f64::from(g.count) * f64::from(g.calls.max(1)) * (f64::from(g.chunks) + 2.0))
        .sum();
    events.max(1.0)
}

/// The time left at `elapsed` seconds with `done` of `total` cost made,
/// in words (`None` before a twentieth is made: too early to say).
pub fn time_left(elapsed: f64, done: f64, total: f64) -> Option<String> {
    if done <= 0.0 || done < total / 20.0 || done >= total {
        return None;
    }
    let left = (elapsed * (total - done) / done).round() as u64;
    Some(match left {
        0..=59 => format!("about {left} s left"),
        _ => format!("about {} min {} s left", left / 60, left % 60),
    })
}

/// Runs jobs with a progress bar on a terminal, plain lines otherwise,
/// each with the time left estimated from the runs' expected costs.
fn execute(jobs: &[Job], workers: usize, control: Control) -> anyhow::Result<Summary> {
    let total_cost: f64 = jobs.iter().map(|j| expected_cost(&j.scenario)).sum();
    // The pool calls `progress` from its workers' threads.
    let done_cost = std::sync::Mutex::new(0.0_f64);
    let started = std::time::Instant::now();
    let tty = std::io::stderr().is_terminal();
    let bar = tty.then(|| {
        let b = indicatif::ProgressBar::new(jobs.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
                .expect("a valid template"),
        );
        b
    });
    let progress = |done: usize, total: usize, job: &Job, r: &Result<RunReport, String>| {
        let verdict = match r {
            Ok(r) if r.verdict == "pass" && r.metrics.ops_failed == 0 => "passes".to_string(),
            Ok(r) if r.verdict == "pass" => format!(
                "expectations hold, {} of {} operations failed",
                r.metrics.ops_failed, r.metrics.operations
            ),
            Ok(r) if r.verdict == run::NOT_APPLICABLE => r.verdict.clone(),
            Ok(r) => format!("expectations break ({})", r.verdict),
            Err(_) => "error".into(),
        };
        let made = {
            let mut d = done_cost
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *d += expected_cost(&job.scenario);
            *d
        };
        let left = time_left(started.elapsed().as_secs_f64(), made, total_cost)
            .map_or(String::new(), |l| format!(" ({l})"));
        let line = format!(
            "{} seed {} {}: {verdict}",
            job.scenario.name,
            job.seed,
            job.variant.as_str()
        );
        match &bar {
            Some(b) => {
                b.set_position(done as u64);
                b.set_message(format!("{line}{left}"));
            }
            None => errln!("[{done}/{total}]{left} {line}"),
        }
    };
    let results = sweep::run_all(jobs, workers, control, &progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let made = results.iter().filter(|r| r.is_some()).count();
    if made < jobs.len() {
        errln!(
            "mcp-chaos: --fail-fast: stopped after the first failing run: {made} of {} runs made, \
             the summary holds only those",
            jobs.len()
        );
    }
    let mut runs = Vec::new();
    for r in results.into_iter().flatten() {
        runs.push(r.map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    Ok(Summary::from_runs(runs))
}

fn repro_for(files: &[(String, Scenario)]) -> impl Fn(&RunReport) -> String + '_ {
    move |r: &RunReport| {
        let path = files
            .iter()
            .find(|(_, s)| s.name == r.scenario)
            .map_or("sims/?.toml", |(p, _)| p.as_str());
        let v = r.server.parse().unwrap_or(Arm::BuiltIn(Variant::Guarded));
        run::repro_command(path, r.seed, v, &r.options())
    }
}

/// The end of a batch: JUnit, the failing runs said, the step summary
/// (`title`, the answer, the table) appended, the exit code with the gate.
fn finish(
    summary: &Summary,
    files: &[(String, Scenario)],
    junit: Option<&Path>,
    gate: &crate::run::gate::Gate,
    step: crate::run::gate::StepHead<'_>,
) -> anyhow::Result<u8> {
    if let Some(j) = junit {
        write(j, &report::junit(summary, &repro_for(files)))?;
    }
    let repro = repro_for(files);
    if let Some(p) = &gate.step_summary {
        use std::io::Write;
        let text = gate.step_summary(step, &summary.runs, &repro);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .with_context(|| format!("cannot append to --step-summary {}", p.display()))?;
    }
    for r in summary.runs.iter().filter(|r| r.failed()) {
        let pinned = files
            .iter()
            .find(|(_, s)| s.name == r.scenario)
            .and_then(|(_, s)| report::regression_line(s, r))
            .map_or(String::new(), |l| format!("\n  {l}"));
        errln!(
            "mcp-chaos: {} {} (clients: {}) seed {}: expectations break ({}): {}{pinned}\n  reproduce with: {}",
            r.scenario,
            r.server,
            r.clients,
            r.seed,
            r.verdict,
            r.failed_expectations.join("; "),
            repro(r)
        );
    }
    gate.apply(summary.exit_code(), &summary.runs, &repro)
        .map_err(anyhow::Error::msg)
}

/// Where `compare` writes without `--out`: under `target/`, never into
/// the checkout (`--out results` regenerates the committed results).
pub const DEFAULT_OUT: &str = "target/compare";

/// Which scenarios a comparison runs and how: `--scenario`, `--fail-fast`,
/// `--timeout`, `--shrink`.
pub struct Select {
    /// `--scenario`: names in the directory or files' paths (empty: all).
    pub only: Vec<String>,
    /// `--fail-fast` and `--timeout`.
    pub control: Control,
    /// `--shrink`: shrink the lowest failing seed of each configuration.
    pub shrink: bool,
    /// `--coverage`: which cells the runs reached, printed and written.
    pub coverage: bool,
    /// `--fail-on ops` and the configuration it judges.
    pub gate: crate::run::gate::Gate,
}

/// A comparison as the command line chose it.
pub struct Comparison {
    /// The scenario directory (`--sims`).
    pub dir: PathBuf,
    /// The seed range.
    pub seeds: Seeds,
    /// Parallel simulations (`--jobs`; default: the core count).
    pub jobs: Option<usize>,
    /// The output directory.
    pub out: PathBuf,
    /// Where to write JUnit XML too.
    pub junit: Option<PathBuf>,
    /// Arms x profiles x overrides.
    pub matrix: Matrix,
    /// Which scenarios, and how the batch is scheduled.
    pub select: Select,
    /// `--eras`: the comparison made once per era, each into a directory
    /// of `out` named for it, and `out/eras.md` beside them (empty: once,
    /// each scenario in its own era).
    pub eras: Vec<crate::settings::Era>,
}

/// `compare --eras`: the comparison once per era (`--set era=ERA` before
/// the other overrides), into `out/ERA/`, then `out/eras.md` (and
/// `out/eras.html`, the same as a page) from their
/// summaries. The exit code is the worst of the eras'.
fn compare_eras(c: &Comparison) -> anyhow::Result<u8> {
    let mut code = 0;
    let mut summaries = Vec::new();
    for &era in &c.eras {
        let mut sets = vec![("era".to_string(), era.as_str().to_string())];
        sets.extend(c.matrix.sets.iter().cloned());
        let one = Comparison {
            dir: c.dir.clone(),
            seeds: c.seeds,
            jobs: c.jobs,
            out: c.out.join(era.as_str()),
            junit: c
                .junit
                .as_ref()
                .map(|j| j.with_extension(format!("{}.xml", era.as_str()))),
            matrix: Matrix {
                arms: c.matrix.arms.clone(),
                profiles: c.matrix.profiles.clone(),
                sets,
                deployments: c.matrix.deployments.clone(),
            },
            select: Select {
                only: c.select.only.clone(),
                gate: c.select.gate.clone(),
                ..c.select
            },
            eras: Vec::new(),
        };
        errln!("mcp-chaos compare --eras: {}", era.as_str());
        code = code.max(compare(&one)?);
        let path = one.out.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let s: Summary =
            serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
        summaries.push((era, s));
    }
    let view: Vec<(crate::settings::Era, &Summary)> =
        summaries.iter().map(|(e, s)| (*e, s)).collect();
    let md = report::eras::markdown(&view);
    let path = c.out.join("eras.md");
    write(&path, &md)?;
    let page = c.out.join("eras.html");
    write(&page, &report::eras::html(&view))?;
    outln!("wrote {} and {}", path.display(), page.display());
    Ok(code)
}

/// The files a comparison runs: every scenario of `dir`, or those
/// `only` names. The whole directory loads first, as without
/// `--scenario`: a name two of its files share is refused whichever is
/// asked for.
fn selected_files(dir: &Path, only: &[String]) -> anyhow::Result<Vec<(String, Scenario)>> {
    let all = catalog::load_dir(dir)?;
    if only.is_empty() {
        return Ok(all);
    }
    // Each a name in `dir` or a file's path; a file named twice runs once.
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut seen = Vec::new();
    for value in only {
        let p = crate::run::locate::scenario(value, dir).map_err(anyhow::Error::msg)?;
        let same = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if !seen.contains(&same) {
            seen.push(same);
            paths.push(p);
        }
    }
    let mut files = Vec::new();
    for p in paths {
        files.push((p.display().to_string(), catalog::load(&p)?));
    }
    catalog::refuse_shared_names(&files)?;
    Ok(files)
}

/// `compare`: every selected scenario x seed x arm x profile, the summary
/// and reports written under `out`, the recommendation and headline
/// printed.
pub fn compare(c: &Comparison) -> anyhow::Result<u8> {
    if !c.eras.is_empty() {
        return compare_eras(c);
    }
    let (dir, seeds, out, matrix, select) = (&c.dir, &c.seeds, &c.out, &c.matrix, &c.select);
    let files = selected_files(dir, &select.only)?;
    for (path, scenario) in &files {
        matrix.check(path, scenario)?;
    }
    matrix.check_runs(seeds, files.len())?;
    let seed_list = seeds.list();
    let mut work = Vec::new();
    for (path, scenario) in &files {
        work.extend(matrix.jobs(path, scenario, &seed_list));
    }
    let workers = c.jobs.unwrap_or_else(sweep::cores);
    errln!(
        "mcp-chaos compare: {} scenarios x seeds {} x {} = {} runs on {workers} workers",
        files.len(),
        seeds.range(),
        matrix.describe(),
        work.len()
    );
    let started = std::time::Instant::now();
    let mut summary = execute(&work, workers, select.control)?;
    summary.provenance = matrix.provenance(seeds, &files);
    // What differs between two runs of the same comparison (the command's
    // spelling, the commit, wall-clock times) goes to an ignored file, so
    // the committed outputs stay byte for byte what the options make.
    let mut meta = report::Meta::take(
        &mut summary,
        std::env::args().collect(),
        canonical_compare(c),
    );
    if select.shrink {
        shrink_failures(&summary, &files, out)?;
    }
    write(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    let ts = timelines(&summary, &files, sweep::cores())?;
    let beside = report::Beside::under(out);
    report::write_reports(out, &summary, &ts, &beside)?;
    meta.wall_s = started.elapsed().as_secs_f64();
    let meta_path = out.join("compare-meta.json");
    write(
        &meta_path,
        &serde_json::to_string_pretty(&meta).expect("meta serializes"),
    )?;
    let answer = report::recommend::text(&summary, &beside);
    let table = report::headline(&summary);
    outln!("{answer}");
    outln!("{table}");
    if select.coverage {
        outln!("{}", report::coverage::write(out, &summary)?);
    }
    warn_uncovered(&summary, &files);
    warn_overridden(&summary);
    outln!(
        "wrote {}, {} and {} in {:.0} s (command, commit and timings: {}, not committed)",
        out.join("summary.json").display(),
        out.join("report.md").display(),
        out.join("report.html").display(),
        meta.wall_s,
        meta_path.display()
    );
    let title = format!(
        "mcp-chaos compare: {} runs, seeds {}",
        summary.runs.len(),
        seeds.range()
    );
    finish(
        &summary,
        &files,
        c.junit.as_deref(),
        &select.gate,
        crate::run::gate::StepHead {
            title: &title,
            answer: &answer,
            table: &table,
        },
    )
}

/// The timelines of the groups [`report::pick_timeline_groups`] picks,
/// each run made again through the sweep's pool (on up to `workers`
/// threads) from its scenario in `files` (path, scenario) for its
/// history; in pick order, a group's timelines next to each other with
/// the same `group` and the same lanes.
pub fn timelines(
    s: &Summary,
    files: &[(String, Scenario)],
    workers: usize,
) -> anyhow::Result<Vec<report::Timeline>> {
    let groups = report::pick_timeline_groups(s);
    let mut picks: Vec<(&RunReport, &str, String, u32)> = Vec::new();
    let mut jobs = Vec::new();
    for g in &groups {
        let Some((worst, _)) = g.last() else { continue };
        let name = format!("{} · seed {}", worst.scenario, worst.seed);
        for (r, role) in g {
            let (path, scenario) = files
                .iter()
                .find(|(_, sc)| sc.name == r.scenario)
                .with_context(|| {
                    format!("no scenario file for {} to draw its timeline", r.scenario)
                })?;
            let variant: Arm = r
                .server
                .parse()
                .map_err(|e| anyhow::anyhow!("timeline of {}: {e}", r.scenario))?;
            picks.push((r, role, name.clone(), scenario.network.client_hosts));
            jobs.push(Job {
                path: path.as_str().into(),
                scenario: std::sync::Arc::new(scenario.clone()),
                seed: r.seed,
                variant,
                opts: r.options(),
            });
        }
    }
    let drawn = sweep::run_kept(&jobs, workers, &|i, fresh, history| {
        let (r, role, group, hosts) = &picks[i];
        report::timeline_of(s, r, (fresh, history), *hosts, (role, group))
    });
    let mut out = Vec::new();
    for (t, (r, ..)) in drawn.into_iter().zip(&picks) {
        out.push(t.map_err(|e| {
            anyhow::anyhow!(
                "re-running {} seed {} {}: {e}",
                r.scenario,
                r.seed,
                r.server
            )
        })?);
    }
    let mut at = 0;
    for g in &groups {
        report::share_lanes(&mut out[at..at + g.len()]);
        at += g.len();
    }
    Ok(out)
}

/// The comparison's command with every choice spelled out the one way
/// (`--seeds A..B`, arms and profiles only when not the defaults), so two
/// spellings of one comparison record the same provenance.
fn canonical_compare(c: &Comparison) -> Vec<String> {
    let (dir, seeds, out, matrix, select) = (
        c.dir.as_path(),
        &c.seeds,
        c.out.as_path(),
        &c.matrix,
        &c.select,
    );
    let mut c: Vec<String> = vec!["mcp-chaos".into(), "compare".into()];
    let mut flag = |k: &str, v: String| {
        c.push(k.to_string());
        c.push(v);
    };
    if dir != Path::new("sims") {
        flag("--sims", dir.display().to_string());
    }
    flag("--seeds", seeds.range());
    for name in &select.only {
        flag("--scenario", name.clone());
    }
    if matrix.arms != Arm::all() {
        flag(
            "--servers",
            matrix
                .arms
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    if matrix.profiles != [None] {
        flag("--clients", matrix.profile_names().join(","));
    }
    for (k, v) in &matrix.sets {
        flag("--set", format!("{k}={v}"));
    }
    if !matrix.deployments.is_empty() {
        let labels: Vec<&str> = matrix
            .deployments
            .iter()
            .map(|d| d.label.as_str())
            .collect();
        flag(
            "--deployments",
            labels.join(";").replace(AS_WRITTEN, "as-written"),
        );
    }
    if out != Path::new(DEFAULT_OUT) {
        flag("--out", out.display().to_string());
    }
    if select.shrink {
        c.push("--shrink".into());
    }
    c
}

/// Says once how many runs a `--deployments` set other than `as-written`
/// ran: their expectations were not checked.
fn warn_overridden(summary: &Summary) {
    let n = summary
        .runs
        .iter()
        .filter(|r| r.deployment_overridden)
        .count();
    if n > 0 {
        errln!(
            "mcp-chaos compare: not checked: deployment overridden: {n} of {} runs ran under a \
             --deployments set other than as-written, so their scenarios' expectations \
             (written for their own [deployment]) were not checked; their figures are in the \
             report",
            summary.runs.len()
        );
    }
}

/// Flags scenarios whose declared hazards no run exercised, saying when
/// the runs ended before the faults meant to exercise them.
fn warn_uncovered(summary: &Summary, files: &[(String, Scenario)]) {
    let scenario = |name: &str| {
        files
            .iter()
            .find(|(_, s)| s.name == name)
            .map(|(_, s)| s.clone())
    };
    for w in crate::run::never_applied::uncovered_warnings(summary, scenario) {
        errln!("warning: {w}");
    }
}

/// A sweep as the command line chose it: one scenario over a seed range
/// (or a shard of it).
pub struct Sweep {
    /// The scenario file.
    pub path: PathBuf,
    /// The seeds (a shard of a range included).
    pub seeds: Seeds,
    /// The summary file to write.
    pub out: PathBuf,
    /// Parallel simulations (`--jobs`; default: the core count).
    pub jobs: Option<usize>,
    /// `--fail-fast` and `--timeout`.
    pub control: Control,
    /// `--fail-on ops` and the configuration it judges.
    pub gate: crate::run::gate::Gate,
    /// Where to write JUnit XML too.
    pub junit: Option<PathBuf>,
    /// Arms x the one profile x overrides.
    pub matrix: Matrix,
}

/// `sweep`: one scenario's runs, their summary written to `out`.
pub fn sweep(w: &Sweep) -> anyhow::Result<u8> {
    let (path, seeds, out, matrix) = (w.path.as_path(), &w.seeds, w.out.as_path(), &w.matrix);
    let scenario = catalog::load(path)?;
    matrix.check(&path.display().to_string(), &scenario)?;
    matrix.check_runs(seeds, 1)?;
    let files = vec![(path.display().to_string(), scenario.clone())];
    let work = matrix.jobs(&path.display().to_string(), &scenario, &seeds.list());
    let mut summary = execute(&work, w.jobs.unwrap_or_else(sweep::cores), w.control)?;
    // What `merge` checks shards against: the scenario file's hash, the
    // range, the arms and profiles.
    summary.provenance = matrix.provenance(seeds, &files);
    write(
        out,
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    let table = report::headline(&summary);
    outln!("{table}");
    warn_uncovered(&summary, &files);
    let title = format!(
        "mcp-chaos sweep: {}, {} runs, seeds {}",
        scenario.name,
        summary.runs.len(),
        seeds.range()
    );
    finish(
        &summary,
        &files,
        w.junit.as_deref(),
        &w.gate,
        crate::run::gate::StepHead {
            title: &title,
            answer: "",
            table: &table,
        },
    )
}

/// `calibrate`: the model arm beside the SDK's from `summary`, written to
/// `out` (with `rmcp`, the model with rmcp's quirks run for a third column).
pub fn calibrate(
    summary: &Path,
    sims: &Path,
    out: &Path,
    model: Arm,
    sdk: Arm,
) -> anyhow::Result<u8> {
    let s = read_summary(summary, "mcp-chaos compare")?;
    // The model with the SDK's quirks on (the `sdk = "rmcp"` preset), on
    // the summary's scenarios and seeds, for the third column.
    let quirks = if sdk == Arm::Rmcp {
        let seeds: Vec<u64> = {
            let mut v: Vec<u64> = s.runs.iter().map(|r| r.seed).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let matrix = Matrix {
            arms: vec![model],
            profiles: vec![None],
            sets: vec![("server.sdk".to_string(), "rmcp".to_string())],
            deployments: Vec::new(),
        };
        let mut work = Vec::new();
        for (p, sc) in catalog::load_dir(sims)? {
            if s.runs.iter().any(|r| r.scenario == sc.name) {
                work.extend(matrix.jobs(&p, &sc, &seeds));
            }
        }
        errln!(
            "mcp-chaos calibrate: {} runs of {model} with sdk = \"rmcp\"",
            work.len()
        );
        Some(execute(&work, sweep::cores(), Control::default())?)
    } else {
        None
    };
    let old = std::fs::read_to_string(out).unwrap_or_default();
    let notes = report::calibration_notes(&old);
    let Some(text) = report::calibration(
        &s,
        model.as_str(),
        sdk.as_str(),
        quirks.as_ref().map(|q| ("sdk = \"rmcp\"", q)),
        notes,
    ) else {
        bail!(
            "{} has no runs of both {model} and {sdk}: run `mcp-chaos compare --servers {model},{sdk}`",
            summary.display()
        );
    };
    write(out, &text)?;
    errln!("mcp-chaos: wrote {}", out.display());
    Ok(0)
}

/// A summary file, or an error naming it and the command (`how`) that
/// writes one.
pub(crate) fn read_summary(path: &Path, how: &str) -> anyhow::Result<Summary> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read summary {}: write one with `{how}`",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a mcp-chaos summary (write one with `{how}`)",
            path.display()
        )
    })
}

/// `compare --shrink`: the lowest failing seed of each scenario x arm x
/// profile (overrides included), shrunk to OUT/shrunk/NAME.toml and pinned
/// as a bug (the comparison expected it to pass).
fn shrink_failures(
    summary: &Summary,
    files: &[(String, Scenario)],
    out: &Path,
) -> anyhow::Result<()> {
    let mut first: std::collections::BTreeMap<(&str, &str, &str, &[String]), &RunReport> =
        Default::default();
    for r in summary.runs.iter().filter(|r| r.failed()) {
        first
            .entry((&r.scenario, &r.server, &r.clients, &r.overrides))
            .or_insert(r);
    }
    if first.is_empty() {
        errln!("mcp-chaos: --shrink: no failing run to shrink");
    }
    for r in first.into_values() {
        let what = format!(
            "{} {} (clients {}) seed {}",
            r.scenario, r.server, r.clients, r.seed
        );
        if r.verdict == sweep::TIMEOUT {
            errln!("mcp-chaos: --shrink: {what} timed out: not shrunk");
            continue;
        }
        let Some((path, sc)) = files.iter().find(|(_, s)| s.name == r.scenario) else {
            continue;
        };
        let Ok(arm) = r.server.parse::<Arm>() else {
            continue;
        };
        let opts = r.options();
        let effective = run::effective(sc, &opts).map_err(anyhow::Error::msg)?;
        let goal = shrink::Goal {
            kind: RegressionKind::Bug,
            ..Default::default()
        };
        let mut name = format!("{}-seed{}-{}", r.scenario, r.seed, r.server);
        if let Some(p) = opts.clients {
            name.push_str(&format!("-{}", p.as_str().replace('+', "-")));
        }
        for (k, v) in &opts.sets {
            let part: String = format!("{}-{v}", k.trim_start_matches("server."))
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            name.push_str(&format!("-{part}"));
        }
        let name = crate::scenario::fit_name(&name);
        let file = out.join("shrunk").join(format!("{name}.toml"));
        let command = format!(
            "mcp-chaos shrink --scenario {path} --seed {} --server {}{} --kind bug",
            r.seed,
            r.server,
            opts.flags()
        );
        match shrink::command::shrink_one(
            &effective,
            r.seed,
            arm,
            &goal,
            Some(file),
            &command,
            Some(name),
        ) {
            Ok((file, found)) => errln!(
                "mcp-chaos: --shrink: {what}: {} of {} faults, {} of {} clients: wrote {}",
                found.faults_after,
                found.faults_before,
                found.clients.1,
                found.clients.0,
                file.display()
            ),
            Err(e) => errln!("mcp-chaos: --shrink: {what}: not shrunk: {e:#}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn the_time_left_follows_the_expected_cost_not_the_run_count() {
        let small = crate::check::parse(
            "name = \"s\"\nduration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\ncalls = 2\nchunks = 3\n",
        )
        .expect("a valid scenario");
        let fleet = crate::check::parse(
            "name = \"f\"\nduration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\ncount = 100\ncalls = 20\nchunks = 3\n",
        )
        .expect("a valid scenario");
        assert_eq!(
            expected_cost(&small),
            10.0,
            "2 calls of 3 chunks, a request and a result"
        );
        assert_eq!(expected_cost(&fleet), 10_000.0);
        // Nine small runs made in 1 s: the fleet left is 1,000 times their
        // cost, not one run in ten.
        let done = 9.0 * expected_cost(&small);
        let total = done + expected_cost(&fleet);
        assert_eq!(
            time_left(1.0, done, total),
            None,
            "under a twentieth: too early"
        );
        assert_eq!(
            time_left(10.0, total / 2.0, total).as_deref(),
            Some("about 10 s left")
        );
        assert_eq!(
            time_left(30.0, total / 4.0, total).as_deref(),
            Some("about 1 min 30 s left")
        );
        assert_eq!(time_left(30.0, total, total), None, "nothing left");
    }
}

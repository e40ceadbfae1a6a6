//! One simulation run, end to end: world → history → oracle → RunReport.

use crate::fault::kind_name;
use crate::history::History;
pub use crate::history::Recording;
use crate::hosts::sut::{Arm, BuiltIn, SystemUnderTest};
use crate::oracle::{self, MetricEntry, Metrics};
use crate::scenario::Scenario;
use crate::server::Variant;
use crate::world::{self, WorldError};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Evaluates `$body` with `$sut` bound to the system under test `$arm`
/// names for `$scenario` (built in, or rmcp's when built with it).
macro_rules! with_arm {
    ($arm:expr, $scenario:expr, |$sut:ident| $body:expr) => {
        match $arm {
            Arm::BuiltIn(variant) => {
                let $sut = BuiltIn {
                    variant,
                    cfg: $scenario.server_config(),
                };
                $body
            }
            #[cfg(feature = "rmcp")]
            Arm::Rmcp | Arm::RmcpEs => {
                let $sut = crate::rmcp::Rmcp {
                    event_store: $arm == Arm::RmcpEs,
                    cfg: $scenario.server_config(),
                    exposure: crate::server::Exposure::simulated(),
                };
                $body
            }
            #[cfg(not(feature = "rmcp"))]
            Arm::Rmcp | Arm::RmcpEs => Err(WorldError(format!(
                "server {} needs the rmcp feature: build without --no-default-features",
                $arm
            ))),
        }
    };
}

/// Version of the RunReport JSON (3: `migration_latency_hist_us` names
/// its unit; version 2 files' `migration_latency_hist` still reads).
pub const SCHEMA_VERSION: u32 = 3;

pub mod catalog;
pub mod deployments;
mod faults;
pub mod gate;
pub mod locate;
pub mod never_applied;
use faults::fault_accounts;
pub use faults::{Faults, NotApplied, EXAMPLES};

/// Wall-clock figures: the only nondeterministic part, ignored by
/// comparisons.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Wall time of the simulation, ms.
    pub wall_ms: f64,
}

/// The report of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Report schema version.
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Root seed.
    pub seed: u64,
    /// The server arm (`guarded`, `unguarded`, `keys`).
    pub server: String,
    /// The client profile (`plain`, `keys`, `cursors`, `keys+cursors`,
    /// `tasks`, `tasks+keys`), or
    /// `scenario` for the clients as the scenario wrote them.
    #[serde(default = "as_written")]
    pub clients: String,
    /// `--set` overrides of the run, as `KEY=VALUE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Its deployment's label on `compare --deployments`'s axis (its
    /// overrides are among `overrides`); empty, and not written, without it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deployment: String,
    /// The deployment it stood on, overrides applied (not written for the
    /// one-server world).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<crate::scenario::Topology>,
    /// Whole-run metrics.
    pub metrics: Metrics,
    /// Metrics per client class (behaviour, `+cursor` with cursor on POST).
    pub metrics_by_class: BTreeMap<String, Metrics>,
    /// Faults planned and applied.
    pub faults: Faults,
    /// Simulated time the run took, ms.
    pub sim_ms: u64,
    /// Every client finished before the heal phase ran out.
    pub clients_finished: bool,
    /// Trace records.
    pub records: u64,
    /// SHA-256 of the trace: every entry in order, in a compact binary
    /// encoding (MessagePack, fields by position); see
    /// [`crate::history::trace_sha256`].
    pub trace_sha256: String,
    /// Migration-latency histogram as (value in µs, count) pairs, so that
    /// sweeps merge histograms rather than rounded percentiles.
    #[serde(alias = "migration_latency_hist")]
    pub migration_latency_hist_us: Vec<(u64, u64)>,
    /// Delivery-latency histogram (the Events extension), likewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delivery_latency_hist_us: Vec<(u64, u64)>,
    /// The hazards the scenario declares it means to exercise.
    #[serde(default)]
    pub declared_hazards: Vec<String>,
    /// Every failed or degraded operation, with its failures and cause (in
    /// a summary, the first [`EXAMPLES`] of each cause: see
    /// [`RunReport::keep_examples`]).
    #[serde(default)]
    pub operations: Vec<oracle::OpVerdict>,
    /// Operations a summary left out of `operations`; their counts are
    /// in `metrics` (`failures_by_cause`, `ops_degraded`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub operations_omitted: u64,
    /// Expectations that failed (empty when all hold).
    pub failed_expectations: Vec<String>,
    /// `pass`, `safety` (a safety expectation failed) or `liveness` (only
    /// liveness ones: lost operations after the heal phase), or
    /// `not-applicable` when none of the scenario's clients could run
    /// against the arm. Clients still running at the end show up as lost
    /// operations.
    pub verdict: String,
    /// Clients the arm could not serve (legacy HTTP+SSE clients of an arm
    /// without that transport): not run, and owed nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_applicable_clients: u32,
    /// Requests the shared store host answered (not written when 0: no
    /// shared store). Never in the history: traces do not depend on it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub store_round_trips: u64,
    /// A `compare --deployments` set other than `as-written` ran the
    /// scenario: its expectations, written for its own deployment, were
    /// not checked (not written when they were).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deployment_overridden: bool,
    /// Wall-clock figures.
    pub meta: Meta,
    /// Every protocol boundary the run reached, in order, when asked
    /// ([`run_arm_watching`]); not part of the report's JSON.
    #[serde(skip)]
    pub reached: Vec<crate::fault::Boundary>,
}

pub use crate::base::profile::Profile;

/// What a run's report calls the clients as the scenario wrote them.
pub const AS_WRITTEN: &str = "scenario";

/// Options of one run beyond the scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--clients`: every client's capabilities, overriding the scenario.
    pub clients: Option<Profile>,
    /// `--set server.KEY=VALUE` overrides, in order (a `--deployments`
    /// set's last).
    pub sets: Vec<(String, String)>,
    /// The `--deployments` set's label (empty: no such axis).
    pub deployment: String,
}

impl Options {
    /// Every client presents cursors on POST (`--clients cursors`).
    pub fn cursors() -> Options {
        Options {
            clients: Some(Profile::Cursors),
            ..Options::default()
        }
    }

    /// The profile's name, or [`AS_WRITTEN`].
    pub fn clients_label(&self) -> &'static str {
        self.clients.map_or(AS_WRITTEN, Profile::as_str)
    }

    /// The command-line flags that reproduce these options.
    pub fn flags(&self) -> String {
        let mut out = String::new();
        if let Some(p) = self.clients {
            out.push_str(&format!(" --clients {}", p.as_str()));
        }
        for (k, v) in &self.sets {
            out.push_str(&format!(" --set {k}={v}"));
        }
        out
    }

    /// Parses `KEY=VALUE` (`--set`).
    pub fn parse_set(s: &str) -> Result<(String, String), String> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("--set {s:?}: use --set server.KEY=VALUE"))?;
        Ok((k.trim().to_string(), v.trim().to_string()))
    }

    /// Parses `--set KEY=VALUE` and checks it against the server settings
    /// (the key exists, the value has its type) when the command line is
    /// read, before anything runs: one line naming the fix.
    pub fn parse_set_checked(s: &str) -> Result<(String, String), String> {
        let (k, v) = Options::parse_set(s)?;
        crate::scenario::check_set(&crate::server::ServerConfig::default(), &k, &v)?;
        Ok((k, v))
    }
}

/// The class label of a client group: its behaviour, `+keys` when it
/// sends keys though its behaviour does not (`-keys` for a dedup-retry
/// client that does not), `+cursor` with cursors on POST.
pub fn class_label(g: &crate::scenario::ClientGroup) -> String {
    let b = g.behaviour.as_str();
    let dedup = g.behaviour == crate::scenario::Behaviour::DedupRetry;
    let mut label = b.to_string();
    match (g.keyed(), dedup) {
        (true, false) => label.push_str("+keys"),
        (false, true) => label.push_str("-keys"),
        _ => {}
    }
    if g.cursor_on_post {
        label.push_str("+cursor");
    }
    if g.tasked() {
        label.push_str("+tasks");
    }
    label
}

/// The scenario as this run sees it (options applied), or why an override
/// does not apply.
pub fn effective(scenario: &Scenario, opts: &Options) -> Result<Scenario, String> {
    let mut s = scenario.clone();
    if let Some(p) = opts.clients {
        for g in &mut s.clients {
            g.cursor_on_post = p.cursors();
            g.keys = Some(p.keys());
            g.tasks = p.tasks().then_some(true);
        }
    }
    for (k, v) in &opts.sets {
        s.set(k, v)?;
    }
    // `[expect.<arm>]` is written for the scenario's own era: in another
    // one (`--era`, `compare --eras`) only `[expect.<era>.<arm>]` holds.
    s.expect = scenario.expect.in_era(scenario.era, s.era);
    crate::check::validate(&s)?;
    Ok(s)
}

/// The table of clients the world places: each client's class, the calls
/// it owes (none when it does not run) and its host, and what the server
/// is; known before the run, so the oracle judges as records arrive.
fn client_table<S: SystemUnderTest>(
    scenario: &Scenario,
    sut: &S,
) -> (oracle::stream::Table, usize) {
    let labels: Vec<String> = scenario.clients.iter().map(class_label).collect();
    let placed = world::placement(
        scenario,
        world::Serves {
            legacy: sut.legacy_transport(),
            y2026: sut.speaks_2026(),
        },
    );
    let table = oracle::stream::Table {
        classes: placed.iter().map(|c| labels[c.group].clone()).collect(),
        calls: placed
            .iter()
            .map(|c| {
                if c.runs {
                    scenario.clients[c.group].calls
                } else {
                    0
                }
            })
            .collect(),
        hosts: placed.iter().map(|c| c.host).collect(),
        audited: sut.audited(),
        built_in: sut.built_in(),
    };
    (table, placed.iter().filter(|c| !c.runs).count())
}

/// What a run gave: the world's output and the streaming judge's
/// judgement of it.
struct Simulated {
    out: world::RunOutput,
    judgement: oracle::Judgement,
    table: oracle::stream::Table,
    not_applicable: usize,
    /// The most operations the judge held at once.
    peak_open: usize,
}

/// Runs the world with the streaming judge observing its history.
fn simulate<S: SystemUnderTest>(
    scenario: &Scenario,
    seed: u64,
    sut: &S,
    mut rec: Recording,
    watch: bool,
) -> Result<Simulated, WorldError> {
    let (table, not_applicable) = client_table(scenario, sut);
    let judge = Rc::new(RefCell::new(oracle::stream::Judge::new(table.clone())));
    rec.deferred.push(Box::new(judge.clone()));
    let out = world::run_watching(scenario, seed, sut, rec, watch)?;
    out.history.stop_observing();
    let judge = Rc::try_unwrap(judge)
        .map_err(|_| WorldError("the judge is still observing the history".into()))?
        .into_inner();
    let peak_open = judge.peak_open();
    Ok(Simulated {
        judgement: judge.finish(out.clients_finished),
        out,
        table,
        not_applicable,
        peak_open,
    })
}

/// Holds the finality rule ([`oracle::finality`]) to the batch judge on one
/// built-in run: the operations whose verdict on the trace cut at one of
/// `cuts` points after they were final differs from the whole trace's
/// (none when the rule is sound), the operations final before the end, the
/// most open at once, and the operations judged.
pub fn finality_check(
    scenario: &Scenario,
    seed: u64,
    variant: Variant,
    cuts: usize,
) -> Result<(Vec<String>, usize, usize, u64), WorldError> {
    let scenario = valid(scenario, &Options::default())?;
    let sut = BuiltIn {
        variant,
        cfg: scenario.server_config(),
    };
    let sim = simulate(&scenario, seed, &sut, Recording::default(), false)?;
    let world = sim.table.world(sim.out.clients_finished);
    let entries = sim.out.history.entries();
    let (at, peak) = oracle::finality::final_at(&entries);
    let ops = oracle::judge(&entries, world).metrics.operations;
    let wrong = oracle::finality::check_prefixes(&entries, world, cuts);
    Ok((wrong, at.len(), peak, ops))
}

/// Holds the streaming judge to the batch judge on one run of `arm`:
/// `None` when their judgements are equal, else what differs; with the
/// most operations the streaming judge held at once and the operations
/// judged.
pub fn stream_check(
    scenario: &Scenario,
    seed: u64,
    arm: Arm,
    opts: &Options,
) -> Result<(Option<String>, usize, u64), WorldError> {
    let scenario = valid(scenario, opts)?;
    let check = |sim: Simulated| {
        let entries = sim.out.history.entries();
        let batch = oracle::judge(&entries, sim.table.world(sim.out.clients_finished));
        let ops = batch.metrics.operations;
        let differs = (batch != sim.judgement).then(|| judgement_diff(&batch, &sim.judgement));
        (differs, sim.peak_open, ops)
    };
    with_arm!(arm, scenario, |sut| Ok(check(simulate(
        &scenario,
        seed,
        &sut,
        Recording::default(),
        false
    )?)))
}

/// The first ways two judgements differ, in one line each.
fn judgement_diff(batch: &oracle::Judgement, stream: &oracle::Judgement) -> String {
    let mut out = Vec::new();
    let (b, s) = (&batch.metrics, &stream.metrics);
    for name in Metrics::NAMES {
        if b.get(name) != s.get(name) {
            out.push(format!(
                "{name}: batch {:?}, stream {:?}",
                b.get(name),
                s.get(name)
            ));
        }
    }
    if b != s && out.is_empty() {
        out.push(format!("metrics: batch {b:?}\nstream {s:?}"));
    }
    if batch.by_class != stream.by_class {
        out.push("metrics by class differ".into());
    }
    if batch.latency_hist != stream.latency_hist {
        out.push("latency histograms differ".into());
    }
    let tags = |j: &oracle::Judgement| -> BTreeMap<String, oracle::OpVerdict> {
        j.verdicts
            .iter()
            .map(|v| (v.tag.clone(), v.clone()))
            .collect()
    };
    let (bv, sv) = (tags(batch), tags(stream));
    for (tag, v) in &bv {
        if sv.get(tag) != Some(v) {
            out.push(format!("{tag}: batch {v:?}, stream {:?}", sv.get(tag)));
        }
    }
    for (tag, v) in &sv {
        if !bv.contains_key(tag) {
            out.push(format!("{tag}: batch none, stream {v:?}"));
        }
    }
    if out.is_empty() && batch.verdicts != stream.verdicts {
        out.push("verdicts in another order".into());
    }
    if batch.defects != stream.defects {
        out.push(format!(
            "defects: batch {:?}, stream {:?}",
            batch.defects, stream.defects
        ));
    }
    out.truncate(12);
    out.join("\n")
}

/// Runs `scenario` under `seed` against `variant`; returns the report and
/// the history (for `--trace`).
pub fn run(
    scenario: &Scenario,
    seed: u64,
    variant: Variant,
    opts: &Options,
) -> Result<(RunReport, History), WorldError> {
    run_arm(scenario, seed, Arm::BuiltIn(variant), opts)
}

/// Runs `scenario` under `seed` against `arm`, built in or rmcp's,
/// keeping every record in the history it returns.
pub fn run_arm(
    scenario: &Scenario,
    seed: u64,
    arm: Arm,
    opts: &Options,
) -> Result<(RunReport, History), WorldError> {
    run_arm_recording(scenario, seed, arm, opts, Recording::default())
}

/// [`run_arm`] keeping no record: the report only, and a run's memory is
/// that of the operations open at once, whatever its length.
pub fn run_arm_streaming(
    scenario: &Scenario,
    seed: u64,
    arm: Arm,
    opts: &Options,
) -> Result<RunReport, WorldError> {
    run_arm_recording(scenario, seed, arm, opts, Recording::streaming()).map(|(r, _)| r)
}

/// [`run_arm`], its history recording as `rec` says: keep no entry
/// ([`Recording::streaming`]) and a run's memory is that of the
/// operations open at once, whatever its length.
pub fn run_arm_recording(
    scenario: &Scenario,
    seed: u64,
    arm: Arm,
    opts: &Options,
    rec: Recording,
) -> Result<(RunReport, History), WorldError> {
    let scenario = valid(scenario, opts)?;
    with_arm!(arm, scenario, |sut| run_effective(
        &scenario,
        seed,
        &sut,
        opts,
        (rec, false)
    ))
}

/// [`run_arm_streaming`], the report's [`RunReport::reached`] filled: every
/// protocol boundary the run reached (what `explore` places faults at).
pub fn run_arm_watching(
    scenario: &Scenario,
    seed: u64,
    arm: Arm,
    opts: &Options,
) -> Result<RunReport, WorldError> {
    let scenario = valid(scenario, opts)?;
    let rec = (Recording::streaming(), true);
    with_arm!(arm, scenario, |sut| run_effective(
        &scenario, seed, &sut, opts, rec
    ))
    .map(|(r, _)| r)
}

/// Runs `scenario` under `seed` against any system under test (a user's
/// own server: see `tests/all/own_server.rs`) and judges it from the
/// records alone; returns the report and the history. The scenario's
/// `[server]` table (and `--set server.*` overrides) configure built-in
/// arms only; its `[expect.<name>]` tables are checked under
/// [`SystemUnderTest::name`].
pub fn run_with<S: SystemUnderTest>(
    scenario: &Scenario,
    seed: u64,
    sut: &S,
    opts: &Options,
) -> Result<(RunReport, History), WorldError> {
    run_effective(
        &valid(scenario, opts)?,
        seed,
        sut,
        opts,
        (Recording::default(), false),
    )
}

/// The scenario as the options make it, held to the loader's bounds (a
/// scenario built in code too).
fn valid(scenario: &Scenario, opts: &Options) -> Result<Scenario, WorldError> {
    effective(scenario, opts)
        .map_err(|e| WorldError(format!("scenario {} is not valid: {e}", scenario.name)))
}

/// A run of the scenario as options made it.
fn run_effective<S: SystemUnderTest>(
    scenario: &Scenario,
    seed: u64,
    sut: &S,
    opts: &Options,
    (rec, watch): (Recording, bool),
) -> Result<(RunReport, History), WorldError> {
    let started = std::time::Instant::now();
    // A panic inside the simulation (a turmoil limit, a bug) becomes an
    // error the caller reports with its seed, not an abort.
    let sim = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        simulate(scenario, seed, sut, rec, watch)
    }))
    .map_err(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        WorldError(format!("the simulation panicked: {what}"))
    })??;
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let Simulated {
        out,
        judgement: j,
        table,
        not_applicable,
        ..
    } = sim;
    let classes = &table.classes;
    if !j.defects.is_empty() {
        return Err(WorldError(format!(
            "oracle defect (a failure no cause explains; please report it): {}",
            j.defects.join("; ")
        )));
    }
    let faults = fault_accounts(&out.plan, &out.faults);
    // Kept up as records arrived: the same digest as
    // `history::trace_sha256(&entries)`, without a second pass.
    let trace_sha256 = out.history.trace_sha256();
    let records = out.history.len() as u64;
    let expect = &scenario.expect.of(sut.name());
    // On `compare --deployments`'s axis, a set other than `as-written`
    // runs the scenario on a deployment its expectations were not written
    // for: measured, not judged.
    let overridden =
        !opts.deployment.is_empty() && opts.deployment != crate::run::deployments::AS_WRITTEN;
    let failed = if overridden {
        Vec::new()
    } else {
        failed_expectations(expect, &j.metrics)
    };
    let report = RunReport {
        metrics: j.metrics,
        metrics_by_class: j.by_class,
        faults,
        sim_ms: out.sim_ms,
        clients_finished: out.clients_finished,
        records,
        trace_sha256,
        migration_latency_hist_us: j.latency_hist.clone(),
        delivery_latency_hist_us: j.delivery_hist.clone(),
        operations: j.verdicts,
        verdict: if not_applicable == classes.len() {
            NOT_APPLICABLE.to_string()
        } else {
            verdict(&failed).to_string()
        },
        not_applicable_clients: not_applicable as u32,
        store_round_trips: out.store_round_trips,
        deployment_overridden: overridden,
        failed_expectations: failed.into_iter().map(|(_, line)| line).collect(),
        meta: Meta { wall_ms },
        reached: out.reached,
        ..RunReport::of(scenario, seed, sut.name(), opts)
    };
    Ok((report, out.history))
}

/// Each bound of `expect` that `metrics` breaks, with its metric and in one
/// line (an unknown metric breaks its bound).
fn failed_expectations<'a>(
    expect: &'a crate::scenario::Expect,
    metrics: &Metrics,
) -> Vec<(&'a str, String)> {
    let unknown = |name: &str| {
        format!(
            "unknown metric {name:?} in expectations (known: {})",
            Metrics::NAMES.join(", ")
        )
    };
    let mut failed = Vec::new();
    for (name, min) in &expect.min {
        match metrics.get(name) {
            Some(v) if v >= *min => {}
            Some(v) => failed.push((
                name.as_str(),
                format!("{name} = {v}, expected at least {min}"),
            )),
            None => failed.push((name.as_str(), unknown(name))),
        }
    }
    for (name, max) in &expect.max {
        match metrics.get(name) {
            Some(v) if v <= *max => {}
            Some(v) => failed.push((
                name.as_str(),
                format!("{name} = {v}, expected at most {max}"),
            )),
            None => failed.push((name.as_str(), unknown(name))),
        }
    }
    failed
}

/// `pass`, `safety` or `liveness` for the broken expectations, each with
/// the metric it is about: only liveness metrics ([`MetricEntry::liveness`])
/// broken is a liveness failure.
fn verdict(failed: &[(&str, String)]) -> &'static str {
    let liveness =
        |(metric, _): &(&str, String)| MetricEntry::named(metric).is_some_and(|m| m.liveness);
    if failed.iter().any(|f| !liveness(f)) {
        "safety"
    } else if !failed.is_empty() {
        "liveness"
    } else {
        "pass"
    }
}

impl RunReport {
    /// Keeps the first `n` failed or degraded operations of each cause
    /// (degraded ones under none) and the first `n` not-applied faults of
    /// each kind, counting what it leaves out: what a summary holds of a
    /// run, bounded by the causes and kinds rather than the operations.
    pub fn keep_examples(&mut self, n: usize) {
        let before = self.operations.len();
        let mut seen: BTreeMap<Option<String>, usize> = BTreeMap::new();
        self.operations.retain(|op| {
            let k = seen.entry(op.cause.clone()).or_default();
            *k += 1;
            *k <= n
        });
        self.operations_omitted += (before - self.operations.len()) as u64;
        let f = &mut self.faults;
        let before = f.not_applied.len();
        let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
        f.not_applied.retain(|x| {
            let k = seen.entry(kind_name(&x.fault)).or_default();
            *k += 1;
            *k <= n
        });
        f.not_applied_omitted += (before - f.not_applied.len()) as u64;
    }

    /// The report of `scenario` on `seed` against `server` with `opts`
    /// before anything ran: what names the run, no figures, no verdict.
    /// Every report starts from it (a finished run's and an abandoned
    /// one's), so the fields that name a run are written in one place.
    pub fn of(scenario: &Scenario, seed: u64, server: &str, opts: &Options) -> RunReport {
        RunReport {
            schema_version: SCHEMA_VERSION,
            scenario: scenario.name.clone(),
            seed,
            server: server.to_string(),
            clients: opts.clients_label().to_string(),
            overrides: opts.sets.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            deployment: opts.deployment.clone(),
            topology: scenario.deployment.with_sets(&opts.sets).topology(),
            metrics: Metrics::default(),
            metrics_by_class: BTreeMap::new(),
            faults: Faults::default(),
            sim_ms: 0,
            clients_finished: false,
            records: 0,
            trace_sha256: String::new(),
            migration_latency_hist_us: Vec::new(),
            delivery_latency_hist_us: Vec::new(),
            declared_hazards: scenario.hazards.clone(),
            operations: Vec::new(),
            operations_omitted: 0,
            failed_expectations: Vec::new(),
            verdict: String::new(),
            not_applicable_clients: 0,
            store_round_trips: 0,
            deployment_overridden: false,
            meta: Meta { wall_ms: 0.0 },
            reached: Vec::new(),
        }
    }

    /// The options this run was made with (its client profile and
    /// overrides), so it can be made again.
    pub fn options(&self) -> Options {
        Options {
            clients: self.clients.parse().ok(),
            sets: self
                .overrides
                .iter()
                .filter_map(|s| Options::parse_set(s).ok())
                .collect(),
            deployment: self.deployment.clone(),
        }
    }

    /// Exit code of this run: 0 pass, 1 safety violation, 2 liveness failure.
    pub fn exit_code(&self) -> u8 {
        match self.verdict.as_str() {
            "pass" | NOT_APPLICABLE => 0,
            "safety" => 1,
            // liveness, and a run past `--timeout`
            _ => 2,
        }
    }

    /// Whether the run failed an expectation (a run that was not applicable
    /// did not).
    pub fn failed(&self) -> bool {
        !matches!(self.verdict.as_str(), "pass" | NOT_APPLICABLE)
    }
}

/// The verdict of a run none of whose clients the arm could serve.
pub const NOT_APPLICABLE: &str = "not-applicable";

pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

fn as_written() -> String {
    AS_WRITTEN.to_string()
}

/// The command that reproduces a run.
pub fn repro_command(
    scenario_path: &str,
    seed: u64,
    arm: impl Into<Arm>,
    opts: &Options,
) -> String {
    format!(
        "cargo run --release -- repro --scenario {scenario_path} --seed {seed} --server {}{}",
        arm.into().as_str(),
        opts.flags()
    )
}

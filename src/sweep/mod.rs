//! Many runs at once: scenario × seeds × servers across cores, shards of a
//! seed range for machines beyond this one, and summaries that merge
//! exactly (aggregates come from integer counts and merged histograms,
//! never from rounded figures).

mod figures;
mod pool;

pub use figures::check_figures;
pub use pool::{cores, map_all, run_all, run_kept, Control, Job, Progress, TIMEOUT};

use crate::oracle::{self, Latency, Metrics};
use crate::run::{self, RunReport};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the summary JSON (3: runs name the histogram's unit,
/// `migration_latency_hist_us`).
pub const SUMMARY_SCHEMA_VERSION: u32 = 3;

/// Totals for one scenario × server over its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Scenario name.
    pub scenario: String,
    /// The server arm.
    pub server: String,
    /// The client profile (`scenario`: as the scenario wrote them).
    #[serde(default = "as_written")]
    pub clients: String,
    /// The deployment's label on `compare --deployments`'s axis (empty,
    /// and not written, without it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub deployment: String,
    /// The deployment its runs stood on (not written for the one-server
    /// world).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<crate::scenario::Topology>,
    /// Runs (seeds).
    pub runs: u64,
    /// Runs whose expectations failed.
    pub failed_runs: u64,
    /// Sums of every integer metric; latency from the merged histogram.
    pub metrics: Metrics,
    /// Faults planned and applied, summed.
    pub faults: run::Faults,
    /// Clients the arm could not serve (legacy clients of an arm without
    /// that transport), summed over runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_applicable_clients: u64,
    /// Requests the shared store answered, summed over runs (not written
    /// when 0: no shared store).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub store_round_trips: u64,
}

#[cfg(test)]
impl Aggregate {
    /// An aggregate of `runs` runs of `server` on `scenario` with
    /// `clients`, one-server world, `failed` operations of `metrics`
    /// failed with `cause` (the reports' tests build their summaries of
    /// these).
    pub(crate) fn for_test(
        (scenario, server, clients): (&str, &str, &str),
        runs: u64,
        mut metrics: Metrics,
        cause: &str,
    ) -> Aggregate {
        if metrics.ops_failed > 0 {
            metrics
                .failures_by_cause
                .insert(cause.into(), metrics.ops_failed);
        }
        Aggregate {
            scenario: scenario.into(),
            server: server.into(),
            clients: clients.into(),
            deployment: String::new(),
            topology: None,
            runs,
            failed_runs: 0,
            metrics,
            faults: run::Faults::default(),
            not_applicable_clients: 0,
            store_round_trips: 0,
        }
    }
}

impl Aggregate {
    /// None of its runs' clients could run against the arm (legacy clients
    /// of an arm without that transport): nothing to judge.
    pub fn not_applicable(&self) -> bool {
        self.metrics.operations == 0 && self.not_applicable_clients > 0
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn as_written() -> String {
    run::AS_WRITTEN.to_string()
}

/// Every run of a sweep plus aggregates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Summary schema version.
    pub schema_version: u32,
    /// Every run, ordered by scenario, server, seed.
    pub runs: Vec<RunReport>,
    /// Per scenario × server, ordered.
    pub aggregates: Vec<Aggregate>,
    /// Per scenario, the hazards it declares that none of its runs (any
    /// seed, any server) exercised: a fault plan that tests nothing.
    #[serde(default)]
    pub uncovered_hazards: BTreeMap<String, Vec<String>>,
    /// What produced this summary: enough to reproduce it.
    #[serde(default)]
    pub provenance: Provenance,
}

/// What produced a summary: the command, the seeds, the arms, the tool and
/// the scenario files, so a report can say how to reproduce itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The command line as typed, program name first.
    pub command: Vec<String>,
    /// The seed range, `A..B` (B exclusive).
    pub seeds: String,
    /// Server arms, in report order.
    pub arms: Vec<String>,
    /// Client profiles, in report order (`scenario`: as written).
    pub clients: Vec<String>,
    /// `--deployments`' labels, in report order (empty, and not written,
    /// without that axis).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<String>,
    /// mcp-chaos's version (Cargo.toml).
    pub version: String,
    /// The source's git commit (`-dirty` appended when the work tree has
    /// changes), or `unknown` outside a checkout.
    pub commit: String,
    /// Per scenario name: its file, the file's SHA-256 and its description.
    pub scenarios: BTreeMap<String, ScenarioInfo>,
}

/// One scenario file, as a summary records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// Path of the file, as given.
    pub file: String,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
    /// The scenario's `description`.
    pub description: String,
    /// The field client behaviours its clients show (`[[clients]]
    /// field`), in `Field::ALL` order (not written when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field: Vec<String>,
    /// Its events readers in words ([`crate::scenario::Scenario::readers`];
    /// not written when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
    /// The webhook sender its `[server]` names (not written when no
    /// client reads events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
}

/// What identifies a run in a summary: scenario, server, client profile,
/// overrides, seed, deployment label.
type RunKey = (String, String, String, Vec<String>, u64, String);

fn run_key(r: &RunReport) -> RunKey {
    (
        r.scenario.clone(),
        r.server.clone(),
        r.clients.clone(),
        r.overrides.clone(),
        r.seed,
        r.deployment.clone(),
    )
}

/// What an aggregate sums over: scenario, server, client profile,
/// deployment label.
type GroupKey = (String, String, String, String);

impl Summary {
    /// A summary of these runs (any order, duplicates by (scenario, server,
    /// seed) removed). Runs just made: their counts are bounded by the
    /// loader's limits, so no sum can overflow.
    pub fn from_runs(runs: Vec<RunReport>) -> Summary {
        Self::aggregate(runs, &|_| "this sweep".to_string())
            .unwrap_or_else(|e| panic!("fresh runs' figures are bounded: {e}"))
    }

    /// [`Summary::from_runs`] with every sum checked: an overflow names the
    /// file (`origin` of the run whose figure overflowed it) and the field.
    fn aggregate(
        mut runs: Vec<RunReport>,
        origin: &dyn Fn(&RunReport) -> String,
    ) -> Result<Summary, String> {
        runs.sort_by_key(run_key);
        runs.dedup_by(|a, b| run_key(a) == run_key(b));
        for r in &mut runs {
            r.keep_examples(run::EXAMPLES);
        }
        let mut groups: BTreeMap<GroupKey, Vec<&RunReport>> = BTreeMap::new();
        for r in &runs {
            let key = (
                r.scenario.clone(),
                r.server.clone(),
                r.clients.clone(),
                r.deployment.clone(),
            );
            groups.entry(key).or_default().push(r);
        }
        let mut aggregates = Vec::new();
        for ((scenario, server, clients, deployment), rs) in groups {
            let mut metrics = Metrics::default();
            let (mut hist, mut delivery) = (oracle::new_hist(), oracle::new_hist());
            let mut faults = run::Faults::default();
            let mut not_applicable_clients = 0u64;
            let mut store_round_trips = 0u64;
            for r in &rs {
                let overflow = |field: &str| {
                    format!(
                        "{}: the sum of {field} over the runs of {scenario} {server} (clients \
                         {clients}) overflows a 64-bit count at seed {}: a figure in it is corrupt",
                        origin(r),
                        r.seed
                    )
                };
                oracle::try_add(&mut metrics, &r.metrics)
                    .map_err(|f| overflow(&format!("metrics.{f}")))?;
                for (h, pairs, name) in [
                    (&mut hist, &r.migration_latency_hist_us, "migration"),
                    (&mut delivery, &r.delivery_latency_hist_us, "delivery"),
                ] {
                    let field = format!("{name}_latency_hist_us");
                    let mut samples = h.len();
                    for &(v, n) in pairs {
                        // The histogram saturates: the sum says overflow.
                        samples = samples.checked_add(n).ok_or_else(|| overflow(&field))?;
                        h.record_n(v, n).map_err(|_| overflow(&field))?;
                    }
                }
                oracle::add_counts(&mut faults.planned, &r.faults.planned)
                    .map_err(|k| overflow(&format!("faults.planned.{k}")))?;
                oracle::add_counts(&mut faults.applied, &r.faults.applied)
                    .map_err(|k| overflow(&format!("faults.applied.{k}")))?;
                not_applicable_clients = not_applicable_clients
                    .checked_add(u64::from(r.not_applicable_clients))
                    .ok_or_else(|| overflow("not_applicable_clients"))?;
                store_round_trips = store_round_trips
                    .checked_add(r.store_round_trips)
                    .ok_or_else(|| overflow("store_round_trips"))?;
            }
            metrics.migration_latency_us = Latency::of(&hist);
            metrics.delivery_latency_us = Latency::of(&delivery);
            aggregates.push(Aggregate {
                scenario,
                server,
                clients,
                topology: rs.first().and_then(|r| r.topology.clone()),
                deployment,
                runs: rs.len() as u64,
                failed_runs: rs.iter().filter(|r| r.failed()).count() as u64,
                metrics,
                faults,
                not_applicable_clients,
                store_round_trips,
            });
        }
        let mut uncovered_hazards: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &runs {
            let entry = uncovered_hazards
                .entry(r.scenario.clone())
                .or_insert_with(|| r.declared_hazards.clone());
            entry.retain(|h| r.metrics.hazards.get(h).copied().unwrap_or(0) == 0);
        }
        uncovered_hazards.retain(|_, v| !v.is_empty());
        Ok(Summary {
            schema_version: SUMMARY_SCHEMA_VERSION,
            runs,
            aggregates,
            uncovered_hazards,
            provenance: Provenance::default(),
        })
    }

    /// Merges summaries (shards): the runs of all, aggregates recomputed.
    /// Refuses a summary of another schema version (its fields may mean
    /// something else), a run that two parts both hold (shards of one
    /// range never overlap: the same shard given twice, or overlapping
    /// ranges), parts run with different `--set` overrides or, for a
    /// scenario both hold, different arms or client profiles (their
    /// aggregates would mix or compare unlike runs), figures no run can
    /// have (see [`check_figures`]) and sums that overflow. `names` label
    /// the parts in errors.
    pub fn merge(parts: Vec<Summary>, names: &[String]) -> Result<Summary, String> {
        let name_of = |i: usize| names.get(i).map_or("a summary", String::as_str).to_string();
        let mut seen: BTreeMap<RunKey, usize> = BTreeMap::new();
        for (i, p) in parts.iter().enumerate() {
            let name = name_of(i);
            if p.schema_version != SUMMARY_SCHEMA_VERSION {
                return Err(format!(
                    "{name} is a summary of schema version {}, this mcp-chaos writes version \
                     {SUMMARY_SCHEMA_VERSION}: rerun its sweep with this version before merging",
                    p.schema_version
                ));
            }
            for r in &p.runs {
                check_figures(r).map_err(|e| {
                    format!(
                        "{name}: {} {} (clients {}) seed {}: {e}: the file is corrupt or \
                         hand-edited; rerun its sweep",
                        r.scenario, r.server, r.clients, r.seed
                    )
                })?;
                if let Some(&j) = seen.get(&run_key(r)) {
                    if j != i {
                        return Err(format!(
                            "{name} and {} both hold {} {} (clients {}) seed {}: \
                             merge each shard once (the same file twice, or overlapping --seeds)",
                            name_of(j),
                            r.scenario,
                            r.server,
                            r.clients,
                            r.seed
                        ));
                    }
                }
                seen.insert(run_key(r), i);
            }
        }
        same_matrix(&parts, &name_of)?;
        let provenance = merged_provenance(&parts, &name_of)?;
        let runs: Vec<RunReport> = parts.into_iter().flat_map(|s| s.runs).collect();
        let mut merged = Self::aggregate(runs, &|r| {
            seen.get(&run_key(r))
                .map_or_else(|| "a summary".to_string(), |&i| name_of(i))
        })?;
        merged.provenance = provenance;
        Ok(merged)
    }

    /// The worst exit code of its runs (0 pass, 1 safety, 2 liveness).
    pub fn exit_code(&self) -> u8 {
        let codes: Vec<u8> = self.runs.iter().map(RunReport::exit_code).collect();
        if codes.contains(&1) {
            1
        } else {
            codes.into_iter().max().unwrap_or(0)
        }
    }

    /// The same summary with wall-clock figures cleared (for comparisons).
    pub fn without_meta(mut self) -> Summary {
        for r in &mut self.runs {
            r.meta = Default::default();
        }
        self
    }
}

/// What one part of a merge ran: its `--set` overrides, and per scenario
/// the arms and client profiles.
#[derive(PartialEq)]
struct Ran {
    overrides: std::collections::BTreeSet<Vec<String>>,
    matrix: BTreeMap<String, std::collections::BTreeSet<(String, String)>>,
}

fn ran(p: &Summary) -> Ran {
    let mut r = Ran {
        overrides: Default::default(),
        matrix: BTreeMap::new(),
    };
    for run in &p.runs {
        r.overrides.insert(run.overrides.clone());
        r.matrix
            .entry(run.scenario.clone())
            .or_default()
            .insert((run.server.clone(), run.clients.clone()));
    }
    r
}

/// Refuses parts that ran different `--set` overrides, or the same
/// scenario with different arms or client profiles: one line naming both
/// files and the difference.
fn same_matrix(parts: &[Summary], name_of: &dyn Fn(usize) -> String) -> Result<(), String> {
    let show = |o: &std::collections::BTreeSet<Vec<String>>| -> String {
        let sets: Vec<String> = o
            .iter()
            .map(|v| {
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.iter()
                        .map(|s| format!("--set {s}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
            })
            .collect();
        sets.join(" / ")
    };
    let runs: Vec<(usize, Ran)> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.runs.is_empty())
        .map(|(i, p)| (i, ran(p)))
        .collect();
    let Some((first, a)) = runs.first() else {
        return Ok(());
    };
    for (i, b) in &runs[1..] {
        if a.overrides != b.overrides {
            return Err(format!(
                "{} and {} were run with different overrides ({} vs {}): their aggregates \
                 would mix unlike runs; merge only shards run with the same --set",
                name_of(*first),
                name_of(*i),
                show(&a.overrides),
                show(&b.overrides)
            ));
        }
        for (scenario, arms) in &a.matrix {
            let Some(other) = b.matrix.get(scenario) else {
                continue;
            };
            if arms != other {
                let show = |m: &std::collections::BTreeSet<(String, String)>| {
                    m.iter()
                        .map(|(s, c)| format!("{s}/{c}"))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                return Err(format!(
                    "{} and {} ran {scenario} on different arms/client profiles ({} vs {}): \
                     their seeds would compare unlike runs; merge only shards run with the same \
                     --servers and --clients",
                    name_of(*first),
                    name_of(*i),
                    show(arms),
                    show(other)
                ));
            }
        }
    }
    Ok(())
}

/// The provenance of merged parts (those that record one): one scenario
/// name must be one file's content in every part (else the shards ran
/// different scenarios under one name, refused naming both files and
/// hashes); seeds, arms, profiles, version and commit are the parts'
/// (joined by `,` where they differ). The command is left for the caller.
fn merged_provenance(
    parts: &[Summary],
    name_of: &dyn Fn(usize) -> String,
) -> Result<Provenance, String> {
    let mut out = Provenance::default();
    let mut from: BTreeMap<String, usize> = BTreeMap::new();
    let join = |dst: &mut String, v: &str| {
        if !dst.split(',').any(|x| x == v) {
            if !dst.is_empty() {
                dst.push(',');
            }
            dst.push_str(v);
        }
    };
    for (i, p) in parts.iter().enumerate() {
        let p = &p.provenance;
        if p.scenarios.is_empty() {
            continue;
        }
        for (name, info) in &p.scenarios {
            match out.scenarios.get(name) {
                Some(seen) if seen.sha256 != info.sha256 => {
                    return Err(format!(
                        "{} and {} ran scenario {name} from different files ({} sha256 {:.12} vs \
                         {} sha256 {:.12}): merge only shards of one scenario file",
                        name_of(from[name]),
                        name_of(i),
                        seen.file,
                        seen.sha256,
                        info.file,
                        info.sha256
                    ));
                }
                Some(_) => {}
                None => {
                    out.scenarios.insert(name.clone(), info.clone());
                    from.insert(name.clone(), i);
                }
            }
        }
        join(&mut out.seeds, &p.seeds);
        join(&mut out.version, &p.version);
        join(&mut out.commit, &p.commit);
        for (dst, src) in [
            (&mut out.arms, &p.arms),
            (&mut out.clients, &p.clients),
            (&mut out.deployments, &p.deployments),
        ] {
            for v in src {
                if !dst.contains(v) {
                    dst.push(v.clone());
                }
            }
        }
    }
    Ok(out)
}

/// A seed range `A..B` (B exclusive) and an optional shard `K/N`
/// (1-based): the seeds of the range whose offset is `K−1` modulo `N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// First seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
    /// Shard index (1-based) and count.
    pub shard: (u64, u64),
}

impl Seeds {
    /// Parses `A..B` (B exclusive) or a bare `N` (= `0..N`), the one
    /// meaning `--seeds` has in every command, of at most
    /// [`MAX_SEEDS`](crate::base::flags::MAX_SEEDS) seeds; a one-line error names
    /// the input, the bound and the fix.
    pub fn parse(range: &str, shard: Option<&str>) -> Result<Seeds, String> {
        Self::parse_as("--seeds", range, shard)
    }

    /// [`Seeds::parse`], errors naming the range's source (`label`: the
    /// flag or the environment variable).
    fn parse_as(label: &str, range: &str, shard: Option<&str>) -> Result<Seeds, String> {
        use crate::base::flags::MAX_SEEDS;
        let bad = || {
            format!(
                "{label}: bad seeds {range:?}: write A..B (B exclusive, A < B), e.g. 0..20, \
                 or N for 0..N, e.g. 6; at most {MAX_SEEDS} seeds"
            )
        };
        let (start, end) = match range.split_once("..") {
            Some((a, b)) => (
                a.trim().parse::<u64>().map_err(|_| bad())?,
                b.trim().parse::<u64>().map_err(|_| bad())?,
            ),
            None => (0, range.trim().parse::<u64>().map_err(|_| bad())?),
        };
        if start >= end {
            return Err(bad());
        }
        if end - start > MAX_SEEDS {
            return Err(format!(
                "{label} {range}: {} seeds is above the maximum of {MAX_SEEDS}: sweep at most \
                 {MAX_SEEDS} seeds at once (e.g. {start}..{}), the rest as further ranges",
                end - start,
                start.saturating_add(MAX_SEEDS)
            ));
        }
        let shard = match shard {
            None => (1, 1),
            Some(s) => parse_shard(s)?,
        };
        Ok(Seeds { start, end, shard })
    }

    /// The seeds from `--seeds` when given, else from the environment
    /// variable [`SEEDS_ENV`], else `default` (the flag wins).
    pub fn from_flag_or_env(
        flag: Option<&str>,
        shard: Option<&str>,
        default: Option<&str>,
    ) -> Result<Seeds, String> {
        let env = std::env::var(SEEDS_ENV).ok();
        match (flag, env.as_deref(), default) {
            (Some(f), ..) => Seeds::parse(f, shard),
            (None, Some(e), _) => Seeds::parse_as(SEEDS_ENV, e, shard),
            (None, None, Some(d)) => Seeds::parse(d, shard),
            (None, None, None) => Err(format!(
                "no seeds: pass --seeds A..B (or N for 0..N), or set {SEEDS_ENV}"
            )),
        }
    }

    /// `A..B`, as provenance and messages write the range.
    pub fn range(&self) -> String {
        format!("{}..{}", self.start, self.end)
    }

    /// How many seeds this shard runs (what [`Seeds::list`] holds).
    pub fn count(&self) -> u64 {
        let (k, n) = self.shard;
        (self.end - self.start)
            .saturating_sub(k - 1)
            .div_ceil(n.max(1))
    }

    /// The seeds of this shard, in order.
    pub fn list(&self) -> Vec<u64> {
        let (k, n) = self.shard;
        let step = usize::try_from(n).expect("a shard count is at most MAX_SEEDS");
        (self.start.saturating_add(k - 1)..self.end)
            .step_by(step)
            .collect()
    }
}

/// `--shard K/N`: (K, N), 1 <= K <= N <= the largest shard count.
pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    use crate::base::flags::MAX_SEEDS;
    let bad = || {
        format!(
            "--shard {s:?}: write K/N with 1 <= K <= N <= {MAX_SEEDS} (the maximum \
             shard count), e.g. 2/4"
        )
    };
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n) = (
        k.trim().parse::<u64>().map_err(|_| bad())?,
        n.trim().parse::<u64>().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n || n > MAX_SEEDS {
        return Err(bad());
    }
    Ok((k, n))
}

/// The environment variable `--seeds` falls back to (same syntax).
pub const SEEDS_ENV: &str = "MCP_CHAOS_SEEDS";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_deployment_of_the_axis_is_an_aggregate_of_its_own() {
        let sc = crate::scenario::Scenario::parse(
            "name = \"d\"\nduration_ms = 4000\n[[clients]]\nbehaviour = \"resume\"\n[deployment]\nreplicas = 2\n\
             balancer = \"round-robin\"\n",
        )
        .unwrap();
        let run = |label: &str, store: &str, trips: u64| {
            let opts = run::Options {
                sets: vec![("deployment.store".into(), store.into())],
                deployment: label.into(),
                ..Default::default()
            };
            let mut r = RunReport::of(&sc, 0, "guarded", &opts);
            r.store_round_trips = trips;
            r
        };
        let s = Summary::from_runs(vec![
            run("store=shared", "shared", 7),
            run("store=local", "local", 0),
            run("store=shared", "shared", 7),
        ]);
        assert_eq!(s.runs.len(), 2, "one run per deployment and seed");
        let got: Vec<(&str, &str, u64)> = s
            .aggregates
            .iter()
            .map(|a| {
                let t = a.topology.as_ref().unwrap();
                (a.deployment.as_str(), t.store.as_str(), a.store_round_trips)
            })
            .collect();
        assert_eq!(
            got,
            [("store=local", "local", 0), ("store=shared", "shared", 7)]
        );
        let local = serde_json::to_string(&s.aggregates[0]).unwrap();
        assert!(!local.contains("store_round_trips"), "{local}");
        let shared = serde_json::to_string(&s.aggregates[1]).unwrap();
        assert!(shared.contains("\"store_round_trips\":7"), "{shared}");
    }

    #[test]
    fn a_summary_keeps_a_few_examples_per_cause_and_kind_and_counts_the_rest() {
        let sc = crate::scenario::Scenario::parse(
            "name = \"e\"\nduration_ms = 4000\n[[clients]]\nbehaviour = \"resume\"\n",
        )
        .unwrap();
        let mut r = RunReport::of(&sc, 0, "unguarded", &Default::default());
        let op = |i: usize, cause: Option<&str>| oracle::OpVerdict {
            tag: format!("c0-op{i}"),
            client: 0,
            failures: cause.map(|_| vec!["lost".to_string()]).unwrap_or_default(),
            cause: cause.map(str::to_string),
            detail: None,
        };
        r.operations = (0..25)
            .map(|i| op(i, Some("eviction")))
            .chain((25..28).map(|i| op(i, Some("fin_race"))))
            .chain((28..40).map(|i| op(i, None)))
            .collect();
        let drop = |call: u32| run::NotApplied {
            fault: crate::fault::Fault::Drop {
                client: 0,
                call,
                after_event: 1,
                close: Default::default(),
            },
            reason: "never ran".into(),
        };
        r.faults.planned.insert("drop".into(), 15);
        r.faults.not_applied = (0..15).map(drop).collect();
        let s = Summary::from_runs(vec![r]);
        let kept = &s.runs[0];
        let count = |c: Option<&str>| {
            kept.operations
                .iter()
                .filter(|o| o.cause.as_deref() == c)
                .count()
        };
        assert_eq!(
            (
                count(Some("eviction")),
                count(Some("fin_race")),
                count(None)
            ),
            (run::EXAMPLES, 3, run::EXAMPLES)
        );
        assert_eq!(kept.operations[0].tag, "c0-op0", "the first ones are kept");
        assert_eq!(kept.operations_omitted, 15 + 2);
        let f = &kept.faults;
        assert_eq!(f.not_applied.len(), run::EXAMPLES);
        assert_eq!(
            f.planned["drop"],
            f.not_applied.len() as u64 + f.not_applied_omitted,
            "planned = applied + not applied + omitted"
        );
        let json = serde_json::to_string(kept).unwrap();
        let back: RunReport = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, kept, "the counts survive the file");
        let again = Summary::from_runs(vec![back]);
        assert_eq!(&again.runs[0], kept, "bounding twice changes nothing");
    }

    #[test]
    fn seed_ranges_and_shards_partition_the_range() {
        let all = Seeds::parse("3..13", None).unwrap().list();
        assert_eq!(all, (3..13).collect::<Vec<_>>());
        let mut union: Vec<u64> = (1..=3)
            .flat_map(|k| {
                Seeds::parse("3..13", Some(&format!("{k}/3")))
                    .unwrap()
                    .list()
            })
            .collect();
        union.sort();
        assert_eq!(union, all, "shards cover the range exactly once");
        assert_eq!(
            Seeds::parse("5", None).unwrap().list(),
            (0..5).collect::<Vec<_>>()
        );
        assert_eq!(Seeds::parse("3..7", None).unwrap().list(), vec![3, 4, 5, 6]);
        for bad in [
            "5..5", "9..2", "x..3", "0", "-1", "", "1..2..3", "3..", "..3",
        ] {
            assert!(Seeds::parse(bad, None).is_err(), "{bad}");
        }
        for bad in ["0/3", "4/3", "1/0", "a/b", "2"] {
            assert!(Seeds::parse("0..9", Some(bad)).is_err(), "{bad}");
        }
    }
}

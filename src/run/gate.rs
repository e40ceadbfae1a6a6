//! `--fail-on ops` and `--fail-on-config`: the gate a CI user puts beside
//! a scenario's expectations. Expectations say what a scenario allows (a
//! hazard scenario expects the unprotected arm to fail operations); the
//! gate says what the user allows of the configuration they deploy: no
//! failed operation at all. `run` judges the configuration it ran;
//! `sweep` and `compare` every configuration they ran, or the one
//! `--fail-on-config` names.

use crate::hosts::sut::Arm;
use crate::run::{self, Options, RunReport};
use std::collections::BTreeMap;

/// What, beside a broken expectation, fails the command. The variant
/// carries no doc comment: clap would print it in `--help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Ops,
}

/// One configuration by what the user controls: the arm, the client
/// profile (`scenario`: the clients as written), and `--set` overrides
/// the runs must carry (`--fail-on-config ARM[,PROFILE][,KEY=VALUE…]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    arm: String,
    profile: Option<String>,
    sets: Vec<String>,
}

impl std::str::FromStr for Config {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',').map(str::trim).filter(|p| !p.is_empty());
        let arm: Arm = parts
            .next()
            .ok_or("--fail-on-config needs an arm first, e.g. --fail-on-config guarded,keys")?
            .parse()
            .map_err(|e| format!("--fail-on-config {s:?}: {e}"))?;
        let mut config = Config {
            arm: arm.as_str().to_string(),
            profile: None,
            sets: Vec::new(),
        };
        for p in parts {
            if p.contains('=') {
                let (k, v) = Options::parse_set_checked(p)
                    .map_err(|e| format!("--fail-on-config {s:?}: {e}"))?;
                config.sets.push(format!("{k}={v}"));
            } else if config.profile.is_some() {
                return Err(format!(
                    "--fail-on-config {s:?}: one client profile at most (then KEY=VALUE overrides)"
                ));
            } else {
                if p != run::AS_WRITTEN {
                    p.parse::<crate::base::profile::Profile>()
                        .map_err(|e| format!("--fail-on-config {s:?}: {e}"))?;
                }
                config.profile = Some(p.to_string());
            }
        }
        Ok(config)
    }
}

impl Config {
    /// Whether run `r` ran this configuration.
    pub fn matches(&self, r: &RunReport) -> bool {
        r.server == self.arm
            && self.profile.as_ref().is_none_or(|p| *p == r.clients)
            && self.sets.iter().all(|s| r.overrides.contains(s))
    }
}

/// The gate as the command line set it.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    pub on: Option<FailOn>,
    pub config: Option<Config>,
    /// Where a CI step summary is appended (`--step-summary`).
    pub step_summary: Option<std::path::PathBuf>,
}

/// The most a step summary writes (GitHub refuses a larger one).
pub const STEP_SUMMARY_BYTES: usize = 1024 * 1024;

/// What failed the gate in one configuration: its runs' failed
/// operations over all of them, by cause, and its first failing run.
pub struct Failed<'a> {
    pub label: String,
    pub failed: u64,
    pub operations: u64,
    pub causes: BTreeMap<String, u64>,
    pub first: &'a RunReport,
}

/// What a step summary opens with: its title, the answer (`compare`'s
/// recommendation, or nothing) and the table, each as given.
#[derive(Clone, Copy, Debug)]
pub struct StepHead<'a> {
    /// The heading.
    pub title: &'a str,
    /// The answer, Markdown (empty: none).
    pub answer: &'a str,
    /// The table, Markdown (empty: none).
    pub table: &'a str,
}

impl Gate {
    /// Every configuration of `runs` the gate judges that failed an
    /// operation, in the order they first appear. `Err`: the gate names a
    /// configuration none of the runs ran.
    pub fn failed<'a>(&self, runs: &'a [RunReport]) -> Result<Vec<Failed<'a>>, String> {
        if self.on.is_none() {
            return Ok(Vec::new());
        }
        let judged: Vec<&RunReport> = runs
            .iter()
            .filter(|r| self.config.as_ref().is_none_or(|c| c.matches(r)))
            .collect();
        if judged.is_empty() && !runs.is_empty() {
            let mut ran: Vec<String> = runs.iter().map(label).collect();
            ran.sort();
            ran.dedup();
            return Err(format!(
                "--fail-on-config matched none of the runs; they ran: {}",
                ran.join("; ")
            ));
        }
        let mut out: Vec<Failed> = Vec::new();
        for r in judged {
            let l = label(r);
            let i = match out.iter().position(|f| f.label == l) {
                Some(i) => i,
                None => {
                    out.push(Failed {
                        label: l,
                        failed: 0,
                        operations: 0,
                        causes: BTreeMap::new(),
                        first: r,
                    });
                    out.len() - 1
                }
            };
            let f = &mut out[i];
            if f.failed == 0 && r.metrics.ops_failed > 0 {
                f.first = r;
            }
            f.failed += r.metrics.ops_failed;
            f.operations += r.metrics.operations;
            for (c, n) in &r.metrics.failures_by_cause {
                *f.causes.entry(c.clone()).or_default() += n;
            }
        }
        out.retain(|f| f.failed > 0);
        Ok(out)
    }

    /// The exit code with the gate applied to `code` (the expectations'):
    /// a configuration that failed an operation makes it at least 1. Each
    /// one is said on standard error with its causes and the command that
    /// reproduces its first failing run.
    pub fn apply(
        &self,
        code: u8,
        runs: &[RunReport],
        repro: impl Fn(&RunReport) -> String,
    ) -> Result<u8, String> {
        let failed = self.failed(runs)?;
        for f in &failed {
            crate::base::console::errln!(
                "mcp-chaos: --fail-on ops: {} failed {} of {} operations ({}); first in {} seed {}\n  reproduce with: {}",
                f.label,
                f.failed,
                f.operations,
                causes(&f.causes),
                f.first.scenario,
                f.first.seed,
                repro(f.first)
            );
        }
        Ok(if failed.is_empty() { code } else { code.max(1) })
    }

    /// The step summary of a batch: `title`, the answer (`compare`'s
    /// recommendation) and the table as given, then every failing run
    /// (a broken expectation, or under `--fail-on ops` a failed operation
    /// of a judged configuration) with the command that reproduces it, cut
    /// at [`STEP_SUMMARY_BYTES`] with a line saying so.
    pub fn step_summary(
        &self,
        head: StepHead<'_>,
        runs: &[RunReport],
        repro: impl Fn(&RunReport) -> String,
    ) -> String {
        let mut s = format!("# {}\n\n", head.title);
        for part in [head.answer, head.table] {
            if !part.trim().is_empty() {
                s.push_str(part.trim_end());
                s.push_str("\n\n");
            }
        }
        let judged = |r: &RunReport| {
            self.on.is_some()
                && r.metrics.ops_failed > 0
                && self.config.as_ref().is_none_or(|c| c.matches(r))
        };
        let failing: Vec<&RunReport> = runs.iter().filter(|r| r.failed() || judged(r)).collect();
        if failing.is_empty() {
            s.push_str("No run failed");
            s.push_str(if self.on.is_some() {
                ": every expectation holds and no judged operation failed.\n"
            } else {
                ": every expectation holds.\n"
            });
            return s;
        }
        s.push_str(&format!("## Failing runs ({})\n\n", failing.len()));
        let cut = "\n… cut at 1 MiB: every run is in the summary JSON.\n";
        for r in failing {
            let why = if r.failed() {
                format!(
                    "expectations break ({}): {}",
                    r.verdict,
                    r.failed_expectations.join("; ")
                )
            } else {
                format!(
                    "{} of {} operations failed ({})",
                    r.metrics.ops_failed,
                    r.metrics.operations,
                    causes(&r.metrics.failures_by_cause)
                )
            };
            let line = format!(
                "- {} · {} · seed {}: {why}\n  `{}`\n",
                r.scenario,
                label(r),
                r.seed,
                repro(r)
            );
            if s.len() + line.len() + cut.len() > STEP_SUMMARY_BYTES {
                s.push_str(cut);
                break;
            }
            s.push_str(&line);
        }
        s
    }
}

/// A configuration in words: the arm, its clients, its overrides and
/// deployment when the run had them.
pub fn label(r: &RunReport) -> String {
    let mut l = format!("{} (clients: {})", r.server, r.clients);
    if !r.overrides.is_empty() {
        l.push_str(&format!(" --set {}", r.overrides.join(" --set ")));
    }
    if !r.deployment.is_empty() {
        l.push_str(&format!(" deployment {}", r.deployment));
    }
    l
}

/// Failures by cause, most first: `cause n, cause n`.
pub fn causes(map: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = map.iter().filter(|(_, &n)| n > 0).collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if v.is_empty() {
        return "no cause recorded".into();
    }
    v.iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: &str, clients: &str, ok: u64, failed: u64) -> RunReport {
        let sc = crate::scenario::Scenario::parse(
            "name = \"s\"\nduration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\n",
        )
        .expect("a valid scenario");
        let mut r = RunReport::of(&sc, 0, server, &Options::default());
        r.verdict = "pass".into();
        r.clients = clients.into();
        r.metrics.operations = ok + failed;
        r.metrics.ops_ok = ok;
        r.metrics.ops_failed = failed;
        if failed > 0 {
            r.metrics
                .failures_by_cause
                .insert("retry_without_key".into(), failed);
        }
        r
    }

    fn gate(config: Option<&str>) -> Gate {
        Gate {
            on: Some(FailOn::Ops),
            config: config.map(|c| c.parse().expect("a valid configuration")),
            step_summary: None,
        }
    }

    #[test]
    fn a_step_summary_lists_the_failing_runs_and_stays_under_its_bound() {
        let runs = [
            run("unguarded", "scenario", 0, 10),
            run("guarded", "keys", 10, 0),
        ];
        let head = |answer, table| StepHead {
            title: "t",
            answer,
            table,
        };
        let s = gate(None).step_summary(head("Deploy guarded.", "| a |"), &runs, |_| "cmd".into());
        assert!(
            s.starts_with("# t\n\nDeploy guarded.\n\n| a |\n\n## Failing runs (1)"),
            "{s}"
        );
        assert!(s.contains("unguarded (clients: scenario) · seed 0: 10 of 10 operations failed (retry_without_key 10)\n  `cmd`"), "{s}");
        let off = Gate::default().step_summary(head("", ""), &runs, |_| "cmd".into());
        assert!(
            off.ends_with("No run failed: every expectation holds.\n"),
            "{off}"
        );
        let many: Vec<RunReport> = (0..20_000)
            .map(|_| run("unguarded", "scenario", 0, 1))
            .collect();
        let big = gate(None).step_summary(head("", ""), &many, |_| "x".repeat(100));
        assert!(big.len() <= STEP_SUMMARY_BYTES, "{}", big.len());
        assert!(big.ends_with("every run is in the summary JSON.\n"));
    }

    #[test]
    fn a_failed_operation_fails_the_command_whatever_the_expectations() {
        let runs = [run("guarded", "keys", 9, 1), run("guarded", "keys", 10, 0)];
        assert_eq!(gate(None).apply(0, &runs, |_| String::new()), Ok(1));
        let clean = [run("guarded", "keys", 10, 0)];
        assert_eq!(gate(None).apply(0, &clean, |_| String::new()), Ok(0));
        assert_eq!(
            gate(None).apply(2, &runs, |_| String::new()),
            Ok(2),
            "the worse code stays"
        );
        let off = Gate::default();
        assert_eq!(
            off.apply(0, &runs, |_| String::new()),
            Ok(0),
            "no --fail-on"
        );
    }

    #[test]
    fn the_named_configuration_alone_is_judged() {
        let runs = [
            run("unguarded", "scenario", 0, 10),
            run("guarded", "keys", 10, 0),
        ];
        assert_eq!(
            gate(Some("guarded,keys")).apply(0, &runs, |_| String::new()),
            Ok(0)
        );
        assert_eq!(
            gate(Some("unguarded")).apply(0, &runs, |_| String::new()),
            Ok(1)
        );
        let f = gate(None).failed(&runs).expect("judged");
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].failed, f[0].operations), (10, 10));
        assert_eq!(causes(&f[0].causes), "retry_without_key 10");
        let none = gate(Some("guarded,plain")).failed(&runs);
        assert!(none.is_err_and(|e| e.contains("guarded (clients: keys)")));
    }

    #[test]
    fn a_bad_configuration_is_refused_with_its_reason() {
        assert!("nosuch".parse::<Config>().is_err());
        assert!("guarded,keys,plain".parse::<Config>().is_err());
        assert!("guarded,nosuch".parse::<Config>().is_err());
        let c: Config = "guarded,scenario,server.store_capacity=8"
            .parse()
            .expect("valid");
        assert_eq!(c.profile.as_deref(), Some("scenario"));
        assert_eq!(c.sets, ["server.store_capacity=8"]);
    }
}

//! The runs of a batch (`compare`, `sweep`): scenario x seed x arm x
//! client profile x deployment, each run's options, the jobs for the
//! sweep's pool, and the checks made before any of them runs.

use crate::hosts::sut::Arm;
use crate::report;
use crate::run::catalog;
use crate::run::deployments::DeploymentSet;
use crate::run::{self, Options};
use crate::scenario::Scenario;
use crate::sweep::{self, Job, Seeds};
use anyhow::bail;

/// The runs a comparison or sweep makes of each scenario and seed: every
/// arm under every client profile and deployment, with the same overrides.
pub struct Matrix {
    /// The server arms.
    pub arms: Vec<Arm>,
    /// The client profiles (`None`: as the scenario writes them).
    pub profiles: Vec<Option<run::Profile>>,
    /// `--set` overrides, in every run.
    pub sets: Vec<(String, String)>,
    /// `--deployments`: each set's overrides after `--set` (empty: no
    /// such axis, the scenarios' own deployment, unlabelled).
    pub deployments: Vec<DeploymentSet>,
}

impl Matrix {
    /// Each run's options beyond its arm: every profile under every
    /// deployment of the axis (or none).
    pub(super) fn options(&self) -> Vec<Options> {
        let none = [DeploymentSet {
            label: String::new(),
            sets: Vec::new(),
        }];
        let axis = if self.deployments.is_empty() {
            &none[..]
        } else {
            &self.deployments[..]
        };
        let mut out = Vec::new();
        for d in axis {
            for &clients in &self.profiles {
                let mut sets = self.sets.clone();
                sets.extend(d.sets.iter().cloned());
                out.push(Options {
                    clients,
                    sets,
                    deployment: d.label.clone(),
                });
            }
        }
        out
    }

    /// The jobs of one scenario file over `seeds`.
    pub(super) fn jobs(&self, path: &str, scenario: &Scenario, seeds: &[u64]) -> Vec<Job> {
        let mut out = Vec::new();
        let (path, scenario) = (
            std::sync::Arc::<str>::from(path),
            std::sync::Arc::new(scenario.clone()),
        );
        let options = self.options();
        for &seed in seeds {
            for opts in &options {
                for &variant in &self.arms {
                    out.push(Job {
                        path: path.clone(),
                        scenario: scenario.clone(),
                        seed,
                        variant,
                        opts: opts.clone(),
                    });
                }
            }
        }
        out
    }

    /// Refuses, before anything runs, a profile or override that does not
    /// apply to `scenario` (e.g. `--set server.write_deadline_ms=0`): one
    /// line naming the file and the setting.
    pub(super) fn check(&self, path: &str, scenario: &Scenario) -> anyhow::Result<()> {
        for opts in self.options() {
            catalog::check_options(path, scenario, &opts).map_err(|e| {
                if opts.deployment.is_empty() {
                    e
                } else {
                    anyhow::anyhow!(
                        "{e} (from --deployments set {:?}: drop that set, or name the scenarios it fits with --scenario)",
                        opts.deployment
                    )
                }
            })?;
        }
        Ok(())
    }

    /// The provenance of this matrix run over `seeds` of `files`, with
    /// this process's command line.
    pub(super) fn provenance(
        &self,
        seeds: &Seeds,
        files: &[(String, Scenario)],
    ) -> sweep::Provenance {
        let mut p = report::provenance(
            std::env::args().collect(),
            (seeds.start, seeds.end),
            self.arms.iter().map(|a| a.as_str().to_string()).collect(),
            self.profile_names(),
            files,
        );
        p.deployments = self.deployments.iter().map(|d| d.label.clone()).collect();
        p
    }

    /// The client profiles' names (`scenario`: as written).
    pub(super) fn profile_names(&self) -> Vec<String> {
        self.profiles
            .iter()
            .map(|p| p.map_or(run::AS_WRITTEN, run::Profile::as_str).to_string())
            .collect()
    }

    /// Runs per scenario and seed: arms x profiles x deployments.
    pub(super) fn runs_per_seed(&self) -> u64 {
        let n = |k: usize| k.max(1) as u64;
        n(self.arms.len())
            .saturating_mul(n(self.profiles.len()))
            .saturating_mul(n(self.deployments.len()))
    }

    /// Refuses, before any job is built, more runs than a summary holds
    /// ([`MAX_RUNS`](crate::base::flags::MAX_RUNS)): `scenarios` x the seeds of
    /// this shard x [`Matrix::runs_per_seed`].
    pub fn check_runs(&self, seeds: &Seeds, scenarios: usize) -> anyhow::Result<()> {
        use crate::base::flags::MAX_RUNS;
        let per = self.runs_per_seed().saturating_mul(scenarios.max(1) as u64);
        let runs = seeds.count().saturating_mul(per);
        if runs > MAX_RUNS {
            let fit = (MAX_RUNS / per).max(1);
            bail!(
                "--seeds {}: {} seeds x {per} runs each ({} scenario(s) x {}) = {runs} runs, \
                 above the {MAX_RUNS} one summary holds (about {} KB each): use at most {fit} \
                 seeds at once (e.g. --seeds {}..{}), fewer arms, or --shard K/N and merge",
                seeds.range(),
                seeds.count(),
                scenarios.max(1),
                self.describe(),
                crate::base::flags::RUN_SUMMARY_KB,
                seeds.start,
                seeds.start.saturating_add(fit)
            );
        }
        Ok(())
    }

    /// "3 arms x 2 profiles" for progress lines (x the deployments, when
    /// an axis).
    pub(super) fn describe(&self) -> String {
        let mut out = format!(
            "{} arm(s) ({}) x {} client profile(s) ({})",
            self.arms.len(),
            self.arms
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(","),
            self.profiles.len(),
            self.profiles
                .iter()
                .map(|p| p.map_or(run::AS_WRITTEN, run::Profile::as_str))
                .collect::<Vec<_>>()
                .join(",")
        );
        if !self.deployments.is_empty() {
            let labels: Vec<&str> = self.deployments.iter().map(|d| d.label.as_str()).collect();
            out.push_str(&format!(
                " x {} deployment(s) ({})",
                labels.len(),
                labels.join("; ")
            ));
        }
        out
    }
}

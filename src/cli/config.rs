//! The flags of each command made the configuration its body runs: seeds
//! read (flag, else environment), defaults filled, contradictions refused
//! with one line naming the flags.

use super::args::{CompareArgs, ScaleArgs, ServeArgs, ShrinkArgs, SweepArgs};
use crate::compare::{Comparison, Matrix, Select, Sweep};
use crate::hosts::sut::Arm;
use crate::run::Options;
use crate::server::Exposure;
use crate::sweep::Seeds;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file a `--scenario` value names (a path, or a name in sims/).
pub fn scenario_arg(value: &str) -> anyhow::Result<PathBuf> {
    crate::run::locate::scenario(value, Path::new("sims")).map_err(anyhow::Error::msg)
}

impl CompareArgs {
    /// The comparison: seeds from `--seeds`, else `$MCP_CHAOS_SEEDS`, else
    /// 0..6; every arm this build runs and the scenario's own clients
    /// unless named.
    pub fn config(self) -> anyhow::Result<Comparison> {
        let seeds = Seeds::from_flag_or_env(self.seeds.as_deref(), None, Some("0..6"))
            .map_err(anyhow::Error::msg)?;
        let deployments = self.deployments.map(|d| d.0).unwrap_or_default();
        let mut sets = self.sets;
        if self.swarm {
            sets.push(("swarm".into(), "on".into()));
        }
        crate::run::deployments::check_against_sets(&deployments, &sets)
            .map_err(anyhow::Error::msg)?;
        Ok(Comparison {
            dir: self.sims,
            seeds,
            jobs: self.jobs,
            out: self.out,
            junit: self.junit,
            matrix: Matrix {
                arms: self.servers.map_or_else(Arm::all, |a| a.0),
                profiles: self.clients.map_or_else(|| vec![None], |p| p.0),
                sets,
                deployments,
            },
            select: Select {
                only: self.only,
                control: self.control.control(),
                shrink: self.shrink,
                coverage: self.coverage,
                gate: self.gate.gate(),
            },
            eras: self.eras.map(|e| e.0).unwrap_or_default(),
        })
    }
}

impl SweepArgs {
    /// The sweep: the run options, the seeds (and shard), then the
    /// scenario, in that order, so a bad `--seeds` is named even when
    /// `--scenario` is missing.
    pub fn config(self) -> anyhow::Result<Sweep> {
        let mut o = self.run.options()?;
        if self.swarm {
            o.sets.push(("swarm".into(), "on".into()));
        }
        let seeds = Seeds::from_flag_or_env(self.seeds.as_deref(), self.shard.as_deref(), None)
            .map_err(anyhow::Error::msg)?;
        let scenario = self.scenario.ok_or_else(|| {
            anyhow::anyhow!(
                "sweep needs --scenario NAME|FILE: one scenario, by its name in sims/ or a \
                 file's path (compare runs a directory)"
            )
        })?;
        Ok(Sweep {
            path: scenario_arg(&scenario)?,
            seeds,
            out: self.out,
            jobs: self.jobs,
            control: self.control.control(),
            gate: self.gate.gate(),
            junit: self.junit,
            matrix: Matrix {
                arms: self.servers.map_or_else(Arm::all, |a| a.0),
                profiles: vec![o.clients],
                sets: o.sets,
                deployments: Vec::new(),
            },
        })
    }
}

impl ScaleArgs {
    /// The client counts and the traffic each size shares.
    pub fn config(&self) -> (Vec<u32>, crate::scale::Traffic) {
        (
            self.clients.clone(),
            crate::scale::Traffic {
                clients: 0,
                hosts: self.hosts,
                calls: self.calls,
                chunks: self.chunks,
                chunk_interval_ms: self.chunk_interval_ms,
                think_ms: self.think_ms,
                keep_alive: self.connections.first().copied().unwrap_or(true),
            },
        )
    }

    /// What `scale` measures beyond the sizes.
    pub fn parts(&self) -> crate::scale::Parts {
        crate::scale::Parts {
            modes: self.connections.clone(),
            fleet_runs: self.fleet_runs,
            soak_clients: self.soak_clients,
            soak_calls: self.soak_calls,
            jobs: !self.no_jobs,
        }
    }
}

impl ShrinkArgs {
    /// The run options and the goal: `--until` metrics, then one
    /// `failures_by_cause.CAUSE` per `--until-cause`.
    pub fn config(&self) -> anyhow::Result<(Options, crate::shrink::Goal)> {
        let o = self.run.options()?;
        let mut until = self.until.clone();
        until.extend(
            self.until_cause
                .iter()
                .map(|c| format!("failures_by_cause.{c}")),
        );
        Ok((
            o,
            crate::shrink::Goal {
                until,
                kind: self.kind,
                max_runs: self.max_runs,
            },
        ))
    }
}

impl ServeArgs {
    /// The served bounds the flags choose (`--max-connections` defaults to
    /// what the file-descriptor limit allows).
    pub fn exposure(&self) -> Exposure {
        let mut exposure = Exposure::served();
        exposure.fixtures = self.fixtures.unwrap_or_default();
        exposure.allowed_origins = Some(self.allow_origin.clone());
        exposure.allowed_hosts = Some(self.allow_host.clone());
        exposure.max_connections = Some(
            self.max_connections
                .map_or_else(crate::commands::serve::default_max_connections, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
        );
        exposure.header_timeout = Some(Duration::from_millis(self.header_timeout_ms));
        exposure.body_timeout = Some(Duration::from_millis(self.body_timeout_ms));
        exposure.session_idle = Some(Duration::from_secs(self.session_idle_secs));
        exposure.log = self.log;
        exposure
    }

    /// The state key `--state-key-file` holds (made when missing), or
    /// `None` without the flag.
    pub fn state_key(&self) -> anyhow::Result<Option<[u8; 32]>> {
        if self.state_key_file.is_some() {
            if self.server.variant().is_none() {
                anyhow::bail!("--state-key-file signs the built-in arms' requestState (guarded, unguarded, keys), not {}'s: drop it or pick a built-in --server", self.server);
            }
            if self.era == crate::server::Wire::Y2025 {
                anyhow::bail!("--state-key-file signs the 2026-07-28 wire's requestState, and --era 2025-11-25 has none: drop it, or use --era 2026-07-28 or both");
            }
        }
        self.state_key_file
            .as_deref()
            .map(crate::commands::serve::state_key_file)
            .transpose()
    }
}

/// `explore`: the setup from its flags, then the exploration.
pub fn explore(a: super::args::ExploreArgs) -> anyhow::Result<u8> {
    let opts = a.run.options()?;
    let path = scenario_arg(&a.scenario)?;
    let scenario = crate::run::catalog::load(&path)?;
    crate::run::catalog::check_options(&path.display().to_string(), &scenario, &opts)?;
    let shard = match a.shard.as_deref() {
        Some(s) => crate::sweep::parse_shard(s).map_err(anyhow::Error::msg)?,
        None => (1, 1),
    };
    let kinds = a
        .kinds
        .map(|k| k.0)
        .unwrap_or_else(|| crate::explore::default_kinds(&scenario));
    // A replica crash needs replicas: without a deployment it would place
    // nothing, and the exploration would report a space it never ran.
    let single = crate::run::effective(&scenario, &opts)
        .map(|s| s.deployment.is_single())
        .map_err(anyhow::Error::msg)?;
    if single && kinds.contains(&crate::explore::Kind::ReplicaCrash) {
        anyhow::bail!(
            "--kinds replica_crash needs a deployment, and {} runs one server: add [deployment] \
             with replicas and a balancer (or --set deployment.replicas=2 --set \
             deployment.balancer=round-robin), or drop replica_crash from --kinds",
            path.display()
        );
    }
    let out = a.out.unwrap_or_else(|| {
        PathBuf::from(format!(
            "target/explore/{}-{}",
            scenario.name,
            a.server.as_str()
        ))
    });
    let setup = crate::explore::Setup {
        path: path.display().to_string(),
        scenario,
        arm: a.server,
        opts,
        depth: a.depth,
        kinds,
        seed: a.seed,
        jobs: a.jobs.unwrap_or_else(crate::sweep::cores),
        shard,
        max_space: a.max_space,
    };
    let regressions = (a.regressions.as_os_str() != "-").then_some(a.regressions.as_path());
    let format = match a.format {
        crate::commands::one_run::Format::Text => crate::explore::Format::Text,
        crate::commands::one_run::Format::Json => crate::explore::Format::Json,
    };
    crate::explore::command(&setup, (&out, a.all_regressions), regressions, format)
}

//! The flags a batch of runs takes (`sweep`, `compare`): how it is
//! scheduled (`--fail-fast`, `--timeout`) and the CI gate beside the
//! expectations (`--fail-on`, `--fail-on-config`, `--step-summary`).

use crate::base::flags;
use crate::sweep::Control;
use std::path::PathBuf;

/// How a batch is scheduled: `--fail-fast` and `--timeout`.
#[derive(clap::Args, Debug, Clone)]
pub struct ControlArgs {
    /// Stop scheduling new runs after the first failing run (runs already
    /// going finish; the summary holds the runs made).
    #[arg(long)]
    pub fail_fast: bool,
    /// Longest wall-clock time one run may take, seconds; a run past it is
    /// reported as failed with verdict "timeout" and its repro command.
    #[arg(long, value_name = "SECS", value_parser = flags::timeout)]
    pub timeout: Option<std::time::Duration>,
}

/// The CI gate beside the expectations: `--fail-on ops`, and which
/// configuration it judges.
#[derive(clap::Args, Debug, Clone)]
pub struct GateArgs {
    /// Also fail (exit 1) when an operation failed, whatever the
    /// scenarios' expectations allow: `ops`. Judges every configuration
    /// run, or the one --fail-on-config names.
    #[arg(long, value_enum, value_name = "ops")]
    pub fail_on: Option<crate::run::gate::FailOn>,
    /// The configuration --fail-on judges: ARM[,PROFILE][,KEY=VALUE...],
    /// e.g. guarded,keys+cursors (PROFILE `scenario`: the clients as
    /// written).
    #[arg(long, value_name = "ARM[,PROFILE][,SET...]", requires = "fail_on")]
    pub fail_on_config: Option<crate::run::gate::Config>,
    /// Append a Markdown summary here (at most 1 MiB: the answer, the
    /// table, the failing runs with their repro commands), e.g.
    /// "$GITHUB_STEP_SUMMARY".
    #[arg(long, value_name = "FILE")]
    pub step_summary: Option<PathBuf>,
}

impl GateArgs {
    /// The gate.
    pub fn gate(&self) -> crate::run::gate::Gate {
        crate::run::gate::Gate {
            on: self.fail_on,
            config: self.fail_on_config.clone(),
            step_summary: self.step_summary.clone(),
        }
    }
}

impl ControlArgs {
    /// How the batch is scheduled.
    pub fn control(&self) -> Control {
        Control {
            fail_fast: self.fail_fast,
            timeout: self.timeout,
        }
    }
}

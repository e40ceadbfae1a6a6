//! The command line: arguments are parsed ([`args`]), turned into a
//! validated configuration, then run by the command's body where it lives
//! (`compare`, `catalog`, `one_run`, `shrink`, `scale`, `serve`, `probe`,
//! `explain`, `guard::table`); `main` maps the outcome to an exit code: 0
//! when every expectation holds, 1 on a safety violation, 2 on a liveness
//! failure, 3 on a usage or I/O error.

mod args;
mod batch;
mod config;
mod serve_args;

use crate::base::console::{errln, out, outln};
use args::{Cli, Cmd};
use std::process::ExitCode;

pub use crate::run::catalog::scenario_files;

/// The command line as clap reads it, help texts filled in.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    args::with_arm_names(Cli::command())
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cmd = match parse() {
        Ok(cmd) => cmd,
        Err(code) => return code,
    };
    match dispatch(cmd) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            errln!("mcp-chaos: {e:#}");
            ExitCode::from(3)
        }
    }
}

/// The command clap read, or the exit code when it printed help, the
/// version, or why the arguments are wrong.
fn parse() -> Result<Cmd, ExitCode> {
    use clap::FromArgMatches;
    let parsed = command()
        .try_get_matches()
        .and_then(|mut m| Cli::from_arg_matches_mut(&mut m));
    match parsed {
        Ok(c) => Ok(c.cmd),
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            let _ = e.print();
            Err(ExitCode::SUCCESS)
        }
        // A bad value (`--jobs 0`, `--seeds` for a timeout): its one line.
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            let text = e.render().to_string();
            errln!(
                "mcp-chaos: {}",
                text.lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ")
            );
            Err(ExitCode::from(3))
        }
        Err(e) => {
            let _ = e.print();
            Err(ExitCode::from(3))
        }
    }
}

/// Each command: its flags made a configuration, then its body; the
/// body's exit code.
fn dispatch(cmd: Cmd) -> anyhow::Result<u8> {
    match cmd {
        Cmd::Compare(a) => crate::compare::compare(&a.config()?),
        Cmd::Sweep(a) => crate::compare::sweep(&a.config()?),
        Cmd::Merge(a) => {
            crate::commands::merge::merge(&a.files, a.out.as_deref(), a.report.as_deref())
        }
        Cmd::Scale(a) => {
            let (sizes, traffic) = a.config();
            crate::scale::command(
                &sizes,
                traffic,
                a.parts(),
                a.out.as_deref(),
                a.one.as_deref(),
            )
        }
        Cmd::Calibrate(a) => crate::compare::calibrate(&a.summary, &a.sims, &a.out, a.model, a.sdk),
        Cmd::Repro(a) => {
            let o = a.run.options()?;
            let path = config::scenario_arg(&a.scenario)?;
            crate::commands::one_run::repro(
                &path,
                a.seed,
                a.server,
                &o,
                a.trace,
                a.emit_scenario.as_deref(),
            )
        }
        Cmd::Shrink(a) => {
            let (o, goal) = a.config()?;
            let path = config::scenario_arg(&a.scenario)?;
            crate::shrink::command::shrink(&path, a.seed, a.server, &o, &goal, a.out)
        }
        Cmd::Rules => {
            out!("{}", crate::guard::table::decision_table());
            Ok(0)
        }
        Cmd::List(a) => crate::run::catalog::list(&a.dir),
        Cmd::Validate(a) => crate::run::catalog::validate(&a.paths),
        Cmd::Explain(a) => {
            out!(
                "{}",
                crate::commands::explain::explain(&a.trace, &a.op).map_err(anyhow::Error::msg)?
            );
            Ok(0)
        }
        Cmd::Explore(a) => config::explore(a),
        Cmd::Run(a) => {
            let o = a.run.options()?;
            let path = config::scenario_arg(&a.scenario)?;
            let out = crate::commands::one_run::Outcome {
                trace: a.trace.as_deref(),
                format: a.format,
                fail_on: a.fail_on,
                allow_late: a.allow_late_faults,
            };
            crate::commands::one_run::run_one(&path, a.seed, a.server, out, &o)
        }
        Cmd::Serve(a) => {
            let mut exposure = a.exposure();
            exposure.state_key = a.state_key()?;
            crate::commands::serve::serve(
                a.server,
                &a.addr,
                a.delivery,
                (a.era, a.sdk),
                (a.poll_after as u32, a.poll_retry_ms),
                (a.events_tick_ms, a.allow_remote),
                (exposure, &a.sets),
            )
            .map(|()| 0)
        }
        Cmd::Probe(args) => crate::probe::main(&args).map(|(report, code, warning)| {
            outln!("{report}");
            if let Some(w) = warning {
                errln!("mcp-chaos: {w}");
            }
            code
        }),
    }
}

//! `run` and `repro`: one scenario under one seed against one arm, its
//! report printed (text or JSON), its trace written, the failure said on
//! standard error with the command that reproduces it.

use crate::base::console::{errln, out, outln, write};
use crate::base::seed;
use crate::hosts::sut::Arm;
use crate::report;
use crate::run::catalog;
use crate::run::gate::{FailOn, Gate};
use crate::run::{self, Options};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// How `run` prints its report: text (the report's words, one metric a
/// line) or the whole `RunReport` as JSON. The variants carry no doc
/// comment: clap would print it in `run --help`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// What `run` writes and how it exits: the trace file, the output format,
/// the `--fail-on` gate, and whether a fault the file writes may go
/// unapplied because the run ended first (`--allow-late-faults`).
#[derive(Clone, Copy, Debug)]
pub struct Outcome<'a> {
    /// Where the trace goes (none: not written).
    pub trace: Option<&'a Path>,
    /// Text or JSON.
    pub format: Format,
    /// `--fail-on`.
    pub fail_on: Option<FailOn>,
    /// `--allow-late-faults`.
    pub allow_late: bool,
}

/// Runs one scenario; returns the run's exit code (with `--fail-on ops`,
/// at least 1 when an operation failed; 3 when a fault the file writes
/// never applied because the run ended first, unless `allow_late`).
pub fn run_one(
    path: &Path,
    seed: u64,
    variant: Arm,
    out: Outcome<'_>,
    opts: &Options,
) -> anyhow::Result<u8> {
    let Outcome {
        trace,
        format,
        fail_on,
        allow_late,
    } = out;
    let scenario = catalog::load(path)?;
    catalog::check_options(&path.display().to_string(), &scenario, opts)?;
    let repro = run::repro_command(&path.display().to_string(), seed, variant, opts);
    // The trace streams to its file as the run records it (a run of any
    // length keeps no record in memory); the verdicts follow it.
    let mut rec = run::Recording::streaming();
    if let Some(t) = trace {
        if let Some(dir) = t.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let f = std::fs::File::create(t)
            .with_context(|| format!("cannot write --trace {}", t.display()))?;
        rec.trace = Some(Box::new(std::io::BufWriter::new(f)));
    }
    let (report, history) = run::run_arm_recording(&scenario, seed, variant, opts, rec)
        .map_err(|e| anyhow::anyhow!("{e}\nreproduce with: {repro}"))?;
    if let Some(t) = trace {
        let written = history.finish_stream().and_then(|()| {
            let f = std::fs::OpenOptions::new().append(true).open(t)?;
            crate::commands::explain::write_verdicts(
                std::io::BufWriter::new(f),
                &report.operations,
                &report.verdict,
            )
        });
        written.with_context(|| format!("writing --trace {}", t.display()))?;
    }
    match format {
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serializes")
        ),
        Format::Text => out!("{}", report::text_report(&report, &scenario)),
    }
    // A fault the file writes and the run ended before is a plan that
    // tests less than it says: a usage error (exit 3) unless allowed, said
    // on stderr whatever the format. Generated faults drawn past the end
    // stay in the report's not-applied list.
    let mut late = false;
    for n in &report.faults.not_applied {
        if scenario.faults.explicit.contains(&n.fault) {
            if let Some(said) =
                crate::run::never_applied::sentence(n, report.sim_ms, Some(&scenario))
            {
                if allow_late {
                    errln!("mcp-chaos: warning: {said}");
                } else {
                    late = true;
                    errln!("mcp-chaos: {said} (--allow-late-faults runs it anyway)");
                }
            }
        }
    }
    if let Some(line) = report::regression_line(&scenario, &report) {
        errln!("{line}");
    }
    if report.failed() {
        errln!(
            "mcp-chaos: {} ({}) for {} on the {} server, seed {seed}:",
            if report.verdict == "safety" {
                "safety violation"
            } else {
                "liveness failure"
            },
            report.failed_expectations.len(),
            report.scenario,
            report.server
        );
        for f in &report.failed_expectations {
            errln!("  - {f}");
        }
        if !report.clients_finished {
            errln!("  - clients still running when the heal phase ended");
        }
        errln!("reproduce with: {repro}");
    }
    let gate = Gate {
        on: fail_on,
        ..Gate::default()
    };
    if late {
        return Ok(3);
    }
    gate.apply(report.exit_code(), std::slice::from_ref(&report), |_| {
        repro.clone()
    })
    .map_err(anyhow::Error::msg)
}

/// `repro`: the run with its trace (its outcome first), where to read one
/// operation's story, then the run's every derived option and whole fault
/// plan (and, with `emit`, that written as a scenario).
pub fn repro(
    path: &Path,
    seed: u64,
    variant: Arm,
    opts: &Options,
    trace: Option<PathBuf>,
    emit: Option<&Path>,
) -> anyhow::Result<u8> {
    let scenario = catalog::load(path)?;
    let effective = run::effective(&scenario, opts).map_err(anyhow::Error::msg)?;
    let as_run = crate::shrink::as_run(&effective, seed);
    let text = toml::to_string(&as_run).context("printing the scenario")?;
    outln!(
        "# mcp-chaos repro: {} seed {seed} server {} clients {}{}",
        scenario.name,
        variant.as_str(),
        opts.clients_label(),
        opts.flags()
    );
    let trace = trace.unwrap_or_else(|| {
        PathBuf::from(format!(
            "target/repro/{}-{seed}-{}.jsonl",
            scenario.name,
            variant.as_str()
        ))
    });
    let out = Outcome {
        trace: Some(&trace),
        format: Format::Text,
        fail_on: None,
        allow_late: true,
    };
    let code = run_one(path, seed, variant, out, opts)?;
    outln!(
        "trace: {t}\none operation's story, record by record: mcp-chaos explain --trace {t} --op TAG \
         (TAG: an operation's tag, e.g. from `run --format json`'s operations)\n",
        t = trace.display()
    );
    outln!(
        "# child seeds: faults={} turmoil={} client-start={} server-sessions/0={}",
        seed::child(seed, "faults"),
        seed::child(seed, "turmoil"),
        seed::child(seed, "client-start"),
        seed::child(seed, "server-sessions/0")
    );
    outln!(
        "# the scenario as run (every derived option; the whole fault plan, {} faults, \
         as explicit faults with the generators off):\n",
        as_run.faults.explicit.len()
    );
    outln!("{text}");
    if let Some(f) = emit {
        let header = format!(
            "# {}\n# Written by `mcp-chaos repro --scenario {} --seed {seed} --server {}{} \
             --emit-scenario {}`:\n# the scenario as run, its fault plan explicit; replay with \
             `mcp-chaos run --scenario {} --seed {seed} --server {}`.\n",
            as_run.description.lines().next().unwrap_or(""),
            path.display(),
            variant.as_str(),
            opts.flags(),
            f.display(),
            f.display(),
            variant.as_str()
        );
        write(f, &format!("{header}{text}"))?;
        errln!("mcp-chaos: wrote {}", f.display());
    }
    Ok(code)
}

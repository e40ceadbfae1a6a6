//! `mcp-chaos explore`: the exploration run, its report printed (text or
//! JSON) and written with its regressions; the exit code says whether a
//! placement failed.

use super::{explore, render_text, write_outputs, Kind, Setup};
use crate::base::console::{errln, outln};
use std::path::Path;

/// How `explore` prints its report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The report's words (Markdown).
    Text,
    /// `explore.json`'s content.
    Json,
}

/// Runs `setup`, writes its outputs to `out` (and the smallest failing
/// placement per cause to `regressions`), prints the report; 0 when no
/// placement fails, 1 when one does.
pub fn command(
    setup: &Setup,
    (out, all): (&Path, bool),
    regressions: Option<&Path>,
    format: Format,
) -> anyhow::Result<u8> {
    let x = explore(setup).map_err(|e| {
        anyhow::anyhow!(
            "explore {} on {}: {e}\nreproduce with: mcp-chaos run --scenario {} --seed {} --server {}{}",
            setup.scenario.name,
            setup.arm.as_str(),
            setup.path,
            setup.seed,
            setup.arm.as_str(),
            setup.opts.flags()
        )
    })?;
    let (summary, written) =
        write_outputs(setup, &x, (out, all), regressions).map_err(anyhow::Error::msg)?;
    match format {
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&summary).expect("the summary serializes")
        ),
        Format::Text => outln!("{}", render_text(&summary)),
    }
    errln!(
        "mcp-chaos: wrote {}/explore.{{json,md,html}}{}",
        out.display(),
        if x.failing.is_empty() {
            String::new()
        } else {
            format!(
                " and {} regression(s) under {}/regressions{}",
                summary
                    .failing
                    .iter()
                    .filter(|f| !f.regression.is_empty())
                    .count(),
                out.display(),
                if all {
                    ""
                } else {
                    " (those the pages show; --all-regressions: every one)"
                }
            )
        }
    );
    for w in written {
        errln!("mcp-chaos: wrote {}", w.display());
    }
    Ok(u8::from(!x.failing.is_empty()))
}

/// `--kinds a,b,c` as clap hands it (one value: the list).
#[derive(Clone, Debug)]
pub struct Kinds(pub Vec<Kind>);

/// `--kinds a,b,c`.
pub fn parse_kinds(s: &str) -> Result<Kinds, String> {
    let mut out = Vec::new();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let k = super::parse_kind(k)?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        return Err("--kinds names no kind: give e.g. drop,partition,restart".into());
    }
    Ok(Kinds(out))
}

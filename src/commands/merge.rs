//! `merge`: shards into one — sweep summaries (the runs of all,
//! aggregates recomputed, reports written when asked) or `explore`'s
//! `explore.json` files (spaces, runs and failing placements added up).

use crate::base::console::{errln, outln, write};
use crate::report;
use crate::sweep::Summary;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// `merge`: shards into one summary, to `out` or standard output, and
/// its reports into `report` when asked (a sweep too long for one sitting
/// run in seed ranges, then reported as one).
pub fn merge(files: &[PathBuf], out: Option<&Path>, report: Option<&Path>) -> anyhow::Result<u8> {
    if let Some(code) = merge_explorations(files, out)? {
        return Ok(code);
    }
    let mut parts = Vec::new();
    for f in files {
        parts.push(crate::compare::read_summary(
            f,
            "mcp-chaos sweep --out FILE",
        )?);
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut merged = Summary::merge(parts, &names).map_err(anyhow::Error::msg)?;
    if !merged.provenance.scenarios.is_empty() {
        merged.provenance.command = std::env::args().collect();
    }
    if let Some(dir) = report {
        for p in report::write_reports(dir, &merged, &[], &report::Beside::under(dir))? {
            errln!("wrote {}", p.display());
        }
    }
    let text = serde_json::to_string_pretty(&merged).expect("summary serializes");
    match out {
        Some(p) => {
            write(p, &text)?;
            outln!("{}", report::headline(&merged));
        }
        None => outln!("{text}"),
    }
    Ok(merged.exit_code())
}

/// `files` merged as explorations when the first is one (`"kind":
/// "explore"`); `None` when they are sweep summaries.
fn merge_explorations(files: &[PathBuf], out: Option<&Path>) -> anyhow::Result<Option<u8>> {
    let Some(first) = files.first() else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(first)
        .with_context(|| format!("cannot read {}", first.display()))?;
    let is_explore = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("explore"));
    if !is_explore {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        let s: crate::explore::Summary = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not an explore.json (write one with `mcp-chaos explore --shard K/N --out DIR`)",
                f.display()
            )
        })?;
        parts.push(s);
    }
    let merged = crate::explore::Summary::merge(&parts).map_err(anyhow::Error::msg)?;
    let json = serde_json::to_string_pretty(&merged).expect("the summary serializes");
    match out {
        Some(p) => {
            write(p, &format!("{json}\n"))?;
            outln!("{}", crate::explore::render_text(&merged));
        }
        None => outln!("{json}"),
    }
    Ok(Some(u8::from(merged.failing_placements > 0)))
}

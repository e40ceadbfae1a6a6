//! What produced a summary: the command, seeds, arms, client profiles,
//! tool version, git commit and each scenario file's SHA-256, so a report
//! says how to reproduce itself.

use crate::scenario::Scenario;
use crate::sweep::{Provenance, ScenarioInfo};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::process::Command;

/// A provenance from plain values: the command line (program first), the
/// seed range `start..end` (end exclusive), arm and client-profile names
/// in report order, and the scenario files as loaded (path, scenario). The
/// commit comes from `git` in the current directory (`-dirty` when the
/// work tree has changes, `unknown` when git fails); a file that cannot be
/// read again hashes as `unreadable`.
pub fn provenance(
    command: Vec<String>,
    seeds: (u64, u64),
    arms: Vec<String>,
    clients: Vec<String>,
    files: &[(String, Scenario)],
) -> Provenance {
    let scenarios: BTreeMap<String, ScenarioInfo> = files
        .iter()
        .map(|(path, sc)| {
            (
                sc.name.clone(),
                ScenarioInfo {
                    file: path.clone(),
                    sha256: std::fs::read(path)
                        .map_or_else(|_| "unreadable".to_string(), |b| sha256_hex(&b)),
                    description: sc.description.trim().to_string(),
                    field: crate::scenario::Field::ALL
                        .iter()
                        .filter(|f| sc.clients.iter().any(|g| g.shows(**f)))
                        .map(|f| f.as_str().to_string())
                        .collect(),
                    readers: sc.readers(),
                    sender: sc
                        .clients
                        .iter()
                        .any(|g| g.events.is_some())
                        .then(|| sc.server.events_sender.as_str().to_string()),
                },
            )
        })
        .collect();
    Provenance {
        command,
        seeds: format!("{}..{}", seeds.0, seeds.1),
        arms,
        clients,
        deployments: Vec::new(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: git_commit(),
        scenarios,
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `git rev-parse HEAD`, `-dirty` appended when the files the binary is
/// built from (`src/`, `vendor/`, `Cargo.toml`, `Cargo.lock`, `.cargo/`)
/// differ from it; `unknown` when git is missing or this is no checkout.
/// Outputs (`results/`) and scenarios (hashed one by one) do not count.
fn git_commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(head) if !head.is_empty() => match git(&[
            "status",
            "--porcelain",
            "--",
            "src",
            "vendor",
            "Cargo.toml",
            "Cargo.lock",
            ".cargo",
        ]) {
            Some(s) if s.is_empty() => head,
            Some(_) => format!("{head}-dirty"),
            None => format!("{head}-unknown-status"),
        },
        _ => "unknown".to_string(),
    }
}

/// What a comparison keeps out of the files it writes, so that running it
/// again on the same checkout changes no committed byte: the command line
/// as typed, the git commit, and wall-clock figures. `compare` writes it
/// to `OUT/compare-meta.json` (ignored by git) and prints the total.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Meta {
    /// The command line as typed, program name first.
    pub command: Vec<String>,
    /// The source's git commit, as [`provenance`] records it.
    pub commit: String,
    /// Wall-clock seconds of the whole comparison (runs and reports).
    pub wall_s: f64,
    /// Per run: scenario, arm, client profile, seed and wall-clock ms.
    pub runs: Vec<(String, String, String, u64, f64)>,
}

impl Meta {
    /// Takes the wall-clock figures and the commit out of `s` (its
    /// provenance keeps the canonical `command`), returning them.
    pub fn take(s: &mut crate::sweep::Summary, typed: Vec<String>, canonical: Vec<String>) -> Meta {
        let runs = s
            .runs
            .iter_mut()
            .map(|r| {
                let ms = std::mem::take(&mut r.meta).wall_ms;
                (
                    r.scenario.clone(),
                    r.server.clone(),
                    r.clients.clone(),
                    r.seed,
                    ms,
                )
            })
            .collect();
        s.provenance.command = canonical;
        Meta {
            command: typed,
            commit: std::mem::take(&mut s.provenance.commit),
            wall_s: 0.0,
            runs,
        }
    }
}

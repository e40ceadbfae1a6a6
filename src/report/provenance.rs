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
                },
            )
        })
        .collect();
    Provenance {
        command,
        seeds: format!("{}..{}", seeds.0, seeds.1),
        arms,
        clients,
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

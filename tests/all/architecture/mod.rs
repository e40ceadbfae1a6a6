//! The house's structure, held by a test: every `crate::`, `super::` and
//! `self::` path in `src/` (outside comments, strings and `#[cfg(test)]`
//! items) read as an edge from its file to the file that defines what it
//! names, re-exports followed to their source. No circle between files,
//! no import against [`LAYERS`] (ARCHITECTURE.md's Layers list, held equal
//! to it), and no file over 800 lines, tests included.

mod imports;
mod recipes;

use imports::{circles, graph, load, rust_files, File};
use std::collections::BTreeMap;
use std::path::Path;

/// The top-level modules of `src/`, bottom to top: a module may import
/// from its own layer and those below, never from one above.
/// ARCHITECTURE.md's **Layers** list names the same modules in the same
/// layers (`the_layers_list_is_the_table`).
const LAYERS: &[&[&str]] = &[
    &["protocol", "base", "guard", "store"],
    &["history"],
    &["ledger", "settings", "fault", "oracle"],
    &["server", "scenario"],
    &["client", "hosts", "rmcp", "probe", "world", "check"],
    &["run", "sweep", "shrink", "scale"],
    &["report"],
    &["explore", "compare", "commands"],
    &["cli"],
];

fn layer_of(module: &[String]) -> Option<usize> {
    let top = module.first()?;
    LAYERS.iter().position(|l| l.contains(&top.as_str()))
}

/// A circle as the test prints it: its files, and each import inside it.
fn describe(files: &[File], edges: &BTreeMap<(usize, usize), usize>, c: &[usize]) -> String {
    let mut text: Vec<String> = c.iter().map(|&i| files[i].rel.clone()).collect();
    text = vec![text.join(", ")];
    for (&(a, b), line) in edges {
        if c.contains(&a) && c.contains(&b) {
            text.push(format!(
                "    {}:{} imports {}",
                files[a].rel, line, files[b].rel
            ));
        }
    }
    text.join("\n")
}

#[test]
fn no_file_imports_in_a_circle() {
    let files = load();
    let edges = graph(&files);
    let found: Vec<String> = circles(files.len(), &edges)
        .iter()
        .map(|c| describe(&files, &edges, c))
        .collect();
    assert!(
        found.is_empty(),
        "import circles between files (break each by moving what the lower file needs below it):\n{}",
        found.join("\n")
    );
}

/// The files that import against [`LAYERS`]: (file:line, what it imports).
fn against_layers(files: &[File]) -> Vec<String> {
    let mut bad = Vec::new();
    for (&(a, b), line) in &graph(files) {
        let (from, to) = (&files[a], &files[b]);
        let (Some(la), Some(lb)) = (layer_of(&from.module), layer_of(&to.module)) else {
            bad.push(format!(
                "{} or {}: a top-level module LAYERS does not name",
                from.rel, to.rel
            ));
            continue;
        };
        if lb > la {
            bad.push(format!(
                "{}:{line} (layer {}) imports {} (layer {})",
                from.rel,
                la + 1,
                to.rel,
                lb + 1
            ));
        }
    }
    bad
}

#[test]
fn no_module_imports_one_above_it() {
    let bad = against_layers(&load());
    assert!(
        bad.is_empty(),
        "imports against LAYERS:\n{}",
        bad.join("\n")
    );
}

/// The server's floors, bottom to top (ARCHITECTURE.md's `server/`): a
/// file imports only from its own floor and those below. The two eras
/// share a floor and never import each other, so `routes.rs`, above both,
/// is the one file that tells them apart. The server's `mod.rs` (`Shared`,
/// `Server`) is the root every floor reads, outside the order.
const SERVER_FLOORS: &[&[&str]] = &[
    &["http"],
    &["session"],
    &["dedup"],
    &["replica"],
    &["calls"],
    &["y2025", "y2026"],
    &["routes"],
];

fn server_floor(module: &[String]) -> Option<(usize, &str)> {
    let (top, floor) = (module.first()?, module.get(1)?);
    if top != "server" {
        return None;
    }
    SERVER_FLOORS
        .iter()
        .position(|f| f.contains(&floor.as_str()))
        .map(|i| (i, floor.as_str()))
}

#[test]
fn every_server_file_stands_on_a_floor() {
    let files = load();
    let lost: Vec<_> = files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "server") && f.module.len() > 1)
        .filter(|f| server_floor(&f.module).is_none())
        .map(|f| f.rel.clone())
        .collect();
    assert!(
        lost.is_empty(),
        "server files on no floor of SERVER_FLOORS: {lost:?}"
    );
}

#[test]
fn no_server_floor_imports_one_above_it_nor_the_other_era() {
    let files = load();
    let mut bad = Vec::new();
    for (&(a, b), line) in &graph(&files) {
        let (Some((fa, na)), Some((fb, nb))) = (
            server_floor(&files[a].module),
            server_floor(&files[b].module),
        ) else {
            continue;
        };
        if fb > fa || (fa == fb && na != nb) {
            bad.push(format!("{}:{line} imports {}", files[a].rel, files[b].rel));
        }
    }
    assert!(
        bad.is_empty(),
        "imports against SERVER_FLOORS:\n{}",
        bad.join("\n")
    );
}

/// Pairs of top-level modules that must not meet, whatever their layers:
/// the server and the oracle meet only in history records; the probe
/// judges our server as it judges anyone's.
const APART: &[(&str, &[&str])] = &[
    ("server", &["hosts", "world", "oracle", "client"]),
    ("hosts", &["oracle"]),
    ("rmcp", &["oracle"]),
    ("oracle", &["server", "guard", "client", "ledger"]),
    ("probe", &["server", "guard", "oracle"]),
    ("guard", &["history", "server", "protocol"]),
    ("scenario", &["server", "client", "oracle"]),
    ("report", &["world", "server", "client"]),
];

#[test]
fn the_parts_kept_apart_stay_apart() {
    let files = load();
    let mut bad = Vec::new();
    for (&(a, b), line) in &graph(&files) {
        let (from, to) = (&files[a].module, &files[b].module);
        let (Some(f), Some(t)) = (from.first(), to.first()) else {
            continue;
        };
        if APART
            .iter()
            .any(|(m, never)| m == f && never.contains(&t.as_str()))
        {
            bad.push(format!("{}:{line} imports {}", files[a].rel, files[b].rel));
        }
    }
    // And two crates: the guard is sans-IO; only the world names turmoil.
    for f in &files {
        let top = f.module.first().map(String::as_str);
        for (krate, allowed) in [
            (
                "tokio::",
                &[
                    "world", "server", "client", "store", "hosts", "probe", "rmcp", "commands",
                    "scale", "run", "base", "sweep", "ledger", "fault", "history", "explore",
                    "shrink", "compare", "cli", "check",
                ][..],
            ),
            (
                "hyper::",
                &[
                    "world", "server", "client", "store", "hosts", "probe", "rmcp", "commands",
                    "scale",
                ][..],
            ),
            ("turmoil::", &["world", "scale"][..]),
        ] {
            if f.code.contains(krate) && !top.is_some_and(|t| allowed.contains(&t)) {
                bad.push(format!("{} names {}", f.rel, krate.trim_end_matches(':')));
            }
        }
        if f.code.contains("turmoil::") && top == Some("scale") && f.rel != "scale/baseline.rs" {
            bad.push(format!("{} names turmoil", f.rel));
        }
    }
    assert!(
        bad.is_empty(),
        "parts that must stay apart meet:\n{}",
        bad.join("\n")
    );
}

/// Modules whose whole list of imports from the crate is short, and
/// stated in ARCHITECTURE.md's Layers list: each imports these and no
/// other top-level module (itself aside).
const ONLY: &[(&str, &[&str])] = &[
    ("protocol", &[]),
    ("guard", &[]),
    ("store", &["guard"]),
    ("fault", &["history", "base"]),
    ("oracle", &["history", "protocol"]),
    ("scenario", &["fault", "settings", "base"]),
];

#[test]
fn the_modules_with_short_import_lists_keep_them() {
    let files = load();
    let mut bad = Vec::new();
    for (&(a, b), line) in &graph(&files) {
        let (Some(f), Some(t)) = (files[a].module.first(), files[b].module.first()) else {
            continue;
        };
        if let Some((_, only)) = ONLY.iter().find(|(m, _)| m == f) {
            if t != f && !only.contains(&t.as_str()) {
                bad.push(format!("{}:{line} imports {}", files[a].rel, files[b].rel));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports beyond ONLY's lists:\n{}",
        bad.join("\n")
    );
}

/// Files over 800 lines that main still has, to be split by what they
/// show; any other file over 800 lines fails, and so does a listed one
/// that got under (take it off the list).
const KNOWN_LONG: &[&str] = &[];

#[test]
fn no_file_is_over_800_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    for dir in ["src", "tests", "benches"] {
        let d = root.join(dir);
        if d.is_dir() {
            rust_files(&d, &mut paths);
        }
    }
    let mut long = Vec::new();
    for p in paths {
        let rel = p
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let n = std::fs::read_to_string(&p).unwrap().lines().count();
        if n > 800 {
            long.push(rel);
        }
    }
    let known: Vec<String> = KNOWN_LONG.iter().map(|s| s.to_string()).collect();
    let new: Vec<_> = long.iter().filter(|l| !known.contains(l)).collect();
    let gone: Vec<_> = known.iter().filter(|k| !long.contains(k)).collect();
    assert!(new.is_empty(), "files over 800 lines: {new:?}");
    assert!(
        gone.is_empty(),
        "no longer over 800 lines, take off KNOWN_LONG: {gone:?}"
    );
}

/// ARCHITECTURE.md's **Layers** list: each numbered item's module names
/// (in backticks before its dash), bottom to top.
fn layers_list() -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## Layers\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Layers` section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut layers: Vec<String> = Vec::new();
    for line in section.lines() {
        let t = line.trim_start();
        let numbered = t
            .split_once(". ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if numbered {
            layers.push(String::new());
        }
        if let Some(last) = layers.last_mut() {
            last.push_str(t);
            last.push(' ');
        }
    }
    layers
        .iter()
        .map(|item| {
            let names = item.split(" — ").next().unwrap_or("");
            names
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|n| n.trim_end_matches('/').to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_layers_list_is_the_table() {
    let table: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|l| l.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(
        layers_list(),
        table,
        "ARCHITECTURE.md's Layers list and tests/all/architecture.rs's LAYERS differ"
    );
}

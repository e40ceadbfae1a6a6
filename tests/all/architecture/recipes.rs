//! ARCHITECTURE.md's recipe for a new fault kind, held by a test: each
//! file the recipe names for every kind must name every kind of the
//! registry (`FaultKind::ALL`), so a kind that misses one fails here with
//! the file's name.

use mcp_chaos::history::FaultKind;
use std::path::Path;

/// Files every fault kind appears in: (file, why).
const EVERY_KIND: &[(&str, &str)] = &[
    (
        "src/history/world.rs",
        "the registry: its name and description",
    ),
    (
        "src/fault/mod.rs",
        "the Fault variant, kind_of, how a plan draws it",
    ),
    ("src/fault/fields.rs", "its common fields"),
    ("src/scenario/schema.rs", "its [faults] keys"),
    ("src/scenario/bounds.rs", "its ranges"),
    ("src/world/act.rs", "how the world applies it, or why not"),
    ("sims/README.md", "its keys, for scenario writers"),
    ("docs/faults.md", "what it does on the wire"),
];

/// Files the kinds that clients apply (the untimed ones) appear in.
const CLIENT_KINDS: &[(&str, &str)] =
    &[("src/client/unapplied.rs", "why a client did not apply it")];

/// Whether `text` names `kind`: as a Rust path (`Fault::X`,
/// `FaultKind::X`), or by its name quoted or in a code span.
fn names(text: &str, kind: FaultKind) -> bool {
    let camel = format!("{kind:?}");
    let name = kind.name();
    [
        format!("Fault::{camel} "),
        format!("Fault::{camel},"),
        format!("Fault::{camel})"),
        format!("Fault::{camel}\n"),
        format!("FaultKind::{camel}"),
        format!("\"{name}\""),
        format!("`{name}`"),
    ]
    .iter()
    .any(|p| text.contains(p.as_str()))
}

#[test]
fn every_file_of_the_fault_kind_recipe_names_every_kind() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for (file, why) in EVERY_KIND.iter().chain(CLIENT_KINDS) {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let client_only = CLIENT_KINDS.iter().any(|(f, _)| f == file);
        for kind in FaultKind::ALL {
            if client_only && kind.timed() {
                continue;
            }
            if !names(&text, kind) {
                missing.push(format!("{file} ({why}) does not name `{}`", kind.name()));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Files every guard `Reason` appears in: the rule, its table, the
/// server's logged decision, the history's copy and the wire contract.
const EVERY_REASON: &[&str] = &[
    "src/guard/mod.rs",
    "src/guard/table.rs",
    "src/server/y2025/rule_m.rs",
    "src/history/server.rs",
    "docs/wire.md",
];

#[test]
fn every_file_of_the_guard_rule_recipe_names_every_reason() {
    use mcp_chaos::guard::Reason;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for file in EVERY_REASON {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for r in Reason::ALL {
            let (camel, name) = (format!("Reason::{r:?}"), r.as_str());
            let named = text.contains(&camel)
                || text.contains(&format!("\"{name}\""))
                || text.contains(&format!("`{name}`"));
            if !named {
                missing.push(format!("{file} does not name the reason `{name}`"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_readme_table_names_every_arm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for name in mcp_chaos::hosts::sut::Arm::NAMES {
        let row = format!("| `{name}` |");
        assert!(
            readme.lines().any(|l| l.starts_with(&row)),
            "README.md's arms table has no row for `{name}`"
        );
    }
}

//! The fault kinds chaos tools offer: `sims/faults/<kind>[-variant].toml`
//! is the minimal scenario of each (and of a drop's `close = "rst"`). Each
//! one applies its fault, and under each server the failures are exactly
//! the cause its expectations name, or none. docs/faults.md lists each.

use mcp_chaos::history::FaultKind;
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sims/faults")
}

/// The kinds with a scenario here (the older ones have theirs in
/// sims/causes/).
const NEW: [FaultKind; 8] = [
    FaultKind::Oneway,
    FaultKind::Hold,
    FaultKind::Truncate,
    FaultKind::Slice,
    FaultKind::Bandwidth,
    FaultKind::SlowClose,
    FaultKind::Skew,
    FaultKind::Stall,
];

fn scenarios() -> Vec<(String, Scenario)> {
    let mut v: Vec<(String, Scenario)> = std::fs::read_dir(dir())
        .expect("sims/faults")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let s = Scenario::load(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, s)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn every_new_kind_has_a_minimal_scenario_that_applies_it() {
    let all = scenarios();
    for kind in NEW.iter().map(|k| k.name()).chain(["drop"]) {
        let mine: Vec<_> = all
            .iter()
            .filter(|(n, _)| n == kind || n.starts_with(&format!("{kind}-")))
            .collect();
        assert!(!mine.is_empty(), "sims/faults has no scenario for {kind}");
    }
    for (name, s) in &all {
        let kind = name.split('-').next().unwrap();
        for v in Variant::BOTH {
            let (r, repro) = crate::run_expecting(&format!("sims/faults/{name}.toml"), s, v);
            assert_eq!(
                r.faults.planned.get(kind),
                r.faults.applied.get(kind),
                "{name} under {}: its {kind} is applied\nreproduce: {repro}",
                r.server
            );
            assert!(
                r.faults.applied.get(kind).is_some_and(|&n| n > 0),
                "{name}: {kind} planned"
            );
            // The cause it shows is the one it expects, alone.
            let expects = s.expect.of(v.as_str());
            let expected: Vec<String> = expects
                .min
                .keys()
                .filter_map(|m| m.strip_prefix("failures_by_cause.").map(str::to_string))
                .collect();
            let shown: Vec<String> = r.metrics.failures_by_cause.keys().cloned().collect();
            assert_eq!(
                shown, expected,
                "{name} under {}\nreproduce: {repro}",
                r.server
            );
        }
    }
}

#[test]
fn the_fault_table_documents_every_kind() {
    let doc =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/faults.md"))
            .expect("docs/faults.md");
    for k in FaultKind::ALL {
        assert!(
            doc.contains(&format!("| `{}` |", k.name())),
            "docs/faults.md has no row for {}",
            k.name()
        );
    }
    for (name, _) in scenarios() {
        assert!(
            doc.contains(&format!("sims/faults/{name}.toml")),
            "docs/faults.md names sims/faults/{name}.toml"
        );
    }
    for toxic in [
        "latency",
        "down",
        "bandwidth",
        "slow_close",
        "timeout",
        "reset_peer",
        "slicer",
        "limit_data",
    ] {
        assert!(
            doc.contains(&format!("`{toxic}`")),
            "docs/faults.md maps toxiproxy's {toxic}"
        );
    }
}

/// A toxic changes the bytes' timing, never the run's determinism.
#[test]
fn a_toxic_run_is_a_function_of_its_seed() {
    for name in ["slice", "truncate", "stall", "skew"] {
        let s = Scenario::load(&dir().join(format!("{name}.toml"))).unwrap();
        let a = run::run(&s, 3, Variant::Unguarded, &Options::default())
            .unwrap()
            .0;
        let b = run::run(&s, 3, Variant::Unguarded, &Options::default())
            .unwrap()
            .0;
        assert_eq!(a.trace_sha256, b.trace_sha256, "{name}");
    }
}

/// `base` with `from` replaced by `to` is refused in one line saying
/// `says`.
fn refused_in_one_line(base: &str, from: &str, to: &str, says: &str) {
    assert!(base.contains(from), "{from}");
    let err = Scenario::parse(&base.replace(from, to))
        .unwrap_err()
        .to_string();
    assert!(err.contains(says), "{to}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A receiver restart names a client with a webhook receiver, or is
/// refused in one line saying so.
#[test]
fn a_receiver_restart_of_a_client_without_a_receiver_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base =
        std::fs::read_to_string(root.join("sims/events/webhook-receiver-restart.toml")).unwrap();
    assert!(Scenario::parse(&base).is_ok());
    for (from, to) in [
        ("client = 0\nat_ms = 1400", "client = 1\nat_ms = 1400"),
        ("events = \"webhook\"", "events = \"poll\""),
    ] {
        refused_in_one_line(&base, from, to, "has no webhook receiver");
    }
}

/// A lost refresh names a client with a webhook receiver too, and a
/// wall-clock skew a host that signs or checks webhooks: each refused in
/// one line.
#[test]
fn the_events_faults_name_what_they_act_on_or_are_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    let refresh = read("sims/events/webhook-refresh-lost.toml");
    let skew = read("sims/events/webhook-clock-skew.toml");
    for (base, from, to, says) in [
        (
            &refresh,
            "client = 0\nat_ms",
            "client = 3\nat_ms",
            "refresh_lost names client 3, which has no webhook receiver",
        ),
        (
            &skew,
            "on = \"server\"",
            "on = \"balancer\"",
            "the balancer signs and checks no webhook",
        ),
        (&skew, "clock = \"wall\"", "clock = \"sundial\"", "sundial"),
    ] {
        assert!(Scenario::parse(base).is_ok());
        refused_in_one_line(base, from, to, says);
    }
}

/// The new kinds' bad values get one line naming the key.
#[test]
fn bad_fault_values_are_refused_in_one_line() {
    let base = std::fs::read_to_string(dir().join("slice.toml")).unwrap();
    for (from, to, says) in [
        ("bytes = 7", "bytes = 0", "slice bytes must be 1 or more"),
        ("kind = \"slice\"", "kind = \"slyce\"", "slyce"),
        ("host = 0", "host = 4", "names client host 4"),
    ] {
        refused_in_one_line(&base, from, to, says);
    }
}

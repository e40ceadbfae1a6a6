//! The proxies between clients and servers (`[intermediary]`):
//! `sims/intermediaries/` holds the reported field failures as scenarios.
//! Each shows its failure on the arms without protection (its expectations
//! say which cause, on which arm), and each failing one has a `-protected`
//! twin, changed in the one setting that protects, where nothing fails on
//! either arm.

use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sims/intermediaries")
}

#[test]
fn each_field_failure_shows_and_its_protection_removes_it() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in [
        "buffering-proxy",
        "idle-timeout",
        "strip-priming",
        "strip-fields",
        "rechunk",
        "retry-post",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "sims/intermediaries/{name}.toml"
        );
    }
    for name in &names {
        let s = Scenario::load(&dir().join(format!("{name}.toml"))).unwrap();
        assert!(!s.intermediary.is_off(), "{name}: a proxy is in the way");
        let mut failed_somewhere = false;
        for v in Variant::BOTH {
            let label = format!("sims/intermediaries/{name}.toml");
            let (r, _) = crate::run_expecting(&label, &s, v);
            failed_somewhere |= r.metrics.ops_failed > 0;
        }
        if failed_somewhere {
            let twin = format!("{name}-protected");
            assert!(names.contains(&twin), "{name} fails: where is {twin}.toml?");
        }
        if name.ends_with("-protected") {
            assert!(!failed_somewhere, "{name}: the protection holds");
        }
    }
}

#[test]
fn the_intermediaries_are_documented() {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/intermediaries.md"),
    )
    .unwrap();
    for key in [
        "buffer",
        "idle_timeout_ms",
        "rechunk",
        "strip_priming",
        "strip_fields",
        "retry_post",
        "require_event_field",
        "no_buffering",
        "keepalive_ms",
    ] {
        assert!(
            doc.contains(&format!("`{key}`")),
            "docs/intermediaries.md names {key}"
        );
    }
}

/// `--set intermediary.KEY=VALUE` puts the proxy in front of any scenario
/// (the zero's intermediary axis); an unknown key is told the nearest.
#[test]
fn an_intermediary_can_be_set_from_the_command_line() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/seed-000-retry-by-post.toml");
    let mut s = mcp_chaos::scenario::Scenario::load(&path).unwrap();
    assert!(!s.intermediary.rechunk);
    s.set("intermediary.rechunk", "true").unwrap();
    assert!(s.intermediary.rechunk, "set");
    let e = s.set("intermediary.bufer", "true").unwrap_err();
    assert!(e.contains("did you mean intermediary.buffer?"), "{e}");
    let e = s.set("intermediary.buffer", "3").unwrap_err();
    assert!(e.contains("expected a boolean"), "{e}");
    let o = super::cli::bin()
        .args([
            "run",
            "--scenario",
            path.to_str().unwrap(),
            "--seed",
            "0",
            "--set",
            "intermediary.nope=1",
        ])
        .output()
        .unwrap();
    assert_eq!(super::cli::code(&o), 3);
}

/// With `X-Accel-Buffering: no` on (the default, as rmcp's server
/// sends it), behind the buffering proxy the unguarded model loses no
/// more than rmcp does, cause by cause, over seeds 0 to 9.
#[test]
fn behind_a_buffering_proxy_the_model_loses_no_more_than_rmcp() {
    use mcp_chaos::hosts::sut::Arm;
    use mcp_chaos::run::{self, Options};
    use std::collections::BTreeMap;
    let s = Scenario::load(&dir().join("buffering-proxy.toml")).unwrap();
    assert!(s.server.buffering_header(), "the header is on by default");
    let arms = [Arm::BuiltIn(Variant::Unguarded), Arm::Rmcp];
    let mut by_cause = [BTreeMap::new(), BTreeMap::new()];
    for seed in 0..10 {
        for (i, arm) in arms.into_iter().enumerate() {
            let (r, _) = run::run_arm(&s, seed, arm, &Options::default()).unwrap();
            for (c, n) in r.metrics.failures_by_cause {
                *by_cause[i].entry(c).or_insert(0u64) += n;
            }
        }
    }
    let [model, rmcp] = &by_cause;
    for (cause, n) in model {
        let theirs = rmcp.get(cause).copied().unwrap_or(0);
        assert!(*n <= theirs, "{cause}: unguarded {n}, rmcp {theirs}");
    }
}

//! Sweeps as the command line runs them: `--seeds` means one thing
//! everywhere, `--fail-fast` stops and a timeout is a failure, and `merge`
//! takes shards of one sweep only (not other schemas, repeated or mixed
//! shards, nor figures no run can have).

use super::cli::{bin, code, refused, run, scratch, seed_case, stderr};
use mcp_chaos::sweep::Summary;
use std::path::Path;
use std::process::Output;

fn sweep_seeds(env: Option<&str>, flag: Option<&str>, out: &Path) -> Output {
    let mut c = bin();
    c.args([
        "sweep",
        "--scenario",
        "sims/seed-000-retry-by-post.toml",
        "--servers",
        "guarded",
        "--out",
        out.to_str().unwrap(),
    ]);
    if let Some(f) = flag {
        c.args(["--seeds", f]);
    }
    if let Some(e) = env {
        c.env("MCP_CHAOS_SEEDS", e);
    }
    c.output().unwrap()
}

fn seeds_of(p: &Path) -> Vec<u64> {
    let s: Summary = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    s.runs.iter().map(|r| r.seed).collect()
}

#[test]
fn seeds_mean_one_thing_everywhere() {
    let dir = scratch("seeds");
    let out = dir.join("s.json");
    for (env, flag, want) in [
        (None, Some("3..7"), vec![3, 4, 5, 6]),
        (None, Some("5"), vec![0, 1, 2, 3, 4]),
        (Some("2..4"), None, vec![2, 3]),
        (Some("2..4"), Some("1"), vec![0]),
    ] {
        let o = sweep_seeds(env, flag, &out);
        assert_eq!(code(&o), 0, "{env:?} {flag:?}: {}", stderr(&o));
        assert_eq!(seeds_of(&out), want, "env {env:?} flag {flag:?}");
    }
    for (env, flag, needle) in [
        (None, Some("5..2"), "bad seeds \"5..2\""),
        (None, Some("x"), "bad seeds \"x\""),
        (Some("zz"), None, "MCP_CHAOS_SEEDS: bad seeds"),
        (None, None, "no seeds"),
    ] {
        let o = sweep_seeds(env, flag, &out);
        assert_eq!(code(&o), 3, "{env:?} {flag:?}");
        assert!(stderr(&o).contains(needle), "{needle:?} in {}", stderr(&o));
    }
    // compare reads the same syntax (and an unknown --scenario lists the names).
    let o = run(&[
        "compare",
        "--seeds",
        "0..0",
        "--out",
        dir.join("c").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 3);
    let o = run(&[
        "compare",
        "--scenario",
        "nope",
        "--out",
        dir.join("c").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("half-open"), "{}", stderr(&o));
}

#[test]
fn merge_refuses_other_schemas_and_repeated_shards() {
    let dir = scratch("merge-refuses");
    let a = dir.join("a.json");
    let o = sweep_seeds(None, Some("0..1"), &a);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(&["merge", a.to_str().unwrap(), a.to_str().unwrap()]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("both hold"), "{}", stderr(&o));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    v["schema_version"] = 2.into();
    let old = dir.join("old.json");
    std::fs::write(&old, serde_json::to_string(&v).unwrap()).unwrap();
    let o = run(&["merge", old.to_str().unwrap()]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("schema version 2"), "{}", stderr(&o));
}

#[test]
fn fail_fast_stops_and_timeouts_are_failures() {
    let dir = scratch("fail-fast");
    let failing = dir.join("failing.toml");
    std::fs::write(
        &failing,
        seed_case("[expect.unguarded.max]\nduplicate_side_effects = 0\n"),
    )
    .unwrap();
    let out = dir.join("s.json");
    let o = run(&[
        "sweep",
        "--scenario",
        failing.to_str().unwrap(),
        "--seeds",
        "0..8",
        "--servers",
        "unguarded",
        "--jobs",
        "1",
        "--fail-fast",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--fail-fast"), "{}", stderr(&o));
    let n = seeds_of(&out).len();
    assert!(n < 8, "{n} of 8 runs made");
    let o = run(&[
        "sweep",
        "--scenario",
        "sims/half-open.toml",
        "--seeds",
        "1",
        "--servers",
        "guarded",
        "--timeout",
        "0.001",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    let s: Summary = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(s.runs[0].verdict, "timeout");
    assert!(
        stderr(&o).contains("repro --scenario sims/half-open.toml"),
        "{}",
        stderr(&o)
    );
}

/// `merge` takes shards of one sweep only: not runs made with other
/// `--set` overrides or other arms, not figures no run can have, and
/// never a sum that wraps.
#[test]
fn merge_refuses_mixed_shards_and_corrupt_figures() {
    let dir = scratch("merge-mixed");
    let shard = |name: &str, k: &str, extra: &[&str]| {
        let p = dir.join(format!("{name}.json"));
        let mut c = bin();
        c.args(["sweep", "--scenario", "sims/seed-000-retry-by-post.toml"])
            .args(["--seeds", "0..2", "--shard", k, "--jobs", "1", "--out"])
            .arg(&p)
            .args(extra);
        let o = c.output().unwrap();
        assert_eq!(
            code(&o),
            0,
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        p.display().to_string()
    };
    let a = shard("a", "1/2", &["--servers", "guarded"]);
    let b = shard("b", "2/2", &["--servers", "guarded"]);
    let set = shard(
        "set",
        "2/2",
        &["--servers", "guarded", "--set", "server.store_capacity=64"],
    );
    let arm = shard("arm", "2/2", &["--servers", "unguarded"]);
    // The same name, another file's content.
    let edited = dir.join("edited.toml");
    let original = Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/seed-000-retry-by-post.toml");
    let text = std::fs::read_to_string(original).unwrap();
    std::fs::write(
        &edited,
        text.replace("description = \"", "description = \"Edited. "),
    )
    .unwrap();
    let other = dir.join("other.json");
    let o = bin()
        .args([
            "sweep",
            "--scenario",
            edited.to_str().unwrap(),
            "--seeds",
            "0..2",
        ])
        .args(["--shard", "2/2", "--servers", "guarded", "--out"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let other = other.display().to_string();
    let merged = dir.join("merged.json");
    let merge = |x: &str, y: &str| {
        bin()
            .args(["merge", x, y, "--out"])
            .arg(&merged)
            .output()
            .unwrap()
    };
    // The same two shards of one sweep merge, and are reported as one.
    assert_eq!(code(&merge(&a, &b)), 0);
    std::fs::remove_file(&merged).unwrap();
    let reports = dir.join("reports");
    let o = bin()
        .args(["merge", &a, &b, "--out"])
        .arg(&merged)
        .arg("--report")
        .arg(&reports)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(reports.join("report.md")).unwrap();
    assert!(md.contains("seed-000-retry-by-post"), "{md}");
    assert!(reports.join("report.html").exists());
    std::fs::remove_file(&merged).unwrap();
    refused(
        &merge(&a, &set),
        &[&a, &set, "--set server.store_capacity=64", "none"],
        "mixed --set",
    );
    refused(
        &merge(&a, &arm),
        &[&a, &arm, "guarded/scenario", "unguarded/scenario"],
        "mixed arms",
    );
    refused(
        &merge(&a, &other),
        &[&a, &other, "different files", "seed-000-retry-by-post"],
        "one name, two files",
    );
    // Crafted figures, each in a copy of shard b.
    let text = std::fs::read_to_string(&b).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let craft = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut j = json.clone();
        edit(&mut j["runs"][0]);
        let p = dir.join(format!("{name}.json"));
        std::fs::write(&p, serde_json::to_string(&j).unwrap()).unwrap();
        p.display().to_string()
    };
    let zero = craft("hist-zero", &|r| {
        r["migration_latency_hist_us"] = serde_json::json!([[0, 1]])
    });
    let out_of_range = craft("hist-range", &|r| {
        r["migration_latency_hist_us"] = serde_json::json!([[99999999999u64, 1]])
    });
    let inconsistent = craft("hist-count", &|r| {
        r["migration_latency_hist_us"] = serde_json::json!([[500, 7]])
    });
    let descending = craft("hist-order", &|r| {
        r["migration_latency_hist_us"] = serde_json::json!([[900, 1], [500, 1]])
    });
    let negative = craft("negative", &|r| {
        r["metrics"]["ops_ok"] = serde_json::json!(-1)
    });
    // One past u64::MAX, which no JSON value of ours can hold: as text.
    let too_big = craft("too-big", &|r| r["sim_ms"] = serde_json::json!("BIG"));
    let big = std::fs::read_to_string(&too_big)
        .unwrap()
        .replace("\"BIG\"", "18446744073709551616");
    std::fs::write(&too_big, big).unwrap();
    for (file, needle) in [
        (&zero, "migration_latency_hist_us value 0 is outside"),
        (
            &out_of_range,
            "value 99999999999 is outside the histogram's 1..=3600000000",
        ),
        (&inconsistent, "does not match"),
        (&descending, "values rise"),
        (&negative, "-1"),
        (&too_big, "is not a mcp-chaos summary"),
    ] {
        refused(&merge(&a, file), &[file, needle], file);
    }
    // Sums are checked: two runs of u64::MAX operations name the file and field.
    let max_b = craft("max-b", &|r| {
        r["metrics"]["operations"] = serde_json::json!(u64::MAX)
    });
    let mut ja: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    ja["runs"][0]["metrics"]["operations"] = serde_json::json!(u64::MAX);
    let max_a = dir.join("max-a.json").display().to_string();
    std::fs::write(&max_a, serde_json::to_string(&ja).unwrap()).unwrap();
    refused(
        &merge(&max_a, &max_b),
        &[&max_b, "metrics.operations", "overflows"],
        "overflow",
    );
    assert!(!merged.exists(), "no summary written from refused parts");
}

//! The reproduce loop and the command line's edges: shrink --until and its
//! regression kinds, repro --emit-scenario, one meaning of --seeds,
//! fail-fast and timeouts, merge refusals, scenario checks and closed pipes.

use super::cli::{bin, code, refused, run, scratch, seed_case};
use mcp_chaos::scenario::{RegressionKind, Scenario};
use mcp_chaos::sweep::Summary;
use std::path::Path;
use std::process::{Output, Stdio};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn json_report(scenario: &str, seed: &str, server: &str) -> serde_json::Value {
    let o = run(&[
        "run",
        "--scenario",
        scenario,
        "--seed",
        seed,
        "--server",
        server,
        "--format",
        "json",
    ]);
    assert!(code(&o) <= 2, "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn shrink_until_needs_no_editing_and_each_kind_keeps_its_promise() {
    let dir = scratch("shrink-until");
    let original = Scenario::load(&root().join("sims/half-open.toml")).unwrap();
    let before = original.fault_plan(0).faults.len();
    for (kind, want) in [("hazard", 0), ("bug", 1)] {
        let out = dir.join(format!("{kind}.toml"));
        let o = run(&[
            "shrink",
            "--until",
            "duplicate_side_effects",
            "--scenario",
            "sims/half-open.toml",
            "--seed",
            "0",
            "--server",
            "unguarded",
            "--kind",
            kind,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let shrunk = Scenario::load(&out).unwrap();
        assert!(
            shrunk.faults.explicit.len() < before,
            "{kind}: {} faults, the original plan has {before}",
            shrunk.faults.explicit.len()
        );
        let reg = shrunk.regression.as_ref().expect("a [regression] table");
        assert_eq!(reg.kind, kind.parse::<RegressionKind>().unwrap());
        assert_eq!(reg.metrics, ["duplicate_side_effects"]);
        // The kind's promise: a hazard passes while the duplicates
        // reproduce, a bug fails while they do.
        let o = run(&[
            "run",
            "--scenario",
            out.to_str().unwrap(),
            "--server",
            "unguarded",
        ]);
        assert_eq!(code(&o), want, "{kind}: {}", stderr(&o));
        let r = json_report(out.to_str().unwrap(), "0", "unguarded");
        assert!(r["metrics"]["duplicate_side_effects"].as_u64().unwrap() >= 1);
    }
    // Without --until the unedited scenario has nothing failed to keep: the
    // error says what to do.
    let o = run(&[
        "shrink",
        "--scenario",
        "sims/half-open.toml",
        "--seed",
        "0",
        "--server",
        "unguarded",
        "--out",
        dir.join("x.toml").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("--until"), "{}", stderr(&o));
}

#[test]
fn a_hazard_regression_that_no_longer_reproduces_fails() {
    let dir = scratch("stale-hazard");
    // The seed case with its one fault removed: nothing duplicates.
    let text = seed_case(
        "[regression]\nkind = \"hazard\"\nserver = \"unguarded\"\nmetrics = [\"duplicate_side_effects\"]\n",
    );
    let cut = text.find("[[faults.explicit]]").unwrap();
    let rest = &text[cut..];
    let end = rest
        .find("\n[network]")
        .or(rest.find("\n[regression]"))
        .unwrap();
    let f = dir.join("stale.toml");
    std::fs::write(&f, format!("{}{}", &text[..cut], &rest[end..])).unwrap();
    let o = run(&[
        "run",
        "--scenario",
        f.to_str().unwrap(),
        "--server",
        "unguarded",
    ]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no longer reproduces"),
        "{}",
        stderr(&o)
    );
    // A regression whose bounds contradict its kind is refused at load.
    let f = dir.join("contradicts.toml");
    std::fs::write(
        &f,
        seed_case("[expect.unguarded.max]\nduplicate_side_effects = 0\n[regression]\nkind = \"hazard\"\nserver = \"unguarded\"\nmetrics = [\"duplicate_side_effects\"]\n"),
    )
    .unwrap();
    let o = run(&["validate", f.to_str().unwrap()]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("hazard regression"), "{}", stderr(&o));
}

#[test]
fn repro_emits_a_scenario_that_replays_the_same_trace() {
    let dir = scratch("emit");
    // flaky-mobile's faults are generated (drops, partitions, latency);
    // half-open mixes explicit and generated partitions.
    for (sc, seed) in [("flaky-mobile", "3"), ("half-open", "1")] {
        let file = dir.join(format!("{sc}.toml"));
        let path = format!("sims/{sc}.toml");
        let o = run(&[
            "repro",
            "--scenario",
            &path,
            "--seed",
            seed,
            "--server",
            "unguarded",
            "--trace",
            dir.join(format!("{sc}.jsonl")).to_str().unwrap(),
            "--emit-scenario",
            file.to_str().unwrap(),
        ]);
        assert!(code(&o) <= 2, "{}", stderr(&o));
        let printed = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            printed.lines().filter(|l| l.trim() == "[faults]").count(),
            1,
            "one [faults] table:\n{printed}"
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().filter(|l| l.trim() == "[faults]").count(), 1);
        let emitted = Scenario::load(&file).unwrap();
        let original = Scenario::load(&root().join(&path)).unwrap();
        let plan = original.fault_plan(seed.parse().unwrap());
        assert_eq!(
            emitted.faults.explicit, plan.faults,
            "{sc}: the plan, explicit"
        );
        assert_eq!(emitted.faults.drop_rate, 0.0);
        assert_eq!(emitted.faults.partitions, 0);
        assert!(emitted.faults.explicit.len() > original.faults.explicit.len());
        let a = json_report(&path, seed, "unguarded");
        let b = json_report(file.to_str().unwrap(), seed, "unguarded");
        assert_eq!(a["trace_sha256"], b["trace_sha256"], "{sc} seed {seed}");
        assert!(!a["trace_sha256"].as_str().unwrap().is_empty());
    }
}

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
fn scenario_problems_exit_3_naming_them() {
    let dir = scratch("scenario-problems");
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    let text = seed_case("");
    std::fs::write(sims.join("a.toml"), &text).unwrap();
    std::fs::write(sims.join("b.toml"), &text).unwrap();
    for args in [
        vec!["compare", "--sims", sims.to_str().unwrap(), "--seeds", "1"],
        vec!["validate", sims.to_str().unwrap()],
        vec!["list", sims.to_str().unwrap()],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 3, "{args:?}");
        let e = stderr(&o);
        assert!(
            e.contains("a.toml") && e.contains("b.toml"),
            "{args:?}: {e}"
        );
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    let bad = dir.join("metric.toml");
    std::fs::write(&bad, seed_case("[expect.guarded.max]\nbogus_metric = 0\n")).unwrap();
    for args in [
        vec!["validate", bad.to_str().unwrap()],
        vec![
            "run",
            "--scenario",
            bad.to_str().unwrap(),
            "--server",
            "guarded",
        ],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 3);
        let e = stderr(&o);
        assert!(
            e.contains("bogus_metric") && e.contains("duplicate_side_effects"),
            "{e}"
        );
    }
    let malformed = dir.join("malformed.toml");
    std::fs::write(
        &malformed,
        "name = \"x\"\nduration_ms = 10\n[[clients]]\nbehaviour = \"resume\"\ncount = \"two\"\n",
    )
    .unwrap();
    let o = run(&["validate", malformed.to_str().unwrap()]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("line 5, column 9"), "{}", stderr(&o));
    let o = run(&[
        "run",
        "--scenario",
        "sims/no-such.toml",
        "--server",
        "guarded",
    ]);
    assert_eq!(code(&o), 3);
    let e = stderr(&o);
    assert!(e.contains("no-such.toml"), "{e}");
    // A path that is not there: said once, with the names --scenario
    // also takes.
    assert!(
        e.matches("no such file").count() == 1 && e.contains("names in sims: eviction"),
        "the cause once: {e}"
    );
    let o = run(&["list", "sims"]);
    assert_eq!(code(&o), 0);
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("half-open") && listed.contains("sims/half-open.toml"));
    for args in [
        ["compare", "--jobs", "0"],
        ["sweep", "--jobs", "0"],
        ["compare", "--timeout", "0"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 3);
        let e = stderr(&o);
        assert!(e.contains(args[1]), "{e}");
        assert_eq!(e.trim().lines().count(), 1, "one line: {e}");
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = bin()
        .args([
            "run",
            "--scenario",
            "sims/half-open.toml",
            "--server",
            "unguarded",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the run prints anything.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let c = code(&o);
    assert!(c == 0 || c == 141, "exit {c}: {}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
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

#[test]
fn compare_shrink_writes_each_failure_pinned_as_a_bug() {
    let dir = scratch("compare-shrink");
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::write(
        sims.join("failing.toml"),
        seed_case("[expect.unguarded.max]\nduplicate_side_effects = 0\n"),
    )
    .unwrap();
    let out = dir.join("out");
    let o = run(&[
        "compare",
        "--sims",
        sims.to_str().unwrap(),
        "--seeds",
        "2",
        "--servers",
        "unguarded,guarded",
        "--shrink",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let shrunk = out.join("shrunk");
    let files: Vec<_> = std::fs::read_dir(&shrunk).unwrap().collect();
    assert_eq!(files.len(), 1, "one failing scenario x arm: {files:?}");
    let f = files[0].as_ref().unwrap().path();
    assert!(
        stderr(&o).contains(&f.display().to_string()),
        "{}",
        stderr(&o)
    );
    let s = Scenario::load(&f).unwrap();
    assert_eq!(s.regression.unwrap().kind, RegressionKind::Bug);
    let o = run(&[
        "run",
        "--scenario",
        f.to_str().unwrap(),
        "--server",
        "unguarded",
    ]);
    assert_eq!(code(&o), 1, "a bug fails until fixed: {}", stderr(&o));
}

#[test]
fn every_command_has_an_example() {
    for cmd in [
        "compare",
        "sweep",
        "calibrate",
        "scale",
        "merge",
        "repro",
        "shrink",
        "rules",
        "list",
        "validate",
        "run",
        "serve",
    ] {
        let o = run(&[cmd, "--help"]);
        assert_eq!(code(&o), 0);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(
            help.contains(&format!("mcp-chaos {cmd}")) && help.contains("Example"),
            "{cmd}: {help}"
        );
    }
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

/// Scenario files that named a path outside their directory, nested
/// deeper than the parser's stack allows, or asked for what cannot run:
/// each is one line naming the file, where, and the fix.
#[test]
fn extreme_scenarios_exit_3_naming_the_file_and_the_rule() {
    let dir = scratch("extreme-scenarios");
    let body = "duration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\ncount = 2\n";
    let named = |n: &str| format!("name = \"{n}\"\n{body}");
    let deep = format!(
        "{}[{}]\nx = 1\n",
        named("deep"),
        vec!["a"; 10_000].join(".")
    );
    let long = "n".repeat(100_000);
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "dup",
            format!(
                "{}[server]\nstore_capacity = 4\n[server]\nmax_chunks = 9\n",
                named("dup")
            ),
            &[
                "line 8, column 1",
                "duplicate key `server`",
                "write each table once",
            ],
        ),
        (
            "deep",
            deep,
            &["line 6, column 2", "recursion limit", "at most 80 levels"],
        ),
        (
            "empty",
            named(""),
            &["name \"\"", "1 to 64 characters of A-Z a-z 0-9 . _ -"],
        ),
        ("long", named(&long), &["(100000 characters)", "1 to 64"]),
        (
            "escape",
            named("../../../escape-by-name"),
            &["../../../escape-by-name", "1 to 64"],
        ),
        ("dot", named("."), &["name \".\"", "not . or .."]),
        ("dotdot", named(".."), &["name \"..\"", "not . or .."]),
        ("space", named("a b"), &["name \"a b\"", "1 to 64"]),
        (
            "hosts",
            format!("{}[network]\nclient_hosts = 3\n", named("hosts")),
            &["network.client_hosts = 3", "2 clients", "at most 2"],
        ),
        (
            "deadline",
            format!("{}[server]\nwrite_deadline_ms = 0\n", named("deadline")),
            &["server.write_deadline_ms", "at least 1"],
        ),
    ];
    for (file, text, needles) in cases {
        let p = dir.join(format!("{file}.toml"));
        std::fs::write(&p, text).unwrap();
        let path = p.to_str().unwrap();
        for args in [
            vec!["validate", path],
            vec!["run", "--scenario", path, "--server", "guarded"],
        ] {
            let o = run(&args);
            refused(&o, needles, &format!("{file} {args:?}"));
            refused(&o, &[path], file);
            assert!(o.stderr.len() < 400, "{file}: a short line");
        }
    }
    // `repro` of the escaping name writes no trace anywhere.
    let escaped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../escape-by-name-0-guarded.jsonl");
    let before = std::fs::metadata(&escaped).and_then(|m| m.modified()).ok();
    let esc = dir.join("escape.toml");
    let o = run(&[
        "repro",
        "--scenario",
        esc.to_str().unwrap(),
        "--seed",
        "0",
        "--server",
        "guarded",
    ]);
    refused(&o, &["1 to 64"], "repro escape");
    assert_eq!(
        std::fs::metadata(&escaped).and_then(|m| m.modified()).ok(),
        before
    );
    // The bounds are inclusive: 64 characters of every allowed kind load.
    let ok = dir.join("ok.toml");
    let name = format!("Az09._-{}", "x".repeat(57));
    std::fs::write(
        &ok,
        format!("{}[network]\nclient_hosts = 2\n", named(&name)),
    )
    .unwrap();
    let o = run(&["validate", ok.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    // A zero write deadline through --set, in every command that takes it.
    let sc = "sims/seed-000-retry-by-post.toml";
    let set = ["--set", "server.write_deadline_ms=0"];
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(sc),
        sims.join("a.toml"),
    )
    .unwrap();
    let out = dir.join("out");
    for args in [
        vec!["run", "--scenario", sc, "--server", "guarded"],
        vec![
            "repro",
            "--scenario",
            sc,
            "--server",
            "guarded",
            "--seed",
            "0",
        ],
        vec![
            "sweep",
            "--scenario",
            sc,
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        vec![
            "compare",
            "--sims",
            sims.to_str().unwrap(),
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let mut a = args.clone();
        a.extend(set);
        refused(
            &run(&a),
            &["server.write_deadline_ms", "at least 1"],
            &format!("{a:?}"),
        );
    }
    assert!(!out.exists(), "nothing ran");
}

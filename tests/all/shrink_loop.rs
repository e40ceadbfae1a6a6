//! The reproduce loop from a report: `shrink --until-cause` reaches the
//! smallest plan (one fault, one client) on committed scenarios where that
//! is the true minimum, within its run budget, and the shrink command the
//! report prints for a failing operation runs and reproduces its cause.

use super::cli::{code, run, scratch, seed_case, stderr};
use mcp_chaos::scenario::{RegressionKind, Scenario};
use std::path::Path;
use std::process::Output;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The runs a shrink reports (`... in N runs (budget M...`).
fn runs_spent(o: &Output) -> u64 {
    let out = text(&o.stdout);
    let (_, rest) = out.split_once(" in ").expect("a run count");
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// How many operations failed with `cause` in a run of `file`.
fn failed_with(file: &str, seed: &str, server: &str, cause: &str) -> u64 {
    let o = run(&[
        "run",
        "--scenario",
        file,
        "--seed",
        seed,
        "--server",
        server,
        "--format",
        "json",
    ]);
    assert!(code(&o) <= 2, "{}", text(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    r["metrics"]["failures_by_cause"][cause]
        .as_u64()
        .unwrap_or(0)
}

/// Shrinks `sims/NAME.toml` seed `seed` on `server` until `cause`; checks
/// that the shrunk file still reproduces the cause under `run` with the
/// same seed and server (exit 0: a hazard passes while it reproduces).
/// Returns the shrunk scenario and the runs the shrink spent.
fn shrink_until(
    name: &str,
    seed: &str,
    server: &str,
    cause: &str,
    extra: &[&str],
) -> (Scenario, u64) {
    let out = scratch(&format!("shrink-{name}-{cause}")).join("shrunk.toml");
    let out = out.to_str().unwrap();
    let file = format!("sims/{name}.toml");
    assert!(
        failed_with(&file, seed, server, cause) > 0,
        "{name}: no {cause} to shrink"
    );
    let mut args = vec![
        "shrink",
        "--until-cause",
        cause,
        "--scenario",
        &file,
        "--seed",
        seed,
        "--server",
        server,
        "--out",
        out,
    ];
    args.extend(extra);
    let o = run(&args);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let spent = runs_spent(&o);
    let s = Scenario::load(Path::new(out)).unwrap();
    assert!(
        failed_with(out, seed, server, cause) > 0,
        "{name}: the file lost {cause}"
    );
    let o = run(&["run", "--scenario", out, "--seed", seed, "--server", server]);
    assert_eq!(
        code(&o),
        0,
        "a hazard passes while it reproduces: {}",
        text(&o.stderr)
    );
    (s, spent)
}

/// Eviction needs one dropped stream of one client whose call outgrows
/// the store (60 chunks, 40 events kept), and nothing else; a keyless
/// retry needs one partition that cuts one retry-by-post client's call.
/// The shrink finds exactly that: no fault is not enough (it tries none
/// first), and fewer than one client is not a run.
#[test]
fn until_cause_shrinks_to_one_fault_one_client_and_one_call() {
    for (name, cause, most_runs) in [
        ("eviction", "eviction", 40),
        ("half-open", "retry_without_key", 150),
    ] {
        let before = Scenario::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("sims/{name}.toml")),
        )
        .unwrap();
        let (s, spent) = shrink_until(name, "0", "unguarded", cause, &[]);
        assert_eq!(
            s.faults.explicit.len(),
            1,
            "{name}: {:?}",
            s.faults.explicit
        );
        assert_eq!(s.client_count(), 1, "{name}: {:?}", s.clients);
        let calls: u32 = s.clients.iter().map(|g| g.count * g.calls).sum();
        assert_eq!(calls, 1, "{name}: the failing call alone");
        assert!(before.client_count() > 10);
        // Measured: 23 and 104 runs; the bound catches a shrink that
        // stops converging, well inside the default budget of 400.
        assert!(spent <= most_runs, "{name}: {spent} runs");
    }
}

/// A budget cuts the shrink short, says so, and what it wrote still
/// reproduces (a candidate is kept only after a run showed it).
#[test]
fn max_runs_bounds_a_shrink_and_what_it_keeps_still_reproduces() {
    let out = scratch("shrink-budget").join("cut.toml");
    let o = run(&[
        "shrink",
        "--until-cause",
        "eviction",
        "--scenario",
        "sims/eviction.toml",
        "--seed",
        "0",
        "--server",
        "unguarded",
        "--max-runs",
        "6",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(said.contains("budget 6, spent"), "{said}");
    // Six for the reductions, then one check per arm the file has bounds for.
    let arms = Scenario::load(&out).unwrap().expect.0.len() as u64;
    assert!(runs_spent(&o) <= 6 + arms, "{said}");
    assert!(failed_with(out.to_str().unwrap(), "0", "unguarded", "eviction") > 0);
    let o = run(&[
        "shrink",
        "--until-cause",
        "eviction",
        "--scenario",
        "sims/eviction.toml",
        "--seed",
        "0",
        "--server",
        "unguarded",
        "--max-runs",
        "0",
    ]);
    assert_eq!(code(&o), 3, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--max-runs"),
        "{}",
        text(&o.stderr)
    );
}

/// The report lists, for the recommendation's run with the most failed
/// operations per scenario, its failed operations by cause with a
/// reproduce and a shrink command (one arm here, so the one recommended
/// fails some); the shrink
/// command, run as printed (its `--out` moved to scratch space), exits 0,
/// names the cause, and its file reproduces the cause.
#[test]
fn the_shrink_command_the_report_prints_reproduces_its_cause() {
    let dir = scratch("report-shrink");
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/eviction.toml"),
        sims.join("eviction.toml"),
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
        "unguarded",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(code(&o) <= 1, "{}", text(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let section = md
        .split("## Failing operations worth a look")
        .nth(1)
        .expect("the section")
        .split("\n## ")
        .next()
        .unwrap();
    assert!(html.contains("Failing operations worth a look"));
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| eviction "))
        .collect();
    assert!(!rows.is_empty(), "{section}");
    let mut seen = std::collections::BTreeSet::new();
    for row in rows {
        let cells: Vec<&str> = row.split(" | ").collect();
        let cause = cells[2];
        let (seed, server) = (cells[1], "unguarded");
        assert!(
            seen.insert(cause),
            "one row per scenario and cause: {section}"
        );
        let repro = cells[5].trim_matches('`');
        let shrink = cells[6].trim_end_matches(" |").trim_matches('`');
        let at = format!("--seed {seed} --server {server}");
        assert!(
            repro.contains("repro --scenario") && repro.contains(&at),
            "{row}"
        );
        assert!(shrink.contains(&at), "{row}");
        assert!(shrink.contains(&format!("--until-cause {cause}")), "{row}");
        let args: Vec<&str> = shrink
            .strip_prefix("cargo run --release -- ")
            .expect("the README's spelling")
            .split(' ')
            .collect();
        let at = args.iter().position(|a| *a == "--out").unwrap();
        let file = dir.join(format!("{cause}.toml"));
        let mut args = args[..at].to_vec();
        args.extend(["--out", file.to_str().unwrap()]);
        let o = run(&args);
        assert_eq!(code(&o), 0, "{shrink}: {}", text(&o.stderr));
        assert!(
            text(&o.stdout).contains(&format!("failures_by_cause.{cause}")),
            "{}",
            text(&o.stdout)
        );
        assert!(
            failed_with(file.to_str().unwrap(), seed, server, cause) > 0,
            "{row}"
        );
    }
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

//! The command line as a user meets it: exit codes, one-line errors, JUnit,
//! sweeps that shard and merge exactly, and compare's output files.

use mcp_chaos::sweep::Summary;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary, run from the repository's root, with no seed window from
/// the environment (`MCP_CHAOS_SEEDS` would change what every command runs).
pub(crate) fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mcp-chaos"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c.env_remove("MCP_CHAOS_SEEDS");
    c
}

pub(crate) fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An empty directory under the target's scratch space.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Seed case 1 with `extra` as its only expectations.
pub(crate) fn seed_case(extra: &str) -> String {
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/seed-000-retry-by-post.toml"),
    )
    .unwrap();
    let cut = base.find("[expect.unguarded.min]").unwrap();
    format!("{}{extra}", &base[..cut])
}

#[test]
fn bad_input_gets_one_line_and_exit_3() {
    let dir = scratch("bad-input");
    let malformed = dir.join("bad.toml");
    std::fs::write(&malformed, "name = \"x\"\nduration_ms = [").unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["run", "--scenario", "sims/nope.toml", "--server", "guarded"]
            .into_iter()
            .map(String::from)
            .collect(),
        vec![
            "run".into(),
            "--scenario".into(),
            malformed.display().to_string(),
            "--server".into(),
            "guarded".into(),
        ],
        vec![
            "sweep",
            "--scenario",
            "sims/seed-000-retry-by-post.toml",
            "--seeds",
            "5..2",
            "--out",
            "x.json",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        vec![
            "sweep",
            "--scenario",
            "sims/seed-000-retry-by-post.toml",
            "--seeds",
            "0..2",
            "--shard",
            "3/2",
            "--out",
            "x.json",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        vec![
            "run",
            "--scenario",
            "sims/seed-000-retry-by-post.toml",
            "--server",
            "sideways",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
    ];
    for args in cases {
        let o = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 3, "{args:?}: {err}");
        assert!(!err.trim().is_empty(), "{args:?} explains itself");
        assert!(!err.contains("panicked"), "{args:?} must not panic: {err}");
    }
}

#[test]
fn exit_codes_pass_safety_liveness_and_junit() {
    let dir = scratch("exit-codes");
    // Pass.
    let o = run(&[
        "run",
        "--scenario",
        "sims/seed-000-retry-by-post.toml",
        "--server",
        "unguarded",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    // Safety: the unguarded server must not duplicate, but it does.
    let safety = dir.join("safety.toml");
    std::fs::write(
        &safety,
        seed_case("[expect.unguarded.max]\nduplicate_side_effects = 0\n"),
    )
    .unwrap();
    let o = run(&[
        "run",
        "--scenario",
        safety.to_str().unwrap(),
        "--server",
        "unguarded",
    ]);
    assert_eq!(code(&o), 1);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("reproduce with: cargo run --release -- repro --scenario"),
        "{err}"
    );
    // Liveness: the heal phase is too short for the 8-chunk call to finish.
    let liveness = dir.join("liveness.toml");
    let text = seed_case("[expect.guarded.max]\nlost_operations = 0\n")
        .replace("duration_ms = 2000", "duration_ms = 100")
        .replace("[heal]\nduration_ms = 10000", "[heal]\nduration_ms = 50");
    std::fs::write(&liveness, text).unwrap();
    let o = run(&[
        "run",
        "--scenario",
        liveness.to_str().unwrap(),
        "--server",
        "guarded",
    ]);
    assert_eq!(code(&o), 2, "{}", String::from_utf8_lossy(&o.stderr));
    // JUnit from a sweep: one test case per scenario x server, the failing
    // one with its seed and the repro command.
    let junit = dir.join("junit.xml");
    let o = run(&[
        "sweep",
        "--scenario",
        safety.to_str().unwrap(),
        "--seeds",
        "0..2",
        "--out",
        dir.join("s.json").to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(
        xml.matches("<testcase").count(),
        mcp_chaos::hosts::sut::Arm::all().len(),
        "one per arm: {xml}"
    );
    assert_eq!(xml.matches("<failure").count(), 1, "{xml}");
    assert!(
        xml.contains("seed 0") && xml.contains("repro --scenario"),
        "{xml}"
    );
}

#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn sharded_sweep_merges_to_the_unsharded_summary() {
    let dir = scratch("shards");
    let scenario = "sims/half-open.toml";
    let whole = dir.join("whole.json");
    assert_eq!(
        code(&run(&[
            "sweep",
            "--scenario",
            scenario,
            "--seeds",
            "0..5",
            "--out",
            whole.to_str().unwrap(),
            "--jobs",
            "2"
        ])),
        0
    );
    let mut parts = Vec::new();
    for k in 1..=3 {
        let part = dir.join(format!("part{k}.json"));
        let shard = format!("{k}/3");
        let o = run(&[
            "sweep",
            "--scenario",
            scenario,
            "--seeds",
            "0..5",
            "--shard",
            &shard,
            "--out",
            part.to_str().unwrap(),
            "--jobs",
            "1",
        ]);
        assert_eq!(code(&o), 0);
        parts.push(part);
    }
    let merged = dir.join("merged.json");
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), merged.display().to_string()]);
    assert_eq!(code(&bin().args(&args).output().unwrap()), 0);
    let load = |p: &Path| -> Summary {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    // The command is each file's own (a sweep, a merge); the rest of the
    // provenance (range, arms, scenario hashes, commit) is the same.
    let without_command = |mut s: Summary| {
        assert!(!s.provenance.command.is_empty(), "provenance recorded");
        s.provenance.command.clear();
        s.without_meta()
    };
    let (a, b) = (
        without_command(load(&whole)),
        without_command(load(&merged)),
    );
    assert_eq!(
        a.runs.len(),
        5 * mcp_chaos::hosts::sut::Arm::all().len(),
        "5 seeds x every arm"
    );
    assert_eq!(a, b, "merging shards gives the unsharded summary");
}

#[test]
fn compare_writes_summary_and_report() {
    let dir = scratch("compare");
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/seed-000-resume-then-post.toml"),
        sims.join("case2.toml"),
    )
    .unwrap();
    let out = dir.join("results");
    let o = run(&[
        "compare",
        "--sims",
        sims.to_str().unwrap(),
        "--seeds",
        "2",
        "--out",
        out.to_str().unwrap(),
        "--servers",
        "guarded,unguarded",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.runs.len(), 4);
    assert_eq!(summary.aggregates.len(), 2);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("## Mechanism matrix")
            && report.contains("### seed-000-resume-then-post")
            && report.contains("order_violations"),
        "{report}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3, "CDF, bars and a timeline");
    assert!(
        !html.contains("<script") && !html.contains("src=\"http"),
        "self-contained, offline"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.starts_with(
            "recommendation: deploy guarded with the scenarios' own clients — 0 failed per 1,000 operations (95 % interval 0–0 over 2 seeds; per seed 0–0); baseline unguarded 500.0\n  With 2 seeds (fewer than 5) the seeds are too few to separate configurations: read close rates as ties.\n"
        ),
        "the recommendation first: {stdout}"
    );
    assert!(
        stdout.contains(
            "| seed-000-resume-then-post | scenario | 4 | 500.0 per 1,000 · 2 failed: replay_live_interleave 2 | 0 per 1,000 · 0 failed | 0 |"
        ),
        "the headline: unguarded (the baseline) first, then guarded, then guard bugs: {stdout}"
    );
}

/// Seed 0 of every scenario `pick` accepts, under every arm, run again (on
/// the machine's cores) against the committed `results/summary.json`
/// (wall-clock meta aside); returns how many runs matched.
fn check_committed(pick: impl Fn(&str) -> bool + Sync) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed: Summary =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/summary.json")).unwrap())
            .unwrap();
    let mut jobs = Vec::new();
    for f in mcp_chaos::cli::scenario_files(&root.join("sims")).unwrap() {
        let scenario = mcp_chaos::scenario::Scenario::load(&f).unwrap();
        if pick(&scenario.name) {
            for v in mcp_chaos::hosts::sut::Arm::all() {
                jobs.push((scenario.clone(), v));
            }
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((scenario, v)) = jobs.get(i) else {
                    break;
                };
                let (mut fresh, _) =
                    mcp_chaos::run::run_arm(scenario, 0, *v, &mcp_chaos::run::Options::default())
                        .unwrap();
                let mut old = committed
                    .runs
                    .iter()
                    .find(|r| r.scenario == scenario.name && r.server == v.as_str() && r.seed == 0)
                    .unwrap_or_else(|| {
                        panic!(
                            "results/ lacks {} {} seed 0: run `cargo run --release -- compare`",
                            scenario.name,
                            v.as_str()
                        )
                    })
                    .clone();
                // What a summary holds of a run: a few examples per cause.
                fresh.keep_examples(mcp_chaos::run::EXAMPLES);
                fresh.meta = Default::default();
                old.meta = Default::default();
                assert_eq!(
                    fresh,
                    old,
                    "results/ is stale for {} {}: run `cargo run --release -- compare` and commit results/",
                    scenario.name,
                    v.as_str()
                );
            });
        }
    });
    jobs.len()
}

/// The scenario whose one run costs most of the check (13,200 operations).
const FLEET: &str = "mixed-fleet";

/// The committed `results/` is what `compare` produces for the same seeds:
/// seed 0 of every scenario but the fleet, every arm, run again must give
/// the identical report (the fleet: the slow twin below).
#[test]
fn committed_results_match_a_fresh_run() {
    assert!(check_committed(|name| name != FLEET) >= 48);
}

/// The same for the mixed fleet.
#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn committed_results_match_a_fresh_run_of_the_fleet() {
    assert_eq!(check_committed(|name| name == FLEET), 6);
}

/// Over seeds 0–5 of every scenario under both servers (the committed
/// results, which `committed_results_match_a_fresh_run` ties to fresh runs
/// and the determinism test to every seed): every operation has exactly one
/// outcome and every failed one exactly one cause.
#[test]
fn committed_results_account_for_every_operation_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed: Summary =
        serde_json::from_str(&std::fs::read_to_string(root.join("results/summary.json")).unwrap())
            .unwrap();
    let scenarios = mcp_chaos::cli::scenario_files(&root.join("sims"))
        .unwrap()
        .len();
    assert_eq!(
        committed.runs.len(),
        scenarios * 6 * mcp_chaos::hosts::sut::Arm::all().len(),
        "6 seeds x every arm each"
    );
    for r in &committed.runs {
        let at = format!("{} seed {} {}", r.scenario, r.seed, r.server);
        if r.verdict == mcp_chaos::run::NOT_APPLICABLE {
            // None of its clients could run (legacy clients of an rmcp
            // arm): it owes no operation.
            assert_eq!(r.metrics.operations, 0, "{at}");
            assert!(r.not_applicable_clients > 0, "{at}");
            continue;
        }
        crate::oracle::every_operation_once(&r.metrics, &at);
    }
}

/// `scale` runs both sides at each size and connection mode in child
/// processes and prints one row per side with the ratio to the baseline,
/// the exponent, the soak, the sweep's workers and the targets.
#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn scale_measures_both_sides_at_each_size() {
    let dir = scratch("scale");
    let out = dir.join("perf.md");
    let o = run(&[
        "scale",
        "--clients",
        "20,40",
        "--calls",
        "2",
        "--hosts",
        "2",
        "--connections",
        "per-exchange",
        "--fleet-runs",
        "0",
        "--soak-clients",
        "10",
        "--soak-calls",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    for row in [
        // The baseline counts exchanges (two to set up, then the calls),
        // mcp-chaos operations (the calls).
        // CPU figures beside wall times, which a loaded machine inflates.
        "| run | work | wall s | CPU s | CPU s / 1,000 work | simulated s | sim s / wall s | sim s / CPU s |",
        "| 20 clients, per-exchange, baseline | 80 |",
        "| 20 clients, per-exchange, mcp-chaos | 40 |",
        "| 40 clients, per-exchange, baseline | 160 |",
        "| 40 clients, per-exchange, mcp-chaos | 80 |",
        "| wall-time exponent, per-exchange | baseline ",
        "| 1 call each | 10 |",
        "| 10 calls each | 100 |",
        "| --jobs 1 | ",
        "| --jobs 2 | ",
        "| sweep on 2 workers against 1 | >= 1.9x | ",
        "| mixed-fleet-10k wall time | <= 30 s | failed: not measured | **no** |",
    ] {
        assert!(text.contains(row), "{row} missing:\n{text}");
    }
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(file.starts_with("# Scale") && file.contains("Machine: "));
    assert_eq!(code(&run(&["scale", "--clients", "0"])), 3);
}

/// Exit 3 with one line on stderr that holds every needle (the flag or
/// field and its bound).
pub(crate) fn refused(o: &Output, needles: &[&str], what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(o), 3, "{what}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{what}: one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{what}: {n:?} not in {err}");
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

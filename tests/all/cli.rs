//! The command line as a user meets it: exit codes, one-line errors, JUnit,
//! sweeps that shard and merge exactly, and compare's output files.

use mcp_chaos::sweep::Summary;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
        mcp_chaos::sut::Arm::all().len(),
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
        5 * mcp_chaos::sut::Arm::all().len(),
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
            "recommendation: deploy guarded with the scenarios' own clients — 0 failed per 1,000 operations (per seed 0–0); baseline unguarded 500.0\n"
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
            for v in mcp_chaos::sut::Arm::all() {
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
        scenarios * 6 * mcp_chaos::sut::Arm::all().len(),
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

/// Scenarios that passed validation and then panicked, aborted, overflowed,
/// judged an unknown metric a safety violation, or lost every operation
/// without a fault: refused at load under either server, exit 3, one line
/// that names the key.
#[test]
fn invalid_scenarios_exit_3_naming_the_key() {
    let dir = scratch("invalid-scenarios");
    let group = |extra: &str| format!("[[clients]]\nbehaviour = \"resume\"\n{extra}");
    let t = |body: String| format!("name = \"t\"\nduration_ms = 1000\n{body}");
    let remove = |r: u32| {
        format!("[[faults.explicit]]\nkind = \"replica_remove\"\nreplica = {r}\nat_ms = 100\n")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "store0",
            t(format!("[server]\nstore_capacity = 0\n{}", group(""))),
            "server.store_capacity",
        ),
        (
            "overflow",
            t(format!(
                "{}{}[network]\ntcp_capacity = 100000\n",
                group("count = 4294967295\n"),
                group("count = 2\n")
            )),
            "[[clients]] count",
        ),
        (
            "partitions",
            t(format!("{}[faults]\npartitions = 4294967295\n", group(""))),
            "faults.partitions",
        ),
        (
            "herd",
            t(format!(
                "{}[network]\nclient_hosts = 20\ntcp_capacity = 300000\n",
                group("count = 100000\n")
            )),
            "100000 clients",
        ),
        (
            "range",
            t(format!("{}[faults]\npartition_ms = [2500, 500]\n", group(""))),
            "faults.partition_ms",
        ),
        (
            "metric-guarded",
            t(format!("{}[expect.guarded.max]\nbogus = 0\n", group(""))),
            "expect.guarded.max: unknown metric",
        ),
        (
            "metric-unguarded",
            t(format!("{}[expect.unguarded.min]\nbogus = 1\n", group(""))),
            "expect.unguarded.min: unknown metric",
        ),
        (
            "chunks",
            t(format!("[server]\nmax_chunks = 3\n{}", group("chunks = 4\n"))),
            "server.max_chunks",
        ),
        (
            "ports",
            format!(
                "name = \"t\"\nduration_ms = 30000\n{}[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 100\nduration_ms = 25000\n[network]\nclient_hosts = 1\ntcp_capacity = 60000\n",
                group("count = 20000\n")
            ),
            "network.client_hosts",
        ),
        (
            "calls",
            t(group("calls = 4294967295\n")),
            "[[clients]] count x calls adds up to 4294967295 calls, above the limit of 1000000000",
        ),
        (
            "think",
            t(group("calls = 1000000\nthink_ms = 1001\n")),
            "clients[0]: calls = 1000000 x think_ms = 1001",
        ),
        (
            "swarm-partitions",
            t(format!("{}[faults.swarm]\npartitions = [0, 4000000000]\n", group(""))),
            "faults.swarm: the partitions, restarts and latency_spikes ranges may draw up to 4000000000",
        ),
        (
            "swarm-restarts",
            t(format!("{}[faults.swarm]\nrestarts = [0, 100000]\n", group(""))),
            "above the limit of 10000",
        ),
        (
            "swarm-three",
            t(format!("{}[faults.swarm]\npartitions = [1, 2, 3]\n", group(""))),
            "faults.swarm.partitions has 3 values: a range is [lo, hi]",
        ),
        (
            "store-lag-local",
            t(format!("{}[deployment]\nstore_lag_ms = 50\n", group(""))),
            "deployment.store_lag_ms = 50 is the shared store's lag, and deployment.store is \"local\"",
        ),
        (
            "remove-all",
            t(format!(
                "{}[deployment]\nreplicas = 2\nbalancer = \"round-robin\"\n{}{}",
                group(""),
                remove(0),
                remove(1)
            )),
            "the replica_remove faults remove all 2 replicas",
        ),
        (
            "remove-twice",
            t(format!(
                "{}[deployment]\nreplicas = 3\nbalancer = \"round-robin\"\n{}{}",
                group(""),
                remove(1),
                remove(1)
            )),
            "faults.explicit[1]: replica_remove removes replica 1 a second time",
        ),
        (
            "task-poll",
            t(format!(
                "[server]\ntask_poll_ms = 5000\ntask_ttl_ms = 1000\n{}",
                group("")
            )),
            "server.task_poll_ms = 5000 is above server.task_ttl_ms = 1000",
        ),
        (
            "poll-retry",
            t(format!("[server]\npoll_retry_ms = 0\n{}", group(""))),
            "server.poll_retry_ms must be at least 1",
        ),
    ];
    for (name, text, key) in cases {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, text).unwrap();
        for server in ["guarded", "unguarded"] {
            let o = run(&[
                "run",
                "--scenario",
                file.to_str().unwrap(),
                "--server",
                server,
            ]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(code(&o), 3, "{name} {server}: {err}");
            assert!(err.contains(key), "{name} {server}: {key:?} not in {err}");
            assert_eq!(
                err.trim().lines().count(),
                1,
                "{name} {server}: one line: {err}"
            );
            assert!(!err.contains("panicked"), "{name} {server}: {err}");
        }
        // `validate` refuses it too, before any run.
        let o = run(&["validate", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 3, "validate {name}: {err}");
        assert!(err.contains(key), "validate {name}: {key:?} not in {err}");
    }
}

/// A replica crash, a restart or a replica added at 0 ms used to panic the
/// run ("host instant not set"), and `shrink` with it: each now runs.
#[test]
fn faults_at_time_zero_run() {
    let dir = scratch("faults-at-zero");
    for (name, fault) in [
        (
            "crash",
            "kind = \"replica_crash\"\nreplica = 0\nduration_ms = 100\n",
        ),
        ("restart", "kind = \"restart\"\n"),
        ("add", "kind = \"replica_add\"\n"),
    ] {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!(
                "name = \"zero-{name}\"\nduration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\n\
                 [deployment]\nreplicas = 2\nbalancer = \"round-robin\"\n\
                 [[faults.explicit]]\n{fault}at_ms = 0\n"
            ),
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let o = run(&["run", "--scenario", f, "--server", "guarded"]);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!all.contains("panicked"), "{name}: {all}");
        assert!(!all.contains("simulation failed"), "{name}: {all}");
        assert!(matches!(code(&o), 0..=2), "{name}: {all}");
        assert!(
            all.contains(&format!(
                "applied {{\"{}",
                if name == "crash" {
                    "replica_crash"
                } else if name == "add" {
                    "replica_add"
                } else {
                    "restart"
                }
            )),
            "{name}: {all}"
        );
        let out = dir.join(format!("{name}-shrunk.toml"));
        let o = run(&[
            "shrink",
            "--scenario",
            f,
            "--server",
            "guarded",
            "--until",
            "ops_failed",
            "--out",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "shrink {name}: {err}");
        assert!(!err.contains("host instant"), "shrink {name}: {err}");
    }
}

/// Flags a command would ignore, or a combination it cannot run: refused
/// before anything listens or runs.
#[test]
fn flags_that_would_be_ignored_exit_3() {
    for (extra, needles) in [
        (
            vec!["--era", "2026-07-28"],
            &["--poll-after", "--era 2026-07-28"][..],
        ),
        (
            vec!["--server", "cancel"],
            &["--poll-after", "--server cancel"],
        ),
        (vec!["--server", "rmcp"], &["--poll-after", "not of rmcp"]),
        (
            vec!["--server", "rmcp-es"],
            &["--poll-after", "not of rmcp-es"],
        ),
    ] {
        let mut args = vec!["serve", "--addr", "127.0.0.1:0", "--poll-after", "3"];
        args.extend(extra);
        refused(&run(&args), needles, &format!("{args:?}"));
    }
    let out = scratch("explore-kinds");
    let o = run(&[
        "explore",
        "--scenario",
        "sims/seed-000-retry-by-post.toml",
        "--server",
        "guarded",
        "--kinds",
        "replica_crash",
        "--out",
        out.join("x").to_str().unwrap(),
        "--regressions",
        "-",
    ]);
    refused(
        &o,
        &[
            "--kinds replica_crash needs a deployment",
            "runs one server",
        ],
        "explore --kinds replica_crash",
    );
    assert!(!out.join("x").exists(), "nothing ran");
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

/// Every numeric flag of every command refuses what it cannot do, at
/// parse time (nothing runs: `serve` would otherwise listen, `sweep`
/// abort or hang), naming the flag and its bound.
#[test]
fn extreme_flags_exit_3_naming_the_flag_and_its_bound() {
    let dir = scratch("extreme-flags");
    let f = dir.join("F.json");
    let f = f.to_str().unwrap();
    let sc = "sims/seed-000-retry-by-post.toml";
    let probe = ["probe", "--url", "http://127.0.0.1:1/mcp"];
    let sweep = ["sweep", "--scenario", sc, "--out", f];
    let cases: Vec<(Vec<&str>, Option<&str>, &[&str])> = vec![
        (
            vec!["--seeds", "18446744073709551615"],
            None,
            &["--seeds", "maximum of 100000"],
        ),
        (
            vec!["--seeds", "2", "--jobs", "4294967296"],
            None,
            &["--jobs", "at most 1024"],
        ),
        (
            vec!["--seeds", "2", "--jobs", "18446744073709551615"],
            None,
            &["--jobs", "1024"],
        ),
        (
            vec!["--seeds", "2", "--jobs", "1025"],
            None,
            &["--jobs", "1024"],
        ),
        (
            vec!["--seeds", "5..10000006"],
            None,
            &["--seeds", "10000001 seeds", "maximum of 100000"],
        ),
        (
            vec![],
            Some("0..10000001"),
            &["MCP_CHAOS_SEEDS", "maximum of 100000"],
        ),
        (
            vec!["--seeds", "2", "--shard", "1/100001"],
            None,
            &["--shard", "N <= 100000"],
        ),
        (
            vec!["--seeds", "100000", "--servers", "guarded,unguarded"],
            None,
            &[
                "--seeds 0..100000",
                "= 200000 runs, above the 100000 one summary holds",
                "at most 50000 seeds",
            ],
        ),
        (
            vec!["--seeds", "2", "--timeout", "86401"],
            None,
            &["--timeout", "at most 86400"],
        ),
        (
            vec!["--seeds", "2", "--timeout", "0"],
            None,
            &["--timeout", "86400"],
        ),
    ];
    for (extra, env, needles) in cases {
        let mut c = bin();
        c.args(sweep).args(&extra);
        if let Some(e) = env {
            c.env("MCP_CHAOS_SEEDS", e);
        }
        refused(
            &c.output().unwrap(),
            needles,
            &format!("sweep {extra:?} {env:?}"),
        );
    }
    assert!(!Path::new(f).exists(), "nothing ran");
    let out = dir.join("c");
    let out = out.to_str().unwrap();
    let others: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec!["compare", "--out", out, "--seeds", "100000000"],
            &["--seeds", "maximum of 100000"],
        ),
        (
            vec!["compare", "--out", out, "--seeds", "2", "--jobs", "0"],
            &["--jobs", "1024"],
        ),
        (
            vec![
                "run",
                "--scenario",
                sc,
                "--server",
                "guarded",
                "--seed",
                "18446744073709551616",
            ],
            &["--seed", "18446744073709551615"],
        ),
        (
            vec![
                "repro",
                "--scenario",
                sc,
                "--server",
                "guarded",
                "--seed",
                "-1",
            ],
            &["--seed", "18446744073709551615"],
        ),
        (
            vec![
                "shrink",
                "--scenario",
                sc,
                "--server",
                "guarded",
                "--seed",
                "1e3",
            ],
            &["--seed", "18446744073709551615"],
        ),
        (
            vec!["serve", "--addr", "127.0.0.1:65536"],
            &["--addr", "65535"],
        ),
        (
            vec!["serve", "--addr", "127.0.0.1"],
            &["--addr", "HOST:PORT"],
        ),
        (
            vec!["serve", "--max-connections", "1048577"],
            &["--max-connections", "1048576"],
        ),
        (
            vec!["serve", "--max-connections", "0"],
            &["--max-connections", "1048576"],
        ),
        (
            vec!["serve", "--header-timeout-ms", "3600001"],
            &["--header-timeout-ms", "3600000"],
        ),
        (
            vec!["serve", "--body-timeout-ms", "0"],
            &["--body-timeout-ms", "3600000"],
        ),
        (
            vec!["serve", "--session-idle-secs", "86401"],
            &["--session-idle-secs", "86400"],
        ),
        (vec!["scale", "--clients", "20001"], &["--clients", "20000"]),
        (
            vec!["scale", "--connections", "pooled"],
            &["--connections", "keep-alive or per-exchange"],
        ),
        (vec!["scale", "--fleet-runs", "10"], &["--fleet-runs", "9"]),
        (
            vec!["scale", "--clients", "10", "--hosts", "11"],
            &["--hosts", "10"],
        ),
        (vec!["scale", "--calls", "1001"], &["--calls", "1000"]),
        (vec!["scale", "--chunks", "0"], &["--chunks", "1000"]),
        (
            vec!["scale", "--chunk-interval-ms", "3600001"],
            &["--chunk-interval-ms", "3600000"],
        ),
        (
            vec!["scale", "--think-ms", "86400001"],
            &["--think-ms", "86400000"],
        ),
    ];
    for (args, needles) in others {
        refused(&run(&args), needles, &format!("{args:?}"));
    }
    // No cap on operations or events: a workload the loader refused
    // (10,000 clients of 50 calls, about 500,000 operations) loads.
    let o = run(&["validate", "sims/scale/mixed-fleet-10k.toml"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok sims/scale/mixed-fleet-10k.toml"));
    for (extra, needles) in [
        (["--timeout", "3601"], &["--timeout", "3600"][..]),
        (
            ["--request-timeout-ms", "99"],
            &["--request-timeout-ms", "600000"],
        ),
        (
            ["--max-requests", "1000001"],
            &["--max-requests", "1000000"],
        ),
    ] {
        let mut args = probe.to_vec();
        args.extend(extra);
        refused(&run(&args), needles, &format!("{args:?}"));
    }
    // A port no TCP port can be is an error, not port 80.
    let o = run(&["probe", "--url", "http://127.0.0.1:65536/mcp"]);
    refused(&o, &["--url", "65535"], "probe --url port");
    // The two commands as written, without --scenario: the bad
    // flag is named first; a sweep without a scenario gets one line too.
    let o = run(&["sweep", "--out", f, "--seeds", "18446744073709551615"]);
    refused(
        &o,
        &["--seeds", "maximum of 100000"],
        "sweep without --scenario",
    );
    let o = run(&["sweep", "--out", f, "--seeds", "2", "--jobs", "4294967296"]);
    refused(&o, &["--jobs", "at most 1024"], "sweep without --scenario");
    let o = run(&["sweep", "--out", f, "--seeds", "2"]);
    refused(
        &o,
        &["--scenario NAME|FILE", "a file's path"],
        "sweep without --scenario",
    );
}

/// `serve --state-key-file` where nothing signs a `requestState` is a
/// contradiction, refused before the file is made.
#[test]
fn a_state_key_file_where_nothing_is_signed_is_refused() {
    let dir = scratch("state-key-refused");
    let file = dir.join("key");
    let f = file.to_str().unwrap();
    for (args, names) in [
        (
            vec!["serve", "--state-key-file", f],
            "--era 2025-11-25 has none",
        ),
        (
            vec!["serve", "--server", "rmcp", "--state-key-file", f],
            "not rmcp's",
        ),
    ] {
        let o = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 3, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!file.exists(), "nothing made");
    }
}

//! Faults placed at protocol boundaries, and `explore` over them: a placed
//! fault fires at its boundary whenever the run reaches it; the
//! exhaustive space holds the seed case's own placement and its cause;
//! the guarded configuration fails nothing at depth 2; a skipped pair's
//! run is its representative's; a failing placement's regression replays
//! its trace; `explore` on the command line says what it ran.

use super::cli::{bin, scratch};
use mcp_chaos::explore::{self, Kind, Setup};
use mcp_chaos::fault::{At, Boundary, Fault};
use mcp_chaos::history::{ClientRecord, Rec, WorldRecord};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::run::{self, Options, Profile};
use mcp_chaos::scenario::Scenario;
use std::path::Path;

fn scenario(name: &str) -> Scenario {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sims/explore")
        .join(name);
    mcp_chaos::run::catalog::load(&p).unwrap()
}

fn arm(s: &str) -> Arm {
    s.parse().unwrap()
}

/// The guarded configuration of the zero: keys+cursors clients, durable
/// keys, transactional effects.
fn zero() -> Options {
    Options {
        clients: Some(Profile::KeysCursors),
        sets: vec![
            ("server.durable_dedup".into(), "true".into()),
            ("server.effects".into(), "transactional".into()),
        ],
        ..Options::default()
    }
}

fn setup(name: &str, server: &str, opts: Options, depth: u8, kinds: &[Kind]) -> Setup {
    Setup {
        path: format!("sims/explore/{name}"),
        scenario: scenario(name),
        arm: arm(server),
        opts,
        depth,
        kinds: kinds.to_vec(),
        seed: 0,
        jobs: 2,
        shard: (1, 1),
        max_space: 100_000,
    }
}

const DPR: [Kind; 3] = [Kind::Drop, Kind::Partition, Kind::Restart];

/// A partition placed after event 3 starts when the client has event 3,
/// whenever that is: with events 20 ms apart and 45 ms apart alike.
#[test]
fn a_placed_fault_fires_at_its_boundary_not_at_a_time() {
    for interval in [20, 45] {
        let mut s = scenario("seed-000-retry-by-post.toml");
        s.clients[0].chunk_interval_ms = interval;
        s.faults.explicit = vec![Fault::Placed {
            on: Boundary {
                client: 0,
                call: 0,
                at: At::Event,
                after_event: 3,
            },
            fault: Box::new(Fault::Partition {
                host: 0,
                at_ms: 0,
                duration_ms: 100,
            }),
        }];
        let (report, history) = run::run_arm(&s, 0, arm("unguarded"), &Options::default()).unwrap();
        assert_eq!(
            report.faults.applied.get("partition"),
            Some(&1),
            "{:?}",
            report.faults
        );
        let entries = history.entries();
        let third = entries
            .iter()
            .filter(|e| {
                matches!(&e.record, Rec::Client(ClientRecord::Received { tag: Some(t), .. }) if &**t == "c0-op0")
            })
            .nth(2)
            .map(|e| e.t_us)
            .expect("a third event");
        let started = entries
            .iter()
            .find(|e| matches!(e.record, Rec::World(WorldRecord::FaultStarted { .. })))
            .map(|e| e.t_us)
            .expect("the partition started");
        assert!(
            started >= third && started <= third + 2_000,
            "interval {interval} ms: event 3 at {third} µs, the partition at {started} µs"
        );
    }
}

/// Depth 1 of the SSE-to-POST seed on the unguarded arm holds the seed's
/// own fault (a drop after event 1 of call 0) with the seed's cause.
#[test]
fn the_space_holds_the_seed_placement_with_its_cause() {
    let x = explore::explore(&setup(
        "seed-000-retry-by-post.toml",
        "unguarded",
        Options::default(),
        1,
        &DPR,
    ))
    .unwrap();
    let seed = x
        .failing
        .iter()
        .find(|f| f.placement == "drop after event 1 of client 0's call 0")
        .expect("the seed's placement fails");
    assert_eq!(seed.causes, ["retry_without_key"]);
    assert_eq!(x.space, x.singles.len() as u64);
    assert_eq!(
        x.runs,
        x.space + 1,
        "every single placement runs, and the run without faults"
    );
    // Every boundary of the one call: sent, received, 7 events (the 8th
    // is the result), the result.
    assert_eq!(x.boundaries.len(), 11, "{:?}", x.boundaries);
}

/// The zero's configuration fails no operation under any single or
/// double drop, partition (two lengths) or restart of the seed case; the
/// space is every single and every pair.
#[test]
fn the_guarded_configuration_fails_nothing_at_depth_two() {
    let x = explore::explore(&setup(
        "seed-000-retry-by-post.toml",
        "guarded",
        zero(),
        2,
        &DPR,
    ))
    .unwrap();
    let n = x.singles.len() as u64;
    assert_eq!(x.space, n + n * (n - 1) / 2);
    assert!(x.failing.is_empty(), "{:?}", x.failing.first());
    assert!(x.runs + x.skipped.len() as u64 == x.space + 1);
}

/// Every pair the rule skipped, run after all, fails the same operations
/// with the same causes as the single placement whose run the rule says
/// it is.
#[test]
fn skipped_pairs_have_their_representatives_verdict() {
    let s = setup(
        "eviction.toml",
        "unguarded",
        Options::default(),
        2,
        &[Kind::Drop],
    );
    let x = explore::explore(&s).unwrap();
    assert!(!x.skipped.is_empty(), "the rule skipped nothing here");
    let baseline = &x.baseline_plan;
    for skip in x.skipped.iter().take(12) {
        let faults = [
            x.singles[skip.pair.0].1.clone(),
            x.singles[skip.pair.1].1.clone(),
        ];
        let plan = explore::with_plan(&s.scenario, baseline, &faults);
        let r = run::run_arm_streaming(&plan, 0, s.arm, &s.opts).unwrap();
        let got = explore::Verdict::of_report(&r);
        assert!(
            got.same(&x.single_verdicts[skip.same_as]),
            "{skip:?}: {got:?} vs {:?}",
            x.single_verdicts[skip.same_as]
        );
    }
}

/// A failing placement's regression scenario, run as its header says,
/// replays explore's run: the same trace.
#[test]
fn a_failing_placement_replays_its_trace_from_its_regression() {
    let s = setup(
        "seed-000-retry-by-post.toml",
        "unguarded",
        Options::default(),
        1,
        &DPR,
    );
    let x = explore::explore(&s).unwrap();
    let dir = scratch("explore-regressions");
    let (summary, _) = explore::write_outputs(&s, &x, (&dir, true), None).unwrap();
    assert_eq!(summary.failing.len(), x.failing.len());
    assert!(summary
        .failing
        .iter()
        .all(|f| Path::new(&f.regression).exists()));
    // Without --all-regressions, only the placements the pages show (the
    // first ten of each cause) have their file; the rest name none.
    let shown_dir = scratch("explore-regressions-shown");
    let (shown, _) = explore::write_outputs(&s, &x, (&shown_dir, false), None).unwrap();
    let mut per_cause: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in &shown.failing {
        let n = per_cause.entry(f.cause.as_str()).or_default();
        *n += 1;
        assert_eq!(!f.regression.is_empty(), *n <= 10, "{}", f.placement);
        assert_eq!(f.repro.is_empty(), f.regression.is_empty());
        assert!(f.regression.is_empty() || Path::new(&f.regression).exists());
    }
    let files = std::fs::read_dir(shown_dir.join("regressions"))
        .unwrap()
        .count();
    assert_eq!(
        files,
        shown
            .failing
            .iter()
            .filter(|f| !f.regression.is_empty())
            .count()
    );
    assert!(
        files < x.failing.len(),
        "this space has causes with more than ten placements"
    );
    for (line, f) in summary.failing.iter().zip(&x.failing).take(6) {
        let loaded = mcp_chaos::run::catalog::load(Path::new(&line.regression)).unwrap();
        let r = run::run_arm_streaming(&loaded, 0, s.arm, &Options::default()).unwrap();
        assert_eq!(r.trace_sha256, f.verdict.trace, "{}", line.placement);
        assert!(
            r.failed_expectations.is_empty(),
            "{:?}",
            r.failed_expectations
        );
    }
}

/// `explore --format json` prints the space, the runs, the pruning ratio
/// and each failing placement with its repro; it exits 1 when one fails.
#[test]
fn explore_on_the_command_line_says_what_it_ran() {
    let dir = scratch("explore-cli");
    let out = bin()
        .args([
            "explore",
            "--scenario",
            "sims/explore/seed-000-retry-by-post.toml",
        ])
        .args([
            "--server",
            "unguarded",
            "--depth",
            "1",
            "--format",
            "json",
            "--regressions",
            "-",
        ])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (space, runs) = (v["space"].as_u64().unwrap(), v["runs"].as_u64().unwrap());
    assert_eq!(space, 40);
    assert_eq!(runs, 41);
    assert!((v["pruning_ratio"].as_f64().unwrap() - 40.0 / 41.0).abs() < 0.01);
    let failing = v["failing"].as_array().unwrap();
    assert_eq!(v["failing_placements"].as_u64(), Some(failing.len() as u64));
    let first = &failing[0];
    assert!(first["repro"]
        .as_str()
        .unwrap()
        .starts_with("mcp-chaos run --scenario "));
    assert!(Path::new(first["regression"].as_str().unwrap()).exists());
    for f in ["explore.json", "explore.md", "explore.html"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let out_dir = dir.join("chosen");
    let chosen = explore_cli(
        "restart",
        &[
            "--kinds",
            "restart,drop",
            "--depth",
            "1",
            "--format",
            "json",
            "--regressions",
            "-",
        ],
        Some(&out_dir),
    );
    // The scenario's own clients hold no durable key: restarts lose calls.
    assert_eq!(
        chosen.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&chosen.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&chosen.stdout).unwrap();
    assert_eq!(v["kinds"], serde_json::json!(["restart", "drop"]));
    let bad = explore_cli("half-open", &["--kinds", "drop,meteor"], None);
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown fault kind \"meteor\""));
    let big = explore_cli("half-open", &["--max-space", "100"], None);
    assert_eq!(big.status.code(), Some(3));
    let said = String::from_utf8_lossy(&big.stderr);
    assert!(
        said.contains("the space is 1596 placements") && said.contains("--max-space 100"),
        "{said}"
    );
}

/// Three shards of an exploration, merged, are the exploration: the same
/// space and the same failing placements.
#[test]
fn shards_merge_to_the_whole_exploration() {
    let whole = setup(
        "eviction.toml",
        "unguarded",
        Options::default(),
        2,
        &[Kind::Drop],
    );
    let x = explore::explore(&whole).unwrap();
    let dir = scratch("explore-shards");
    let (all, _) = explore::write_outputs(&whole, &x, (&dir.join("all"), false), None).unwrap();
    let mut parts = Vec::new();
    for k in 1..=3 {
        let s = Setup {
            shard: (k, 3),
            ..whole.clone()
        };
        let x = explore::explore(&s).unwrap();
        parts.push(
            explore::write_outputs(&s, &x, (&dir.join(format!("{k}")), false), None)
                .unwrap()
                .0,
        );
    }
    let merged = explore::Summary::merge(&parts).unwrap();
    assert_eq!(merged.space, all.space);
    let names = |s: &explore::Summary| {
        let mut v: Vec<String> = s.failing.iter().map(|f| f.placement.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&merged), names(&all));
    assert!(!all.failing.is_empty());
    // A shard given twice, or shards run with different --set overrides:
    // refused, one line, exit 3 (they used to add up to more failing
    // placements than placements).
    let shard = |k: u32| dir.join(format!("{k}")).join("explore.json");
    let (one, two) = (shard(1), shard(2));
    let o = crate::cli::run(&[
        "merge",
        one.to_str().unwrap(),
        two.to_str().unwrap(),
        one.to_str().unwrap(),
    ]);
    crate::cli::refused(&o, &["shard 1/3 is given twice"], "merge 1, 2, 1");
    let mut other = parts[1].clone();
    other.sets = vec!["server.durable_dedup=true".into()];
    let odd = dir.join("odd.json");
    std::fs::write(&odd, serde_json::to_string(&other).unwrap()).unwrap();
    let o = crate::cli::run(&["merge", one.to_str().unwrap(), odd.to_str().unwrap()]);
    crate::cli::refused(
        &o,
        &["different --set overrides", "server.durable_dedup=true"],
        "merge of mixed overrides",
    );
    // explore.json records the overrides it ran with.
    let zeroed = Setup {
        opts: zero(),
        ..whole.clone()
    };
    let recorded = explore::Summary::of(&zeroed, &x, &dir, &vec![false; x.failing.len()]);
    assert_eq!(
        recorded.sets,
        ["server.durable_dedup=true", "server.effects=transactional"]
    );
}

/// `mcp-chaos explore` on `sims/explore/NAME.toml`, guarded, with `args`.
fn explore_cli(name: &str, args: &[&str], out: Option<&Path>) -> std::process::Output {
    let mut c = bin();
    c.args(["explore", "--server", "guarded", "--scenario"])
        .arg(format!("sims/explore/{name}.toml"))
        .args(args);
    if let Some(o) = out {
        c.arg("--out").arg(o);
    }
    c.output().unwrap()
}

//! The command line refuses what it cannot run: a scenario or a flag that
//! would panic, abort, allocate per planned call or be silently ignored
//! gets exit 3 and one line naming the key or flag and the fix, before
//! anything runs; what can run at time 0 runs.

use super::cli::{bin, code, refused, run, scratch};
use std::path::Path;

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
        (
            vec!["serve", "--sdk", "java"],
            &["--sdk", "rmcp, python, typescript, csharp, go"],
        ),
        (
            vec!["serve", "--set", "era=2026-07-28"],
            &["--set", "serve takes --set server.KEY=VALUE"],
        ),
        (
            vec!["serve", "--set", "server.events_sendr=naive"],
            &["--set", "did you mean server.events_sender?"],
        ),
        (
            vec!["serve", "--set", "server.events_sender=lazy"],
            &["--set", "naive"],
        ),
        (
            vec![
                "serve",
                "--server",
                "rmcp",
                "--set",
                "server.events_sender=naive",
            ],
            &["--set", "not rmcp's"],
        ),
        (
            vec!["serve", "--events-tick-ms", "100"],
            &["--events-tick-ms", "--era 2026-07-28"],
        ),
        (
            vec!["serve", "--sdk", "go", "--era", "both"],
            &["go", "refuses the 2026-07-28 wire"],
        ),
        (
            vec!["serve", "--server", "rmcp", "--sdk", "python"],
            &["--sdk python", "drop --sdk"],
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

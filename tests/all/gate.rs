//! `--fail-on ops`: the CI gate beside the expectations. A run whose
//! expectations allow failed operations (half-open expects the guarded
//! arm to fail a few, `retry_without_key`) never opens with "passes",
//! exits 0 as its expectations say, and exits 1 under `--fail-on ops`,
//! naming the configuration, the causes and the command that reproduces
//! it; `sweep` and `compare` judge every configuration or the one named.

use super::cli::{code, run, scratch};
use mcp_chaos::sweep::Summary;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn failed_operations_lead_the_run_and_fail_it_under_fail_on_ops() {
    let args = ["run", "--scenario", "half-open", "--server", "guarded"];
    let plain = run(&args);
    assert_eq!(code(&plain), 0, "its expectations hold: {}", stderr(&plain));
    let first = stdout(&plain)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(first.starts_with("operations: "), "{first}");
    assert!(
        !first.contains("passes"),
        "failed operations never pass: {first}"
    );
    assert!(
        first.contains("retry_without_key"),
        "the cause is named: {first}"
    );
    let failed: u64 = first
        .split(" failed of ")
        .next()
        .and_then(|a| a.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        failed > 0,
        "half-open fails some guarded operations: {first}"
    );

    let gated = run(&[&args[..], &["--fail-on", "ops"]].concat());
    assert_eq!(code(&gated), 1, "{}", stderr(&gated));
    let err = stderr(&gated);
    assert!(
        err.contains(&format!(
            "--fail-on ops: guarded (clients: scenario) failed {failed} of 1080"
        )),
        "{err}"
    );
    assert!(err.contains("reproduce with: cargo run --release -- repro --scenario sims/half-open.toml --seed 0 --server guarded"), "{err}");

    let clean = run(&[
        &args[..],
        &["--clients", "keys+cursors", "--fail-on", "ops"],
    ]
    .concat());
    assert_eq!(
        code(&clean),
        0,
        "nothing fails with keys and cursors: {}",
        stderr(&clean)
    );
    assert!(stdout(&clean)
        .starts_with("operations: 1080 ok, 0 degraded, 0 failed of 1080; the run passes"));
}

#[test]
fn a_sweep_gates_the_named_configuration_only() {
    let dir = scratch("gate-sweep");
    let out = dir.join("s.json");
    let sweep = |extra: &[&str]| {
        let base = [
            "sweep",
            "--scenario",
            "half-open",
            "--seeds",
            "1",
            "--servers",
            "unguarded,guarded",
            "--clients",
            "keys+cursors",
            "--out",
            out.to_str().unwrap(),
        ];
        run(&[&base[..], extra].concat())
    };
    let all = sweep(&["--fail-on", "ops"]);
    let s: Summary = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let failing: Vec<&str> = s
        .runs
        .iter()
        .filter(|r| r.metrics.ops_failed > 0)
        .map(|r| r.server.as_str())
        .collect();
    assert_eq!(
        failing,
        ["unguarded"],
        "keys and cursors leave unguarded's losses, no guarded failure"
    );
    assert_eq!(code(&all), 1, "{}", stderr(&all));
    assert!(stderr(&all).contains("--fail-on ops: unguarded (clients: keys+cursors)"));
    let guarded = sweep(&[
        "--fail-on",
        "ops",
        "--fail-on-config",
        "guarded,keys+cursors",
    ]);
    assert_eq!(code(&guarded), 0, "{}", stderr(&guarded));
    let none = sweep(&["--fail-on", "ops", "--fail-on-config", "guarded,plain"]);
    assert_eq!(code(&none), 3, "a configuration no run ran is refused");
    assert!(
        stderr(&none).contains("matched none of the runs"),
        "{}",
        stderr(&none)
    );
    let alone = sweep(&["--fail-on-config", "guarded"]);
    assert_eq!(code(&alone), 3, "--fail-on-config needs --fail-on");
}

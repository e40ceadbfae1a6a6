//! `mcp-chaos probe` against `serve` on a real socket: the hazards the
//! model has are found on the unguarded arm and none on the guarded arm
//! with a key-sending client; usage and connection errors exit 3 with one
//! line.

use crate::cli::{code, run};
use crate::serve::Served;
use serde_json::Value;
use std::collections::BTreeMap;

/// Every hazard the probe knows, as `probe --help` and the docs name them.
const HAZARDS: [&str; 17] = [
    "retry-new-id",
    "retry-same-id",
    "retry-after-completion",
    "resume-inclusive",
    "resume-after-completion",
    "resume-malformed",
    "resume-foreign-session",
    "resume-then-post",
    "resume-future-cursor",
    "resume-twice",
    "resume-unnamed",
    "replay-dropped",
    "duplicate-inflight-id",
    "retry-honoured",
    "legacy-session",
    "cancel-ignored",
    "second-get",
];

/// The Events extension's hazards (2026-07-28 wire).
const EVENTS: [&str; 3] = [
    "events-retry-new-webhook-id",
    "events-cursor-skips",
    "events-webhook-no-gap",
];

/// The probe's `--time-scale` in these tests: 1 unless the environment
/// variable `MCP_CHAOS_TIME_SCALE` widens every real-time window on a
/// loaded machine (CONTRIBUTING.md).
fn time_scale() -> String {
    std::env::var("MCP_CHAOS_TIME_SCALE").unwrap_or_else(|_| "1".into())
}

/// `probe --url <served> --format json ARGS`: exit code and verdict per
/// hazard (evidence printed on failure).
fn probe(s: &Served, args: &[&str]) -> (i32, BTreeMap<String, String>, String) {
    let url = format!("http://{}/mcp", s.addr);
    let scale = time_scale();
    let mut all = vec!["probe", "--url", url.as_str(), "--format", "json"];
    all.extend_from_slice(&["--time-scale", scale.as_str()]);
    all.extend_from_slice(args);
    let out = run(&all);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let list: Vec<Value> = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "probe printed no JSON list ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let verdicts = list
        .iter()
        .map(|f| {
            assert!(f["evidence"].as_str().is_some_and(|e| !e.is_empty()), "{f}");
            (
                f["hazard"].as_str().expect("a name").to_string(),
                f["verdict"].as_str().expect("a verdict").to_string(),
            )
        })
        .collect();
    (code(&out), verdicts, stdout)
}

#[test]
fn the_unguarded_server_has_the_models_hazards() {
    let s = Served::start(&["--server", "unguarded"]);
    let (exit, v, out) = probe(&s, &[]);
    assert_eq!(exit, 1, "a present hazard exits 1: {out}");
    assert_eq!(
        v.keys().cloned().collect::<Vec<_>>().len(),
        HAZARDS.len(),
        "{out}"
    );
    // The unguarded arm models today's SDKs: a retry by POST runs the tool
    // again whatever its id, a malformed cursor and one past the stream's
    // end get an empty 200, and a legacy session id is served on the
    // streamable endpoint.
    for h in [
        "retry-new-id",
        "retry-same-id",
        "retry-after-completion",
        "resume-malformed",
        "resume-future-cursor",
        "legacy-session",
        "duplicate-inflight-id",
        "resume-unnamed",
    ] {
        assert_eq!(v[h], "present", "{h}: {out}");
    }
    // Its replay is exclusive, per session, and keeps the result; a second
    // standalone GET gets 409; a `notifications/cancelled` stops the call
    // (every arm honours it).
    for h in [
        "cancel-ignored",
        "resume-inclusive",
        "resume-after-completion",
        "resume-foreign-session",
        "second-get",
        "resume-twice",
        "replay-dropped",
    ] {
        assert_eq!(v[h], "absent", "{h}: {out}");
    }
    assert_eq!(v["retry-honoured"], "untestable", "it does not poll: {out}");
}

#[test]
fn the_guarded_server_with_keys_has_none() {
    let s = Served::start(&["--server", "guarded"]);
    let (exit, v, out) = probe(&s, &["--profile", "keys"]);
    assert_eq!(exit, 0, "{out}");
    for h in HAZARDS.iter().filter(|&&h| h != "retry-honoured") {
        assert_eq!(v[*h], "absent", "{h} must be tested and absent: {out}");
    }
    // It does not poll (no `retry:` close): nothing to honour.
    assert_eq!(v["retry-honoured"], "untestable", "{out}");
}

/// A server that polls (`--poll-after`): each arm takes the resume made
/// exactly `retry:` ms after the close and replays from the cursor, and
/// every other hazard's verdict is the one the same arm gets without
/// polling (the probe follows polling closes as a client must, so a
/// paused stream is not read as a lost one).
#[test]
fn a_polling_server_honours_its_retry_and_changes_no_other_verdict() {
    // The two arms in parallel: four whole probes in real time.
    std::thread::scope(|scope| {
        for (arm, profile) in [("guarded", "keys"), ("unguarded", "plain")] {
            scope.spawn(move || same_verdicts_when_polling(arm, profile));
        }
    });
}

fn same_verdicts_when_polling(arm: &str, profile: &str) {
    let plain = Served::start(&["--server", arm]);
    let (_, without, _) = probe(&plain, &["--profile", profile]);
    drop(plain);
    let polling = Served::start(&[
        "--server",
        arm,
        "--poll-after",
        "3",
        "--poll-retry-ms",
        "200",
    ]);
    let (_, mut with, out) = probe(&polling, &["--profile", profile]);
    assert_eq!(with.len(), HAZARDS.len(), "{arm}: {out}");
    assert_eq!(with["retry-honoured"], "absent", "{arm}: {out}");
    assert_eq!(without["retry-honoured"], "untestable", "{arm}");
    assert!(out.contains("after 200 ms GET 200"), "{arm}: {out}");
    with.insert("retry-honoured".into(), "untestable".into());
    assert_eq!(with, without, "{arm}: {out}");
}

#[test]
fn without_keys_the_guarded_server_still_runs_a_retried_tool_once() {
    // Rule M refuses the retry (409 with a resume hint); the probe resumes.
    let s = Served::start(&["--server", "guarded"]);
    let (exit, v, out) = probe(
        &s,
        &["--only", "retry-new-id", "--only", "retry-after-completion"],
    );
    assert_eq!(exit, 0, "{out}");
    assert_eq!(v.len(), 2, "--only keeps the named hazards: {out}");
    assert!(
        out.contains("409") && out.contains("GET Last-Event-ID"),
        "{out}"
    );
    assert!(v.values().all(|x| x == "absent"), "{out}");
}

#[test]
fn a_counter_tool_counts_executions_instead_of_the_ledger() {
    // ledger_append with a fixed tag counts its own runs: the execution
    // number is the first number in its result text.
    let args = [
        "--tool",
        "ledger_append",
        "--tool-args",
        r#"{"tag":"counted"}"#,
        "--only",
        "retry-new-id",
        "--only",
        "resume-inclusive",
    ];
    let u = Served::start(&["--server", "unguarded"]);
    let (exit, v, out) = probe(&u, &args);
    assert_eq!((exit, v["retry-new-id"].as_str()), (1, "present"), "{out}");
    assert_eq!(v["resume-inclusive"], "untestable", "{out}");
    let mut keyed = args.to_vec();
    keyed.extend(["--profile", "keys"]);
    let g = Served::start(&["--server", "guarded"]);
    let (exit, v, out) = probe(&g, &keyed);
    assert_eq!((exit, v["retry-new-id"].as_str()), (0, "absent"), "{out}");
}

#[test]
fn text_and_markdown_name_each_hazard_its_verdict_and_rule() {
    let s = Served::start(&["--server", "unguarded"]);
    let url = format!("http://{}/mcp", s.addr);
    let base = ["probe", "--url", url.as_str(), "--only", "retry-new-id"];
    let text = run(&base);
    let t = String::from_utf8_lossy(&text.stdout);
    assert_eq!(code(&text), 1, "{t}");
    assert!(
        t.contains("present    retry-new-id") && t.contains("retried tool runs twice"),
        "{t}"
    );
    assert!(t.contains("1 present, 0 absent, 0 untestable"), "{t}");
    let mut md_args = base.to_vec();
    md_args.extend(["--format", "markdown"]);
    let md = String::from_utf8_lossy(&run(&md_args).stdout).to_string();
    assert!(
        md.contains("| retried tool runs twice (`retry-new-id`) | **present** |"),
        "{md}"
    );
    assert!(
        md.contains("## Rules") && md.contains("- `retry-new-id`: Call the tool"),
        "{md}"
    );
}

#[test]
fn usage_and_connection_errors_exit_3_with_one_line() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let refused = format!("http://{closed}/mcp");
    let s = Served::start(&["--server", "guarded"]);
    let served = format!("http://{}/mcp", s.addr);
    for (args, says) in [
        (vec!["--url", "https://127.0.0.1:1/mcp"], "plain HTTP"),
        (vec!["--url", "127.0.0.1:8080"], "needs http://"),
        (
            vec!["--url", refused.as_str()],
            "start the server, or fix --url",
        ),
        (vec!["--url", "http://192.0.2.1:8080/mcp"], "--allow-remote"),
        (
            vec!["--url", served.as_str(), "--only", "nope"],
            "is no hazard",
        ),
        (
            vec!["--url", served.as_str(), "--tool", "rm_rf"],
            "lists no such tool",
        ),
        (
            vec!["--url", served.as_str(), "--header", "no colon"],
            "NAME: VALUE",
        ),
        (
            vec![
                "--url",
                served.as_str(),
                "--tool",
                "ledger_read",
                "--tool-args",
                "[1]",
            ],
            "not a JSON object",
        ),
        (
            vec!["--url", served.as_str(), "--time-scale", "21"],
            "--time-scale takes a whole number from 1 to 20",
        ),
    ] {
        let mut all = vec!["probe"];
        all.extend(args.iter());
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 3, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should say {says:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_spent_budget_is_not_a_pass() {
    let s = Served::start(&["--server", "guarded"]);
    let url = format!("http://{}/mcp", s.addr);
    let out = run(&[
        "probe",
        "--url",
        &url,
        "--max-requests",
        "8",
        "--format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("raise --timeout or --max-requests"), "{err}");
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the report is printed");
    assert!(list.iter().any(|f| f["verdict"] == "untestable"
        && f["evidence"].as_str().is_some_and(|e| e.contains("budget"))));
}

#[test]
fn every_url_is_checked_before_it_is_connected() {
    for (args, says) in [
        (
            vec![
                "--url",
                "http://127.0.0.1:1/mcp",
                "--legacy-url",
                "http://0.0.0.0:1/sse",
            ],
            vec!["--legacy-url", "0.0.0.0", "--allow-remote"],
        ),
        (
            vec!["--url", "http://127.0.0.1:99999/mcp"],
            vec!["--url", "1..=65535"],
        ),
        (
            vec!["--url", "http://127.0.0.1:http/mcp"],
            vec!["--url", "1..=65535"],
        ),
        (
            vec![
                "--url",
                "http://127.0.0.1:1/mcp",
                "--legacy-url",
                "http://127.0.0.1:0/sse",
            ],
            vec!["--legacy-url", "1..=65535"],
        ),
    ] {
        let mut all = vec!["probe"];
        all.extend(args.iter());
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 3, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        for s in &says {
            assert!(err.contains(s), "{args:?} should say {s:?}: {err}");
        }
    }
}

/// The 2026-07-28 wire's hazards (`--era 2026-07-28`): the unguarded model
/// shows all four (a close cancels after the effect, a re-issue, the
/// input-required retry and a re-sent task creation each run the tool
/// again); guarded with keys none; keys with keys removes only the task
/// creation's. A 2025 hazard is no hazard of this wire. Without the
/// Events extension its three hazards are untestable, saying so.
#[test]
fn the_new_wire_has_its_own_hazards() {
    const NEW: [&str; 4] = [
        "close-cancels",
        "reissue-runs-twice",
        "mrtr-retry-runs-twice",
        "task-create-retry",
    ];
    let era = ["--era", "2026-07-28"];
    let u = Served::start(&["--server", "unguarded", "--era", "2026-07-28"]);
    let (exit, v, out) = probe(&u, &era);
    assert_eq!(exit, 1, "{out}");
    assert_eq!(v.len(), NEW.len() + EVENTS.len(), "{out}");
    for h in NEW {
        assert_eq!(v[h], "present", "{h}: {out}");
    }
    for h in EVENTS {
        assert_eq!(v[h], "untestable", "{h}: {out}");
    }
    assert!(out.contains("no SDK or reference server offers the Events extension yet"));
    let k = Served::start(&["--server", "keys", "--era", "2026-07-28"]);
    let (_, v, out) = probe(&k, &["--era", "2026-07-28", "--profile", "keys"]);
    assert_eq!(v["task-create-retry"], "absent", "{out}");
    assert_eq!(v["reissue-runs-twice"], "present", "{out}");
    let g = Served::start(&["--server", "guarded", "--era", "2026-07-28"]);
    let (exit, v, out) = probe(&g, &["--era", "2026-07-28", "--profile", "keys"]);
    assert_eq!(exit, 0, "{out}");
    for h in NEW {
        assert_eq!(v[h], "absent", "{h}: {out}");
    }
    let bad = run(&[
        "probe",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--era",
        "2026-07-28",
        "--only",
        "retry-new-id",
    ]);
    assert_eq!(code(&bad), 3);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no hazard of the 2026-07-28 wire"));
}

/// The Events extension's hazards, each present or absent by the one
/// setting it names: the draft's sender and an announced truncation show
/// none; the naive sender (a new webhook-id per attempt) and a silent
/// truncation show all three.
#[test]
fn the_events_hazards_follow_the_sender_and_the_truncation() {
    let events = [
        "--server",
        "guarded",
        "--era",
        "2026-07-28",
        "--events-tick-ms",
        "20",
    ];
    let mut only = vec!["--era", "2026-07-28"];
    for h in EVENTS {
        only.extend(["--only", h]);
    }
    let (exit, v, out) = probe(&Served::start(&events), &only);
    assert_eq!(exit, 0, "{out}");
    for h in EVENTS {
        assert_eq!(v[h], "absent", "{h}: {out}");
    }
    let sets = [
        "--set",
        "server.events_sender=naive",
        "--set",
        "server.events_truncation=silent",
    ];
    let (exit, v, out) = probe(&Served::start(&[&events[..], &sets].concat()), &only);
    assert_eq!(exit, 1, "{out}");
    for h in EVENTS {
        assert_eq!(v[h], "present", "{h}: {out}");
    }
}

/// The `python` preset on `serve`: the built-in arm with the Python SDK's
/// measured quirks, where `unguarded` alone differs: a POSTed
/// `notifications/cancelled` is answered 202 and dropped (the call runs
/// on), and a resume opens with a priming event that names its position.
#[test]
fn the_python_preset_drops_cancellations_and_primes_resumes() {
    let s = Served::start(&["--server", "unguarded", "--sdk", "python"]);
    let only = ["--only", "cancel-ignored", "--only", "resume-unnamed"];
    let (_, v, out) = probe(&s, &only);
    assert_eq!(v["cancel-ignored"], "present", "{out}");
    assert_eq!(v["resume-unnamed"], "absent", "{out}");
    let plain = Served::start(&["--server", "unguarded"]);
    let (_, v, out) = probe(&plain, &only);
    assert_eq!(v["cancel-ignored"], "absent", "{out}");
    assert_eq!(v["resume-unnamed"], "present", "{out}");
}

//! The tasks extension and input-required retries (2026-07-28): in the
//! simulation (calls answered with tasks, polled; what a partition, a
//! restart, a cancel and an expiry do to them; a tool that asks for input
//! after its effect; same seed, same bytes) and over real TCP against
//! `serve` (the task wire a client sees, and the retry that answers,
//! without Node: CI runs the official suite's `tasks-*` and
//! `input-required-result-*` scenarios too).

use super::serve::{Conn, Resp, Served};
use mcp_chaos::run::{Profile, RunReport};
use mcp_chaos::scenario::Scenario;
use serde_json::{json, Value};
use std::path::Path;

fn scenario(path: &str) -> Scenario {
    Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// One run of seed 0 (as the eras tests run theirs).
fn go(s: &Scenario, arm: &str, clients: Option<Profile>, sets: &[(&str, &str)]) -> RunReport {
    super::eras::go(s, 0, arm, clients, sets)
}

const Y2026: (&str, &str) = ("era", "2026-07-28");

/// A task has no stream: a drop planned on a tasks client takes one of
/// its task's answers instead (the `CreateTaskResult`, or a `tasks/get`
/// answer). A lost creation makes a second task on a keyless client
/// (task_create_lost); under keys the re-sent creation gets the task its
/// key made, and a lost poll is asked again: nothing fails, and the drops
/// are applied.
#[test]
fn a_drop_on_a_tasks_client_takes_one_of_its_tasks_answers() {
    let s = scenario("sims/flaky-mobile.toml");
    let plain = go(&s, "unguarded", Some(Profile::Plain), &[Y2026]);
    assert!(plain.metrics.ops_failed > 0, "the drops break plain calls");
    let t = go(&s, "keys", Some(Profile::Tasks), &[Y2026]);
    assert!(t.metrics.ops_failed > 0, "a keyless lost creation");
    assert_eq!(
        t.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["task_create_lost"]
    );
    let k = go(&s, "keys", Some(Profile::TasksKeys), &[Y2026]);
    assert_eq!(k.metrics.ops_failed, 0, "{:?}", k.metrics.failures_by_cause);
    assert_eq!(
        k.metrics.ops_ok + k.metrics.ops_degraded,
        k.metrics.operations
    );
    let applied = k.faults.applied.get("drop").copied().unwrap_or(0);
    assert!(
        applied > 0,
        "the drops met the tasks: {:?}",
        k.faults.applied
    );
    assert!(
        k.faults
            .not_applied
            .iter()
            .all(|n| n.reason.contains("ran as a task and ended after")),
        "{:?}",
        k.faults.not_applied.first()
    );
    // Tasks are of the new wire: on the old one the profile has no client
    // to run.
    let old = go(&s, "unguarded", Some(Profile::Tasks), &[]);
    assert_eq!(old.verdict, mcp_chaos::run::NOT_APPLICABLE);
    assert_eq!(old.metrics.operations, 0);
}

/// A partition that swallows a CreateTaskResult makes a second task
/// (task_create_lost) unless the creation carries a key an arm honours;
/// same seed, same bytes; the profile changes the run.
#[test]
fn a_lost_creation_makes_a_second_task_unless_keyed() {
    let s = scenario("sims/partition-storm.toml");
    let t = go(&s, "keys", Some(Profile::Tasks), &[Y2026]);
    assert!(t.metrics.ops_failed > 0);
    assert_eq!(
        t.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["task_create_lost"]
    );
    let k = go(&s, "keys", Some(Profile::TasksKeys), &[Y2026]);
    assert_eq!(k.metrics.ops_failed, 0, "{:?}", k.metrics.failures_by_cause);
    let again = go(&s, "keys", Some(Profile::TasksKeys), &[Y2026]);
    assert_eq!(k.trace_sha256, again.trace_sha256, "same seed, same bytes");
    assert_ne!(k.trace_sha256, t.trace_sha256);
    // Guarded refuses a keyless creation, as it refuses a keyless call.
    let g = go(&s, "guarded", Some(Profile::Tasks), &[Y2026]);
    assert_eq!(g.metrics.ops_ok, 0);
    assert_eq!(g.metrics.duplicate_side_effects, 0);
}

/// The task table outlives a restart, its running tasks do not: they
/// fail, the client re-issues, and an immediate effect runs twice
/// (restart_mid_execution); transactional effects with durable keys make
/// restarts cost only latency.
#[test]
fn a_restart_fails_running_tasks_and_transactional_effects_absorb_it() {
    let s = scenario("sims/server-restarts.toml");
    let r = go(&s, "guarded", Some(Profile::TasksKeys), &[Y2026]);
    assert!(r.metrics.ops_failed > 0);
    assert_eq!(
        r.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["restart_mid_execution"]
    );
    let tx = [
        Y2026,
        ("server.effects", "transactional"),
        ("server.durable_dedup", "true"),
    ];
    let z = go(&s, "guarded", Some(Profile::TasksKeys), &tx);
    assert_eq!(z.metrics.ops_failed, 0, "{:?}", z.metrics.failures_by_cause);
    assert_eq!(
        z.metrics.ops_ok + z.metrics.ops_degraded,
        z.metrics.operations
    );
}

/// A tool that asks for input after its effect: the retry that answers
/// runs it again on unguarded and keys, and continues it on guarded, under
/// the faults of a flaky network too (its questions and answers lost and
/// re-sent); transactional effects make the question harmless.
#[test]
fn the_retry_that_answers_runs_the_tool_again_unless_guarded() {
    let s = scenario("sims/causes/mrtr_reexecution.toml");
    for arm in ["unguarded", "keys"] {
        let r = go(&s, arm, None, &[]);
        assert_eq!(r.metrics.extra_executions, 1, "{arm}");
        let tx = go(&s, arm, None, &[("server.effects", "transactional")]);
        assert_eq!(
            tx.metrics.ops_failed, 0,
            "{arm}: the asking execution commits nothing"
        );
    }
    let g = go(&s, "guarded", None, &[]);
    assert_eq!((g.metrics.ops_ok, g.metrics.extra_executions), (1, 0));
    // The answering retry of a tasks client becomes a task: the second
    // effect is still the question's, not a lost creation's.
    let t = go(&s, "keys", Some(Profile::TasksKeys), &[]);
    assert_eq!(
        t.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["mrtr_reexecution"]
    );
    let mut fm = scenario("sims/flaky-mobile.toml");
    for group in &mut fm.clients {
        group.asks_input = true;
    }
    let u = go(&fm, "unguarded", Some(Profile::Keys), &[Y2026]);
    assert_eq!(
        u.metrics.ops_failed, u.metrics.operations,
        "every call ran twice"
    );
    let g = go(&fm, "guarded", Some(Profile::Keys), &[Y2026]);
    assert_eq!(g.metrics.ops_failed, 0, "{:?}", g.metrics.failures_by_cause);
    let again = go(&fm, "guarded", Some(Profile::Keys), &[Y2026]);
    assert_eq!(g.trace_sha256, again.trace_sha256, "same seed, same bytes");
}

/// Behind a balancer: a task's requests name it in `Mcp-Name`, and its id
/// names the replica running it, so a round-robin balancer with a store
/// per replica still sends every poll there (without that routing the
/// polls reach replicas that never heard of the task); on a shared store
/// any replica answers. A drop that takes a task's creation is re-sent
/// under its key: on a shared store the key finds its task; with a store
/// per replica the re-send may reach a replica that never saw the key,
/// which makes a second task (task_create_lost), and nothing else fails.
#[test]
fn a_balancer_routes_a_tasks_requests_to_the_replica_running_it() {
    let local = go(
        &scenario("sims/deploy/round-robin-local.toml"),
        "guarded",
        Some(Profile::TasksKeys),
        &[Y2026],
    );
    assert!(
        local
            .metrics
            .failures_by_cause
            .keys()
            .all(|c| c == "task_create_lost"),
        "{:?}",
        local.metrics.failures_by_cause
    );
    let shared = go(
        &scenario("sims/deploy/round-robin-shared.toml"),
        "guarded",
        Some(Profile::TasksKeys),
        &[Y2026],
    );
    assert_eq!(
        shared.metrics.ops_failed, 0,
        "{:?}",
        shared.metrics.failures_by_cause
    );
    assert_eq!(
        shared.metrics.ops_ok, shared.metrics.operations,
        "no replay needed"
    );
    assert!(shared.faults.applied.get("drop").copied().unwrap_or(0) > 0);
}

const V: &str = "2026-07-28";
const EXT: &str = "io.modelcontextprotocol/tasks";

/// A 2026 POST of `method` (`tasks`: the client declares the extension),
/// `name` for `Mcp-Name`.
fn post(c: &mut Conn, id: u64, method: &str, params: Value, tasks: bool) -> Resp {
    send(c, id, method, params, tasks, &[])
}

/// [`post`] from a client that declares the extension, with `extra` headers.
fn post_with(c: &mut Conn, id: u64, method: &str, params: Value, extra: &[(&str, &str)]) -> Resp {
    send(c, id, method, params, true, extra)
}

fn send(
    c: &mut Conn,
    id: u64,
    method: &str,
    mut params: Value,
    tasks: bool,
    extra: &[(&str, &str)],
) -> Resp {
    let caps = if tasks {
        json!({"extensions": {EXT: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps});
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut h = vec![
        ("mcp-protocol-version", V),
        ("mcp-method", method),
        ("authorization", "Bearer alice"),
    ];
    if let Some(n) = &name {
        h.push(("mcp-name", n));
    }
    h.extend_from_slice(extra);
    c.send("POST", &h, &body.to_string())
}

fn body(r: &Resp) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("JSON: {r:?}"))
}

/// The task wire as a client sees it: the extension advertised; a call
/// from a client that declares it answered with a flat CreateTaskResult;
/// polls until completed with the tool's result inline; the methods
/// refused without the extension (-32021) and for an unknown task
/// (-32602); a cancel of a finished task acknowledged without changing it;
/// a re-sent creation under its key answered with the same task.
#[test]
fn serve_answers_a_declared_call_with_a_task_it_can_poll() {
    let s = Served::start(&["--server", "keys", "--era", V]);
    let mut c = s.connect();
    let d = body(&post(&mut c, 1, "server/discover", json!({}), true));
    assert!(
        d["result"]["capabilities"]["extensions"][EXT].is_object(),
        "{d}"
    );
    let call = json!({"name": "ledger_append",
        "arguments": {"tag": "c9-op0", "chunks": 2, "chunk_interval_ms": 20}});
    // Without the extension the call answers on its stream, as always.
    let plain = post(&mut c, 2, "tools/call", call.clone(), false);
    assert_eq!(plain.header("content-type"), Some("text/event-stream"));
    assert!(
        plain.body.contains("\"resultType\":\"complete\""),
        "{plain:?}"
    );
    assert!(!plain.body.contains("taskId"));
    let r = post(&mut c, 3, "tools/call", call.clone(), true);
    let created = body(&r)["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(created.get(absent).is_none(), "{absent}: {created}");
    }
    let id = created["taskId"].as_str().unwrap().to_string();
    let get = json!({"taskId": id});
    let mut done = Value::Null;
    // Two chunks 20 ms apart: done in well under a second, polled for up
    // to 30 s so that a loaded machine is slow, not wrong.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for n in 0.. {
        let v = body(&post(&mut c, 10 + n, "tasks/get", get.clone(), true));
        if v["result"]["status"] == "completed" {
            done = v["result"].clone();
            break;
        }
        assert_eq!(v["result"]["status"], "working", "{v}");
        if std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(done["taskId"], id.as_str(), "completed within 30 s");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("\"executions\":2"),
        "the second execution: {text}"
    );
    // A creation re-sent under its key gets the task the key created.
    let keyed = json!({"name": "ledger_append", "arguments": {"tag": "c9-op1"}});
    let key = [("idempotency-key", "k1")];
    let first = body(&post_with(&mut c, 60, "tools/call", keyed.clone(), &key))["result"].clone();
    let again = body(&post_with(&mut c, 61, "tools/call", keyed, &key))["result"].clone();
    assert_eq!(first["resultType"], "task", "{first}");
    assert_eq!(first["taskId"], again["taskId"], "{again}");
    let r = post(&mut c, 70, "tasks/get", get.clone(), false);
    assert_eq!(
        (r.status, body(&r)["error"]["code"].as_i64()),
        (400, Some(-32021))
    );
    let unknown = json!({"taskId": "task-nobody"});
    let v = body(&post(&mut c, 71, "tasks/get", unknown, true));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let ack = body(&post(&mut c, 72, "tasks/cancel", get.clone(), true));
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    let v = body(&post(&mut c, 73, "tasks/get", get, true));
    assert_eq!(
        v["result"]["status"], "completed",
        "a cancel changes no finished task"
    );
}

/// `ledger_append` with `asks_input` over real TCP: the question (a signed
/// `requestState`, no task), then the retry with the answer: guarded
/// continues the execution (one effect), unguarded runs it again (two); on
/// guarded a tampered state continues nothing: the question is asked again.
#[test]
fn serve_asks_after_the_effect_and_guarded_continues_on_the_answer() {
    for (arm, effects) in [("guarded", 1), ("unguarded", 2)] {
        let s = Served::start(&["--server", arm, "--era", V]);
        let mut c = s.connect();
        let call = json!({"name": "ledger_append",
            "arguments": {"tag": "c1-op0", "chunks": 2, "asks_input": true}});
        let key = [("idempotency-key", "c1-op0")];
        let r = send(&mut c, 1, "tools/call", call.clone(), false, &key);
        let q = body(&r)["result"].clone();
        assert_eq!(q["resultType"], "input_required", "{arm}: {q}");
        assert!(q.get("taskId").is_none());
        let state = q["requestState"].as_str().unwrap().to_string();
        let mut retry = call.clone();
        retry["inputResponses"] =
            json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
        retry["requestState"] = json!(state);
        let r = send(&mut c, 2, "tools/call", retry, false, &key);
        assert!(
            r.body.contains(&format!("\\\"executions\\\":{effects}")),
            "{arm}: {r:?}"
        );
    }
}

/// A POST of `method` on the 2026 wire from a client that declares the
/// tasks extension, with exactly `headers` beside the version and method
/// ones (no token unless given).
fn send_as(c: &mut Conn, id: u64, method: &str, mut params: Value, extra: &[(&str, &str)]) -> Resp {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}});
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut h = vec![
        ("mcp-protocol-version", V),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    h.extend_from_slice(extra);
    c.send("POST", &h, &body.to_string())
}

/// The task table is bounded per principal first: a token with 256 tasks
/// running is refused a 257th (429, `Retry-After`, a JSON-RPC error naming
/// the bound) while another token is served, and a cancel makes room. A
/// task created without a token is its peer address's alone: another
/// connection from it reads it (stateless clients poll on any pooled
/// connection), a request carrying a token does not.
#[test]
fn serve_bounds_running_tasks_per_token_and_keeps_tokenless_ones_to_their_address() {
    let s = Served::start(&["--server", "keys", "--era", V]);
    let mut c = s.connect();
    let long = |tag: &str| {
        json!({"name": "ledger_append",
            "arguments": {"tag": tag, "chunks": 1000, "chunk_interval_ms": 10_000}})
    };
    let alice = [("authorization", "Bearer alice")];
    let mut first = String::new();
    for n in 0..256 {
        let r = send_as(&mut c, n, "tools/call", long(&format!("a{n}")), &alice);
        let v = body(&r);
        assert_eq!(v["result"]["status"], "working", "task {n}: {v}");
        if n == 0 {
            first = v["result"]["taskId"].as_str().unwrap().to_string();
        }
    }
    let r = send_as(&mut c, 300, "tools/call", long("a-past"), &alice);
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"), "{r:?}");
    let v = body(&r);
    assert_eq!(v["id"], 300, "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("256 tasks running"), "names the bound: {v}");
    let bob = [("authorization", "Bearer bob")];
    let v = body(&send_as(&mut c, 301, "tools/call", long("b0"), &bob));
    assert_eq!(
        v["result"]["status"], "working",
        "another token is served: {v}"
    );
    let get = json!({"taskId": first});
    let v = body(&send_as(&mut c, 302, "tasks/cancel", get.clone(), &alice));
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    let v = body(&send_as(&mut c, 303, "tasks/get", get, &alice));
    assert_eq!(v["result"]["status"], "cancelled", "stopped at once: {v}");
    let v = body(&send_as(&mut c, 304, "tools/call", long("a-again"), &alice));
    assert_eq!(v["result"]["status"], "working", "a cancel made room: {v}");

    let mut mine = s.connect();
    let mut other = s.connect();
    let v = body(&send_as(&mut mine, 1, "tools/call", long("anon"), &[]));
    let id = v["result"]["taskId"].as_str().expect("a task").to_string();
    let get = json!({"taskId": id});
    let v = body(&send_as(&mut other, 2, "tasks/get", get.clone(), &[]));
    assert_eq!(
        v["result"]["status"], "working",
        "its address reads it: {v}"
    );
    for token in [&bob[..], &alice[..]] {
        let v = body(&send_as(&mut mine, 3, "tasks/get", get.clone(), token));
        assert_eq!(v["error"]["code"], -32602, "no token reads it: {v}");
        let v = body(&send_as(&mut mine, 4, "tasks/cancel", get.clone(), token));
        assert_eq!(v["error"]["code"], -32602, "nor cancels it: {v}");
    }
}

/// An execution stops at its task's expiry, as at a cancel: nobody can
/// read what it would finish. A 1 s call under a 300 ms `task_ttl_ms`,
/// transactional effects, no fault: each attempt's task expires before
/// its commit, so no attempt takes an effect (the call fails
/// `task_expired`, never twice applied).
#[test]
fn an_execution_stops_at_its_tasks_expiry() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/causes/task_expired.toml"),
    )
    .unwrap();
    let text = text
        .replace("chunks = 2\n", "chunks = 20\n")
        .replace("keys = true\n", "")
        .replace(
            "[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 60\nduration_ms = 600\n",
            "",
        );
    let mut s = Scenario::parse(&text).unwrap();
    s.set("server.effects", "transactional").unwrap();
    let r = go(&s, "unguarded", Some(Profile::Tasks), &[Y2026]);
    assert_eq!(r.metrics.operations, 1);
    assert_eq!(
        r.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["task_expired"],
        "{:?}",
        r.metrics
    );
    assert_eq!(r.metrics.duplicate_side_effects, 0, "{:?}", r.metrics);
    // rmcp's tasks under the arm expire on the simulated clock alike (its
    // tool takes its effect at its start: the re-issue runs it again).
    let r = go(&s, "rmcp", Some(Profile::Tasks), &[Y2026]);
    assert_eq!(
        r.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["task_expired"],
        "{:?}",
        r.metrics
    );
}

/// A response's JSON-RPC message, in a JSON body or an SSE stream's
/// first `data:`.
fn sse_or_json(r: &Resp) -> Value {
    let data = r.body.lines().find_map(|l| l.strip_prefix("data: "));
    serde_json::from_str(data.unwrap_or(&r.body)).unwrap_or(Value::Null)
}

/// How many times `tag`'s tool ran, by `ledger_read` (token alice).
fn executions_of(c: &mut Conn, tag: &str) -> String {
    let read = json!({"name": "ledger_read", "arguments": {"tag": tag}});
    let r = send(c, 90, "tools/call", read, false, &[]);
    let v = sse_or_json(&r);
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let n: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    n["executions"][tag].to_string()
}

/// A `requestState` guarded cannot verify continues nothing and runs
/// nothing: tampered, empty, a number, an object, or signed by another
/// process (no `--state-key-file`) — the question kept under the key is
/// asked again, or without a key the retry is refused (400 naming
/// `requestState`); the tool ran once. With `--state-key-file`, a
/// restarted server verifies what the one before signed and continues it.
#[test]
fn guarded_runs_nothing_on_a_state_it_cannot_verify() {
    let file = super::cli::scratch("state-key").join("key");
    let _ = std::fs::remove_file(&file);
    let keyed = ["--server", "guarded", "--era", V, "--state-key-file"];
    let args: Vec<&str> = keyed
        .iter()
        .copied()
        .chain([file.to_str().unwrap()])
        .collect();
    let ask = |c: &mut Conn, tag: &str, key: &[(&str, &str)]| {
        let call = json!({"name": "ledger_append",
            "arguments": {"tag": tag, "chunks": 1, "asks_input": true}});
        let q = body(&send(c, 1, "tools/call", call.clone(), false, key))["result"].clone();
        assert_eq!(q["resultType"], "input_required", "{q}");
        (call, q)
    };
    let retry = |call: &Value, state: Value| {
        let mut r = call.clone();
        r["inputResponses"] =
            json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
        r["requestState"] = state;
        r
    };
    let s = Served::start(&args);
    let mut c = s.connect();
    let key = [("idempotency-key", "k-bad")];
    let (call, q) = ask(&mut c, "bad", &key);
    let good = q["requestState"].as_str().unwrap().to_string();
    let mut tampered = good.clone();
    tampered.replace_range(..1, if good.starts_with('A') { "B" } else { "A" });
    for state in [json!(tampered), json!(""), json!(5), json!({"n": 1})] {
        let r = send(
            &mut c,
            2,
            "tools/call",
            retry(&call, state.clone()),
            false,
            &key,
        );
        let again = body(&r)["result"].clone();
        assert_eq!(again, q, "{state}: the question again: {r:?}");
    }
    assert_eq!(executions_of(&mut c, "bad"), "1", "nothing ran again");
    // Without a key there is no question to ask again: refused.
    let (plain, _) = ask(&mut c, "keyless", &[("idempotency-key", "k-keyless")]);
    let r = send(
        &mut c,
        3,
        "tools/call",
        retry(&plain, json!("x")),
        false,
        &[("idempotency-key", "k-other")],
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("requestState cannot be verified"), "{r:?}");
    assert_eq!(executions_of(&mut c, "keyless"), "1");
    // A restart with the same key file verifies the state and continues.
    drop(c);
    drop(s);
    let s = Served::start(&args);
    let mut c = s.connect();
    let (call, q) = ask(&mut c, "across", &[("idempotency-key", "k-across")]);
    drop(c);
    drop(s);
    let s = Served::start(&args);
    let mut c = s.connect();
    let r = send(
        &mut c,
        4,
        "tools/call",
        retry(&call, q["requestState"].clone()),
        false,
        &[("idempotency-key", "k-across")],
    );
    let done = sse_or_json(&r)["result"].clone();
    assert_eq!(
        done["resultType"], "complete",
        "continued after the restart: {r:?}"
    );
    // Another process without the file cannot verify it: nothing runs.
    let other = Served::start(&["--server", "guarded", "--era", V]);
    let mut c = other.connect();
    let r = send(
        &mut c,
        5,
        "tools/call",
        retry(&call, q["requestState"].clone()),
        false,
        &[("idempotency-key", "k-fresh")],
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(
        executions_of(&mut c, "across"),
        "0",
        "this process ran nothing"
    );
}

/// The rmcp arm serves a tasks client with rmcp's own tasks (its
/// `TaskManager`, answering on SSE, which the client reads as it reads
/// JSON): every call becomes a task polled to its result, with seeded ids
/// (same seed, same bytes); with no fault nothing fails. rmcp honours no
/// key, so a lost creation makes a second task even under `tasks+keys`
/// (task_create_lost), where the built-in keys arm loses nothing.
#[test]
fn rmcp_answers_a_tasks_client_with_its_own_tasks() {
    use mcp_chaos::history::{ClientRecord, Rec, TaskEvent};
    use mcp_chaos::hosts::sut::Arm;
    use mcp_chaos::run::{run_arm, Options};
    let s = scenario("sims/half-open.toml");
    let opts = Options {
        clients: Some(Profile::Tasks),
        sets: vec![("era".into(), "2026-07-28".into())],
        deployment: String::new(),
    };
    let (r, h) = run_arm(&s, 0, Arm::Rmcp, &opts).unwrap();
    assert_eq!(r.metrics.ops_failed, 0, "{:?}", r.metrics.failures_by_cause);
    let created: Vec<String> = h
        .entries()
        .iter()
        .filter_map(|e| match &e.record {
            Rec::Client(ClientRecord::Task {
                task,
                event: TaskEvent::Created,
                ..
            }) => Some(task.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        created.len() as u64 >= r.metrics.operations,
        "a task per call: {} for {}",
        created.len(),
        r.metrics.operations
    );
    assert!(
        created.iter().all(|t| t.starts_with("task-")),
        "{created:?}"
    );
    let (again, _) = run_arm(&s, 0, Arm::Rmcp, &opts).unwrap();
    assert_eq!(r.trace_sha256, again.trace_sha256, "same seed, same bytes");
    // A drop planned on a tasks client takes one of its task's answers
    // whether it comes as JSON (the built-in) or on SSE (rmcp): the drops
    // apply on both (give or take one a timing moves past the task's end),
    // and lose creations on both.
    let fm = scenario("sims/flaky-mobile.toml");
    let applied = |r: &RunReport| r.faults.applied.get("drop").copied().unwrap_or(0);
    let on_rmcp = go(&fm, "rmcp", Some(Profile::Tasks), &[Y2026]);
    let on_model = go(&fm, "unguarded", Some(Profile::Tasks), &[Y2026]);
    assert!(
        applied(&on_rmcp) + 2 >= applied(&on_model) && applied(&on_model) > 0,
        "{:?} against {:?}",
        on_rmcp.faults.applied,
        on_model.faults.applied
    );
    assert!(
        on_rmcp.metrics.failures_by_cause.get("task_create_lost") > Some(&0),
        "{:?}",
        on_rmcp.metrics.failures_by_cause
    );
    // The cause's scenario, its partition moved to where rmcp's answer
    // is on the way (rmcp answers a few ms later than the built-in).
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/causes/task_create_lost.toml"),
    )
    .unwrap()
    .replace("at_ms = 45\n", "at_ms = 60\n");
    let lost = Scenario::parse(&text).unwrap();
    let keyed = go(&lost, "rmcp", Some(Profile::TasksKeys), &[]);
    assert_eq!(
        keyed.metrics.failures_by_cause.keys().collect::<Vec<_>>(),
        vec!["task_create_lost"],
        "{:?}",
        keyed.metrics
    );
    let keys = go(&lost, "keys", Some(Profile::TasksKeys), &[]);
    assert_eq!(keys.metrics.ops_failed, 0, "{:?}", keys.metrics);
}

//! `serve --era 2026-07-28` (and `--era both`) over real TCP, without
//! Node: the checks in the order the transport gives them, discover with
//! no session, GET refused, guarded's keyless refusal, a keyed call's
//! stream with `resultType` and no event ids. CI runs the official suite
//! itself (tests/conformance/run --era 2026-07-28).

use super::serve::{Conn, Resp, Served};
use serde_json::{json, Value};

const V: &str = "2026-07-28";

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A 2026 POST of `method` with `params` (its `_meta` added unless it has
/// one) and `headers` beyond the version and method headers.
fn post(c: &mut Conn, id: u64, method: &str, mut params: Value, extra: &[(&str, &str)]) -> Resp {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut h = vec![("mcp-protocol-version", V), ("mcp-method", method)];
    h.extend_from_slice(extra);
    c.send("POST", &h, &body.to_string())
}

fn error_code(r: &Resp) -> i64 {
    let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("JSON: {r:?}"));
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {r:?}"))
}

#[test]
fn the_new_wire_checks_in_order_and_keeps_no_session() {
    let s = Served::start(&["--server", "guarded", "--era", V]);
    let mut c = s.connect();
    let r = post(&mut c, 1, "server/discover", json!({}), &[]);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("mcp-session-id").is_none(),
        "no session on this wire"
    );
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["result"]["supportedVersions"], json!([V]));
    assert_eq!(v["result"]["resultType"], "complete");
    // A missing version header comes first, then `_meta`, then a header
    // that is not the body's.
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}});
    let r = c.send("POST", &[("mcp-method", "tools/list")], &body.to_string());
    assert_eq!((r.status, error_code(&r)), (400, -32020), "{r:?}");
    let r = post(
        &mut c,
        3,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V}}),
        &[],
    );
    assert_eq!((r.status, error_code(&r)), (400, -32602), "{r:?}");
    let r = post(
        &mut c,
        4,
        "tools/call",
        json!({"name": "ledger_read", "arguments": {}}),
        &[("mcp-name", "ledger_append")],
    );
    assert_eq!((r.status, error_code(&r)), (400, -32020), "{r:?}");
    let r = post(&mut c, 5, "ping", json!({}), &[]);
    assert_eq!((r.status, error_code(&r)), (404, -32601), "{r:?}");
    let r = c.send("GET", &[("mcp-protocol-version", V)], "");
    assert_eq!(r.status, 405, "{r:?}");
    assert_eq!(r.header("allow"), Some("POST"));
}

#[test]
fn guarded_wants_a_key_and_a_keyed_call_streams_without_ids() {
    let s = Served::start(&["--server", "guarded", "--era", V]);
    let mut c = s.connect();
    let call = json!({"name": "ledger_append", "arguments": {"tag": "t1", "chunks": 3},
        "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}});
    let named = [("mcp-name", "ledger_append")];
    let r = post(&mut c, 1, "tools/call", call.clone(), &named);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.body.contains("Idempotency-Key") && r.body.contains("bearer token"),
        "{r:?}"
    );
    let keyed = [
        ("mcp-name", "ledger_append"),
        ("authorization", "Bearer b1"),
        ("idempotency-key", "k1"),
    ];
    let r = post(&mut c, 2, "tools/call", call.clone(), &keyed);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    assert!(
        !r.body.lines().any(|l| l.starts_with("id:")),
        "no event ids: {}",
        r.body
    );
    let last: Value = r
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .expect("a result event");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    // The same key again: the stored result, not a second execution.
    let r = post(&mut c, 3, "tools/call", call, &keyed);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains("\"executions\\\":1"),
        "one execution: {}",
        r.body
    );
}

#[test]
fn both_wires_on_one_endpoint() {
    let s = Served::start(&["--server", "unguarded", "--era", "both"]);
    let mut c = s.connect();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = c.send("POST", &[], &init.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("mcp-session-id").is_some(),
        "the 2025 path issues a session"
    );
    let r = post(&mut c, 2, "server/discover", json!({}), &[]);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("mcp-session-id").is_none());
}

/// A header the protocol defines as one value, sent twice, is a 400 naming
/// it (-32020 on the 2026 wire), whatever the order of the values: a
/// gateway reading the last `Mcp-Name` would authorize another tool than
/// the one that runs.
#[test]
fn a_single_valued_header_sent_twice_is_refused() {
    let modern = Served::start(&["--server", "guarded", "--era", V]);
    let mut c = modern.connect();
    let read = json!({"name": "ledger_read", "arguments": {"tag": "t"}});
    let pairs = [
        ("mcp-name", "ledger_read", "ledger_append"),
        ("mcp-method", "tools/call", "tools/list"),
        ("mcp-protocol-version", V, "2025-11-25"),
        ("idempotency-key", "k1", "k2"),
        ("mcp-session-id", "a", "b"),
        ("last-event-id", "1", "2"),
    ];
    for (name, a, b) in pairs {
        for (first, second) in [(a, b), (b, a)] {
            let extra = [("mcp-name", "ledger_read"), (name, first), (name, second)];
            // Mcp-Name is sent once more only when it is the header tried.
            let extra = if name == "mcp-name" {
                &extra[1..]
            } else {
                &extra[..]
            };
            let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "ledger_read", "arguments": {"tag": "t"}, "_meta": meta()}});
            let mut h = vec![("mcp-protocol-version", V), ("mcp-method", "tools/call")];
            h.retain(|(k, _)| *k != name);
            h.extend_from_slice(extra);
            let r = c.send("POST", &h, &body.to_string());
            assert_eq!(r.status, 400, "{name} {first},{second}: {r:?}");
            assert_eq!(error_code(&r), -32020, "{name}: {r:?}");
            assert!(r.body.contains(name), "names {name}: {r:?}");
        }
    }
    let ok = post(
        &mut c,
        8,
        "tools/call",
        read,
        &[("mcp-name", "ledger_read")],
    );
    assert_eq!(ok.status, 200, "once each is served: {ok:?}");

    let old = Served::start(&["--server", "keys"]);
    let mut c = old.connect();
    let sid = super::serve::initialize(&mut c, &[]);
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let r = c.send(
        "POST",
        &[("mcp-session-id", &sid), ("mcp-session-id", "other")],
        body,
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("mcp-session-id is sent 2 times"), "{r:?}");
    let r = c.send("POST", &[("mcp-session-id", &sid)], body);
    assert_eq!(r.status, 200, "{r:?}");
}

/// `--era both` routes a GET or DELETE by its version header: one naming
/// the 2026 revision gets the 2026 wire's 405 `Allow: POST`; one naming a
/// 2025 revision is the 2025 path's.
#[test]
fn a_dual_era_server_answers_a_2026_get_or_delete_as_the_2026_wire() {
    let s = Served::start(&["--server", "unguarded", "--era", "both"]);
    let mut c = s.connect();
    for m in ["GET", "DELETE"] {
        let r = c.send(m, &[("mcp-protocol-version", V)], "");
        assert_eq!(
            (r.status, r.header("allow")),
            (405, Some("POST")),
            "{m}: {r:?}"
        );
        let r = c.send(m, &[("mcp-protocol-version", "2025-11-25")], "");
        assert_ne!(r.status, 405, "{m} on the 2025 path: {r:?}");
    }
}

fn result(r: &Resp) -> Value {
    let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("JSON: {r:?}"));
    v["result"].clone()
}

/// `--events-tick-ms`: the Events extension in discover, `clock-tick` in
/// `events/list`, a poll from now, and each refusal with its code. Without
/// the flag the methods are not found.
#[test]
fn the_events_extension_polls_from_a_cursor_and_refuses_bad_ones() {
    let plain = Served::start(&["--server", "unguarded", "--era", V]);
    let mut c = plain.connect();
    let r = post(&mut c, 1, "server/discover", json!({}), &[]);
    assert!(result(&r)["capabilities"]["extensions"]
        .get("io.modelcontextprotocol/events")
        .is_none());
    let r = post(&mut c, 2, "events/list", json!({}), &[]);
    assert_eq!((r.status, error_code(&r)), (404, -32601), "{r:?}");

    let s = Served::start(&[
        "--server",
        "unguarded",
        "--era",
        V,
        "--events-tick-ms",
        "10",
    ]);
    let mut c = s.connect();
    let r = post(&mut c, 1, "server/discover", json!({}), &[]);
    assert_eq!(
        result(&r)["capabilities"]["extensions"]["io.modelcontextprotocol/events"],
        json!({})
    );
    let r = post(&mut c, 2, "events/list", json!({}), &[]);
    let list = result(&r);
    assert_eq!(list["events"][0]["name"], "clock-tick", "{r:?}");
    assert_eq!(
        list["events"][0]["delivery"],
        json!(["poll", "push", "webhook"])
    );
    let read = |c: &mut Conn, id: u64, cursor: Value| {
        let p = json!({"name": "clock-tick", "arguments": {}, "cursor": cursor});
        post(c, id, "events/poll", p, &[])
    };
    // From now: nothing yet, and a cursor to resume from.
    let r = read(&mut c, 3, Value::Null);
    let first = result(&r);
    assert_eq!(first["events"], json!([]), "{r:?}");
    assert_eq!(
        (first["truncated"].clone(), first["nextPollMs"].clone()),
        (json!(false), json!(1000))
    );
    let cursor = first["cursor"].as_str().unwrap().to_string();
    // Resumed from it, later: the ticks after it, oldest first, each once.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let r = read(&mut c, 4, json!(cursor));
    let next = result(&r);
    let ticks: Vec<i64> = next["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["tick"].as_i64().unwrap())
        .collect();
    assert!(!ticks.is_empty(), "ticks every 10 ms: {r:?}");
    assert!(ticks.windows(2).all(|w| w[1] == w[0] + 1), "{ticks:?}");
    let at: i64 = cursor.rsplit('@').next().unwrap().parse().unwrap();
    assert_eq!(ticks[0], at + 1, "exclusive of the cursor: {ticks:?}");
    // A cursor it never wrote, another type's, one ahead of the source.
    for (id, bad) in [(5, "nope"), (6, "other@1"), (7, "clock-tick@99999999")] {
        let r = read(&mut c, id, json!(bad));
        assert_eq!((r.status, error_code(&r)), (200, -32602), "{bad}: {r:?}");
    }
    let p = json!({"name": "no-such-event", "arguments": {}, "cursor": null});
    let r = post(&mut c, 8, "events/poll", p, &[]);
    assert_eq!((r.status, error_code(&r)), (200, -32023), "{r:?}");
}

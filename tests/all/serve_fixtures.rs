//! `serve --fixtures conformance` over real TCP, without Node: the
//! official conformance suite's fixtures answer as its scenarios check
//! (a tool, a resource and a template, a prompt, completion, and one
//! sampling round trip through the client's response POST), and without
//! the flag none of them is there. CI runs the suite itself
//! (tests/conformance/run).

use super::serve::{Conn, Served};
use serde_json::{json, Value};
use std::io::{BufRead, Read};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-chaos");

/// Opens a session whose client declares `capabilities`.
fn session(c: &mut Conn, capabilities: Value) -> (String, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"}}});
    let r = c.send("POST", &[], &init.to_string());
    assert_eq!(r.status, 200, "{r:?}");
    let sid = r
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let result: Value = serde_json::from_str(&r.body).expect("JSON");
    (sid, result["result"].clone())
}

/// Request `id` of `method`, its JSON-RPC answer (from a JSON body or the
/// last message of an SSE stream).
fn rpc(c: &mut Conn, sid: &str, id: u64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let r = c.send("POST", &[("mcp-session-id", sid)], &body.to_string());
    assert_eq!(r.status, 200, "{method}: {r:?}");
    let last = r
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| !d.is_empty())
        .map(str::to_string)
        .unwrap_or(r.body.clone());
    serde_json::from_str(&last).unwrap_or_else(|_| panic!("{method}: no JSON in {:?}", r.body))
}

fn tool_names(c: &mut Conn, sid: &str) -> Vec<String> {
    let list = rpc(c, sid, 2, "tools/list", json!({}));
    list["result"]["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_string())
        .collect()
}

#[test]
fn without_the_flag_no_fixture_is_offered() {
    let s = Served::start(&["--server", "guarded"]);
    let mut c = s.connect();
    let (sid, init) = session(&mut c, json!({"sampling": {}}));
    let caps = &init["capabilities"];
    assert!(caps.get("prompts").is_none(), "{caps}");
    assert!(caps.get("completions").is_none(), "{caps}");
    assert_eq!(tool_names(&mut c, &sid), ["ledger_append", "ledger_read"]);
    let call = rpc(
        &mut c,
        &sid,
        3,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {}}),
    );
    assert_eq!(call["error"]["code"], -32602, "{call}");
    for (id, method) in [(4, "prompts/list"), (5, "completion/complete")] {
        let r = rpc(&mut c, &sid, id, method, json!({}));
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    let r = rpc(
        &mut c,
        &sid,
        6,
        "resources/read",
        json!({"uri": "test://static-text"}),
    );
    assert!(r.get("error").is_some(), "{r}");
}

#[test]
fn fixtures_answer_beside_the_ledger_tools() {
    let s = Served::start(&["--server", "guarded", "--fixtures", "conformance"]);
    let mut c = s.connect();
    let (sid, init) = session(&mut c, json!({}));
    let caps = &init["capabilities"];
    assert!(
        caps.get("prompts").is_some() && caps.get("completions").is_some(),
        "{caps}"
    );
    let names = tool_names(&mut c, &sid);
    assert_eq!(names[..2], ["ledger_append", "ledger_read"], "{names:?}");
    assert!(names.iter().any(|n| n == "test_sampling"), "{names:?}");
    // A tool, on its call's stream.
    let r = rpc(
        &mut c,
        &sid,
        3,
        "tools/call",
        json!({"name": "test_simple_text"}),
    );
    assert_eq!(
        r["result"]["content"][0]["text"], "This is a simple text response for testing.",
        "{r}"
    );
    // The ledger tools are as they were.
    let r = rpc(
        &mut c,
        &sid,
        4,
        "tools/call",
        json!({"name": "ledger_append", "arguments": {"tag": "t"}}),
    );
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("ledger:1:1:t")),
        "{r}"
    );
    // A resource, a template, and the clock still there.
    let r = rpc(
        &mut c,
        &sid,
        5,
        "resources/read",
        json!({"uri": "test://static-text"}),
    );
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/plain", "{r}");
    let r = rpc(
        &mut c,
        &sid,
        6,
        "resources/read",
        json!({"uri": "test://template/42/data"}),
    );
    let text = r["result"]["contents"][0]["text"].as_str().unwrap_or("");
    assert_eq!(
        serde_json::from_str::<Value>(text).ok(),
        Some(json!({"id": "42", "templateTest": true, "data": "Data for ID: 42"})),
        "{r}"
    );
    let r = rpc(
        &mut c,
        &sid,
        7,
        "resources/read",
        json!({"uri": "clock://tick"}),
    );
    assert!(r["result"]["contents"][0]["text"].is_string(), "{r}");
    let r = rpc(
        &mut c,
        &sid,
        8,
        "resources/read",
        json!({"uri": "test://nothing"}),
    );
    assert_eq!(r["error"]["code"], -32002, "{r}");
    // A prompt with its arguments substituted, and one refused without.
    let r = rpc(
        &mut c,
        &sid,
        9,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments",
        "arguments": {"arg1": "alpha", "arg2": "beta"}}),
    );
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='alpha', arg2='beta'",
        "{r}"
    );
    let r = rpc(
        &mut c,
        &sid,
        10,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments"}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Completion: the candidates the value begins.
    let r = rpc(
        &mut c,
        &sid,
        11,
        "completion/complete",
        json!({
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "par"}}),
    );
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["paris", "park", "party"]),
        "{r}"
    );
}

/// The SSE data lines of one chunk after another of `c`'s response body,
/// until one contains `want`: the data line that does.
fn read_until(c: &mut Conn, want: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        c.r.read_line(&mut line).expect("a chunk size");
        let n = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
        assert!(
            n > 0,
            "the stream ended before {want:?}; it carried {seen:?}"
        );
        let mut chunk = vec![0; n + 2];
        c.r.read_exact(&mut chunk).expect("a chunk");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
        if let Some(found) = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find(|d| d.contains(want))
        {
            return found.trim().to_string();
        }
    }
}

#[test]
fn a_sampling_call_returns_what_the_clients_response_post_said() {
    for arm in ["guarded", "cancel"] {
        let s = Served::start(&["--server", arm, "--fixtures", "conformance"]);
        let mut c = s.connect();
        let (sid, _) = session(&mut c, json!({"sampling": {}}));
        let h = [("mcp-session-id", sid.as_str())];
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "test_sampling", "arguments": {"prompt": "say hi"}}});
        let mut stream = s.connect();
        let head = {
            use std::io::Write;
            let body = call.to_string();
            let req = format!(
                "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nmcp-session-id: {sid}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.r.get_mut().write_all(req.as_bytes()).unwrap();
            stream.read_head()
        };
        assert_eq!(head.status, 200, "{arm}: {head:?}");
        // The server's request to the client, on the call's stream.
        let ask: Value =
            serde_json::from_str(&read_until(&mut stream, "sampling/createMessage")).unwrap();
        assert_eq!(
            ask["params"]["messages"][0]["content"]["text"], "say hi",
            "{arm}: {ask}"
        );
        assert!(ask.get("id").is_some_and(|i| !i.is_null()), "{arm}: {ask}");
        // The client's answer: a POST of a JSON-RPC response, 202.
        let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"role": "assistant",
            "content": {"type": "text", "text": "hello from the test client"},
            "model": "m", "stopReason": "endTurn"}});
        let r = c.send("POST", &h, &answer.to_string());
        assert_eq!(r.status, 202, "{arm}: {r:?}");
        let result: Value = serde_json::from_str(&read_until(&mut stream, "\"id\":7")).unwrap();
        assert_eq!(
            result["result"]["content"][0]["text"], "LLM response: hello from the test client",
            "{arm}: {result}"
        );
        // A client that did not declare sampling gets a tool error.
        let (other, _) = session(&mut c, json!({}));
        let r = rpc(
            &mut c,
            &other,
            8,
            "tools/call",
            json!({"name": "test_sampling", "arguments": {"prompt": "x"}}),
        );
        assert_eq!(r["result"]["isError"], true, "{arm}: {r}");
    }
}

#[test]
fn fixtures_on_an_rmcp_arm_is_a_usage_error() {
    let out = Command::new(BIN)
        .args([
            "serve",
            "--server",
            "rmcp",
            "--fixtures",
            "conformance",
            "--addr",
            "127.0.0.1:0",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--fixtures") && err.contains("built-in"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args(["serve", "--fixtures", "everything"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
}

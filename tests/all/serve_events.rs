//! Webhook delivery on `serve` (the Events extension, docs/events.md):
//! a subscription delivers each tick to a loopback receiver, signed as
//! Standard Webhooks sign; every bad subscription gets its documented
//! error, and a principal's subscriptions are capped (429, `Retry-After`).

use super::serve::{Conn, Resp, Served};
use mcp_chaos::protocol::webhook as wh;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

const V: &str = "2026-07-28";

fn post(c: &mut Conn, id: u64, method: &str, mut params: Value, bearer: Option<&str>) -> Resp {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/events": {}}}});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let auth = bearer.map(|t| format!("Bearer {t}"));
    let mut h = vec![("mcp-protocol-version", V), ("mcp-method", method)];
    if let Some(a) = &auth {
        h.push(("authorization", a.as_str()));
    }
    c.send("POST", &h, &body.to_string())
}

fn body(r: &Resp) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("JSON: {r:?}"))
}

const SECRET_KEY: [u8; 32] = [7; 32];

fn subscribe(url: &str) -> Value {
    json!({"name": "clock-tick", "arguments": {},
        "delivery": {"mode": "webhook", "url": url, "secret": wh::secret_of(&SECRET_KEY)},
        "cursor": null, "ttlMs": 5000})
}

/// One request a receiver took: its headers (lowercased names) and body.
fn take(listener: &TcpListener) -> (Vec<(String, String)>, Vec<u8>) {
    let (s, _) = listener.accept().expect("a delivery arrives");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(s);
    let mut headers = Vec::new();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("POST /hook "), "{line:?}");
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    r.get_mut()
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .unwrap();
    (headers, body)
}

#[test]
fn a_subscription_delivers_each_tick_signed_to_a_loopback_receiver() {
    let s = Served::start(&["--server", "guarded", "--era", V, "--events-tick-ms", "20"]);
    let receiver = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        receiver.local_addr().unwrap().port()
    );
    let mut c = s.connect();
    let r = post(
        &mut c,
        1,
        "events/subscribe",
        subscribe(&url),
        Some("alice"),
    );
    let sub = body(&r)["result"].clone();
    assert!(
        sub["id"].as_str().is_some_and(|i| i.starts_with("sub_")),
        "{r:?}"
    );
    assert!(sub["cursor"]
        .as_str()
        .is_some_and(|c| c.starts_with("clock-tick@")));
    assert_eq!(sub["truncated"], false);
    // A refresh is the same subscription.
    let again = post(
        &mut c,
        2,
        "events/subscribe",
        subscribe(&url),
        Some("alice"),
    );
    assert_eq!(body(&again)["result"]["id"], sub["id"], "{again:?}");
    let mut last = 0;
    for _ in 0..3 {
        let (h, bytes) = take(&receiver);
        let get = |k: &str| h.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let id = get("webhook-id").expect("webhook-id");
        let ts: i64 = get("webhook-timestamp").unwrap().parse().unwrap();
        let sig = get("webhook-signature").unwrap();
        assert!(wh::verify(&SECRET_KEY, &id, ts, &bytes, &sig), "{h:?}");
        assert_eq!(get("x-mcp-subscription-id").as_deref(), sub["id"].as_str());
        let o: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(o["eventId"], id, "the webhook-id is the eventId");
        let tick = o["data"]["tick"].as_u64().unwrap();
        assert!(tick > last, "{o}");
        last = tick;
    }
    let p = json!({"name": "clock-tick", "arguments": {}, "delivery": {"url": url}});
    let r = post(&mut c, 3, "events/unsubscribe", p.clone(), Some("alice"));
    assert_eq!(
        body(&r)["result"],
        json!({"resultType": "complete"}),
        "{r:?}"
    );
    let r = post(&mut c, 4, "events/unsubscribe", p, Some("bob"));
    assert_eq!(body(&r)["error"]["code"], -32023, "{r:?}");
    assert_eq!(body(&r)["error"]["data"]["kind"], "subscription");
}

/// `--allow-remote`: a receiver named by another host than the three
/// loopback names (here 127.0.0.2, another address of the machine) is
/// refused without it and delivered to with it; the flag without events
/// is refused in one line.
#[test]
fn allow_remote_lets_a_receiver_off_the_loopback_names_take_deliveries() {
    let Ok(receiver) = TcpListener::bind("127.0.0.2:0") else {
        // A machine without 127.0.0.2 cannot hold this test; the refusal
        // without the flag is held below either way.
        return;
    };
    let url = format!(
        "http://127.0.0.2:{}/hook",
        receiver.local_addr().unwrap().port()
    );
    let args = ["--server", "guarded", "--era", V, "--events-tick-ms", "20"];
    let plain = Served::start(&args);
    let r = post(
        &mut plain.connect(),
        1,
        "events/subscribe",
        subscribe(&url),
        Some("a"),
    );
    assert_eq!(body(&r)["error"]["code"], -32602, "{r:?}");
    let remote = Served::start(&[&args[..], &["--allow-remote"]].concat());
    let r = post(
        &mut remote.connect(),
        1,
        "events/subscribe",
        subscribe(&url),
        Some("a"),
    );
    assert!(body(&r)["result"]["id"].is_string(), "{r:?}");
    let (h, _) = take(&receiver);
    assert!(h.iter().any(|(k, _)| k == "webhook-signature"), "{h:?}");
    let o = crate::cli::bin()
        .args(["serve", "--allow-remote", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--allow-remote") && err.contains("--events-tick-ms"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_bad_subscription_gets_its_code_and_a_principal_its_cap() {
    let s = Served::start(&[
        "--server",
        "unguarded",
        "--era",
        V,
        "--events-tick-ms",
        "1000",
    ]);
    let mut c = s.connect();
    let url = "http://127.0.0.1:9/hook";
    let code = |c: &mut Conn, p: Value, who: Option<&str>| {
        let r = post(c, 1, "events/subscribe", p, who);
        assert_eq!(r.status, 200, "{r:?}");
        let v = body(&r);
        (
            v["error"]["code"].as_i64().unwrap_or(0),
            v["error"]["message"].to_string(),
        )
    };
    assert_eq!(code(&mut c, subscribe(url), None).0, -32024, "no principal");
    let mut p = subscribe(url);
    p["delivery"]["url"] = json!("https://127.0.0.1/hook");
    assert_eq!(code(&mut c, p, Some("a")).0, -32602);
    let mut p = subscribe(url);
    p["delivery"]["url"] = json!("http://example.com/hook");
    let (n, m) = code(&mut c, p, Some("a"));
    assert!(
        n == -32602 && m.contains("only to receivers on localhost") && m.contains("--allow-remote"),
        "{m}"
    );
    let mut p = subscribe(url);
    p["delivery"]["secret"] = json!("hunter2");
    assert_eq!(code(&mut c, p, Some("a")).0, -32602);
    let mut p = subscribe(url);
    p["name"] = json!("no-such-event");
    assert_eq!(code(&mut c, p, Some("a")).0, -32023);
    let mut p = subscribe(url);
    p["delivery"]["mode"] = json!("push");
    assert_eq!(code(&mut c, p, Some("a")).0, -32026);
    let mut p = subscribe(url);
    p["cursor"] = json!("clock-tick@999999");
    assert_eq!(code(&mut c, p, Some("a")).0, -32602, "a cursor ahead");
    // 16 a principal (each URL its own subscription), then 429.
    for port in 0..16 {
        let u = format!("http://127.0.0.1:{}/hook", 10_000 + port);
        let r = post(&mut c, 2, "events/subscribe", subscribe(&u), Some("cap"));
        assert!(body(&r)["result"]["id"].is_string(), "{r:?}");
    }
    let r = post(&mut c, 3, "events/subscribe", subscribe(url), Some("cap"));
    assert_eq!(r.status, 429, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(body(&r)["error"]["code"], -32025);
    assert_eq!(body(&r)["error"]["data"]["max"], 16);
    // Another principal is not held to it.
    let r = post(&mut c, 4, "events/subscribe", subscribe(url), Some("other"));
    assert!(body(&r)["result"]["id"].is_string(), "{r:?}");
}

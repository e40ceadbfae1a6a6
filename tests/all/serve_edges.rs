//! `mcp-chaos serve`'s HTTP edges and who may hold what, against the
//! release binary over plain sockets: a session answers only the token that
//! opened it, sessions without a token are capped per address, open SSE
//! responses per session and per principal, and the `Host`, `Origin` and
//! `Transfer-Encoding` checks.

use crate::serve::{initialize, Conn, Resp, Served, INIT};
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;

/// A `ledger_append` call whose stream stays open (its second chunk is ten
/// minutes away).
fn slow_call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ledger_append","arguments":{{"tag":"slow-{id}","chunks":2,"chunk_interval_ms":600000}}}}}}"#
    )
}

/// Sends raw bytes on a fresh connection and reads one response.
fn raw(s: &Served, bytes: &[u8]) -> Resp {
    let mut c = s.connect();
    c.r.get_mut().write_all(bytes).unwrap();
    c.read()
}

/// A request head on `/mcp` for a JSON body, with `extra` header lines.
fn post_head(extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\n{extra}content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends a request whose response is an SSE stream and reads only its
/// status line and headers, leaving the stream open; the status.
fn open_stream(c: &mut Conn, req: &str) -> u16 {
    c.r.get_mut().write_all(req.as_bytes()).unwrap();
    c.read_head().status
}

fn get_stream(sid: &str, extra: &str) -> String {
    format!("GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-session-id: {sid}\r\n{extra}\r\n")
}

fn post_stream(sid: &str, auth: &str, body: &str) -> String {
    String::from_utf8(post_head(
        &format!("host: 127.0.0.1\r\nmcp-session-id: {sid}\r\n{auth}"),
        body,
    ))
    .unwrap()
}

/// The connection is still open: a read finds no end of stream.
fn still_open(c: &mut Conn) -> bool {
    c.r.get_mut()
        .set_read_timeout(Some(Duration::from_millis(30)))
        .unwrap();
    let mut buf = [0u8; 256];
    let open = match c.r.get_mut().read(&mut buf) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    c.r.get_mut()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    open
}

/// Retries `f` until it gives `want` (the server sees a close a moment
/// after the client makes it, later on a loaded machine), for at most
/// 30 s; the last status.
fn eventually(want: u16, mut f: impl FnMut() -> u16) -> u16 {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let got = f();
        if got == want || Instant::now() > until {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Another token (or none) naming a session gets exactly what an unknown
/// session gets, on POST, a GET resume and DELETE; the owner's session
/// still works afterwards. The same holds the other way round, and on the
/// legacy transport.
#[test]
fn a_session_answers_only_the_token_that_opened_it() {
    let s = Served::start(&[]);
    let mut c = s.connect();
    let alice = [("authorization", "Bearer alice")];
    let sid = initialize(&mut c, &alice);
    let h = |tok: Option<&str>, sid: &str| -> Vec<(String, String)> {
        let mut v = vec![("mcp-session-id".to_string(), sid.to_string())];
        if let Some(t) = tok {
            v.push(("authorization".into(), format!("Bearer {t}")));
        }
        v
    };
    let send =
        |c: &mut Conn, m: &str, hs: &[(String, String)], body: &str, extra: &[(&str, &str)]| {
            let mut all: Vec<(&str, &str)> =
                hs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            all.extend_from_slice(extra);
            c.send(m, &all, body)
        };
    let call = send(
        &mut c,
        "POST",
        &h(Some("alice"), &sid),
        &slow_call(3).replace("600000", "1"),
        &[],
    );
    assert_eq!(call.status, 200, "{call:?}");
    let first_id = call
        .body
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an event id")
        .to_string();
    let unknown = "0".repeat(32);
    let resume = [
        ("accept", "text/event-stream"),
        ("last-event-id", first_id.as_str()),
    ];
    for tok in [Some("bob"), None] {
        for (method, body, extra) in [
            ("POST", PING, &[][..]),
            ("GET", "", &resume[..]),
            ("DELETE", "", &[][..]),
        ] {
            let theirs = send(&mut c, method, &h(tok, &sid), body, extra);
            let none = send(&mut c, method, &h(tok, &unknown), body, extra);
            assert_eq!(theirs.status, 404, "{method} as {tok:?}: {theirs:?}");
            assert_eq!(
                theirs.body, none.body,
                "{method} as {tok:?}: it reveals nothing"
            );
            assert!(theirs.body.contains("-32001"), "{}", theirs.body);
        }
    }
    // Still alice's, and still alive.
    let r = send(&mut c, "POST", &h(Some("alice"), &sid), PING, &[]);
    assert_eq!(r.status, 200, "{r:?}");
    let r = send(&mut c, "GET", &h(Some("alice"), &sid), "", &resume);
    assert_eq!(r.status, 200, "{r:?}");
    // A session opened without a token answers no token.
    let anon = initialize(&mut c, &[]);
    let r = send(&mut c, "POST", &h(Some("alice"), &anon), PING, &[]);
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(send(&mut c, "POST", &h(None, &anon), PING, &[]).status, 200);
    let r = send(&mut c, "DELETE", &h(Some("alice"), &sid), "", &[]);
    assert_eq!(r.status, 200, "{r:?}");
    // The legacy transport: a stream opened by alice, a message from bob.
    let (_sse, legacy) = crate::serve::open_legacy(&s, "authorization: Bearer alice\r\n");
    let message = |auth: &str, sid: &str| {
        let req = format!(
            "POST /messages?sessionId={sid} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}content-type: application/json\r\ncontent-length: {}\r\n\r\n{PING}",
            PING.len()
        );
        raw(&s, req.as_bytes())
    };
    let theirs = message("authorization: Bearer bob\r\n", &legacy);
    let none = message("authorization: Bearer bob\r\n", &unknown);
    assert_eq!(theirs.status, 404, "{theirs:?}");
    assert_eq!(theirs.body, none.body);
    assert_eq!(message("", &legacy).status, 404);
    assert_eq!(
        message("authorization: Bearer alice\r\n", &legacy).status,
        202
    );
}

/// 256 sessions without a token from one address; the 257th gets 429 with
/// a JSON-RPC body and `Retry-After` (at most the 60 s anonymous idle bound
/// plus its 15 s check); a token is another principal; a DELETE frees a
/// slot.
#[test]
fn sessions_without_a_token_are_capped_per_address() {
    let s = Served::start(&[]);
    let mut c = s.connect();
    let sids: Vec<String> = (0..256).map(|_| initialize(&mut c, &[])).collect();
    let r = c.send("POST", &[], INIT);
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.body.contains("\"code\":-32005"), "{}", r.body);
    assert!(r.body.contains("\"id\":1"), "{}", r.body);
    let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=75).contains(&after), "Retry-After {after}");
    initialize(&mut c, &[("authorization", "Bearer carol")]);
    let r = c.send("DELETE", &[("mcp-session-id", sids[0].as_str())], "");
    assert_eq!(r.status, 200, "{r:?}");
    initialize(&mut c, &[]);
}

/// 16 SSE responses open on one session (a GET and 15 calls): the 17th
/// request for a stream gets 429 and the 16 stay open; one closed, the
/// next is served. A resume taking over a stream is never refused.
///
/// On `keys`: the cap is the same on every built-in arm, and on `guarded`
/// the call after the dropped one may rightly get Rule M's 409 first (when
/// the dropped stream still owed events as its close was seen: a matter of
/// timing on a real socket), which is a different rule.
#[test]
fn open_streams_are_capped_per_session() {
    let s = Served::start(&["--server", "keys"]);
    let sid = initialize(&mut s.connect(), &[]);
    let mut held = vec![s.connect()];
    assert_eq!(open_stream(&mut held[0], &get_stream(&sid, "")), 200);
    for id in 10..25 {
        let mut c = s.connect();
        assert_eq!(
            open_stream(&mut c, &post_stream(&sid, "", &slow_call(id))),
            200,
            "call {id}"
        );
        held.push(c);
    }
    let r = raw(&s, post_stream(&sid, "", &slow_call(99)).as_bytes());
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.body.contains("streams open"), "{}", r.body);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(
        held.iter_mut().all(still_open),
        "the open streams keep running"
    );
    // A plain request is still served.
    let r = s
        .connect()
        .send("POST", &[("mcp-session-id", sid.as_str())], PING);
    assert_eq!(r.status, 200, "{r:?}");
    // A resume takes the standalone stream over at the cap.
    let mut taker = s.connect();
    let standalone_first = "1";
    let resume = get_stream(&sid, &format!("last-event-id: {standalone_first}\r\n"));
    assert_eq!(open_stream(&mut taker, &resume), 200);
    drop(held.remove(0));
    drop(held.pop());
    let got = eventually(200, || {
        let mut c = s.connect();
        let st = open_stream(&mut c, &post_stream(&sid, "", &slow_call(100)));
        if st == 200 {
            held.push(c);
        }
        st
    });
    assert_eq!(got, 200, "a closed stream gives its slot back");
}

/// 512 SSE responses open for one principal (32 sessions of 16, no token,
/// one address): the next session's stream gets 429; another principal's
/// does not.
#[test]
fn open_streams_are_capped_per_principal() {
    let s = Served::start(&[]);
    let mut c = s.connect();
    let mut held = Vec::new();
    for _ in 0..32 {
        let sid = initialize(&mut c, &[]);
        for id in 0..16 {
            let mut h = s.connect();
            assert_eq!(
                open_stream(&mut h, &post_stream(&sid, "", &slow_call(id))),
                200
            );
            held.push(h);
        }
    }
    let sid = initialize(&mut c, &[]);
    let r = raw(&s, post_stream(&sid, "", &slow_call(1)).as_bytes());
    assert_eq!(r.status, 429, "{r:?}");
    assert!(
        r.body.contains("bearer token, else its address"),
        "{}",
        r.body
    );
    let dana = [("authorization", "Bearer dana")];
    let theirs = initialize(&mut c, &dana);
    let mut h = s.connect();
    let req = post_stream(&theirs, "authorization: Bearer dana\r\n", &slow_call(1));
    assert_eq!(open_stream(&mut h, &req), 200);
    assert!(still_open(&mut held[0]) && still_open(held.last_mut().unwrap()));
}

/// Every `Origin` counts, not only the first.
#[test]
fn every_origin_header_is_checked() {
    let s = Served::start(&[]);
    let two = |second: &str| {
        raw(
            &s,
            &post_head(
                &format!(
                    "host: 127.0.0.1\r\norigin: http://localhost:3000\r\norigin: {second}\r\n"
                ),
                INIT,
            ),
        )
    };
    let r = two("http://evil.example");
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.body.contains("Origin not allowed"), "{}", r.body);
    assert_eq!(two("http://127.0.0.1").status, 200);
}

/// Host: one, present on HTTP/1.1 (400 otherwise), and a loopback name,
/// the `--addr` host or an `--allow-host` name (403 otherwise, with a
/// JSON-RPC body); on every route, the legacy `GET /sse` included.
#[test]
fn hosts_must_be_one_and_allowed() {
    let s = Served::start(&["--allow-host", "mcp.example"]);
    let port = s.addr.port();
    let (local, addr, evil) = (
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("evil.example:{port}"),
    );
    for (host, status) in [
        ("localhost", 200),
        (local.as_str(), 200),
        (addr.as_str(), 200),
        ("[::1]:1", 200),
        ("MCP.example:8443", 200),
        ("evil.example", 403),
        (evil.as_str(), 403),
        ("localhost.evil.example", 403),
    ] {
        let r = raw(&s, &post_head(&format!("host: {host}\r\n"), INIT));
        assert_eq!(r.status, status, "Host {host}: {r:?}");
        if status == 403 {
            assert!(r.body.contains("--allow-host"), "{}", r.body);
            assert!(r.body.contains("\"code\":-32005"), "{}", r.body);
        }
    }
    let r = raw(
        &s,
        b"GET /sse HTTP/1.1\r\nhost: rebound.example\r\naccept: text/event-stream\r\n\r\n",
    );
    assert_eq!(
        r.status, 403,
        "a rebinding page opens no legacy session: {r:?}"
    );
    let r = raw(&s, &post_head("", INIT));
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("missing Host"), "{}", r.body);
    let r = raw(
        &s,
        &post_head("host: localhost\r\nhost: localhost\r\n", INIT),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("more than one Host"), "{}", r.body);
    // HTTP/1.0 needs no Host.
    let old = String::from_utf8(post_head("", INIT))
        .unwrap()
        .replacen("HTTP/1.1", "HTTP/1.0", 1);
    let mut c = s.connect();
    c.r.get_mut().write_all(old.as_bytes()).unwrap();
    let mut line = String::new();
    c.r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.0 200"), "{line}");
}

/// The rmcp arms get the same Host check under `serve`.
#[cfg(feature = "rmcp")]
#[test]
fn rmcp_under_serve_checks_the_host() {
    let s = Served::start(&["--server", "rmcp", "--allow-host", "mcp.example"]);
    let r = raw(&s, &post_head("host: evil.example\r\n", INIT));
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.body.contains("--allow-host"), "{}", r.body);
    let r = raw(&s, &post_head("host: mcp.example:1\r\n", INIT));
    assert_eq!(r.status, 200, "{r:?}");
}

/// `Transfer-Encoding` other than exactly `chunked`: 501 (ours) or 400
/// (hyper's, for a coding list that does not end in `chunked`); the
/// connection closes either way. `chunked` alone is served.
#[test]
fn transfer_codings_other_than_chunked_are_refused() {
    let s = Served::start(&[]);
    let chunked = |te: &str| {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: {te}\r\n\r\n{:x}\r\n{INIT}\r\n0\r\n\r\n",
            INIT.len()
        );
        let mut sock = TcpStream::connect(s.addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        sock.write_all(head.as_bytes()).unwrap();
        let mut got = Vec::new();
        let _ = sock.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    };
    for te in ["gzip, chunked", "chunked, chunked", "identity, chunked"] {
        let text = chunked(te);
        assert!(text.starts_with("HTTP/1.1 501"), "{te}: {text}");
        assert!(
            text.contains("unsupported Transfer-Encoding"),
            "{te}: {text}"
        );
        assert!(
            text.to_ascii_lowercase().contains("connection: close"),
            "{text}"
        );
    }
    assert!(chunked("gzip").starts_with("HTTP/1.1 400"));
    let mut c = s.connect();
    let ok = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{INIT}\r\n0\r\n\r\n",
        INIT.len()
    );
    c.r.get_mut().write_all(ok.as_bytes()).unwrap();
    assert_eq!(c.read().status, 200);
}

/// A `Last-Event-ID` past every id the session issued: unguarded and keys
/// answer 200 and an empty stream, as every SDK's server does (the client
/// believes it caught up), and say `X-Accel-Buffering: no` as every SSE
/// response does by default; guarded refuses an id it never issued.
#[test]
fn a_cursor_past_the_end_gets_an_empty_stream_except_on_guarded() {
    for (arm, status) in [("unguarded", 200), ("keys", 200), ("guarded", 400)] {
        let s = Served::start(&["--server", arm]);
        let sid = initialize(&mut s.connect(), &[]);
        let r = raw(
            &s,
            get_stream(&sid, "last-event-id: 1000000\r\n").as_bytes(),
        );
        assert_eq!(r.status, status, "{arm}: {r:?}");
        if status == 200 {
            let sse = r.header("content-type").unwrap_or_default();
            assert!(sse.starts_with("text/event-stream"), "{arm}: {r:?}");
            assert_eq!(r.header("x-accel-buffering"), Some("no"), "{arm}");
            assert!(r.body.trim().is_empty(), "{arm}: {r:?}");
        } else {
            assert!(r.body.contains("never issued"), "{arm}: {}", r.body);
        }
    }
}

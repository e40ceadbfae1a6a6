//! `mcp-chaos serve` as a user runs it: the release binary on an ephemeral
//! loopback port, spoken to over plain sockets. What one client must not be
//! able to do to it (issue 13): predict session ids, talk to it from a
//! foreign web origin, stop it by holding connections, hold it with a
//! trickled body, or make it keep memory after its sessions end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-chaos");

/// A running `serve`, killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Served {
    /// `serve --addr 127.0.0.1:0 ARGS`, optionally with an fd limit.
    pub(crate) fn start(args: &[&str]) -> Served {
        Self::start_limited(None, args)
    }

    fn start_limited(nofile: Option<u32>, args: &[&str]) -> Served {
        let mut cmd = match nofile {
            // `exec`: the shell becomes the server, so its pid is ours.
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(BIN);
                c
            }
            None => Command::new(BIN),
        };
        let mut child = cmd
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut line = String::new();
        BufReader::new(child.stderr.take().expect("stderr piped"))
            .read_line(&mut line)
            .expect("a startup line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split("/mcp").next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in the startup line {line:?}"));
        Served { child, addr }
    }

    pub(crate) fn alive(&mut self) -> bool {
        self.child.try_wait().expect("waitable").is_none()
    }

    /// Resident memory, KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("a VmRSS line")
    }

    pub(crate) fn connect(&self) -> Conn {
        Conn::new(TcpStream::connect(self.addr).expect("connects"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 response.
#[derive(Debug)]
pub(crate) struct Resp {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A request to /mcp as [`Conn::send`] writes it: `headers`, and for a
/// POST the JSON body's headers.
pub(crate) fn request_text(method: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut req = format!("{method} /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "POST" {
        req.push_str(&format!(
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// A kept-alive client connection.
pub(crate) struct Conn {
    pub(crate) r: BufReader<TcpStream>,
}

impl Conn {
    pub(crate) fn new(s: TcpStream) -> Conn {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            r: BufReader::new(s),
        }
    }

    pub(crate) fn send(&mut self, method: &str, headers: &[(&str, &str)], body: &str) -> Resp {
        let req = request_text(method, headers, body);
        self.r.get_mut().write_all(req.as_bytes()).unwrap();
        self.read()
    }

    pub(crate) fn read(&mut self) -> Resp {
        let mut resp = self.read_head();
        let mut line = String::new();
        if resp.header("transfer-encoding") == Some("chunked") {
            loop {
                line.clear();
                self.r.read_line(&mut line).unwrap();
                let n = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
                let mut chunk = vec![0; n + 2];
                self.r.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                resp.body.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        } else if let Some(n) = resp.header("content-length").and_then(|n| n.parse().ok()) {
            let mut b = vec![0; n];
            self.r.read_exact(&mut b).unwrap();
            resp.body = String::from_utf8_lossy(&b).into_owned();
        }
        resp
    }

    /// Reads a response's status line and headers, leaving its body (an
    /// open stream, say) unread.
    pub(crate) fn read_head(&mut self) -> Resp {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a status line, got {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.r.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').expect("a header");
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        Resp {
            status,
            headers,
            body: String::new(),
        }
    }
}

pub(crate) const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

pub(crate) fn initialize(c: &mut Conn, extra: &[(&str, &str)]) -> String {
    let r = c.send("POST", extra, INIT);
    assert_eq!(r.status, 200, "{r:?}");
    r.header("mcp-session-id")
        .expect("a session id")
        .to_string()
}

pub(crate) fn call(c: &mut Conn, sid: &str, id: u64, tag: &str) -> Resp {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ledger_append","arguments":{{"tag":"{tag}","chunks":2}}}}}}"#
    );
    c.send("POST", &[("mcp-session-id", sid)], &body)
}

/// Opens `sid`'s standalone stream on `c` and reads its status line (200);
/// the stream stays open while `c` lives.
pub(crate) fn open_standalone(c: &mut Conn, sid: &str, extra: &[(&str, &str)]) {
    let mut get = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-session-id: {sid}\r\n"
    );
    for (k, v) in extra {
        get.push_str(&format!("{k}: {v}\r\n"));
    }
    get.push_str("\r\n");
    c.r.get_mut().write_all(get.as_bytes()).unwrap();
    let mut line = String::new();
    c.r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
}

#[test]
fn two_fresh_servers_hand_out_different_first_session_ids() {
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let s = Served::start(&[]);
            initialize(&mut s.connect(), &[])
        })
        .collect();
    assert_eq!(ids[0].len(), 32);
    assert!(ids[0].bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(ids[0], ids[1], "ids must not repeat across starts");
}

/// The official SDK's arm too: its ids are rewritten to ones from the OS
/// under `serve` (seeded ones are only for the simulator).
#[cfg(feature = "rmcp")]
#[test]
fn two_fresh_rmcp_servers_hand_out_different_first_session_ids() {
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let s = Served::start(&["--server", "rmcp"]);
            initialize(&mut s.connect(), &[])
        })
        .collect();
    let hex = ids[0].strip_prefix("rmcp-").expect("an rmcp- id");
    assert_eq!(hex.len(), 32, "128 bits from the OS: {}", ids[0]);
    assert_ne!(ids[0], ids[1], "ids must not repeat across starts");
}

/// The Origin allow-list holds for the SDK's arm as for ours.
#[cfg(feature = "rmcp")]
#[test]
fn rmcp_under_serve_refuses_a_foreign_origin() {
    let s = Served::start(&["--server", "rmcp"]);
    let r = s
        .connect()
        .send("POST", &[("origin", "http://evil.example")], INIT);
    assert_eq!(r.status, 403, "{r:?}");
    let ok = s
        .connect()
        .send("POST", &[("origin", "http://localhost:3000")], INIT);
    assert_eq!(ok.status, 200, "{ok:?}");
}

#[test]
fn a_restarted_server_refuses_an_old_session_id() {
    let old = {
        let s = Served::start(&[]);
        initialize(&mut s.connect(), &[])
    };
    let s = Served::start(&[]);
    let mut c = s.connect();
    initialize(&mut c, &[]);
    let r = c.send(
        "POST",
        &[("mcp-session-id", &old)],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    assert_eq!(r.status, 404, "{r:?}");
    let r = c.send("DELETE", &[("mcp-session-id", &old)], "");
    assert_eq!(r.status, 404, "{r:?}");
}

#[test]
fn origins_outside_the_allow_list_get_403() {
    let s = Served::start(&["--allow-origin", "https://app.example"]);
    let mut c = s.connect();
    for (origin, status) in [
        ("http://evil.example", 403),
        ("http://localhost.evil.example", 403),
        ("null", 403),
        ("http://localhost:3000", 200),
        ("http://127.0.0.1", 200),
        ("http://[::1]:8080", 200),
        ("https://app.example", 200),
        ("https://APP.example", 200),
        ("http://app.example", 403),
    ] {
        let r = c.send("POST", &[("origin", origin)], INIT);
        assert_eq!(r.status, status, "Origin {origin}: {r:?}");
        if status == 403 {
            assert!(r.body.contains("\"code\":-32005"), "{}", r.body);
            assert!(r.header("mcp-session-id").is_none());
        }
    }
    // No Origin at all: a non-browser client, served.
    initialize(&mut c, &[]);
}

#[test]
fn a_host_name_is_accepted_in_addr() {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "localhost:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("server on http://"), "{line}");
    let bad = Command::new(BIN)
        .args(["serve", "--addr", "no port here"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(3));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--addr"), "{err}");
}

#[test]
fn idle_connections_past_the_descriptor_limit_do_not_stop_the_server() {
    let mut s = Served::start_limited(Some(256), &[]);
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(s.addr).expect("the kernel accepts"))
        .collect();
    // Let the server take them all in (it closes the oldest idle ones).
    std::thread::sleep(Duration::from_millis(300));
    let mut c = s.connect();
    let sid = initialize(&mut c, &[]);
    let r = call(&mut c, &sid, 2, "fd");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("ledger:1:2:fd"), "{}", r.body);
    assert!(
        s.alive(),
        "the server must outlive running out of descriptors"
    );
    drop(idle);
    // And it goes on serving new clients.
    let mut c = s.connect();
    initialize(&mut c, &[]);
    assert!(s.alive());
}

#[test]
fn a_trickled_body_is_cut_off_within_the_body_timeout() {
    let s = Served::start(&["--body-timeout-ms", "1000"]);
    let mut sock = TcpStream::connect(s.addr).unwrap();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let t0 = Instant::now();
    let mut got = Vec::new();
    // One byte every 2 s, reading between: the server must answer 408 and
    // close well before the body would be complete (80 s).
    'trickle: for b in body.iter() {
        if sock.write_all(&[*b]).is_err() {
            break;
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let mut buf = [0u8; 1024];
            match sock.read(&mut buf) {
                Ok(0) => break 'trickle,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break 'trickle,
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "not cut off after {:?}",
            t0.elapsed()
        );
    }
    let elapsed = t0.elapsed();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        elapsed < Duration::from_secs(3),
        "cut off after {elapsed:?}"
    );
}

/// Opens a legacy session with `GET /sse` (with header lines `extra`):
/// the open stream and the session id its `endpoint` event names.
pub(crate) fn open_legacy(s: &Served, extra: &str) -> (TcpStream, String) {
    let mut sse = TcpStream::connect(s.addr).unwrap();
    let req =
        format!("GET /sse HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n{extra}\r\n");
    sse.write_all(req.as_bytes()).unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 1024];
    while !got
        .split("sessionId=")
        .nth(1)
        .is_some_and(|rest| rest.contains('\n'))
    {
        let n = sse.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended: {got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let legacy: String = got
        .split("sessionId=")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_eq!(legacy.len(), 32, "{got}");
    (sse, legacy)
}

#[test]
fn guarded_delete_refuses_a_legacy_session() {
    let s = Served::start(&[]);
    let (_sse, legacy) = open_legacy(&s, "");
    let mut c = s.connect();
    let r = c.send("DELETE", &[("mcp-session-id", &legacy)], "");
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.body.contains("transport_mismatch"), "{}", r.body);
}

#[test]
fn accept_with_q_zero_is_refused() {
    let s = Served::start(&[]);
    let mut sock = s.connect();
    for (accept, status) in [
        ("application/json, text/event-stream;q=0", 406),
        ("application/json;q=0, text/event-stream", 406),
        ("*/*;q=0", 406),
        ("*/*, text/event-stream;q=0.000", 406),
        ("application/json, text/event-stream;q=0.5", 200),
        ("*/*", 200),
        ("text/*, application/json;q=1", 200),
        ("text/*;q=0, text/event-stream, application/*", 200),
    ] {
        let req = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: {accept}\r\ncontent-length: {}\r\n\r\n{INIT}",
            INIT.len()
        );
        sock.r.get_mut().write_all(req.as_bytes()).unwrap();
        let r = sock.read();
        assert_eq!(r.status, status, "Accept: {accept}: {r:?}");
    }
}

#[test]
fn every_advertised_capability_works() {
    let s = Served::start(&[]);
    let mut c = s.connect();
    let r = c.send("POST", &[], INIT);
    let sid = r.header("mcp-session-id").unwrap().to_string();
    let caps: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let caps = &caps["result"]["capabilities"];
    assert!(caps.get("logging").is_some(), "{caps}");
    let h = [("mcp-session-id", sid.as_str())];
    let r = c.send(
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}}"#,
    );
    assert_eq!(r.body, r#"{"id":2,"jsonrpc":"2.0","result":{}}"#);
    let r = c.send(
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}}"#,
    );
    assert!(r.body.contains("-32602"), "{}", r.body);
    // At `error`, a call's progress (an `info` log message without a
    // progress token) is not sent; its result is.
    let body = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ledger_append","arguments":{"tag":"q","chunks":3}}}"#;
    let r = c.send("POST", &h, body);
    assert!(!r.body.contains("notifications/message"), "{}", r.body);
    assert!(r.body.contains("ledger:1:3:q"), "{}", r.body);
    c.send(
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug"}}"#,
    );
    let r = c.send("POST", &h, &body.replace("\"id\":4", "\"id\":6"));
    assert_eq!(
        r.body.matches("notifications/message").count(),
        2,
        "{}",
        r.body
    );
    // resources: advertised with subscribe, and each method answers.
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    let rpc = |id: u32, method: &str, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
    };
    let r = c.send("POST", &h, &rpc(7, "resources/list", "{}"));
    assert!(r.body.contains(r#""uri":"clock://tick""#), "{}", r.body);
    let r = c.send(
        "POST",
        &h,
        &rpc(8, "resources/read", r#"{"uri":"clock://tick"}"#),
    );
    assert!(r.body.contains(r#""contents":[{"#), "{}", r.body);
    let r = c.send(
        "POST",
        &h,
        &rpc(9, "resources/read", r#"{"uri":"file:///etc/passwd"}"#),
    );
    assert!(r.body.contains("-32602"), "{}", r.body);
    for (id, m) in [(10, "resources/subscribe"), (11, "resources/unsubscribe")] {
        let r = c.send("POST", &h, &rpc(id, m, r#"{"uri":"clock://tick"}"#));
        assert_eq!(
            r.body,
            format!(r#"{{"id":{id},"jsonrpc":"2.0","result":{{}}}}"#)
        );
    }
}

#[test]
fn oversized_ids_params_and_chunks_are_refused() {
    let s = Served::start(&[]);
    let mut c = s.connect();
    let sid = initialize(&mut c, &[]);
    let h = [("mcp-session-id", sid.as_str())];
    let long = "a".repeat(300);
    let r = c.send(
        "POST",
        &h,
        &format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":"ping"}}"#),
    );
    assert_eq!(r.status, 400, "{r:?}");
    let tag = "t".repeat(5000);
    let r = c.send(
        "POST",
        &h,
        &format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"ledger_append","arguments":{{"tag":"{tag}"}}}}}}"#
        ),
    );
    assert_eq!(r.status, 400, "{r:?}");
    let r = c.send(
        "POST",
        &h,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ledger_append","arguments":{"tag":"x","chunks":10000}}}"#,
    );
    assert!(r.body.contains("chunks must be 1..=1000"), "{}", r.body);
    let big = "x".repeat(70 * 1024);
    let r = c.send("POST", &h, &big);
    assert_eq!(r.status, 413, "{r:?}");
}

/// The idle bound of [`sessions_are_bounded_per_token_and_expire_when_idle`]:
/// its 64 sessions and the 65th initialize must all come before the first
/// session idles out, which a loaded machine may take seconds for.
const IDLE_SECS: u64 = 5;

#[test]
fn sessions_are_bounded_per_token_and_expire_when_idle() {
    let s = Served::start(&["--session-idle-secs", &IDLE_SECS.to_string()]);
    let mut c = s.connect();
    let auth = [("authorization", "Bearer alice")];
    let t0 = Instant::now();
    let first = initialize(&mut c, &auth);
    for _ in 1..64 {
        initialize(&mut c, &auth);
    }
    let r = c.send("POST", &auth, INIT);
    assert_eq!(
        r.status,
        429,
        "{r:?} (65 initializes took {:?}, the idle bound is {IDLE_SECS} s)",
        t0.elapsed()
    );
    // Another token is another principal.
    initialize(&mut c, &[("authorization", "Bearer bob")]);
    // Idle past the bound: every session ends, alice's slots come back.
    // Asked without naming a session (a request naming one keeps it
    // alive), until the server's sweep has ended them. On a loaded
    // machine the 64 sessions were opened over seconds and idle out over
    // as many, so each slot is waited for.
    let deadline = Instant::now() + Duration::from_secs(IDLE_SECS + 30);
    let mut a_slot_comes_back = || loop {
        let r = c.send("POST", &auth, INIT);
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 429, "{r:?}");
        assert!(
            Instant::now() < deadline,
            "alice's sessions did not idle out within {}s",
            IDLE_SECS + 30
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    a_slot_comes_back();
    a_slot_comes_back();
    let r = c.send(
        "POST",
        &[("mcp-session-id", first.as_str())],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    assert_eq!(r.status, 404, "expired: {r:?}");
}

#[test]
fn the_unguarded_server_ignores_a_non_ascii_key() {
    let s = Served::start(&["--server", "unguarded"]);
    let mut sock = s.connect();
    let sid = initialize(&mut sock, &[]);
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ledger_append","arguments":{"tag":"k"}}}"#;
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nmcp-session-id: {sid}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nidempotency-key: ",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(b"k\xc3\xa9\r\n\r\n");
    req.extend_from_slice(body.as_bytes());
    sock.r.get_mut().write_all(&req).unwrap();
    let r = sock.read();
    assert_eq!(r.status, 200, "{r:?}");
}

/// `initialize` and a `DELETE` written together on `c`, before either
/// response is read: the DELETE cannot know the id the initialize
/// response will carry. The session id, and the DELETE's response.
pub(crate) fn pipelined_init_delete(c: &mut Conn) -> (String, Resp) {
    let both = request_text("POST", &[], INIT)
        + &request_text("DELETE", &[("mcp-session-id", "not-yet-known")], "");
    c.r.get_mut().write_all(both.as_bytes()).unwrap();
    let init = c.read();
    assert_eq!(init.status, 200, "{init:?}");
    let sid = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    (sid, c.read())
}

/// A pipelined `initialize` and `DELETE` ([`pipelined_init_delete`]): the
/// status the DELETE gets, and whether the session still answers a ping
/// afterwards.
fn pipelined_delete(s: &Served) -> (u16, u16) {
    let mut c = s.connect();
    let (sid, delete) = pipelined_init_delete(&mut c);
    let delete = delete.status;
    let ping = c.send(
        "POST",
        &[("mcp-session-id", &sid)],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    (delete, ping.status)
}

/// A DELETE naming no live session: the built-in arms say 404, rmcp 202
/// (its own answer, `tests/all/rmcp_alone.rs`); either way the session
/// the client meant stays until it idles out (`soak.rs` measures what it
/// holds on the rmcp arms).
#[test]
fn a_pipelined_delete_that_cannot_name_its_session_leaves_it_open() {
    assert_eq!(pipelined_delete(&Served::start(&[])), (404, 200));
    #[cfg(feature = "rmcp")]
    for arm in ["rmcp", "rmcp-es"] {
        let s = Served::start(&["--server", arm]);
        assert_eq!(pipelined_delete(&s), (202, 200), "{arm}");
    }
}

#[test]
fn past_the_connection_cap_with_none_idle_a_connection_gets_503() {
    let mut s = Served::start(&["--max-connections", "2"]);
    // Two connections each busy with a standalone stream.
    let streams: Vec<Conn> = (0..2)
        .map(|_| {
            let mut c = s.connect();
            let sid = initialize(&mut c, &[]);
            open_standalone(&mut c, &sid, &[]);
            c
        })
        .collect();
    let mut third = s.connect();
    let r = third.read();
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.body.contains("too many connections"), "{}", r.body);
    // A stream ends: its connection is idle or gone, and the next client
    // is served, once the server has seen the close.
    drop(streams);
    assert_eq!(served_once_closes_are_seen(&s), 200);
    initialize(&mut s.connect(), &[]);
    assert!(s.alive());
}

/// The status a fresh connection's `initialize` gets once the server is
/// no longer turning connections away: a 503 (or a connection closed
/// before its answer) while it has yet to see a client's close is tried
/// again, for at most 30 s.
fn served_once_closes_are_seen(s: &Served) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut c = s.connect();
        let status =
            c.r.get_mut()
                .write_all(request_text("POST", &[], INIT).as_bytes())
                .ok()
                .and_then(|()| {
                    let mut line = String::new();
                    c.r.read_line(&mut line).ok()?;
                    line.split_whitespace().nth(1)?.parse::<u16>().ok()
                });
        match status {
            Some(503) | None if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Some(got) => return got,
            None => panic!("no answer to initialize within 30 s of the closes"),
        }
    }
}

/// `serve --log`: one line per request on stderr, naming the connection,
/// method, path, session and the answer's status and content type; a
/// request the server refuses is logged too.
#[test]
fn serve_log_writes_one_line_per_request() {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--log"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut err = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split("/mcp").next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let mut c = Conn::new(TcpStream::connect(addr).unwrap());
    let sid = initialize(&mut c, &[]);
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let refused = c.send("POST", &[("mcp-session-id", "nosuch")], ping);
    assert_eq!(refused.status, 404);
    let mut logged = Vec::new();
    while logged.len() < 2 {
        let mut l = String::new();
        err.read_line(&mut l).unwrap();
        if l.starts_with("serve: ") {
            logged.push(l.trim_end().to_string());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        logged[0].starts_with("serve: conn 1 POST /mcp session - -> 200 "),
        "{logged:?} (session {sid})"
    );
    assert_eq!(
        logged[1],
        "serve: conn 1 POST /mcp session nosuch -> 404 application/json"
    );
}

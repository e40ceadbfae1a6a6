//! `mcp-chaos probe` against servers written to hurt their client: an
//! endless stream, a huge head, an endless body, a dripping server, a
//! redirect, a remote endpoint event and a flood each stop the probe at a
//! named limit (exit 3, one line naming the flag), within a memory bound.

use crate::cli::bin;
use serde_json::Value;
use std::io::Read;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the hostile server answers one request with.
enum Answer {
    /// These bytes, then it closes.
    Bytes(Vec<u8>),
    /// A head, then one chunk again and again until the probe hangs up.
    Endless(Vec<u8>, Vec<u8>),
    /// The first bytes at once, then the rest one at a time, each after a
    /// pause.
    Drip(Vec<u8>, Vec<u8>, Duration),
}

type Answers = Arc<dyn Fn(&str, &str, &[u8]) -> Answer + Send + Sync>;

/// A server written to hurt its client: a tokio listener on 127.0.0.1
/// that answers each request (method, path, body) with raw bytes, on a
/// thread of its own; it stops when dropped.
struct Hostile {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hostile {
    fn start(answer: impl Fn(&str, &str, &[u8]) -> Answer + Send + Sync + 'static) -> Hostile {
        let answer: Answers = Arc::new(answer);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("an address");
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
                loop {
                    tokio::select! {
                        biased;
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            if let Ok((tcp, _)) = accepted {
                                counted.fetch_add(1, Ordering::SeqCst);
                                tokio::spawn(answer_one(tcp, answer.clone()));
                            }
                        }
                    }
                }
            });
        });
        Hostile {
            addr,
            connections,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request (head, then a body of its content-length) and
/// answers it as told.
async fn answer_one(mut tcp: tokio::net::TcpStream, answer: Answers) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let mut words = head.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < end + length {
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    match answer(method, path, &buf[end..end + length]) {
        Answer::Bytes(b) => {
            let _ = tcp.write_all(&b).await;
        }
        Answer::Endless(head, chunk) => {
            if tcp.write_all(&head).await.is_ok() {
                while tcp.write_all(&chunk).await.is_ok() {}
            }
        }
        Answer::Drip(now, bytes, every) => {
            if tcp.write_all(&now).await.is_err() {
                return;
            }
            for b in bytes {
                if tcp.write_all(&[b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(every).await;
            }
        }
    }
    let _ = tcp.shutdown().await;
}

/// A response head with these fields (and `connection: close`).
fn head(status: &str, fields: &[&str]) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for f in fields {
        h.push_str(f);
        h.push_str("\r\n");
    }
    h.push_str("\r\n");
    h.into_bytes()
}

const SSE: &str = "content-type: text/event-stream";

const JSON: &str = "content-type: application/json";

/// Just enough MCP for the probe to open sessions: `initialize` and
/// `tools/list` answered (no tools), notifications and DELETE accepted.
fn mcp(method: &str, body: &[u8]) -> Option<Answer> {
    if method == "DELETE" {
        return Some(Answer::Bytes(head("200 OK", &["content-length: 0"])));
    }
    let msg: Value = serde_json::from_slice(body).ok()?;
    let result = match msg["method"].as_str()? {
        "initialize" => serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }),
        "tools/list" => serde_json::json!({"tools": []}),
        _ if msg.get("id").is_none() => {
            return Some(Answer::Bytes(head("202 Accepted", &["content-length: 0"])))
        }
        _ => return None,
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string();
    let mut b = head(
        "200 OK",
        &[
            JSON,
            "mcp-session-id: hostile-1",
            &format!("content-length: {}", body.len()),
        ],
    );
    b.extend_from_slice(body.as_bytes());
    Some(Answer::Bytes(b))
}

/// How a probe against a hostile server ended.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// Its peak resident memory (VmHWM), KiB, as last read while it ran.
    peak_kib: u64,
}

/// The most a probe may hold against any hostile server: the bounds'
/// worst case (a 4 MiB body buffered, then decoded) on top of what a
/// probe that reads nothing takes (about 7 MiB). Measured: 12.1 MiB at
/// most; a probe without its limits would read for its whole --timeout.
const PEAK_MIB: u64 = 32;

/// A probe that has not stopped by itself by then never would.
const CAP: Duration = Duration::from_secs(40);

/// `probe ARGS`, reading its VmHWM every few milliseconds until it exits.
fn probe_sampled(args: &[&str]) -> Ran {
    let mut child = bin()
        .arg("probe")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let status_file = format!("/proc/{}/status", child.id());
    let started = Instant::now();
    let mut peak_kib = 0;
    let status = loop {
        // Read before asking whether it exited, so that even a probe that
        // ends at once is read at least once while it runs.
        let hwm = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        });
        peak_kib = peak_kib.max(hwm.unwrap_or(0));
        if let Some(s) = child.try_wait().expect("waitable") {
            break s;
        }
        if started.elapsed() > CAP {
            let _ = child.kill();
            let _ = child.wait();
            panic!("probe {args:?} did not stop by itself within {CAP:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    let _ = child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut stdout);
    let _ = child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr);
    Ran {
        code: status.code().expect("exited"),
        stdout,
        stderr,
        peak_kib,
    }
}

/// The probe of `server` with `args` exits 3 with one line on stderr
/// that says `says` (the limit and its flag), within the memory bound.
fn stops_at(server: &Hostile, args: &[&str], says: &[&str]) -> Ran {
    let url = server.url("/mcp");
    let mut all = vec!["--url", url.as_str(), "--timeout", "15", "--format", "json"];
    all.extend_from_slice(args);
    let ran = probe_sampled(&all);
    let err = ran.stderr.trim();
    assert_eq!(ran.code, 3, "{args:?}: {err}\n{}", ran.stdout);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    for s in says {
        assert!(err.contains(s), "{args:?} should say {s:?}: {err}");
    }
    // A probe that stops at once may have exited before the first
    // sample (a loaded machine); the endless cases, which read megabytes
    // first, assert that they were sampled (`sampled_while_reading`).
    assert!(
        ran.peak_kib < PEAK_MIB << 10,
        "{args:?}: peak RSS {} KiB, bound {PEAK_MIB} MiB",
        ran.peak_kib
    );
    eprintln!("{args:?}: peak RSS {} KiB: {err}", ran.peak_kib);
    ran
}

/// A probe that read a megabyte or more before its limit stopped it ran
/// long enough to be sampled: its peak is a measurement, not a zero.
fn sampled_while_reading(ran: Ran) {
    assert!(ran.peak_kib > 0, "never sampled: {}", ran.stderr);
}

#[test]
fn endless_sse_stops_the_probe_at_a_named_limit() {
    let big_event = [b"data: ".as_slice(), &[b'x'; 65_536], b"\n\n"].concat();
    let cases: [(Vec<u8>, &[&str], &[&str]); 5] = [
        // One event whose data lines never end.
        (
            b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n".to_vec(),
            &[],
            &["SSE event longer than 1048576 bytes", "--max-event-bytes"],
        ),
        // One line that never ends.
        (
            vec![b'x'; 4096],
            &[],
            &["SSE line longer than 1048576 bytes", "--max-event-bytes"],
        ),
        // Small events without end.
        (
            b"data: {}\n\n".to_vec(),
            &[],
            &["more than 10000 SSE events", "--max-events"],
        ),
        // 64 KiB events without end: the response's bytes.
        (
            big_event.clone(),
            &[],
            &["body longer than 4194304 bytes", "--max-body-bytes"],
        ),
        // The same below a smaller bound on the whole probe's bytes.
        (
            big_event,
            &["--max-total-bytes", "1048576"],
            &["more than 1048576 bytes", "--max-total-bytes"],
        ),
    ];
    for (chunk, args, says) in cases {
        let s =
            Hostile::start(move |_, _, _| Answer::Endless(head("200 OK", &[SSE]), chunk.clone()));
        sampled_while_reading(stops_at(&s, args, says));
    }
}

#[test]
fn a_huge_response_head_stops_the_probe_at_max_header_bytes() {
    for field in [
        // Fields without end.
        b"x-junk: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".to_vec(),
        // One field that never ends.
        vec![b'a'; 4096],
    ] {
        let s = Hostile::start(move |_, _, _| {
            Answer::Endless(b"HTTP/1.1 200 OK\r\nx-junk: ".to_vec(), field.clone())
        });
        sampled_while_reading(stops_at(
            &s,
            &[],
            &[
                "response head longer than 65536 bytes",
                "--max-header-bytes",
            ],
        ));
    }
}

#[test]
fn an_endless_json_body_stops_the_probe_at_max_body_bytes() {
    let s = Hostile::start(|_, _, _| {
        let mut h = head("200 OK", &[JSON]);
        h.extend_from_slice(br#"{"jsonrpc":"2.0","id":"x","result":{"text":""#);
        Answer::Endless(h, vec![b'a'; 65_536])
    });
    sampled_while_reading(stops_at(
        &s,
        &[],
        &["body longer than 4194304 bytes", "--max-body-bytes"],
    ));
}

#[test]
fn a_dripping_server_cannot_outlast_the_timeouts() {
    // A byte every 300 ms of a response that would take minutes: from its
    // first byte (the head), or its body alone.
    let drip = |split: bool| {
        move |_: &str, _: &str, _: &[u8]| {
            let mut b = head("200 OK", &[JSON, "content-length: 1000"]);
            let at = if split { b.len() } else { 0 };
            b.extend_from_slice(&[b' '; 1000]);
            let rest = b.split_off(at);
            Answer::Drip(b, rest, Duration::from_millis(300))
        }
    };
    for split in [false, true] {
        let s = Hostile::start(drip(split));
        stops_at(
            &s,
            &["--request-timeout-ms", "1000"],
            &[
                "no answer within --request-timeout-ms",
                "raise --request-timeout-ms",
            ],
        );
        // The whole probe's bound caps one request's: --timeout 2 ends a
        // read that --request-timeout-ms (10 s by default) still allows.
        let s = Hostile::start(drip(split));
        let url = s.url("/mcp");
        let ran = probe_sampled(&["--url", &url, "--timeout", "2"]);
        assert_eq!(ran.code, 3, "{}", ran.stderr);
        assert!(ran.stderr.contains("raise --timeout"), "{}", ran.stderr);
        assert_eq!(ran.stderr.trim().lines().count(), 1, "{}", ran.stderr);
    }
}

#[test]
fn a_redirect_is_not_followed() {
    for status in ["307 Temporary Redirect", "308 Permanent Redirect"] {
        let s = Hostile::start(move |_, _, _| {
            Answer::Bytes(head(
                status,
                &["location: http://192.0.2.1/mcp", "content-length: 0"],
            ))
        });
        stops_at(
            &s,
            &[],
            &[
                "a redirect to http://192.0.2.1/mcp, not followed",
                "point --url at the endpoint itself",
            ],
        );
        assert_eq!(s.connections.load(Ordering::SeqCst), 1, "one request only");
    }
}

#[test]
fn a_remote_endpoint_event_is_refused_and_the_probe_stops() {
    // The session opens; the legacy GET names an endpoint on another
    // machine, which the probe must not connect to.
    let s = Hostile::start(|method, path, body| {
        mcp(method, body).unwrap_or_else(|| {
            let mut b = head("200 OK", &[SSE]);
            if path == "/sse" {
                b.extend_from_slice(
                    b"event: endpoint\ndata: http://192.0.2.1/messages?sessionId=s1\n\n",
                );
            }
            Answer::Drip(b, vec![b'\n'; 100], Duration::from_millis(100))
        })
    });
    let ran = stops_at(
        &s,
        &["--only", "legacy-session"],
        &[
            "endpoint event http://192.0.2.1:80/messages?sessionId=s1 resolves to 192.0.2.1",
            "--allow-remote",
        ],
    );
    let list: Vec<Value> = serde_json::from_str(&ran.stdout).expect("the report is printed");
    assert_eq!(list[0]["verdict"], "untestable", "{}", ran.stdout);
    assert!(
        list[0]["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("cut short")),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_flood_after_the_session_opened_is_cut_short_not_judged() {
    // The session opens; every GET floods events: the hazard that met the
    // flood is not judged from what the probe could not read, and the
    // next one is not tried.
    let s = Hostile::start(|method, _, body| {
        mcp(method, body)
            .unwrap_or_else(|| Answer::Endless(head("200 OK", &[SSE]), b"data: {}\n\n".to_vec()))
    });
    let ran = stops_at(
        &s,
        &["--only", "second-get", "--only", "resume-malformed"],
        &["more than 10000 SSE events", "--max-events"],
    );
    let list: Vec<Value> = serde_json::from_str(&ran.stdout).expect("the report is printed");
    assert_eq!(list.len(), 2, "{}", ran.stdout);
    for f in &list {
        assert_eq!(f["verdict"], "untestable", "{}", ran.stdout);
    }
}

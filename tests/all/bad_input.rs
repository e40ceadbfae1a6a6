//! Bad input, generated: property tests (bounded case counts, a few seconds
//! in all) over the parsers a client's bytes reach (SSE, JSON-RPC, the
//! cursor list, `Accept`) and over `serve` itself, one class of input per
//! property with the status that class must get. No input may panic a
//! parser or stop the server.

use super::serve::{initialize, Served, INIT};
use mcp_chaos::protocol::headers::{self, CursorEntry, CursorList};
use mcp_chaos::protocol::jsonrpc::{self, DecodeError, Message, RequestId};
use mcp_chaos::protocol::mcp;
use mcp_chaos::protocol::{sse, Json, SseDecoder};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Decodes `bytes` fed in the pieces `cuts` make.
fn decode_in_pieces(bytes: &[u8], cuts: &[usize]) -> (Vec<sse::SseEvent>, bool) {
    let mut d = SseDecoder::with_max_line(256);
    let mut out = Vec::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts.into_iter().chain([bytes.len()]) {
        if d.feed(&bytes[at..c], &mut out).is_err() {
            return (out, true);
        }
        at = c;
    }
    (out, false)
}

proptest! {
    #![proptest_config(cases(256))]

    /// Any bytes, split anywhere: no panic, and the split does not change
    /// what is decoded (a line past the bound is an error either way).
    #[test]
    fn sse_any_bytes_any_split(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), any::<u8>()],
            0..600,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = decode_in_pieces(&bytes, &[]);
        let split = decode_in_pieces(&bytes, &cuts);
        prop_assert_eq!(whole, split);
    }

    /// What the encoder writes decodes to the same event, however split.
    #[test]
    fn sse_round_trip(
        id in proptest::option::of(any::<u64>()),
        event in proptest::option::of("[a-z][a-z-]{0,11}"),
        data in "[^\r]{0,120}",
        retry in proptest::option::of(0u64..1_000_000),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let bytes = sse::encode(id, event.as_deref(), &data, retry);
        let (events, failed) = decode_in_pieces(&bytes, &cuts);
        prop_assert!(!failed);
        prop_assert_eq!(events.len(), 1);
        let e = &events[0];
        prop_assert_eq!(&e.data, &data);
        prop_assert_eq!(e.id.clone(), id.map(|i| i.to_string()));
        prop_assert_eq!(&e.event, event.as_deref().unwrap_or("message"));
        prop_assert_eq!(e.retry_ms, retry);
    }

    /// Any bytes: decode answers, never panics; what is not JSON is a
    /// parse error (-32700), JSON that is no message an invalid request
    /// (-32600).
    #[test]
    fn jsonrpc_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let is_json = serde_json::from_slice::<Value>(&bytes).is_ok();
        match Message::decode(&bytes) {
            Ok(_) => prop_assert!(is_json),
            Err(e @ DecodeError::Parse(_)) => {
                prop_assert!(!is_json);
                prop_assert_eq!(e.to_error().code, jsonrpc::PARSE_ERROR);
            }
            Err(e @ DecodeError::Invalid(_)) => {
                prop_assert!(is_json);
                prop_assert_eq!(e.to_error().code, jsonrpc::INVALID_REQUEST);
            }
        }
    }

    /// JSON values that are not one JSON-RPC 2.0 message: invalid request.
    #[test]
    fn jsonrpc_json_that_is_no_message(v in json_value()) {
        let is_message = v.get("jsonrpc") == Some(&json!("2.0"));
        let r = Message::decode(v.to_string().as_bytes());
        if !is_message {
            prop_assert!(matches!(r, Err(DecodeError::Invalid(_))), "{v}: {r:?}");
        }
    }

    /// A request written by the encoder reads back as itself.
    #[test]
    fn jsonrpc_round_trip(
        id in prop_oneof![any::<i64>().prop_map(RequestId::Num), "[ -~]{0,20}".prop_map(RequestId::Str)],
        method in "[a-z/_]{1,20}",
        params in proptest::option::of(json_object()),
    ) {
        let m = Message::Request { id, method, params: params.map(|p| Json::from_value(&p)) };
        let back = Message::decode(m.encode().as_bytes());
        prop_assert_eq!(back, Ok(m));
    }

    /// Any string: the cursor list parser answers, never panics; an entry
    /// with anything but digits and `;lost` is refused.
    #[test]
    fn cursor_list_any_string(s in "[0-9;, a-z\\-+]{0,40}|\\PC{0,40}") {
        let r = CursorList::parse(&s);
        let clean = s.split(',').all(|e| {
            let e = e.trim();
            let id = e.strip_suffix(";lost").map_or(e, str::trim);
            !id.is_empty() && id.len() <= 19 && id.bytes().all(|b| b.is_ascii_digit())
        });
        if !clean {
            prop_assert!(r.is_err(), "{s:?} parsed as {r:?}");
        }
    }

    /// A list written out reads back as itself.
    #[test]
    fn cursor_list_round_trip(
        entries in proptest::collection::vec((any::<u64>(), any::<bool>()), 1..=headers::CURSOR_LIST_MAX),
    ) {
        let list = CursorList(
            entries.into_iter().map(|(event_id, lost)| CursorEntry { event_id, lost }).collect(),
        );
        prop_assert_eq!(CursorList::parse(&list.to_string()), Ok(list));
    }

    /// `Accept`: a zero quality on the exact type refuses it whatever
    /// wildcards say; listing it without a quality admits it; any text is
    /// answered without a panic.
    #[test]
    fn accept_quality(
        others in proptest::collection::vec(
            prop_oneof![
                Just("*/*".to_string()),
                Just("text/*".to_string()),
                Just("application/json".to_string()),
                "[a-z]{1,6}/[a-z*]{1,6}(;q=0\\.[0-9])?",
            ],
            0..5,
        ),
        noise in "\\PC{0,30}",
        zero in prop_oneof![Just("0"), Just("0.0"), Just("0.000"), Just("0.")],
    ) {
        let wanted = "text/event-stream";
        let mut refused = others.clone();
        refused.push(format!("{wanted};q={zero}"));
        prop_assert!(!headers::accepts([refused.join(", ").as_str()], wanted));
        let mut admitted = others.clone();
        admitted.push(wanted.to_string());
        prop_assert!(headers::accepts([admitted.join(",").as_str()], wanted));
        let _ = headers::accepts([noise.as_str()], wanted);
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map("[a-z]{1,6}", json_value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Sends raw bytes on a fresh connection; the status of the answer, or
/// `None` when the server closed without one.
fn raw(s: &Served, bytes: &[u8]) -> Option<u16> {
    let mut sock = TcpStream::connect(s.addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = sock.write_all(bytes);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
}

fn post(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut b = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n{headers}content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    b.extend_from_slice(body);
    b
}

const JSON_HEADERS: &str =
    "content-type: application/json\r\naccept: application/json, text/event-stream\r\n";

/// Each class of bad request gets its status from `serve`, which stays up.
#[test]
fn each_class_of_bad_request_gets_its_status() {
    let mut s = Served::start(&[]);
    let mut c = s.connect();
    let sid = initialize(&mut c, &[]);
    // A runner per class: a runner counts its cases across runs.
    let check = |name: &str, strategy: BoxedStrategy<(Vec<u8>, Vec<Option<u16>>)>| {
        proptest::test_runner::TestRunner::new(cases(24))
            .run(&strategy, |(req, expected)| {
                let got = raw(&s, &req);
                prop_assert!(
                    expected.contains(&got),
                    "{name}: {:?} got {got:?}, expected one of {expected:?}",
                    String::from_utf8_lossy(&req)
                );
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
    };
    // Not JSON: 400.
    check(
        "not JSON",
        proptest::collection::vec(any::<u8>(), 1..200)
            .prop_filter("not JSON", |b| serde_json::from_slice::<Value>(b).is_err())
            .prop_map(|b| (post(JSON_HEADERS, &b), vec![Some(400)]))
            .boxed(),
    );
    // JSON but no message (not an initialize, which needs no session): 400.
    check(
        "JSON, no message",
        json_value()
            .prop_filter("no message", |v| v.get("jsonrpc") != Some(&json!("2.0")))
            .prop_map(|v| {
                (
                    post(JSON_HEADERS, v.to_string().as_bytes()),
                    vec![Some(400)],
                )
            })
            .boxed(),
    );
    // Another media type: 415.
    check(
        "content type",
        "(text|image|application)/[a-z]{1,10}"
            .prop_filter("not json", |t| t != "application/json")
            .prop_map(|t| {
                let h =
                    format!("content-type: {t}\r\naccept: application/json, text/event-stream\r\n");
                (post(&h, INIT.as_bytes()), vec![Some(415)])
            })
            .boxed(),
    );
    // An Accept without the event stream: 406.
    check(
        "accept",
        prop_oneof![
            Just("application/json".to_string()),
            Just("text/html".to_string()),
            "application/json, text/event-stream;q=0(\\.0{1,3})?",
            "[a-z]{1,8}/[a-z]{1,8}",
        ]
        .prop_map(|a| {
            let h = format!("content-type: application/json\r\naccept: {a}\r\n");
            (post(&h, INIT.as_bytes()), vec![Some(406)])
        })
        .boxed(),
    );
    // A session nobody was given: 404; none at all: 400.
    check(
        "session",
        prop_oneof![
            "[0-9a-f]{32}".prop_map(Some),
            "[!-~]{1,40}".prop_map(Some),
            Just(None),
        ]
        .prop_map(|sid| {
            let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
            match sid {
                Some(x) => (
                    post(&format!("{JSON_HEADERS}mcp-session-id: {x}\r\n"), ping),
                    vec![Some(404)],
                ),
                None => (post(JSON_HEADERS, ping), vec![Some(400)]),
            }
        })
        .boxed(),
    );
    // A foreign web origin: 403, whatever else the request says.
    check(
        "origin",
        (
            "(http|https)://[a-z]{1,10}\\.(example|test|com)(:[0-9]{1,5})?",
            "[a-z0-9/._-]{0,20}",
        )
            .prop_map(|(o, path)| {
                let req = format!("GET /{path} HTTP/1.1\r\nhost: 127.0.0.1\r\norigin: {o}\r\n\r\n");
                (req.into_bytes(), vec![Some(403)])
            })
            .boxed(),
    );
    // A host name outside the allow-list (DNS rebinding): 403.
    check(
        "host",
        "[a-z]{1,12}\\.(example|test|com)(:[0-9]{1,5})?"
            .prop_map(|h| {
                let req = format!(
                    "POST /mcp HTTP/1.1\r\nhost: {h}\r\n{JSON_HEADERS}content-length: {}\r\n\r\n{INIT}",
                    INIT.len()
                );
                (req.into_bytes(), vec![Some(403)])
            })
            .boxed(),
    );
    // Transfer codings other than `chunked` alone: 501 when they end in
    // `chunked` (hyper would decode them as plain chunked), else hyper's 400.
    check(
        "transfer coding",
        (proptest::collection::vec("[a-z]{1,8}", 1..4), any::<bool>())
            .prop_map(|(mut codings, last_chunked)| {
                if last_chunked {
                    codings.push("chunked".into());
                }
                codings
            })
            .prop_filter("not chunked alone", |c| c.len() > 1 || c[0] != "chunked")
            .prop_map(|codings| {
                let want = if codings.last().is_some_and(|c| c == "chunked") {
                    501
                } else {
                    400
                };
                let req = format!(
                    "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n{JSON_HEADERS}transfer-encoding: {}\r\n\r\n{:x}\r\n{INIT}\r\n0\r\n\r\n",
                    codings.join(", "),
                    INIT.len()
                );
                (req.into_bytes(), vec![Some(want)])
            })
            .boxed(),
    );
    // Another path: 404; another method on /mcp: 405.
    check(
        "route",
        prop_oneof![
            "/[a-z0-9]{1,12}"
                .prop_filter("not an endpoint", |p| !["/mcp", "/sse", "/messages"]
                    .contains(&p.as_str()))
                .prop_map(|p| (
                    format!("GET {p} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").into_bytes(),
                    vec![Some(404)]
                )),
            prop_oneof![Just("PUT"), Just("PATCH"), Just("OPTIONS")].prop_map(|m| (
                format!("{m} /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n")
                    .into_bytes(),
                vec![Some(405)]
            )),
        ]
        .boxed(),
    );
    // A body declared past the bound: 413.
    check(
        "size",
        (64 * 1024 + 1..10_000_000usize)
            .prop_map(|n| {
                let req = format!(
                    "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n{JSON_HEADERS}content-length: {n}\r\n\r\n"
                );
                (req.into_bytes(), vec![Some(413)])
            })
            .boxed(),
    );
    // A malformed resume cursor (guarded): 400.
    let session = sid.clone();
    check(
        "cursor",
        "[a-z;, \\-]{1,12}|[0-9]{1,5};[a-z]{1,4}"
            .prop_filter("not a cursor", |c| !c.trim().is_empty() && CursorList::parse_single(c.trim()).is_err())
            .prop_map(move |cur| {
                let req = format!("GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\nlast-event-id: {cur}\r\n\r\n");
                (req.into_bytes(), vec![Some(400)])
            })
            .boxed(),
    );
    // Garbage where a request head should be: 400, or closed unanswered.
    check(
        "head",
        proptest::collection::vec(any::<u8>(), 1..300)
            .prop_filter("a line to read", |b| b.iter().any(|c| !b"\r\n".contains(c)))
            .prop_map(|mut b| {
                b.extend_from_slice(b"\r\n\r\n");
                (b, vec![Some(400), Some(431), Some(505), Some(501), None])
            })
            .boxed(),
    );
    assert!(s.alive(), "no input stops the server");
    let r = c.send(
        "POST",
        &[("mcp-session-id", sid.as_str())],
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    );
    assert_eq!(r.status, 200, "{r:?}");
}

/// Within a session: what a request carries decides its JSON-RPC error.
#[test]
fn bad_requests_in_a_session_get_their_json_rpc_errors() {
    let s = Served::start(&[]);
    let c = std::cell::RefCell::new(s.connect());
    let sid = initialize(&mut c.borrow_mut(), &[]);
    let mut runner = proptest::test_runner::TestRunner::new(cases(48));
    let strategy = prop_oneof![
        // Unknown methods: -32601.
        "[a-z]{1,10}/[a-z]{1,10}"
            .prop_filter("unknown", |m| !["tools/list", "tools/call", "logging/setLevel", "resources/subscribe"].contains(&m.as_str()))
            .prop_map(|m| (json!({"jsonrpc":"2.0","id":1,"method":m}), jsonrpc::METHOD_NOT_FOUND)),
        // Bad tool arguments: -32602.
        json_value().prop_map(|a| (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ledger_append","arguments":{"tag": a, "chunks": 0}}}), jsonrpc::INVALID_PARAMS)),
        (1_001u32..).prop_map(|n| (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ledger_append","arguments":{"tag":"t","chunks":n}}}), jsonrpc::INVALID_PARAMS)),
        "[a-z_]{1,12}"
            .prop_filter("unknown tool", |t| t != "ledger_append" && t != "ledger_read")
            .prop_map(|t| (json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":t,"arguments":{}}}), jsonrpc::INVALID_PARAMS)),
        json_value()
            .prop_filter("no level", |l| l.as_str().and_then(mcp::log_level).is_none())
            .prop_map(|l| (json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":l}}), jsonrpc::INVALID_PARAMS)),
    ];
    runner
        .run(&strategy, |(msg, code)| {
            let r = c.borrow_mut().send(
                "POST",
                &[("mcp-session-id", sid.as_str())],
                &msg.to_string(),
            );
            prop_assert_eq!(r.status, 200, "{}: {:?}", msg, r);
            let v: Value = serde_json::from_str(&r.body).unwrap();
            prop_assert_eq!(
                v["error"]["code"].as_i64(),
                Some(code),
                "{}: {}",
                msg,
                r.body
            );
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

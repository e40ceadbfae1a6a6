//! The transport's answers on a real socket: every status code the server
//! documents, each with a JSON-RPC error body, and the legacy HTTP+SSE
//! transport beside streamable HTTP (its endpoint event, 202 on POST, its
//! own event numbering, Rule T for a legacy session on `/mcp`).

use crate::loopback::{
    both, drain, evict_a_result, legacy_get, legacy_post, next, rpc_error, with_server, Harness,
};
use mcp_chaos::client::http::{Exchange, Outgoing};
use mcp_chaos::protocol::headers;
use mcp_chaos::protocol::jsonrpc::{self, Message, RequestId};
use mcp_chaos::protocol::mcp;
use mcp_chaos::server::{ServerConfig, Variant};
use serde_json::json;

async fn raw_post(h: &Harness, sid: Option<&str>, body: &str, ct: &str, accept: &str) -> Exchange {
    let msg = Message::Request {
        id: RequestId::Num(999),
        method: "ping".into(),
        params: None,
    };
    let mut out = Outgoing::post(sid, &msg)
        .header("content-type", ct)
        .header("accept", accept);
    out.body = Some(bytes::Bytes::from(body.to_string()));
    h.send(out).await
}

/// Every status code the server documents, each with a JSON-RPC error body.
#[test]
fn status_codes() {
    let cfg = ServerConfig {
        store_capacity: 4,
        max_body_bytes: 256,
        ..ServerConfig::default()
    };
    with_server(Variant::Guarded, cfg, |h| async move {
        let sid = h.initialize().await;
        let ping = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
        let json = "application/json";
        let both = "application/json, text/event-stream";
        let check = |ex: Exchange, status: u16, code: i64| async move {
            assert_eq!(ex.status, status);
            let body = ex.json().await.unwrap().expect("an error body");
            assert_eq!(rpc_error(&body).code, code, "status {status}");
        };
        // 200: a ping.
        let ok = raw_post(&h, Some(&sid), ping, json, both).await;
        assert_eq!(ok.status, 200);
        // 400: missing session header.
        check(
            raw_post(&h, None, ping, json, both).await,
            400,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 400 + parse error: malformed JSON.
        check(
            raw_post(&h, Some(&sid), "{nope", json, both).await,
            400,
            jsonrpc::PARSE_ERROR,
        )
        .await;
        // 400 + invalid request: not JSON-RPC.
        check(
            raw_post(&h, Some(&sid), "[1]", json, both).await,
            400,
            jsonrpc::INVALID_REQUEST,
        )
        .await;
        // 404: unknown session.
        check(
            raw_post(&h, Some("00ff"), ping, json, both).await,
            404,
            jsonrpc::SESSION_ERROR,
        )
        .await;
        // 405: PUT.
        let mut put = Outgoing::get(&sid, None);
        put.method = ::http::Method::PUT;
        let put = h.send(put).await;
        assert_eq!(put.header("allow"), Some("GET, POST, DELETE"));
        check(put, 405, jsonrpc::TRANSPORT_ERROR).await;
        // 406: Accept without text/event-stream.
        check(
            raw_post(&h, Some(&sid), ping, json, json).await,
            406,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 413: body too large.
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#,
            "x".repeat(300)
        );
        check(
            raw_post(&h, Some(&sid), &big, json, both).await,
            413,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 415: bad content type.
        check(
            raw_post(&h, Some(&sid), ping, "text/plain", both).await,
            415,
            jsonrpc::TRANSPORT_ERROR,
        )
        .await;
        // 400: unsupported protocol version.
        let mut v = Outgoing::post(Some(&sid), &Message::decode(ping.as_bytes()).unwrap());
        v = v.header(headers::MCP_PROTOCOL_VERSION, "1999-01-01");
        check(h.send(v).await, 400, jsonrpc::TRANSPORT_ERROR).await;
        // 409: a second plain GET.
        let mut standalone = h.send(Outgoing::get(&sid, None)).await;
        next(&mut standalone).await;
        check(
            h.send(Outgoing::get(&sid, None)).await,
            409,
            jsonrpc::CONFLICT,
        )
        .await;
        // 422: key reused with other arguments.
        let mut k1 = h.call(&sid, "a", 1, Some("k")).await;
        h.release(1);
        drain(&mut k1).await;
        check(
            h.call(&sid, "b", 1, Some("k")).await,
            422,
            jsonrpc::KEY_REUSED,
        )
        .await;
        // 410: resume from an evicted position whose result was evicted
        // too (store holds 4 events; a gap with the result surviving is a
        // 200, see `guarded_resume_past_eviction_announces_a_gap`).
        let priming = evict_a_result(&h, &sid, 1).await;
        check(
            h.send(Outgoing::get(&sid, Some(priming))).await,
            410,
            jsonrpc::GONE,
        )
        .await;
        // 400: a Last-Event-ID that is not a number.
        let bad = Outgoing::get(&sid, None).header(headers::LAST_EVENT_ID, "abc");
        check(h.send(bad).await, 400, jsonrpc::TRANSPORT_ERROR).await;
        // Unknown tool: a JSON-RPC error, HTTP 200.
        let unknown = Message::Request {
            id: h.id(),
            method: mcp::TOOLS_CALL.into(),
            params: Some(json!({"name": "nope", "arguments": {}}).into()),
        };
        check(
            h.send(Outgoing::post(Some(&sid), &unknown)).await,
            200,
            jsonrpc::INVALID_PARAMS,
        )
        .await;
        // DELETE ends the session; then 404.
        let mut del = Outgoing::get(&sid, None);
        del.method = ::http::Method::DELETE;
        assert_eq!(h.send(del).await.status, 200);
        check(
            raw_post(&h, Some(&sid), ping, json, both).await,
            404,
            jsonrpc::SESSION_ERROR,
        )
        .await;
    });
}

/// The legacy transport on the same server: endpoint event, 202 on POST,
/// answers on the stream numbered by its own counter, 404 for an unknown
/// session; Rule T on /mcp for a legacy session.
#[test]
fn legacy_transport_endpoint_posts_and_stream() {
    both(
        ServerConfig {
            first_event_id: 100,
            ..ServerConfig::default()
        },
        |h, variant| {
            Box::pin(async move {
                let mut stream = h.send(legacy_get()).await;
                assert_eq!(stream.status, 200);
                let endpoint = next(&mut stream).await;
                assert_eq!(endpoint.event, "endpoint");
                let sid = endpoint
                    .data
                    .strip_prefix("/messages?sessionId=")
                    .expect("endpoint names the session")
                    .to_string();
                assert_eq!(sid.len(), 32);
                let init = Message::Request {
                    id: h.id(),
                    method: mcp::INITIALIZE.into(),
                    params: Some(mcp::initialize_params(
                        mcp::LEGACY_VERSION,
                        json!({"sampling": {}}),
                        "legacy",
                    )),
                };
                let ack = legacy_post(&h, &endpoint.data, &init).await;
                assert_eq!(
                    ack.status, 202,
                    "legacy POSTs are accepted, answered on the stream"
                );
                let answer = next(&mut stream).await;
                assert_eq!(
                    answer.id.as_deref(),
                    Some("1"),
                    "the legacy stream counts its own events"
                );
                let msg = Message::decode(answer.data.as_bytes()).unwrap();
                match msg {
                    Message::Result { result, .. } => {
                        assert_eq!(result.to_value()["protocolVersion"], mcp::LEGACY_VERSION)
                    }
                    other => panic!("{other:?}"),
                }
                let call = h.call_msg(h.id(), "legacy-op", 2);
                assert_eq!(legacy_post(&h, &endpoint.data, &call).await.status, 202);
                h.release(2);
                let progress = next(&mut stream).await;
                let result = next(&mut stream).await;
                assert_eq!(
                    (progress.id.as_deref(), result.id.as_deref()),
                    (Some("2"), Some("3"))
                );
                assert!(matches!(
                    Message::decode(result.data.as_bytes()).unwrap(),
                    Message::Result { .. }
                ));
                assert_eq!(h.ledger.executions("legacy-op"), 1);
                // Unknown session: 404 with a JSON-RPC error.
                let unknown = legacy_post(&h, "/messages?sessionId=00ff", &init).await;
                assert_eq!(unknown.status, 404);
                assert_eq!(
                    rpc_error(&unknown.json().await.unwrap().unwrap()).code,
                    jsonrpc::SESSION_ERROR
                );
                // Streamable HTTP with the legacy session id: Rule T.
                let ping = Message::Request {
                    id: h.id(),
                    method: "ping".into(),
                    params: None,
                };
                let cross = h.send(Outgoing::post(Some(&sid), &ping)).await;
                match variant {
                    Variant::Keys | Variant::Cancel => {
                        unreachable!("both() runs guarded and unguarded")
                    }
                    Variant::Guarded => {
                        assert_eq!(cross.status, 404);
                        let body = cross.json().await.unwrap().unwrap();
                        assert_eq!(
                            rpc_error(&body).data.as_ref().unwrap()["reason"],
                            "transport_mismatch"
                        );
                    }
                    Variant::Unguarded => {
                        assert_eq!(cross.status, 200, "the unguarded lookup succeeds")
                    }
                }
            })
        },
    );
}

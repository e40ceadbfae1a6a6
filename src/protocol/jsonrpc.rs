//! JSON-RPC 2.0 framing: requests, notifications, responses, errors.
//!
//! Params and results are JSON text ([`Json`]), never a `Value` tree on the
//! hot path: messages are written directly (the bytes `Value` would write)
//! and read without building one.

use super::json::{Json, Raw, Valid};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Server-defined: the session is unknown, terminated, or on another transport.
pub const SESSION_ERROR: i64 = -32001;
/// Server-defined: a guard rejection or another conflict (HTTP 409).
pub const CONFLICT: i64 = -32002;
/// Server-defined: the resume position was evicted (HTTP 410).
pub const GONE: i64 = -32003;
/// Server-defined: an idempotency key reused with other arguments (HTTP 422).
pub const KEY_REUSED: i64 = -32004;
/// Server-defined: a transport-level refusal (bad headers, sizes, types).
pub const TRANSPORT_ERROR: i64 = -32005;

/// A JSON-RPC id: a number or a string, never null for requests.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// Numeric id.
    Num(i64),
    /// String id.
    Str(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Num(n) => write!(f, "{n}"),
            RequestId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// Error code.
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// Structured detail (reasons, hints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code, a message, and optional data.
    pub fn new(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data,
        }
    }
}

/// One inbound or outbound JSON-RPC message. Params and results are JSON
/// text ([`Json`]): read with [`Json::get`] or [`Json::parse`].
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: expects a response.
    Request {
        /// Request id.
        id: RequestId,
        /// Method name.
        method: String,
        /// Parameters.
        params: Option<Json>,
    },
    /// A notification: no id, no response.
    Notification {
        /// Method name.
        method: String,
        /// Parameters.
        params: Option<Json>,
    },
    /// A successful response.
    Result {
        /// Id of the request answered.
        id: RequestId,
        /// The result.
        result: Json,
    },
    /// An error response (id is null when the request could not be read).
    Error {
        /// Id of the request answered, if known.
        id: Option<RequestId>,
        /// The error.
        error: ErrorObject,
    },
}

/// Why an inbound body is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON at all.
    #[error("parse error: {0}")]
    Parse(String),
    /// JSON, but not a JSON-RPC 2.0 message we accept.
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl DecodeError {
    /// The JSON-RPC error object for this failure.
    pub fn to_error(&self) -> ErrorObject {
        match self {
            DecodeError::Parse(m) => {
                ErrorObject::new(PARSE_ERROR, format!("Parse error: {m}"), None)
            }
            DecodeError::Invalid(m) => {
                ErrorObject::new(INVALID_REQUEST, format!("Invalid Request: {m}"), None)
            }
        }
    }
}

impl Message {
    /// Reads one message from a body. Batches are refused (MCP removed them
    /// in 2025-06-18).
    ///
    /// No `Value` is built: the body is first checked to be JSON exactly as
    /// parsing it into a `Value` would (same errors), then its top-level
    /// members are read as spans, with the decisions (and error texts) the
    /// `Value` reading made: the last of duplicate keys counts, and
    /// `params` and `result` are kept as their text.
    pub fn decode(body: &[u8]) -> Result<Message, DecodeError> {
        serde_json::from_slice::<Valid>(body).map_err(|e| DecodeError::Parse(e.to_string()))?;
        // Valid JSON is UTF-8 throughout (strings are checked; the rest is ASCII).
        let text = std::str::from_utf8(body).map_err(|e| DecodeError::Parse(e.to_string()))?;
        let top = Raw::of(text);
        if !top.is_object() {
            return Err(DecodeError::Invalid(
                "expected a JSON object (batches are not supported)".into(),
            ));
        }
        let (mut jsonrpc, mut id, mut method, mut params, mut error, mut result) =
            (None, None, None, None, None, None);
        for (k, v) in top.members() {
            match &*k {
                "jsonrpc" => jsonrpc = Some(v),
                "id" => id = Some(v),
                "method" => method = Some(v),
                "params" => params = Some(v),
                "error" => error = Some(v),
                "result" => result = Some(v),
                _ => {}
            }
        }
        if jsonrpc.and_then(Raw::as_str).as_deref() != Some("2.0") {
            return Err(DecodeError::Invalid("\"jsonrpc\" must be \"2.0\"".into()));
        }
        let id = match id {
            None => None,
            Some(raw) if raw.is_null() => Some(None),
            Some(raw) => Some(Some(request_id(raw).ok_or_else(|| {
                DecodeError::Invalid("id must be a string or an integer".into())
            })?)),
        };
        let method = match method {
            None => None,
            Some(m) => match m.as_str() {
                Some(m) => Some(m.into_owned()),
                None => return Err(DecodeError::Invalid("method must be a string".into())),
            },
        };
        if let Some(p) = params {
            if !p.is_object() && !p.is_array() {
                return Err(DecodeError::Invalid(
                    "params must be an object or an array".into(),
                ));
            }
        }
        let params = params.map(Raw::to_json);
        match (method, id) {
            (Some(method), None) => Ok(Message::Notification { method, params }),
            (Some(method), Some(Some(id))) => Ok(Message::Request { id, method, params }),
            (Some(_), Some(None)) => {
                Err(DecodeError::Invalid("a request id must not be null".into()))
            }
            (None, id) => {
                let id = id.flatten();
                if let Some(err) = error {
                    // Rare: read as the `Value` reading did.
                    let error = serde_json::from_str::<Value>(err.text())
                        .and_then(serde_json::from_value)
                        .map_err(|_| DecodeError::Invalid("malformed error object".into()))?;
                    Ok(Message::Error { id, error })
                } else if let (Some(result), Some(id)) = (result, id) {
                    Ok(Message::Result {
                        id,
                        result: result.to_json(),
                    })
                } else {
                    Err(DecodeError::Invalid(
                        "neither a request, a notification nor a response".into(),
                    ))
                }
            }
        }
    }

    /// Reads one message from a JSON value.
    pub fn from_value(v: Value) -> Result<Message, DecodeError> {
        Self::decode(v.to_string().as_bytes())
    }

    /// The JSON value of this message (for tests and rare readers; the
    /// wire form is [`Message::encode`], the same JSON).
    pub fn to_value(&self) -> Value {
        match self {
            Message::Request { id, method, params } => {
                let mut v = json!({"jsonrpc": "2.0", "id": id, "method": method});
                if let Some(p) = params {
                    v["params"] = p.to_value();
                }
                v
            }
            Message::Notification { method, params } => {
                let mut v = json!({"jsonrpc": "2.0", "method": method});
                if let Some(p) = params {
                    v["params"] = p.to_value();
                }
                v
            }
            Message::Result { id, result } => {
                json!({"jsonrpc": "2.0", "id": id, "result": result.to_value()})
            }
            Message::Error { id, error } => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        }
    }

    /// Compact JSON text of this message: exactly `to_value().to_string()`
    /// (keys in alphabetical order, as `Value` writes them), written
    /// directly.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(64 + self.payload_len());
        match self {
            Message::Request { id, method, params } => {
                out.push_str("{\"id\":");
                write_id(&mut out, id);
                out.push_str(",\"jsonrpc\":\"2.0\",\"method\":");
                write_str(&mut out, method);
                if let Some(p) = params {
                    out.push_str(",\"params\":");
                    p.write_to(&mut out);
                }
            }
            Message::Notification { method, params } => {
                out.push_str("{\"jsonrpc\":\"2.0\",\"method\":");
                write_str(&mut out, method);
                if let Some(p) = params {
                    out.push_str(",\"params\":");
                    p.write_to(&mut out);
                }
            }
            Message::Result { id, result } => {
                out.push_str("{\"id\":");
                write_id(&mut out, id);
                out.push_str(",\"jsonrpc\":\"2.0\",\"result\":");
                result.write_to(&mut out);
            }
            Message::Error { id, error } => {
                // `ErrorObject`'s `Value` has its keys sorted: code, data, message.
                out.push_str("{\"error\":{\"code\":");
                out.push_str(&error.code.to_string());
                if let Some(d) = &error.data {
                    out.push_str(",\"data\":");
                    out.push_str(&d.to_string());
                }
                out.push_str(",\"message\":");
                write_str(&mut out, &error.message);
                out.push_str("},\"id\":");
                match id {
                    Some(id) => write_id(&mut out, id),
                    None => out.push_str("null"),
                }
                out.push_str(",\"jsonrpc\":\"2.0\"");
            }
        }
        out.push('}');
        out
    }

    fn payload_len(&self) -> usize {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                params.as_ref().map_or(0, |p| p.text().len())
            }
            Message::Result { result, .. } => result.text().len(),
            Message::Error { .. } => 64,
        }
    }

    /// The id this message carries, for requests and responses.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request { id, .. } | Message::Result { id, .. } => Some(id),
            Message::Error { id, .. } => id.as_ref(),
            Message::Notification { .. } => None,
        }
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            _ => None,
        }
    }
}

/// A request id as the `Value` reading took it (`RequestId`'s untagged
/// form: an `i64`, else a string).
fn request_id(raw: Raw<'_>) -> Option<RequestId> {
    if let Some(s) = raw.as_str() {
        return Some(RequestId::Str(s.into_owned()));
    }
    serde_json::from_str::<i64>(raw.text())
        .ok()
        .map(RequestId::Num)
}

/// Appends `s` as a JSON string (serde_json's escaping, as `Value` writes).
fn write_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut buf = Vec::with_capacity(s.len() + 8);
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, s);
    out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
}

fn write_id(out: &mut String, id: &RequestId) {
    match id {
        RequestId::Num(n) => {
            use std::fmt::Write;
            let _ = write!(out, "{n}");
        }
        RequestId::Str(s) => write_str(out, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: Result<Message, &str>) {
        let got = Message::decode(text.as_bytes());
        match (got, expect) {
            (Ok(m), Ok(e)) => {
                assert_eq!(m, e);
                assert_eq!(
                    Message::decode(m.encode().as_bytes()).unwrap(),
                    m,
                    "round trip"
                );
            }
            (Err(e), Err(code)) => assert_eq!(
                e.to_error().code,
                if code == "parse" {
                    PARSE_ERROR
                } else {
                    INVALID_REQUEST
                },
                "{text}: {e}"
            ),
            (got, expect) => panic!("{text}: got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn decodes_every_shape() {
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            Ok(Message::Request {
                id: RequestId::Num(1),
                method: "ping".into(),
                params: None,
            }),
        );
        check(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#,
            Ok(Message::Request {
                id: RequestId::Str("a".into()),
                method: "tools/list".into(),
                params: Some(json!({}).into()),
            }),
        );
        check(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Ok(Message::Notification {
                method: "notifications/initialized".into(),
                params: None,
            }),
        );
        check(
            r#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#,
            Ok(Message::Result {
                id: RequestId::Num(3),
                result: json!({"ok": true}).into(),
            }),
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            Ok(Message::Error {
                id: None,
                error: ErrorObject::new(-32700, "x", None),
            }),
        );
    }

    #[test]
    fn refuses_what_is_not_jsonrpc() {
        check("{", Err("parse"));
        check("", Err("parse"));
        check("[]", Err("invalid"));
        check(r#"{"id":1,"method":"ping"}"#, Err("invalid"));
        check(
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            Err("invalid"),
        );
        check(
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Err("invalid"),
        );
        check(
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            Err("invalid"),
        );
        check(r#"{"jsonrpc":"2.0","id":1,"method":7}"#, Err("invalid"));
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            Err("invalid"),
        );
        check(r#"{"jsonrpc":"2.0","id":1}"#, Err("invalid"));
    }

    fn messages() -> Vec<Message> {
        let id = |n: i64| RequestId::Num(n);
        vec![
            Message::Request {
                id: id(1),
                method: "ping".into(),
                params: None,
            },
            Message::Request {
                id: RequestId::Str("c1-op2#3".into()),
                method: "tools/call".into(),
                params: Some(
                    json!({"name": "ledger_append", "arguments": {"tag": "t", "chunks": 3,
                        "chunk_interval_ms": 10}, "_meta": {"progressToken": "c1-op2#3"}})
                    .into(),
                ),
            },
            Message::Request {
                id: id(-7),
                method: "we\"ird\n\u{1}é".into(),
                params: Some(json!([1, 2.5, null, {"z": 1, "a": [true]}]).into()),
            },
            Message::Notification {
                method: "notifications/initialized".into(),
                params: None,
            },
            Message::Notification {
                method: "notifications/progress".into(),
                params: Some(
                    json!({"progressToken": "x#1", "progress": 2, "total": 4,
                        "message": "ledger:1:2:x"})
                    .into(),
                ),
            },
            Message::Result {
                id: id(i64::MAX),
                result: json!({"content": [{"type": "text", "text": "{\"a\":1}"}],
                    "isError": false, "_meta": {"replayed": true}})
                .into(),
            },
            Message::Result {
                id: id(i64::MIN),
                result: json!(null).into(),
            },
            Message::Error {
                id: None,
                error: ErrorObject::new(PARSE_ERROR, "Parse error: x", None),
            },
            Message::Error {
                id: Some(RequestId::Str("s".into())),
                error: ErrorObject::new(
                    CONFLICT,
                    "m",
                    Some(json!({"reason": "r", "hint": 3, "issued": "a"})),
                ),
            },
        ]
    }

    #[test]
    fn encode_writes_what_the_value_writes() {
        for m in messages() {
            assert_eq!(m.encode(), m.to_value().to_string());
            // Decoded (raw text kept) and written back: the same bytes.
            let back = Message::decode(m.encode().as_bytes()).unwrap();
            assert_eq!(back.encode(), m.encode());
        }
        // A decoded message whose payload text is not canonical is written
        // back canonically, as the `Value` would be.
        let text = r#"{ "params" : { "b" : 1.0 , "a" : "\u0041" } , "method":"m","jsonrpc":"2.0"}"#;
        let m = Message::decode(text.as_bytes()).unwrap();
        assert_eq!(
            m.encode(),
            r#"{"jsonrpc":"2.0","method":"m","params":{"a":"A","b":1.0}}"#
        );
        assert_eq!(m.encode(), m.to_value().to_string());
    }

    /// The old reading, through a `Value`: every decision and error text.
    fn decode_by_value(body: &[u8]) -> Result<Value, DecodeError> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| DecodeError::Parse(e.to_string()))?;
        let Value::Object(mut obj) = v else {
            return Err(DecodeError::Invalid(
                "expected a JSON object (batches are not supported)".into(),
            ));
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(DecodeError::Invalid("\"jsonrpc\" must be \"2.0\"".into()));
        }
        let id = match obj.remove("id") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(raw) => Some(Some(serde_json::from_value::<RequestId>(raw).map_err(
                |_| DecodeError::Invalid("id must be a string or an integer".into()),
            )?)),
        };
        let method = match obj.remove("method") {
            None => None,
            Some(Value::String(m)) => Some(m),
            Some(_) => return Err(DecodeError::Invalid("method must be a string".into())),
        };
        let params = obj.remove("params");
        if let Some(p) = &params {
            if !p.is_object() && !p.is_array() {
                return Err(DecodeError::Invalid(
                    "params must be an object or an array".into(),
                ));
            }
        }
        let mut out = json!({"jsonrpc": "2.0"});
        match (method, id) {
            (Some(method), id) => {
                if let Some(Some(id)) = &id {
                    out["id"] = json!(id);
                } else if id.is_some() {
                    return Err(DecodeError::Invalid("a request id must not be null".into()));
                }
                out["method"] = json!(method);
                if let Some(p) = params {
                    out["params"] = p;
                }
            }
            (None, id) => {
                let id = id.flatten();
                if let Some(err) = obj.remove("error") {
                    let error: ErrorObject = serde_json::from_value(err)
                        .map_err(|_| DecodeError::Invalid("malformed error object".into()))?;
                    out["id"] = json!(id);
                    out["error"] = json!(error);
                } else if let (Some(result), Some(id)) = (obj.remove("result"), id) {
                    out["id"] = json!(id);
                    out["result"] = result;
                } else {
                    return Err(DecodeError::Invalid(
                        "neither a request, a notification nor a response".into(),
                    ));
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn decode_decides_as_the_value_reading_did() {
        let mut bodies: Vec<Vec<u8>> = [
            "",
            "{",
            "[]",
            "3",
            "null",
            r#""x""#,
            "{}",
            " {} ",
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","jsonrpc":"1.0"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2\u002e0","id":"a\"b","method":"p\u0069ng"}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1e2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null}"#,
            r#"{"jsonrpc":"2.0","method":null}"#,
            r#"{"jsonrpc":"2.0","method":["m"]}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":"p"}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":[1,{"a":"]"}]}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{"a":1},"params":{"b":2}}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{"a":1e400}}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":{"a":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":null}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"code":2,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1.5,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","data":null}}"#,
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","data":{"b":1,"a":2}}}"#,
            r#"{"jsonrpc":"2.0","error":"x"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"m","result":1}"#,
            r#"{"jsonrpc":"2.0","id":2} x"#,
            r#"{"jsonrpc":"2.0","id":2,}"#,
            r#"{"jsonrpc":"2.0","$serde_json::private::RawValue":"1","id":1,"method":"m"}"#,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        bodies.push(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}".to_vec());
        bodies.push(format!("{}{}", "[".repeat(130), "]".repeat(130)).into_bytes());
        bodies.push(
            format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{}1{}}}"#,
                "[".repeat(126),
                "]".repeat(126)
            )
            .into_bytes(),
        );
        for m in messages() {
            bodies.push(m.encode().into_bytes());
        }
        for body in &bodies {
            let old = decode_by_value(body);
            let new = Message::decode(body).map(|m| m.to_value());
            assert_eq!(new, old, "{}", String::from_utf8_lossy(body));
            if let Ok(m) = Message::decode(body) {
                assert_eq!(m.encode(), old.unwrap().to_string());
            }
        }
    }
}

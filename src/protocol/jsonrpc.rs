//! JSON-RPC 2.0 framing: requests, notifications, responses, errors.
//!
//! Params and results stay `serde_json::Value`; the typed MCP payloads in
//! [`super::mcp`] are read out of them where a handler needs them.

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

/// One inbound or outbound JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request: expects a response.
    Request {
        /// Request id.
        id: RequestId,
        /// Method name.
        method: String,
        /// Parameters.
        params: Option<Value>,
    },
    /// A notification: no id, no response.
    Notification {
        /// Method name.
        method: String,
        /// Parameters.
        params: Option<Value>,
    },
    /// A successful response.
    Result {
        /// Id of the request answered.
        id: RequestId,
        /// The result.
        result: Value,
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
    pub fn decode(body: &[u8]) -> Result<Message, DecodeError> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| DecodeError::Parse(e.to_string()))?;
        Self::from_value(v)
    }

    /// Reads one message from a JSON value.
    pub fn from_value(v: Value) -> Result<Message, DecodeError> {
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
        match (method, id) {
            (Some(method), None) => Ok(Message::Notification { method, params }),
            (Some(method), Some(Some(id))) => Ok(Message::Request { id, method, params }),
            (Some(_), Some(None)) => {
                Err(DecodeError::Invalid("a request id must not be null".into()))
            }
            (None, id) => {
                let id = id.flatten();
                if let Some(err) = obj.remove("error") {
                    let error = serde_json::from_value(err)
                        .map_err(|_| DecodeError::Invalid("malformed error object".into()))?;
                    Ok(Message::Error { id, error })
                } else if let (Some(result), Some(id)) = (obj.remove("result"), id) {
                    Ok(Message::Result { id, result })
                } else {
                    Err(DecodeError::Invalid(
                        "neither a request, a notification nor a response".into(),
                    ))
                }
            }
        }
    }

    /// The JSON value of this message.
    pub fn to_value(&self) -> Value {
        match self {
            Message::Request { id, method, params } => {
                let mut v = json!({"jsonrpc": "2.0", "id": id, "method": method});
                if let Some(p) = params {
                    v["params"] = p.clone();
                }
                v
            }
            Message::Notification { method, params } => {
                let mut v = json!({"jsonrpc": "2.0", "method": method});
                if let Some(p) = params {
                    v["params"] = p.clone();
                }
                v
            }
            Message::Result { id, result } => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Message::Error { id, error } => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        }
    }

    /// Compact JSON text of this message.
    pub fn encode(&self) -> String {
        self.to_value().to_string()
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
                params: Some(json!({})),
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
                result: json!({"ok": true}),
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
}

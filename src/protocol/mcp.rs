//! The MCP subset: method names, protocol versions, and the payloads of
//! initialize, tools/list, tools/call, progress and cancellation.

use super::json::{raw_if_valid, Json};
use super::jsonrpc::{Message, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

/// `initialize` request.
pub const INITIALIZE: &str = "initialize";
/// Client notification after the initialize result.
pub const INITIALIZED: &str = "notifications/initialized";
/// `tools/list` request.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call` request.
pub const TOOLS_CALL: &str = "tools/call";
/// Progress notification.
pub const PROGRESS: &str = "notifications/progress";
/// Log message notification (progress for calls without a token).
pub const MESSAGE: &str = "notifications/message";
/// Cancellation notification.
pub const CANCELLED: &str = "notifications/cancelled";
/// `ping` request.
pub const PING: &str = "ping";
/// `logging/setLevel` request: the least severe log level the client wants.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// The log levels, least severe first (RFC 5424's, as MCP names them).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
/// The level of the server's log messages (a call's progress when it has no
/// progress token): `info`.
pub const PROGRESS_LOG_LEVEL: u8 = 1;

/// The rank of a log level in [`LOG_LEVELS`], if it is one.
pub fn log_level(name: &str) -> Option<u8> {
    LOG_LEVELS.iter().position(|l| *l == name).map(|i| i as u8)
}
/// `resources/subscribe` request.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` request.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `resources/list` request.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/read` request.
pub const RESOURCES_READ: &str = "resources/read";
/// Resource-changed notification.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// The one resource: a clock that changes over simulated time.
pub const CLOCK_URI: &str = "clock://tick";
/// The legacy HTTP+SSE revision.
pub const LEGACY_VERSION: &str = "2024-11-05";

/// Protocol revisions the server accepts, oldest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The revision the server prefers.
pub const LATEST_VERSION: &str = "2025-11-25";

/// The tool that appends to the side-effect ledger (not idempotent).
pub const LEDGER_APPEND: &str = "ledger_append";
/// The tool that reads the side-effect ledger (idempotent).
pub const LEDGER_READ: &str = "ledger_read";

/// Whether a tool is idempotent: re-running it has no further side effect.
pub fn tool_is_idempotent(name: &str) -> bool {
    name == LEDGER_READ
}

/// `initialize` params as a client sends them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Requested protocol revision.
    pub protocol_version: String,
    /// Client capabilities.
    #[serde(default)]
    pub capabilities: Value,
    /// Client name and version.
    #[serde(default)]
    pub client_info: Value,
}

/// `tools/call` params.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CallToolParams {
    /// Tool name.
    pub name: String,
    /// Tool arguments.
    #[serde(default)]
    pub arguments: Value,
    /// Request metadata (`progressToken`).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl CallToolParams {
    /// The progress token, if the caller asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta.as_ref().and_then(|m| m.get("progressToken"))
    }
}

/// Arguments of `ledger_append`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LedgerAppendArgs {
    /// The logical operation: retries carry the same tag.
    pub tag: String,
    /// Number of chunks: C−1 progress events then the result.
    #[serde(default = "one")]
    pub chunks: u32,
    /// Time between chunks, simulated milliseconds.
    #[serde(default)]
    pub chunk_interval_ms: u64,
    /// Ask the client for input after taking the effect (2026-07-28: an
    /// input-required result; the retry that answers continues the call).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asks_input: bool,
}

fn one() -> u32 {
    1
}

/// Arguments of `ledger_read`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LedgerReadArgs {
    /// Read one tag only.
    #[serde(default)]
    pub tag: Option<String>,
}

/// `initialize` params for a client of the given revision and capabilities.
pub fn initialize_params(version: &str, capabilities: Value, client_name: &str) -> Json {
    Json::from(json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": client_name, "version": env!("CARGO_PKG_VERSION")},
    }))
}

/// The server's `initialize` result.
pub fn initialize_result(version: &str) -> Json {
    Json::from(json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": false},
            "logging": {},
            "resources": {"subscribe": true, "listChanged": false},
        },
        "serverInfo": {"name": "mcp-chaos", "version": env!("CARGO_PKG_VERSION")},
    }))
}

/// The server's `tools/list` result.
pub fn tools_list_result() -> Value {
    json!({"tools": [
        {
            "name": LEDGER_APPEND,
            "description": "Append one execution of `tag` to the side-effect ledger, streaming `chunks` events. Not idempotent.",
            "inputSchema": {"type": "object", "properties": {
                "tag": {"type": "string"},
                "chunks": {"type": "integer", "minimum": 1},
                "chunk_interval_ms": {"type": "integer", "minimum": 0},
                "asks_input": {"type": "boolean", "default": false}
            }, "required": ["tag"]},
            "annotations": {"idempotentHint": false, "destructiveHint": false}
        },
        {
            "name": LEDGER_READ,
            "description": "Read executions per tag from the side-effect ledger. Idempotent.",
            "inputSchema": {"type": "object", "properties": {"tag": {"type": "string"}}},
            "annotations": {"idempotentHint": true, "readOnlyHint": true}
        }
    ]})
}

// The hot payloads, written by typed serialization. Fields are declared in
// alphabetical order of their wire names: the bytes are what the `Value`
// of the same object writes (serde_json without `preserve_order` sorts).

/// `ledger_append`'s result text.
#[derive(Serialize)]
struct AppendText<'a> {
    chunk: &'a str,
    executions: u32,
    tag: &'a str,
}

/// `ledger_read`'s result text.
#[derive(Serialize)]
struct ReadText<'a> {
    executions: BTreeMap<&'a str, u32>,
    finished: BTreeMap<&'a str, u32>,
}

/// A `tools/call` result with one text content.
#[derive(Serialize)]
struct TextResult<'a> {
    content: [TextContent<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Serialize)]
struct TextContent<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
}

/// `notifications/progress` params.
#[derive(Serialize)]
struct ProgressParams<'a> {
    message: &'a str,
    progress: u32,
    #[serde(rename = "progressToken")]
    progress_token: &'a Value,
    total: u32,
}

/// `notifications/cancelled` params: the request to stop, and why.
pub fn cancelled_params(request: &RequestId, reason: &str) -> Json {
    json!({"requestId": request, "reason": reason}).into()
}

/// `notifications/message` params carrying progress.
#[derive(Serialize)]
struct LogParams<'a> {
    data: LogData<'a>,
    level: &'a str,
}

#[derive(Serialize)]
struct LogData<'a> {
    chunk: &'a str,
    progress: u32,
    #[serde(rename = "requestId")]
    request_id: &'a RequestId,
    total: u32,
}

/// The text of `ledger_append`'s result: the tag, its effects so far, and
/// the result chunk (which names the execution). Every server of the
/// ledger tools answers with it.
pub fn append_text(tag: &str, executions: u32, chunk: &ChunkRef) -> String {
    let chunk = chunk.encode();
    serde_json::to_string(&AppendText {
        chunk: &chunk,
        executions,
        tag,
    })
    .unwrap_or_default()
}

/// The text of `ledger_read`'s result from the caller's effects per tag:
/// one tag when the call named one (0 if it never ran), else all.
pub fn read_text(
    all: BTreeMap<String, u32>,
    finished: impl Fn(&str) -> u32,
    args: &LedgerReadArgs,
) -> String {
    let executions: BTreeMap<&str, u32> = match &args.tag {
        Some(t) => [(t.as_str(), all.get(t).copied().unwrap_or(0))]
            .into_iter()
            .collect(),
        None => all.iter().map(|(k, v)| (k.as_str(), *v)).collect(),
    };
    // How many of them ran to their result: only of the caller's tags.
    let finished = executions
        .iter()
        .map(|(t, n)| (*t, if *n == 0 { 0 } else { finished(t).min(*n) }))
        .collect();
    serde_json::to_string(&ReadText {
        executions,
        finished,
    })
    .unwrap_or_default()
}

/// A `tools/call` text result.
pub fn text_result(text: String) -> Json {
    Json::ser(&TextResult {
        content: [TextContent {
            text: &text,
            kind: "text",
        }],
        is_error: false,
    })
}

/// The `k`-th progress notification of `total` for a call: on its
/// `progressToken` when it gave one, else as a log message naming the id.
pub fn progress_notification(
    token: Option<&Value>,
    id: &RequestId,
    chunk: &ChunkRef,
    total: u32,
) -> (String, Json) {
    let (k, chunk) = (chunk.index, chunk.encode());
    match token {
        Some(t) => (
            PROGRESS.to_string(),
            Json::ser(&ProgressParams {
                message: &chunk,
                progress: k,
                progress_token: t,
                total,
            }),
        ),
        None => (
            MESSAGE.to_string(),
            Json::ser(&LogParams {
                data: LogData {
                    chunk: &chunk,
                    progress: k,
                    request_id: id,
                    total,
                },
                level: LOG_LEVELS[PROGRESS_LOG_LEVEL as usize],
            }),
        ),
    }
}

/// `notifications/resources/updated` params.
#[derive(Serialize)]
struct UpdatedParams<'a> {
    uri: &'a str,
    version: u64,
}

/// The params of the clock's `notifications/resources/updated`.
pub fn resources_list_result() -> Json {
    Json::from(json!({"resources": [{
        "uri": CLOCK_URI,
        "name": "clock",
        "description": "A version number the server advances every resource_interval_ms.",
        "mimeType": "application/json",
    }]}))
}

/// The `resources/read` result for the clock at `version`.
pub fn clock_read_result(version: u64) -> Json {
    Json::from(json!({"contents": [{
        "uri": CLOCK_URI,
        "mimeType": "application/json",
        "text": json!({"version": version}).to_string(),
    }]}))
}

/// `notifications/resources/updated` params for the clock at `version`.
pub fn resource_updated_params(version: u64) -> Json {
    Json::ser(&UpdatedParams {
        uri: CLOCK_URI,
        version,
    })
}

/// `tools/call` params of `ledger_append` as the virtual clients send them.
#[derive(Serialize)]
struct AppendCall<'a> {
    #[serde(rename = "_meta")]
    meta: ProgressMeta<'a>,
    arguments: AppendArgs<'a>,
    name: &'a str,
}

#[derive(Serialize)]
struct ProgressMeta<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a RequestId,
}

/// The arguments of a `ledger_append` call: operation `tag`, in `chunks`
/// chunks `chunk_interval_ms` apart; `asks_input`: it asks for input
/// after its effect (the 2026-07-28 wire).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct AppendArgs<'a> {
    /// It asks for input after its effect.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub asks_input: bool,
    /// The pause before each chunk, ms.
    pub chunk_interval_ms: u64,
    /// How many chunks.
    pub chunks: u32,
    /// The operation's tag.
    pub tag: &'a str,
}

/// The params of a `ledger_append` call with `arguments`, its progress
/// on token `rpc` (the request id).
pub fn append_call_params(arguments: AppendArgs<'_>, rpc: &RequestId) -> Json {
    Json::ser(&AppendCall {
        meta: ProgressMeta {
            progress_token: rpc,
        },
        arguments,
        name: LEDGER_APPEND,
    })
}

/// The identity of one emitted chunk, as its payload names it on the wire:
/// operation tag, execution number (1 = first) and chunk index (1-based;
/// the last chunk is the result).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ChunkRef {
    /// The operation tag.
    pub tag: Rc<str>,
    /// The execution that emitted it.
    pub execution: u32,
    /// 1-based index within the execution.
    pub index: u32,
}

/// The prefix of a chunk identity in a progress message.
const PREFIX: &str = "ledger:";

impl ChunkRef {
    /// The wire form: `ledger:<execution>:<index>:<tag>` (the tag last, so
    /// it may contain colons).
    pub fn encode(&self) -> String {
        format!("{PREFIX}{}:{}:{}", self.execution, self.index, self.tag)
    }

    /// Parses the wire form; `None` for anything else.
    pub fn parse(s: &str) -> Option<ChunkRef> {
        let rest = s.strip_prefix(PREFIX)?;
        let mut parts = rest.splitn(3, ':');
        let execution = parts.next()?.parse().ok()?;
        let index = parts.next()?.parse().ok()?;
        let tag = parts.next()?;
        Some(ChunkRef {
            tag: tag.into(),
            execution,
            index,
        })
    }
}

/// The chunk identity a server message's payload names: a progress
/// notification's `message` (or a log message's `data.chunk`), or a tool
/// result's text field `chunk`. Read from the payload's text (as the
/// `Value` reading did: a `message` that is there but no string names
/// nothing).
pub fn chunk_of(msg: &Message) -> Option<ChunkRef> {
    match msg {
        Message::Notification {
            params: Some(p), ..
        } => p
            .get("message")
            .or_else(|| p.get("data").and_then(|d| d.get("chunk")))
            .and_then(|v| v.as_str())
            .and_then(|s| ChunkRef::parse(&s)),
        Message::Result { result, .. } => {
            let text = result.get("content")?.index(0)?.get("text")?.as_str()?;
            let chunk = raw_if_valid(&text)?.get("chunk")?.as_str()?;
            ChunkRef::parse(&chunk)
        }
        _ => None,
    }
}

/// Whether a tool result says it was replayed from the server's key table
/// (`_meta.replayed`), so its execution's progress went elsewhere.
pub fn is_replayed(msg: &Message) -> bool {
    matches!(msg, Message::Result { result, .. }
        if result.get("_meta").and_then(|m| m.get(REPLAYED)).and_then(|r| r.as_bool()) == Some(true))
}

/// The `_meta` field that marks a result served from the key table.
pub const REPLAYED: &str = "replayed";

/// The progress token of a notification's params, when it is a string.
pub fn progress_token(params: &Json) -> Option<std::borrow::Cow<'_, str>> {
    params.get("progressToken")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_refs_round_trip_and_reject_other_text() {
        let c = ChunkRef {
            tag: "c1-op2:x".into(),
            execution: 3,
            index: 7,
        };
        assert_eq!(c.encode(), "ledger:3:7:c1-op2:x");
        assert_eq!(ChunkRef::parse(&c.encode()), Some(c));
        assert_eq!(ChunkRef::parse("ledger:3:x:t"), None);
        assert_eq!(ChunkRef::parse("progress 3 of 7"), None);
        assert_eq!(ChunkRef::parse("ledger:3"), None);
    }

    /// The typed builders write what the `json!` builders wrote.
    #[test]
    fn typed_payloads_are_the_value_bytes() {
        let chunk = ChunkRef {
            tag: "c1-op2\"q".into(),
            execution: 2,
            index: 3,
        };
        let tok = json!("c1-op2#1");
        for token in [
            Some(&tok),
            Some(&json!(7)),
            Some(&json!({"b": 1, "a": [2]})),
            None,
        ] {
            for id in [RequestId::Num(4), RequestId::Str("c1-op2#1".into())] {
                let (m, p) = progress_notification(token, &id, &chunk, 5);
                let want = match token {
                    Some(t) => json!({"progressToken": t, "progress": 3, "total": 5,
                        "message": chunk.encode()}),
                    None => json!({"level": "info", "data": {"requestId": id, "progress": 3,
                        "total": 5, "chunk": chunk.encode()}}),
                };
                assert_eq!(p.text(), want.to_string());
                assert_eq!(m, if token.is_some() { PROGRESS } else { MESSAGE });
                let msg = Message::Notification {
                    method: m,
                    params: Some(p),
                };
                assert_eq!(chunk_of(&msg), Some(chunk.clone()));
            }
        }
        assert_eq!(
            append_text("t\\", 3, &chunk),
            json!({"tag": "t\\", "executions": 3, "chunk": chunk.encode()}).to_string()
        );
        let all: BTreeMap<String, u32> = [("b".to_string(), 2), ("a".to_string(), 1)].into();
        for tag in [None, Some("a".to_string()), Some("zz".to_string())] {
            let args = LedgerReadArgs { tag: tag.clone() };
            let executions: serde_json::Map<String, Value> = match &tag {
                Some(t) => [(t.clone(), json!(all.get(t).copied().unwrap_or(0)))]
                    .into_iter()
                    .collect(),
                None => all.iter().map(|(k, v)| (k.clone(), json!(v))).collect(),
            };
            // Of each tag with effects, one execution ran to its result.
            let finished: serde_json::Map<String, Value> = executions
                .iter()
                .map(|(k, v)| (k.clone(), json!(v.as_u64().unwrap_or(0).min(1))))
                .collect();
            assert_eq!(
                read_text(all.clone(), |_| 1, &args),
                json!({ "executions": executions, "finished": finished }).to_string()
            );
        }
        let text = append_text("t", 1, &chunk);
        let r = text_result(text.clone());
        assert_eq!(
            r.text(),
            json!({"content": [{"type": "text", "text": text}], "isError": false}).to_string()
        );
        let msg = Message::Result {
            id: RequestId::Num(1),
            result: r,
        };
        assert_eq!(chunk_of(&msg), Some(chunk.clone()));
        assert!(!is_replayed(&msg));
        let rpc = RequestId::Str("c3-op1#2".into());
        assert_eq!(
            append_call_params(
                AppendArgs {
                    tag: "c3-op1",
                    chunks: 4,
                    chunk_interval_ms: 250,
                    asks_input: false
                },
                &rpc
            )
            .text(),
            json!({
                "name": LEDGER_APPEND,
                "arguments": {"tag": "c3-op1", "chunks": 4, "chunk_interval_ms": 250},
                "_meta": {"progressToken": rpc},
            })
            .to_string()
        );
    }

    #[test]
    fn payload_reads_answer_as_value_reads_did() {
        let results = [
            json!({"content": [{"type": "text", "text": "{\"chunk\":\"ledger:1:2:t\"}"}],
                "_meta": {"replayed": true}}),
            json!({"content": [{"text": "{\"chunk\":\"ledger:1:2:t\"} x"}]}),
            json!({"content": [{"text": "{\"chunk\":7}"}], "_meta": {"replayed": 1}}),
            json!({"content": [], "_meta": {"replayed": false}}),
            json!({"content": {"0": {"text": "{}"}}}),
            json!([1]),
        ];
        for r in results {
            let old_chunk = r
                .get("content")
                .and_then(|c| c.get(0))
                .and_then(|c| c.get("text"))
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .and_then(|v| v.get("chunk").cloned())
                .as_ref()
                .and_then(Value::as_str)
                .and_then(ChunkRef::parse);
            let old_replayed = r
                .get("_meta")
                .and_then(|m| m.get(REPLAYED))
                .and_then(Value::as_bool)
                == Some(true);
            let msg = Message::Result {
                id: RequestId::Num(1),
                result: r.into(),
            };
            assert_eq!(chunk_of(&msg), old_chunk);
            assert_eq!(is_replayed(&msg), old_replayed);
        }
        for p in [
            json!({"message": 3, "data": {"chunk": "ledger:1:1:t"}}),
            json!({"message": null, "data": {"chunk": "ledger:1:1:t"}}),
            json!({"data": {"chunk": "ledger:1:1:t"}}),
            json!({"data": "ledger:1:1:t"}),
            json!(["ledger:1:1:t"]),
        ] {
            let old = p
                .get("message")
                .or_else(|| p.get("data").and_then(|d| d.get("chunk")))
                .and_then(Value::as_str)
                .and_then(ChunkRef::parse);
            let msg = Message::Notification {
                method: PROGRESS.into(),
                params: Some(p.into()),
            };
            assert_eq!(chunk_of(&msg), old);
        }
    }
}

//! The MCP subset: method names, protocol versions, and the payloads of
//! initialize, tools/list, tools/call, progress and cancellation.

use super::jsonrpc::{Message, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
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
/// `resources/subscribe` request.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
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
pub fn initialize_params(version: &str, capabilities: Value, client_name: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": client_name, "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The server's `initialize` result.
pub fn initialize_result(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}, "logging": {}},
        "serverInfo": {"name": "mcp-chaos", "version": env!("CARGO_PKG_VERSION")},
    })
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
                "chunk_interval_ms": {"type": "integer", "minimum": 0}
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

/// The text of `ledger_append`'s result: the tag, its effects so far, and
/// the result chunk (which names the execution). Every server of the
/// ledger tools answers with it.
pub fn append_text(tag: &str, executions: u32, chunk: &ChunkRef) -> String {
    json!({"tag": tag, "executions": executions, "chunk": chunk.encode()}).to_string()
}

/// The text of `ledger_read`'s result from the caller's effects per tag:
/// one tag when the call named one (0 if it never ran), else all.
pub fn read_text(all: std::collections::BTreeMap<String, u32>, args: &LedgerReadArgs) -> String {
    let executions: serde_json::Map<String, Value> = match &args.tag {
        Some(t) => [(t.clone(), json!(all.get(t).copied().unwrap_or(0)))]
            .into_iter()
            .collect(),
        None => all.into_iter().map(|(k, v)| (k, json!(v))).collect(),
    };
    json!({ "executions": executions }).to_string()
}

/// A `tools/call` text result.
pub fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// The `k`-th progress notification of `total` for a call: on its
/// `progressToken` when it gave one, else as a log message naming the id.
pub fn progress_notification(
    token: Option<&Value>,
    id: &RequestId,
    chunk: &ChunkRef,
    total: u32,
) -> (String, Value) {
    let (k, chunk) = (chunk.index, chunk.encode());
    match token {
        Some(t) => (
            PROGRESS.to_string(),
            json!({"progressToken": t, "progress": k, "total": total, "message": chunk}),
        ),
        None => (
            MESSAGE.to_string(),
            json!({"level": "info", "data": {"requestId": id, "progress": k, "total": total, "chunk": chunk}}),
        ),
    }
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
/// result's text field `chunk`.
pub fn chunk_of(msg: &Message) -> Option<ChunkRef> {
    match msg {
        Message::Notification {
            params: Some(p), ..
        } => p
            .get("message")
            .or_else(|| p.get("data").and_then(|d| d.get("chunk")))
            .and_then(Value::as_str)
            .and_then(ChunkRef::parse),
        Message::Result { result, .. } => result_text_field(result, "chunk")
            .as_ref()
            .and_then(Value::as_str)
            .and_then(ChunkRef::parse),
        _ => None,
    }
}

/// Whether a tool result says it was replayed from the server's key table
/// (`_meta.replayed`), so its execution's progress went elsewhere.
pub fn is_replayed(msg: &Message) -> bool {
    matches!(msg, Message::Result { result, .. }
        if result.get("_meta").and_then(|m| m.get(REPLAYED)).and_then(Value::as_bool) == Some(true))
}

/// The `_meta` field that marks a result served from the key table.
pub const REPLAYED: &str = "replayed";

/// A field of the JSON object in a tool result's first text content.
fn result_text_field(result: &Value, field: &str) -> Option<Value> {
    let text = result.get("content")?.get(0)?.get("text")?.as_str()?;
    let v: Value = serde_json::from_str(text).ok()?;
    v.get(field).cloned()
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
}

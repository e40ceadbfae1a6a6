//! The 2026-07-28 wire: no sessions and no `initialize`. Every request
//! carries its protocol version and the client's capabilities in `_meta`,
//! and the `Mcp-Method` / `Mcp-Name` headers mirror its body so that an
//! intermediary can route it without reading the body; every result says
//! what it is (`resultType`). What both the server and the clients read
//! and write of it lives here, without I/O.

use super::jsonrpc::ErrorObject;
use super::Json;
use base64::Engine;
use serde_json::{json, Value};

/// The revision's date, as `_meta` and the version header carry it.
pub const VERSION: &str = "2026-07-28";
/// The revisions the 2026 path answers.
pub const SUPPORTED: &[&str] = &[VERSION];

/// `_meta` key: the request's protocol version (required).
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities (required; `{}` for none).
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (should be sent).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the request's log level (messages below it are not sent).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key on results: who answered.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on a listen stream's notifications.
pub const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// Header mirroring the body's method (every request).
pub const MCP_METHOD: &str = "mcp-method";
/// Header mirroring the body's name: the tool, the prompt, the resource
/// URI (or, with the tasks extension, the task id).
pub const MCP_NAME: &str = "mcp-name";
/// The header servers send so that buffering proxies pass SSE through.
pub const X_ACCEL_BUFFERING: &str = "x-accel-buffering";

/// What `initialize` used to answer.
pub const SERVER_DISCOVER: &str = "server/discover";
/// The long-lived notification stream (replaces the GET stream).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// The first message of a listen stream.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The tasks extension's name (in capabilities' `extensions`).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// A task's status (and, when completed, its result).
pub const TASKS_GET: &str = "tasks/get";
/// The client's answers to an input-required task.
pub const TASKS_UPDATE: &str = "tasks/update";
/// A request to cancel a task: acknowledged, not a promise.
pub const TASKS_CANCEL: &str = "tasks/cancel";

/// A header missing, malformed, or not what the body says (HTTP 400).
pub const HEADER_MISMATCH: i64 = -32020;
/// A capability the request needs was not declared (HTTP 400).
pub const MISSING_CAPABILITY: i64 = -32021;
/// A protocol version this server does not speak (HTTP 400).
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// The `_meta` a request carries: this revision, `capabilities`, and the
/// client's name.
pub fn request_meta(capabilities: Value, client: &str) -> Value {
    json!({
        META_VERSION: VERSION,
        META_CAPABILITIES: capabilities,
        META_CLIENT_INFO: {"name": client, "version": env!("CARGO_PKG_VERSION")},
    })
}

/// `params` with `meta`'s keys added to its `_meta` (an absent `params`
/// becomes an object holding only them; keys already there, such as a
/// `progressToken`, stay).
pub fn with_meta(params: Option<&Json>, meta: Value) -> Json {
    let mut v = params.map_or_else(|| json!({}), Json::to_value);
    if let (Value::Object(m), Value::Object(add)) = (&mut v, meta) {
        let entry = m.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(into) = entry {
            into.extend(add);
        }
    }
    Json::from_value(&v)
}

/// The value `Mcp-Name` must carry for a request of `method` with
/// `params`, if the method has one.
pub fn name_of(method: &str, params: Option<&Json>) -> Option<String> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        // The tasks extension's methods that name a task (`tasks/result`
        // and `tasks/list` are gone: they are unknown methods, not
        // header mismatches).
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(field)?.as_str().map(|c| c.into_owned())
}

/// A header value as sent: plain ASCII, or `=?base64?…?=` for any other
/// text (decoded here; `None` when it does not decode to UTF-8).
pub fn decode_header(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(raw.to_string()),
    }
}

/// `value` as a header value: itself when it is printable ASCII, else
/// base64 between `=?base64?` and `?=`.
pub fn encode_header(value: &str) -> String {
    if value.bytes().all(|b| (0x20..0x7f).contains(&b)) && !value.starts_with("=?") {
        value.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// `result` marked `resultType: "complete"` (every 2026 result carries
/// one; an existing one is kept).
pub fn complete(result: &Json) -> Json {
    let text = result.text().trim_start();
    if result.get("resultType").is_some() || !text.starts_with('{') {
        return result.clone();
    }
    let rest = text[1..].trim_start();
    let joined = if rest.starts_with('}') {
        "{\"resultType\":\"complete\"}".to_string()
    } else {
        format!("{{\"resultType\":\"complete\",{rest}")
    };
    Json::from_value(&serde_json::from_str::<Value>(&joined).unwrap_or_else(|_| json!({})))
}

/// The methods whose results say how long they may be cached.
pub const CACHEABLE: &[&str] = &[
    SERVER_DISCOVER,
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// `result` of `method` as this wire writes it: `resultType`, and for the
/// [`CACHEABLE`] methods `ttlMs` and `cacheScope` (not cached, private:
/// this server's lists may differ per caller).
pub fn finish(method: &str, result: &Json) -> Json {
    let result = complete(result);
    if !CACHEABLE.contains(&method) {
        return result;
    }
    let mut v = result.to_value();
    if let Value::Object(m) = &mut v {
        m.entry("ttlMs").or_insert(json!(0));
        m.entry("cacheScope").or_insert(json!("private"));
    }
    Json::from_value(&v)
}

/// `server/discover`'s result: the versions, the capabilities, who.
pub fn discover_result(capabilities: Value, name: &str) -> Json {
    Json::from_value(&json!({
        "resultType": "complete",
        "supportedVersions": SUPPORTED,
        "capabilities": capabilities,
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: {"name": name, "version": env!("CARGO_PKG_VERSION")}},
    }))
}

/// -32022: `requested` is not a version this path speaks.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(
        UNSUPPORTED_VERSION,
        format!(
            "unsupported protocol version {requested:?}: this server speaks {}",
            SUPPORTED.join(", ")
        ),
        Some(json!({"supported": SUPPORTED, "requested": requested})),
    )
}

/// Whether a request's `_meta` declares the tasks extension among its
/// client's capabilities (capabilities are per request on this wire).
pub fn declares_tasks(params: Option<&Json>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .is_some_and(|e| e.get(TASKS_EXTENSION).is_some())
}

/// -32021: the request needs the tasks extension its client did not
/// declare (`what` says which request).
pub fn tasks_not_declared(what: &str) -> ErrorObject {
    ErrorObject::new(
        MISSING_CAPABILITY,
        format!("{what} needs the client capability extensions[{TASKS_EXTENSION:?}]: declare it in _meta's clientCapabilities"),
        Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})),
    )
}

/// A `tools/call` result that is a task (`resultType: "task"`): its id and
/// the poll interval it asks for, ms.
pub fn created_task(result: &Value) -> Option<(String, Option<u64>)> {
    if result.get("resultType")?.as_str()? != "task" {
        return None;
    }
    let id = result.get("taskId")?.as_str()?.to_string();
    Some((id, result.get("pollIntervalMs").and_then(Value::as_u64)))
}

/// `us` microseconds after `epoch_s` (seconds since 1970) as an RFC 3339
/// UTC time with milliseconds, as tasks write `createdAt`.
pub fn rfc3339(epoch_s: u64, us: u64) -> String {
    let ms_total = epoch_s * 1000 + us / 1000;
    let (secs, ms) = (ms_total / 1000, ms_total % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
}

/// The version a request's `_meta` names, if any.
pub fn meta_version(params: Option<&Json>) -> Option<String> {
    params?
        .get("_meta")?
        .get(META_VERSION)?
        .as_str()
        .map(|v| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_writes_civil_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        // 2026-07-28T00:00:00Z is 1785196800 s after the epoch.
        assert_eq!(
            rfc3339(1_785_196_800, 1_234_567),
            "2026-07-28T00:00:01.234Z"
        );
        assert_eq!(rfc3339(951_782_400, 0), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            rfc3339(1_785_196_800, 86_400_000_000 * 37),
            "2026-09-03T00:00:00.000Z"
        );
    }

    #[test]
    fn a_task_capability_is_read_from_meta_and_a_task_result_from_its_type() {
        let with = Json::from_value(
            &json!({"_meta": {META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}}),
        );
        let without = Json::from_value(&json!({"_meta": {META_CAPABILITIES: {}}}));
        assert!(declares_tasks(Some(&with)));
        assert!(!declares_tasks(Some(&without)));
        assert!(!declares_tasks(None));
        let t = json!({"resultType": "task", "taskId": "t1", "pollIntervalMs": 50});
        assert_eq!(created_task(&t), Some(("t1".into(), Some(50))));
        assert_eq!(
            created_task(&json!({"resultType": "complete", "taskId": "t1"})),
            None
        );
        let e = tasks_not_declared("tasks/get");
        assert_eq!(e.code, MISSING_CAPABILITY);
        assert!(e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
    }

    #[test]
    fn complete_marks_a_result_once() {
        let r = complete(&Json::from_value(&json!({"content": []})));
        assert_eq!(r.get("resultType").unwrap().as_str().unwrap(), "complete");
        assert!(r.get("content").is_some());
        assert_eq!(complete(&r), r);
        let empty = complete(&Json::from_value(&json!({})));
        assert_eq!(empty.to_value(), json!({"resultType": "complete"}));
        let other = Json::from_value(&json!({"resultType": "input_required"}));
        assert_eq!(complete(&other), other);
    }

    #[test]
    fn names_come_from_the_body_by_method() {
        let p = Json::from_value(&json!({"name": "ledger_append", "uri": "x"}));
        assert_eq!(
            name_of("tools/call", Some(&p)).as_deref(),
            Some("ledger_append")
        );
        assert_eq!(name_of("resources/read", Some(&p)).as_deref(), Some("x"));
        assert_eq!(name_of("tools/list", Some(&p)), None);
        let t = Json::from_value(&json!({"taskId": "t-1"}));
        assert_eq!(name_of("tasks/get", Some(&t)).as_deref(), Some("t-1"));
        assert_eq!(name_of("tasks/result", Some(&t)), None);
    }

    #[test]
    fn header_values_round_trip() {
        for v in ["ledger_append", "résumé", "=?odd", "tab\there"] {
            assert_eq!(decode_header(&encode_header(v)).as_deref(), Some(v));
        }
        assert_eq!(encode_header("plain"), "plain");
        assert_eq!(decode_header("=?base64?!!?="), None);
    }

    #[test]
    fn meta_is_read_where_the_client_puts_it() {
        let p = with_meta(
            Some(&Json::from_value(
                &json!({"name": "t", "_meta": {"progressToken": 7}}),
            )),
            request_meta(json!({}), "c"),
        );
        assert_eq!(meta_version(Some(&p)).as_deref(), Some(VERSION));
        assert_eq!(p.get("name").unwrap().as_str().unwrap(), "t");
        let meta = p.get("_meta").unwrap();
        assert_eq!(meta.get("progressToken").unwrap().as_u64(), Some(7));
    }
}

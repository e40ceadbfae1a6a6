//! The Events extension (`io.modelcontextprotocol/events`, the SEP-3415
//! draft), on the 2026-07-28 wire: what the server and the clients read
//! and write of it, without I/O. An event type's occurrences reach a
//! client by poll (`events/poll`) or by a push stream (`events/stream`),
//! each resuming from an opaque cursor; a cursor the server can no longer
//! serve from is reset, with `truncated: true` (docs/events.md).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The extension's name (in capabilities' `extensions`).
pub const EXTENSION: &str = "io.modelcontextprotocol/events";
/// The event types the server offers.
pub const LIST: &str = "events/list";
/// Occurrences after a cursor, in one answer.
pub const POLL: &str = "events/poll";
/// A push stream of occurrences after a cursor (closing it ends it).
pub const STREAM: &str = "events/stream";
/// A push stream's first message, and again after a gap: where it stands.
pub const ACTIVE: &str = "notifications/events/active";
/// One occurrence on a push stream.
pub const EVENT: &str = "notifications/events/event";
/// A push stream's sign of life, with its cursor.
pub const HEARTBEAT: &str = "notifications/events/heartbeat";

/// No such event type (`data.kind = "event"`).
pub const NOT_FOUND: i64 = -32023;
/// The event type is not offered by this delivery (`data.feature`).
pub const UNSUPPORTED: i64 = -32026;

/// The clock the server's event source ticks on: `clock-tick`, whose
/// occurrences the source produces on a fixed period (replayable: a
/// cursor names a position in the source, which outlives the server).
pub const CLOCK_TICK: &str = "clock-tick";

/// The timestamps' origin: a run's time 0 is this instant (the
/// revision's date), so the same run prints the same timestamps.
const EPOCH_UNIX_SECS: i64 = 1_785_196_800;

/// One occurrence as the wire carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Occurrence {
    /// Stable per occurrence: the key a receiver deduplicates on.
    pub event_id: String,
    /// The event type.
    pub name: String,
    /// When it occurred (ISO 8601).
    pub timestamp: String,
    /// Its payload.
    pub data: Value,
    /// Where a client resumes after it (push only; a poll's cursor is the
    /// answer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `events/poll` and `events/stream` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadParams {
    /// The event type.
    pub name: String,
    /// Its subscription arguments (none are defined for `clock-tick`).
    #[serde(default)]
    pub arguments: Value,
    /// Where to resume; `None` (JSON `null` or absent): from now.
    #[serde(default)]
    pub cursor: Option<String>,
    /// At most this many occurrences in one poll answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u32>,
}

/// `events/poll`'s result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollResult {
    /// The occurrences after the cursor, oldest first.
    pub events: Vec<Occurrence>,
    /// Where the next poll resumes.
    pub cursor: String,
    /// The cursor could not be served from: occurrences were lost between
    /// it and the first one returned.
    pub truncated: bool,
    /// More are ready: poll again at once.
    pub has_more: bool,
    /// When to poll next, ms.
    pub next_poll_ms: u64,
}

/// A cursor: the event type and the source position of the last
/// occurrence it covers. Opaque to clients; `name@seq` on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// Source position: the occurrence numbered `seq` and all before it
    /// are behind the cursor (0: none).
    pub seq: u64,
}

/// Why a cursor is refused (-32602, docs/events.md: the draft defines no
/// code of its own for it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadCursor {
    /// Not a cursor this server wrote.
    Malformed,
    /// A cursor of another event type.
    Foreign(String),
    /// Past the source's newest occurrence: no server wrote it.
    Future,
}

impl Cursor {
    /// The cursor's wire form for event type `name`.
    pub fn encode(self, name: &str) -> String {
        format!("{name}@{}", self.seq)
    }

    /// Reads `s` as a cursor of `name`.
    pub fn decode(s: &str, name: &str) -> Result<Cursor, BadCursor> {
        let (of, seq) = s.rsplit_once('@').ok_or(BadCursor::Malformed)?;
        let seq: u64 = seq.parse().map_err(|_| BadCursor::Malformed)?;
        if of != name {
            return Err(BadCursor::Foreign(of.to_string()));
        }
        Ok(Cursor { seq })
    }
}

/// An occurrence's `eventId`: its type and source position.
pub fn event_id(name: &str, seq: u64) -> String {
    format!("{name}-{seq}")
}

/// The source position an `eventId` names, when it is one of `name`'s.
pub fn seq_of(event_id: &str, name: &str) -> Option<u64> {
    event_id
        .strip_prefix(name)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|n| n.parse().ok())
}

/// The JSON-RPC id of request `n` of client `client`'s events reader in
/// the simulation, so the oracle can tell whose stream a server record
/// names ([`reader_of`]).
pub fn reader_request_id(client: u32, n: u64) -> String {
    format!("ev-{client}-{n}")
}

/// The client whose events reader sent the request with this id.
pub fn reader_of(id: &str) -> Option<u32> {
    let rest = id.strip_prefix("ev-")?;
    let (client, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    client.parse().ok()
}

/// Unix seconds of `us` since the run's start (a webhook's timestamp).
pub fn unix_secs(us: u64) -> i64 {
    EPOCH_UNIX_SECS + (us / 1_000_000) as i64
}

/// A run time (µs since its start) as an ISO 8601 timestamp.
pub fn timestamp(us: u64) -> String {
    let secs = EPOCH_UNIX_SECS + (us / 1_000_000) as i64;
    let nanos = ((us % 1_000_000) * 1_000) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// The descriptor of `clock-tick` in `events/list` (`webhook`: the
/// server can deliver by webhook too).
pub fn clock_tick_descriptor(period_ms: u64, webhook: bool) -> Value {
    let delivery = match webhook {
        true => json!(["poll", "push", "webhook"]),
        false => json!(["poll", "push"]),
    };
    json!({
        "name": CLOCK_TICK,
        "description": format!("A tick of the server's clock every {period_ms} ms (replayable: a cursor resumes after the last tick it covers while the tick is retained)"),
        "delivery": delivery,
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "payloadSchema": {
            "type": "object",
            "properties": {"tick": {"type": "integer", "minimum": 1}},
            "required": ["tick"],
        },
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_readers_request_id_names_its_client_and_nothing_else_does() {
        let id = super::reader_request_id(7, 12);
        assert_eq!(super::reader_of(&id), Some(7));
        assert_eq!(super::reader_of("ev-7"), None);
        assert_eq!(super::reader_of("ev-x-1"), None);
        assert_eq!(super::reader_of("op-7-1"), None);
    }

    use super::*;

    #[test]
    fn a_cursor_reads_back_and_refuses_what_it_did_not_write() {
        let c = Cursor { seq: 42 };
        assert_eq!(c.encode(CLOCK_TICK), "clock-tick@42");
        assert_eq!(Cursor::decode("clock-tick@42", CLOCK_TICK), Ok(c));
        assert_eq!(
            Cursor::decode("clock-tick@x", CLOCK_TICK),
            Err(BadCursor::Malformed)
        );
        assert_eq!(Cursor::decode("42", CLOCK_TICK), Err(BadCursor::Malformed));
        assert_eq!(
            Cursor::decode("other@3", CLOCK_TICK),
            Err(BadCursor::Foreign("other".into()))
        );
        assert_eq!(seq_of(&event_id(CLOCK_TICK, 7), CLOCK_TICK), Some(7));
        assert_eq!(seq_of("other-7", CLOCK_TICK), None);
    }

    #[test]
    fn timestamps_count_from_the_revisions_date() {
        assert_eq!(timestamp(0), "2026-07-28T00:00:00.000Z");
        assert_eq!(timestamp(1_234_000), "2026-07-28T00:00:01.234Z");
        assert_eq!(timestamp(86_400_000_000), "2026-07-29T00:00:00.000Z");
    }

    #[test]
    fn a_poll_result_is_the_drafts_shape() {
        let r = PollResult {
            events: vec![],
            cursor: "clock-tick@0".into(),
            truncated: false,
            has_more: false,
            next_poll_ms: 1000,
        };
        let v = serde_json::to_value(&r).unwrap();
        for k in ["events", "cursor", "truncated", "hasMore", "nextPollMs"] {
            assert!(v.get(k).is_some(), "{k} in {v}");
        }
        let p: ReadParams =
            serde_json::from_value(json!({"name": "clock-tick", "cursor": null})).unwrap();
        assert_eq!(p.cursor, None);
    }
}

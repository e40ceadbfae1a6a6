//! The Events extension on the 2026-07-28 path (docs/events.md):
//! `events/list`, `events/poll` and `events/stream` over the event source
//! beside the ledger ([`crate::ledger::events`]). Every arm serves them
//! alike; what differs is a setting (`events_retention`,
//! `events_truncation`). A cursor is `name@seq`: after a restart, or on
//! another replica, it names the same position, because the source is
//! not the server's.

use super::modern_stream;
use crate::history::Record;
use crate::ledger::events::{EventLog, Read};
use crate::protocol::events::{self as ev, BadCursor, Cursor, Occurrence, PollResult, ReadParams};
use crate::protocol::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::protocol::{sse, y2026 as wire, Json};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::{error_with, event_stream};
use crate::server::{Shared, Truncation};
use http::StatusCode;
use serde_json::{json, Value};
use std::rc::Rc;
use std::time::Duration;

/// Most occurrences in one poll answer (a client may ask for fewer).
pub(in crate::server) const MAX_POLL_EVENTS: usize = 100;

/// Whether the server offers the extension: it has an event source.
pub(in crate::server) fn offered(shared: &Shared) -> bool {
    shared.cfg.events_tick_ms > 0
}

/// `events/list`: `clock-tick` when the source runs.
pub(in crate::server) fn list(shared: &Shared) -> Json {
    let events: Vec<Value> = match offered(shared) {
        true => vec![ev::clock_tick_descriptor(
            shared.cfg.events_tick_ms,
            shared.egress.get().is_some(),
        )],
        false => Vec::new(),
    };
    Json::from_value(&json!({ "events": events }))
}

pub(in crate::server) fn period_us(shared: &Shared) -> u64 {
    shared.cfg.events_tick_ms * 1_000
}

/// The params of a read, checked: the event type offered, the cursor one
/// of its own at or behind the source's newest (`None`: from now).
pub(in crate::server) fn checked(
    shared: &Shared,
    params: Option<&Json>,
) -> Result<(ReadParams, u64), ErrorObject> {
    let invalid = |m: String| ErrorObject::new(jsonrpc::INVALID_PARAMS, m, None);
    let p: ReadParams = match params.map(Json::parse_as_value) {
        Some(Ok(p)) => p,
        _ => {
            return Err(invalid(
                "events/poll, events/stream and events/subscribe need name (and cursor, null to start from now)"
                    .into(),
            ))
        }
    };
    if !offered(shared) || p.name != ev::CLOCK_TICK {
        return Err(ErrorObject::new(
            ev::NOT_FOUND,
            format!(
                "no event type {:?} here: events/list names those offered",
                p.name
            ),
            Some(json!({"kind": "event"})),
        ));
    }
    let newest = shared.ledger.events(period_us(shared)).newest();
    let at = match p.cursor.as_deref().map(|c| Cursor::decode(c, &p.name)) {
        None => newest,
        Some(Ok(c)) if c.seq <= newest => c.seq,
        Some(Ok(_)) => return Err(invalid(bad_cursor(&BadCursor::Future))),
        Some(Err(e)) => return Err(invalid(bad_cursor(&e))),
    };
    Ok((p, at))
}

fn bad_cursor(e: &BadCursor) -> String {
    match e {
        BadCursor::Malformed => "cursor is not one this server wrote: resume from a cursor it returned, or send null to start from now".into(),
        BadCursor::Foreign(of) => format!("cursor belongs to event type {of:?}: each event type has cursors of its own"),
        BadCursor::Future => "cursor is ahead of every occurrence so far: no server wrote it; send null to start from now".into(),
    }
}

/// The occurrences after `at` as this server serves them: from its
/// retention, and with a cursor behind it announced or not.
pub(in crate::server) fn read(shared: &Shared, log: &EventLog, at: u64, max: usize) -> Read {
    let mut r = log.read(at, shared.cfg.events_retention as usize, max);
    if shared.cfg.events_truncation == Truncation::Silent {
        r.truncated = false;
    }
    r
}

pub(in crate::server) fn occurrence(
    name: &str,
    (seq, at_us): (u64, u64),
    cursor: Option<String>,
) -> Occurrence {
    Occurrence {
        event_id: ev::event_id(name, seq),
        name: name.to_string(),
        timestamp: ev::timestamp(at_us),
        data: json!({ "tick": seq }),
        cursor,
    }
}

/// `events/poll`: the occurrences after the cursor, at most
/// [`MAX_POLL_EVENTS`] (or `maxEvents`), and where to resume.
pub(in crate::server) fn poll(shared: &Shared, params: Option<&Json>) -> Result<Json, ErrorObject> {
    let (p, at) = checked(shared, params)?;
    let max = p
        .max_events
        .map_or(MAX_POLL_EVENTS, |m| (m as usize).clamp(1, MAX_POLL_EVENTS));
    let log = shared.ledger.events(period_us(shared));
    let r = read(shared, &log, at, max);
    let result = PollResult {
        events: r
            .events
            .iter()
            .map(|e| occurrence(&p.name, *e, None))
            .collect(),
        cursor: Cursor { seq: r.cursor }.encode(&p.name),
        truncated: r.truncated,
        has_more: r.has_more,
        next_poll_ms: shared.cfg.events_poll_ms,
    };
    Ok(Json::from_value(
        &serde_json::to_value(result).unwrap_or_default(),
    ))
}

/// `events/stream`: an SSE response carrying `active` (where it stands),
/// then each occurrence as it is produced, a heartbeat with the cursor
/// when nothing else was sent for `events_heartbeat_ms`, and `active`
/// with `truncated` again if the stream fell behind the retention. It
/// ends when the client closes it.
pub(in crate::server) fn stream(
    shared: &Rc<Shared>,
    id: &RequestId,
    params: Option<&Json>,
) -> http::Response<ServerBody> {
    let (p, at) = match checked(shared, params) {
        Ok(v) => v,
        Err(e) => return error_with(StatusCode::OK, Some(id.clone()), e),
    };
    let (tx, body) = ServerBody::sse();
    let (shared, id) = (shared.clone(), id.clone());
    tokio::task::spawn_local(async move {
        let name = p.name;
        let note = |method: &str, params: Value| {
            let mut params = params;
            params["_meta"] = json!({ wire::META_SUBSCRIPTION: id });
            let m = Message::Notification {
                method: method.into(),
                params: Some(Json::from_value(&params)),
            };
            sse::encode(None, Some("message"), &m.encode(), None)
        };
        let mut at = at;
        let mut first = true;
        let heartbeat = Duration::from_millis(shared.cfg.events_heartbeat_ms);
        loop {
            let (frames, next_us) = {
                let log = shared.ledger.events(period_us(&shared));
                let r = read(&shared, &log, at, usize::MAX);
                let mut frames = Vec::new();
                if first || r.truncated {
                    let from = r.events.first().map_or(r.cursor, |(s, _)| s - 1);
                    if r.truncated {
                        shared.history.record(Record::TruncationSent {
                            stream: id.clone(),
                            after: at,
                            upto: from,
                        });
                    }
                    let c = Cursor { seq: from }.encode(&name);
                    frames.push(note(
                        ev::ACTIVE,
                        json!({"cursor": c, "truncated": r.truncated}),
                    ));
                }
                for e in &r.events {
                    let c = Cursor { seq: e.0 }.encode(&name);
                    let o = occurrence(&name, *e, Some(c));
                    frames.push(note(ev::EVENT, serde_json::to_value(o).unwrap_or_default()));
                }
                at = r.cursor;
                (frames, log.next_at(period_us(&shared)))
            };
            first = false;
            for f in frames {
                if tx.send(f).await.is_err() {
                    return;
                }
            }
            let now = shared.history.now_us();
            let tick = Duration::from_micros(next_us.saturating_sub(now));
            tokio::select! {
                biased;
                _ = tx.closed() => return,
                _ = tokio::time::sleep(tick.min(heartbeat)) => {}
            }
            if tick > heartbeat {
                let c = Cursor { seq: at }.encode(&name);
                if tx
                    .send(note(ev::HEARTBEAT, json!({"cursor": c})))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    });
    modern_stream(event_stream(body))
}

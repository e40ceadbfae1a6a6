//! Header names and the one structured header we parse: the cursor list.

use std::fmt;

/// The session header, issued on the InitializeResult response.
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// Sent by clients from protocol revision 2025-06-18 on.
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// SSE resumption cursor on GET; the cursor list on a guarded POST; the
/// resume hint on a Rule M 409.
pub const LAST_EVENT_ID: &str = "last-event-id";
/// Dedup token (after the IETF idempotency-key draft); honored by the
/// `guarded` and `keys` arms, ignored by the others.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// `Authorization` (`Bearer <token>`): the principal keys are scoped to.
pub const AUTHORIZATION: &str = "authorization";
/// Guarded-server extension beside the cursor list: a JSON array of the
/// JSON-RPC ids of earlier POSTs whose response stream the client never saw
/// begin, so it holds no cursor to name them (`["op-7#1"]`).
pub const MCP_LOST_REQUESTS: &str = "mcp-lost-requests";
/// Set on a resume that a registered cross-transport mapping translated
/// (the server says so): `legacy`.
pub const MCP_CURSOR_MAPPING: &str = "mcp-cursor-mapping";
/// Set beside [`MCP_CURSOR_MAPPING`]: the resumed stream's first event id
/// in this transport's namespace, the name Rule M's refusals give it
/// (`streamFirstEventId`), which the client knew only by its legacy id.
pub const MCP_STREAM_FIRST_EVENT_ID: &str = "mcp-stream-first-event-id";
/// Set on guarded POST responses while the session has a dropped stream.
pub const MCP_STREAM_RESUMABLE: &str = "mcp-stream-resumable";

/// Whether `Accept` header values admit the media type `wanted`
/// (`type/subtype`): of the ranges that match it, the most specific
/// (`type/subtype`, then `type/*`, then `*/*`) decides, and one whose
/// `q` is zero refuses. Media types compare case-insensitively; a `q` that
/// is not a number counts as acceptance, as before any `q` was read.
pub fn accepts<'a>(values: impl IntoIterator<Item = &'a str>, wanted: &str) -> bool {
    let ty = wanted.split_once('/').map_or(wanted, |(t, _)| t);
    // (specificity, acceptable) of the most specific matching range.
    let mut best: Option<(u8, bool)> = None;
    for range in values.into_iter().flat_map(|v| v.split(',')) {
        let mut parts = range.split(';');
        let m = parts.next().unwrap_or("").trim();
        let specificity = if m.eq_ignore_ascii_case(wanted) {
            2
        } else if m
            .strip_suffix("/*")
            .is_some_and(|t| t.eq_ignore_ascii_case(ty))
        {
            1
        } else if m == "*/*" {
            0
        } else {
            continue;
        };
        let ok = !parts
            .filter_map(|p| p.split_once('='))
            .any(|(k, v)| k.trim().eq_ignore_ascii_case("q") && q_is_zero(v.trim()));
        best = match best {
            Some((s, _)) if s > specificity => best,
            Some((s, was)) if s == specificity => Some((s, was || ok)),
            _ => Some((specificity, ok)),
        };
    }
    best.is_some_and(|(_, ok)| ok)
}

/// `0`, `0.`, `0.0` … `0.000`: a zero quality value.
fn q_is_zero(v: &str) -> bool {
    match v.strip_prefix('0') {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('.')
            .is_some_and(|d| d.len() <= 3 && d.bytes().all(|b| b == b'0')),
        None => false,
    }
}

/// One entry of a cursor list: the last event id a client saw on a stream
/// it holds unfinished, and whether its connection to that stream is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CursorEntry {
    /// Last event id seen on the stream.
    pub event_id: u64,
    /// `true` when suffixed `;lost`: the client's connection is gone.
    pub lost: bool,
}

/// A parsed `Last-Event-ID` value: one plain id on GET, a comma-separated
/// list (`142;lost, 163`) on a guarded POST.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CursorList(pub Vec<CursorEntry>);

/// Why a `Last-Event-ID` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad Last-Event-ID entry {entry:?}: expected a decimal event id, optionally suffixed ';lost'"
)]
pub struct CursorParseError {
    /// The offending entry, as sent.
    pub entry: String,
}

/// Upper bound on entries in one cursor list: a client holds few streams.
pub const CURSOR_LIST_MAX: usize = 64;

impl CursorList {
    /// Parses `142;lost, 163`. Empty entries are an error, as is a list
    /// longer than [`CURSOR_LIST_MAX`].
    pub fn parse(value: &str) -> Result<Self, CursorParseError> {
        let mut out = Vec::new();
        for raw in value.split(',') {
            let entry = raw.trim();
            let bad = || CursorParseError {
                entry: entry.to_string(),
            };
            let (id, lost) = match entry.split_once(';') {
                Some((id, flag)) if flag.trim() == "lost" => (id.trim(), true),
                Some(_) => return Err(bad()),
                None => (entry, false),
            };
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let event_id = id.parse::<u64>().map_err(|_| bad())?;
            out.push(CursorEntry { event_id, lost });
            if out.len() > CURSOR_LIST_MAX {
                return Err(bad());
            }
        }
        Ok(CursorList(out))
    }

    /// Parses a single plain event id (the GET form).
    pub fn parse_single(value: &str) -> Result<u64, CursorParseError> {
        let list = Self::parse(value)?;
        match list.0.as_slice() {
            [one] if !one.lost => Ok(one.event_id),
            _ => Err(CursorParseError {
                entry: value.to_string(),
            }),
        }
    }
}

impl fmt::Display for CursorList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", e.event_id)?;
            if e.lost {
                f.write_str(";lost")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_list_round_trips() {
        let list = CursorList::parse("142;lost, 163").unwrap();
        assert_eq!(
            list.0,
            vec![
                CursorEntry {
                    event_id: 142,
                    lost: true
                },
                CursorEntry {
                    event_id: 163,
                    lost: false
                }
            ]
        );
        assert_eq!(list.to_string(), "142;lost, 163");
    }

    #[test]
    fn cursor_list_rejects_garbage() {
        for bad in [
            "",
            "x",
            "1;gone",
            "1,,2",
            "-1",
            "1;lost;lost",
            "99999999999999999999999",
        ] {
            assert!(CursorList::parse(bad).is_err(), "{bad:?} should not parse");
        }
        assert_eq!(CursorList::parse_single("7"), Ok(7));
        assert!(CursorList::parse_single("7;lost").is_err());
        assert!(CursorList::parse_single("7, 8").is_err());
    }
}

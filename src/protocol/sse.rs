//! Server-sent events: an incremental decoder (bytes may be split anywhere,
//! LF / CRLF / CR line ends, comments, `id:`, `event:`, `retry:`, multi-line
//! `data:`) and an encoder. Follows the WHATWG event-stream parsing rules.

use bytes::{BufMut, Bytes, BytesMut};

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `id:` field of this event block, if it had one. (The decoder's
    /// [`SseDecoder::last_event_id`] keeps the stream's cursor.)
    pub id: Option<String>,
    /// The `event:` type; `message` when absent.
    pub event: String,
    /// The data lines joined by `\n`.
    pub data: String,
    /// The `retry:` field of this block, if it had a valid one.
    pub retry_ms: Option<u64>,
    /// The block had an `event:` field (`event` is `message` either way
    /// when it named none).
    pub typed: bool,
}

/// Why the decoder refused the stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A single line exceeded the decoder's bound.
    #[error("SSE line longer than {0} bytes")]
    LineTooLong(usize),
}

/// Default bound on one line (a `data:` line carries one JSON-RPC message).
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// Incremental SSE decoder. Feed it bytes as they arrive; it yields every
/// event whose terminating blank line has been seen.
#[derive(Debug)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF belongs to it.
    after_cr: bool,
    at_start: bool,
    data: String,
    has_data: bool,
    event: String,
    id: Option<String>,
    retry_ms: Option<u64>,
    last_event_id: Option<String>,
    max_line: usize,
    comments: u64,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default line bound.
    pub fn new() -> Self {
        Self::with_max_line(MAX_LINE_BYTES)
    }

    /// A decoder that refuses lines longer than `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            data: String::new(),
            has_data: false,
            event: String::new(),
            id: None,
            retry_ms: None,
            last_event_id: None,
            max_line,
            comments: 0,
        }
    }

    /// The stream's last event id (persists across events, as in browsers).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Comment lines seen so far.
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Bytes held for the event being built (its data so far and the
    /// unfinished line): what a caller bounding an event's size checks.
    pub fn buffered(&self) -> usize {
        self.data.len() + self.line.len()
    }

    /// Feeds bytes; appends every completed event to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.after_cr && !bytes.is_empty() {
            // A CR ended the previous read: an LF opening this one is the
            // second half of that CRLF, not a blank line.
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (head, tail) = bytes.split_at(pos);
            self.push_line_bytes(head)?;
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
            self.line = line;
            self.line.clear();
            if tail[0] == b'\r' {
                match tail.get(1) {
                    Some(b'\n') => bytes = &tail[2..],
                    Some(_) => bytes = &tail[1..],
                    None => {
                        self.after_cr = true;
                        bytes = &[];
                    }
                }
            } else {
                bytes = &tail[1..];
            }
        }
        self.push_line_bytes(bytes)
    }

    fn push_line_bytes(&mut self, b: &[u8]) -> Result<(), SseError> {
        if self.line.len() + b.len() > self.max_line {
            return Err(SseError::LineTooLong(self.max_line));
        }
        self.line.extend_from_slice(b);
        Ok(())
    }

    fn process_line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut raw = raw;
        if self.at_start {
            self.at_start = false;
            raw = raw.strip_prefix("\u{feff}".as_bytes()).unwrap_or(raw);
        }
        if raw.is_empty() {
            self.dispatch(out);
            return;
        }
        if raw[0] == b':' {
            self.comments += 1;
            return;
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = value.to_string(),
            "id" if !value.contains('\0') => {
                self.id = Some(value.to_string());
                // Its buffer kept from event to event.
                let last = self.last_event_id.get_or_insert_with(String::new);
                last.clear();
                last.push_str(value);
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let id = self.id.take();
        let retry_ms = self.retry_ms.take();
        let event = std::mem::take(&mut self.event);
        let typed = !event.is_empty();
        if !self.has_data {
            // No data: nothing to dispatch, but an `id:` alone still moved
            // the cursor, and a `retry:` alone is still advice the caller
            // must see.
            self.data.clear();
            if id.is_some() || retry_ms.is_some() {
                out.push(SseEvent {
                    id,
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data: String::new(),
                    retry_ms,
                    typed,
                });
            }
            return;
        }
        self.has_data = false;
        // One allocation of the event's size, without the trailing LF; the
        // buffer, grown to the largest event so far, stays for the next.
        let data = self.data[..self.data.len() - 1].to_owned();
        self.data.clear();
        out.push(SseEvent {
            id,
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
            retry_ms,
            typed,
        });
    }
}

/// A block of `retry:` alone: reconnection advice that dispatches no
/// event and moves no cursor (a polling close's last frame).
pub fn encode_retry(retry_ms: u64) -> Bytes {
    Bytes::from(format!("retry: {retry_ms}\n\n"))
}

/// Encodes one event. Multi-line data becomes several `data:` lines; an
/// empty `data` still writes one `data:` line so the event dispatches.
pub fn encode(id: Option<u64>, event: Option<&str>, data: &str, retry_ms: Option<u64>) -> Bytes {
    use std::fmt::Write as _;
    let mut b = BytesMut::with_capacity(data.len() + 48);
    if let Some(id) = id {
        // Formatted in place: no string of its own.
        let _ = writeln!(b, "id: {id}");
    }
    if let Some(ev) = event {
        debug_assert!(!ev.contains(['\n', '\r']), "event type must be one line");
        b.put_slice(b"event: ");
        b.put_slice(ev.as_bytes());
        b.put_u8(b'\n');
    }
    if let Some(r) = retry_ms {
        let _ = writeln!(b, "retry: {r}");
    }
    for line in data.split('\n') {
        b.put_slice(b"data: ");
        b.put_slice(line.strip_suffix('\r').unwrap_or(line).as_bytes());
        b.put_u8(b'\n');
    }
    b.put_u8(b'\n');
    b.freeze()
}

/// Encodes a comment line (a keep-alive).
pub fn encode_comment(text: &str) -> Bytes {
    Bytes::from(format!(": {}\n\n", text.replace(['\n', '\r'], " ")))
}

/// The event type of an announced gap: owed events of the stream were
/// evicted before they could be replayed. It carries no `id:`.
pub const GAP_EVENT: &str = "gap";

/// The data of a gap event: `{"missing":[[first,last],...]}`, inclusive
/// ranges of consecutive event ids of the stream.
pub fn gap_data(missing: &[(u64, u64)]) -> String {
    serde_json::json!({ "missing": missing }).to_string()
}

/// Parses a gap event's data. Every range must have `first <= last`.
pub fn parse_gap(data: &str) -> Result<Vec<(u64, u64)>, String> {
    #[derive(serde::Deserialize)]
    struct Gap {
        missing: Vec<(u64, u64)>,
    }
    let g: Gap = serde_json::from_str(data).map_err(|e| format!("bad gap event data: {e}"))?;
    match g.missing.iter().find(|(a, b)| a > b) {
        Some((a, b)) => Err(format!("bad gap event data: range [{a},{b}] is reversed")),
        None => Ok(g.missing),
    }
}

/// How many event ids the ranges of a gap name.
pub fn gap_count(missing: &[(u64, u64)]) -> u64 {
    missing
        .iter()
        .map(|&(a, b)| b.saturating_sub(a).saturating_add(1))
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out).unwrap();
        }
        out
    }

    /// An event; `typed` when it is not a `message` (blocks naming
    /// `event: message` set it themselves).
    fn ev(id: Option<&str>, event: &str, data: &str) -> SseEvent {
        SseEvent {
            id: id.map(str::to_string),
            event: event.into(),
            data: data.into(),
            retry_ms: None,
            typed: event != "message",
        }
    }

    const STREAM: &[u8] = b"\xEF\xBB\xBFid: 1\ndata: \n\n: keep-alive\r\nid: 2\r\nevent: message\r\ndata: {\"a\":1}\r\ndata: line two\r\n\r\nretry: 250\rid: 3\rdata:no-space\r\rdata: x\nevent: replay-end\n\nfield-without-colon\nid\ndata\n\n";

    fn expected() -> Vec<SseEvent> {
        vec![
            ev(Some("1"), "message", ""),
            SseEvent {
                typed: true,
                ..ev(Some("2"), "message", "{\"a\":1}\nline two")
            },
            SseEvent {
                retry_ms: Some(250),
                ..ev(Some("3"), "message", "no-space")
            },
            ev(None, "replay-end", "x"),
            ev(Some(""), "message", ""),
        ]
    }

    #[test]
    fn decodes_a_stream_in_one_read() {
        assert_eq!(decode_all(&[STREAM]), expected());
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        for cut in 0..=STREAM.len() {
            let (a, b) = STREAM.split_at(cut);
            assert_eq!(decode_all(&[a, b]), expected(), "split at byte {cut}");
        }
        for cut1 in 0..=STREAM.len() {
            for cut2 in cut1..=STREAM.len() {
                let got = decode_all(&[&STREAM[..cut1], &STREAM[cut1..cut2], &STREAM[cut2..]]);
                assert_eq!(got, expected(), "splits at {cut1} and {cut2}");
            }
        }
        let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(decode_all(&bytes), expected(), "byte by byte");
    }

    #[test]
    fn encoder_output_decodes_back() {
        let mut wire = Vec::new();
        wire.extend_from_slice(&encode(Some(41), None, "", None));
        wire.extend_from_slice(&encode(
            Some(42),
            Some("message"),
            "{\"x\":\"a\nb\"}",
            Some(10),
        ));
        wire.extend_from_slice(&encode_comment("ping\nnow"));
        wire.extend_from_slice(&encode(None, Some("replay-end"), "{}", None));
        let got = decode_all(&[&wire]);
        assert_eq!(
            got,
            vec![
                ev(Some("41"), "message", ""),
                SseEvent {
                    retry_ms: Some(10),
                    typed: true,
                    ..ev(Some("42"), "message", "{\"x\":\"a\nb\"}")
                },
                ev(None, "replay-end", "{}"),
            ]
        );
        let mut d = SseDecoder::new();
        d.feed(&wire, &mut Vec::new()).unwrap();
        assert_eq!(
            d.last_event_id(),
            Some("42"),
            "an event without id keeps the cursor"
        );
        assert_eq!(d.comments(), 1);
    }

    #[test]
    fn a_line_past_the_bound_is_refused() {
        let mut d = SseDecoder::with_max_line(8);
        let mut out = Vec::new();
        assert!(d.feed(b"data: 12", &mut out).is_ok());
        assert_eq!(d.feed(b"3", &mut out), Err(SseError::LineTooLong(8)));
    }

    #[test]
    fn gap_events_round_trip_without_an_id() {
        let wire = encode(None, Some(GAP_EVENT), &gap_data(&[(3, 5), (9, 9)]), None);
        let got = decode_all(&[&wire]);
        assert_eq!(got, vec![ev(None, "gap", "{\"missing\":[[3,5],[9,9]]}")]);
        let ranges = parse_gap(&got[0].data).unwrap();
        assert_eq!(ranges, vec![(3, 5), (9, 9)]);
        assert_eq!(gap_count(&ranges), 4);
        assert!(parse_gap("{\"missing\":[[5,3]]}").is_err());
        assert!(parse_gap("{\"missing\":7}").is_err());
        assert!(parse_gap("not json").is_err());
        assert_eq!(gap_count(&[(0, u64::MAX)]), u64::MAX);
    }
}

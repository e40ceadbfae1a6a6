//! `explain`: one operation's story, read from a trace that `run --trace`
//! or `repro` wrote (JSON lines, one history entry each; the oracle's
//! verdicts follow as `op_verdict` lines, closed by an `oracle` line).

use crate::oracle::OpVerdict;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// Ends a trace whose entries were written (streamed as the run recorded
/// them): one `op_verdict` line per failed or degraded operation and an
/// `oracle` line with the run's verdict, so `explain` can say how the
/// oracle judged an operation.
pub fn write_verdicts(mut w: impl Write, verdicts: &[OpVerdict], verdict: &str) -> io::Result<()> {
    for v in verdicts {
        let mut line = serde_json::json!({ "type": "op_verdict" });
        if let (Some(obj), Value::Object(more)) = (
            line.as_object_mut(),
            serde_json::to_value(v).map_err(io::Error::other)?,
        ) {
            obj.extend(more);
        }
        serde_json::to_writer(&mut w, &line)?;
        w.write_all(b"\n")?;
    }
    serde_json::to_writer(
        &mut w,
        &serde_json::json!({ "type": "oracle", "verdict": verdict }),
    )?;
    w.write_all(b"\n")?;
    w.flush()
}

/// Whether a record concerns operation `tag`: it names the tag, or a
/// JSON-RPC id one of the operation's requests used in that session, or a
/// POST stream one of them opened (the events written on it).
fn touches(
    rec: &Value,
    tag: &str,
    ids: &BTreeSet<(String, String)>,
    streams: &BTreeSet<(String, String)>,
) -> bool {
    if rec.get("tag").and_then(Value::as_str) == Some(tag) {
        return true;
    }
    let Some(s) = rec.get("session").filter(|v| !v.is_null()) else {
        return false;
    };
    let by_id = rec
        .get("rpc_id")
        .filter(|v| !v.is_null())
        .is_some_and(|id| ids.contains(&(s.to_string(), id.to_string())));
    // A client's `stream` is the stream's first event id, not its index.
    let by_stream = rec.get("client").is_none()
        && rec
            .get("stream")
            .filter(|v| !v.is_null())
            .is_some_and(|st| streams.contains(&(s.to_string(), st.to_string())));
    by_id || by_stream
}

/// The side that wrote a record: the side-effect ledger and the world by
/// type, a client when it names one, else the server.
fn side(rec: &Value, kind: &str) -> &'static str {
    if matches!(kind, "execution" | "commit" | "chunk") {
        "ledger"
    } else if matches!(kind, "fault_started" | "fault_ended" | "heal_started") {
        "world"
    } else if rec.get("client").is_some() {
        "client"
    } else {
        "server"
    }
}

/// One record as a line: its fields but the ones every line has.
fn describe(rec: &Value) -> String {
    let mut out = String::new();
    if let Some(obj) = rec.as_object() {
        for (k, v) in obj {
            if matches!(k.as_str(), "seq" | "t_us" | "type" | "tag") || v.is_null() {
                continue;
            }
            let v = match v {
                // Session ids are long and random: their head tells them apart.
                Value::String(s) if k == "session" && s.chars().count() > 12 => {
                    format!("{}…", s.chars().take(8).collect::<String>())
                }
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let _ = write!(out, " {k}={v}");
        }
    }
    out
}

/// Operation `tag`'s timeline from the trace at `path`, as text; a
/// one-line error naming the file or the tag (with a few known tags) when
/// it cannot.
pub fn explain(path: &Path, tag: &str) -> Result<String, String> {
    let recs = read_records(path)?;
    let client = client_of(&recs, tag, path)?;
    let (ids, streams) = requests_of(&recs, client, tag);
    let mut out = format!("operation {tag} (client {client}) in {}\n", path.display());
    let _ = writeln!(
        out,
        "{:>12}  {:<7} {:<22} what",
        "time (s)", "side", "record"
    );
    let n = timeline(&mut out, &recs, client, tag, (&ids, &streams));
    let _ = writeln!(out, "{n} records");
    out.push_str(&verdict_line(&recs, tag));
    Ok(out)
}

/// The trace's records, one JSON value a line.
fn read_records(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read trace {}: {e} (write one with `mcp-chaos repro ... --trace FILE`)",
            path.display()
        )
    })?;
    let mut recs = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "{} line {} is not a trace record ({e}): pass a file written by `repro --trace` or `run --trace`",
                path.display(),
                i + 1
            )
        })?;
        recs.push(v);
    }
    Ok(recs)
}

/// A record's `type`.
fn kind(r: &Value) -> String {
    r.get("type")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

/// The operation's client, from its start; else an error naming a few
/// tags the trace knows.
fn client_of(recs: &[Value], tag: &str, path: &Path) -> Result<u64, String> {
    let mut tags: BTreeSet<String> = BTreeSet::new();
    let mut client: Option<u64> = None;
    for r in recs {
        if kind(r) == "op_started" {
            if let Some(t) = r.get("tag").and_then(Value::as_str) {
                if t == tag {
                    client = r.get("client").and_then(Value::as_u64);
                }
                tags.insert(t.to_string());
            }
        }
    }
    if let Some(client) = client {
        return Ok(client);
    }
    if tags.is_empty() {
        return Err(format!(
            "no operation {tag:?} in {}: the trace has no operations (is it a trace from `repro`?)",
            path.display()
        ));
    }
    // The failed and degraded ones first: the ones worth explaining.
    let mut known: Vec<&str> = recs
        .iter()
        .filter(|r| kind(r) == "op_verdict")
        .filter_map(|r| r.get("tag").and_then(Value::as_str))
        .take(5)
        .collect();
    let judged = !known.is_empty();
    for t in &tags {
        if known.len() >= 8 {
            break;
        }
        if !known.contains(&t.as_str()) {
            known.push(t);
        }
    }
    Err(format!(
        "no operation {tag:?} in {}: try {}{} ({} operations, tags cCLIENT-opN)",
        path.display(),
        known.join(", "),
        if judged {
            " (failed or degraded ones first)"
        } else {
            ""
        },
        tags.len()
    ))
}

/// (session, request id) pairs.
type Pairs = BTreeSet<(String, String)>;

/// The request ids the operation's calls used, by session (a record
/// without a session: every session its client held), and the POST
/// streams those requests opened, by session.
fn requests_of(recs: &[Value], client: u64, tag: &str) -> (Pairs, Pairs) {
    let mut sessions: BTreeSet<String> = BTreeSet::new();
    let mut ids: Pairs = BTreeSet::new();
    for r in recs {
        let of_client = r.get("client").and_then(Value::as_u64) == Some(client);
        if of_client && matches!(kind(r).as_str(), "session" | "negotiated") {
            if let Some(s) = r.get("session") {
                sessions.insert(s.to_string());
            }
        }
    }
    for r in recs {
        let named = r.get("tag").and_then(Value::as_str) == Some(tag);
        if let (true, Some(id)) = (named, r.get("rpc_id").filter(|v| !v.is_null())) {
            match r.get("session").filter(|v| !v.is_null()) {
                Some(s) => {
                    ids.insert((s.to_string(), id.to_string()));
                }
                None => {
                    for s in &sessions {
                        ids.insert((s.clone(), id.to_string()));
                    }
                }
            }
        }
    }
    let mut streams: Pairs = BTreeSet::new();
    for r in recs.iter().filter(|r| kind(r) == "stream_opened") {
        let post = r.get("kind").and_then(Value::as_str) == Some("post");
        if let (true, Some(s), Some(id), Some(st)) =
            (post, r.get("session"), r.get("rpc_id"), r.get("stream"))
        {
            if ids.contains(&(s.to_string(), id.to_string())) {
                streams.insert((s.to_string(), st.to_string()));
            }
        }
    }
    (ids, streams)
}

/// Writes one line per record touching the operation (its requests, its
/// streams, a transport switch of its client inside its lifetime) to
/// `out`; returns how many.
fn timeline(
    out: &mut String,
    recs: &[Value],
    client: u64,
    tag: &str,
    (ids, streams): (&Pairs, &Pairs),
) -> usize {
    let (mut first, mut last) = (u64::MAX, 0);
    for r in recs
        .iter()
        .filter(|r| r.get("tag").and_then(Value::as_str) == Some(tag))
    {
        let t = r.get("t_us").and_then(Value::as_u64).unwrap_or(0);
        first = first.min(t);
        last = last.max(t);
    }
    let mut n = 0;
    for r in recs
        .iter()
        .filter(|r| !matches!(kind(r).as_str(), "op_verdict" | "oracle"))
    {
        let k = kind(r);
        let t_us = r.get("t_us").and_then(Value::as_u64).unwrap_or(0);
        let switch = k == "switched"
            && r.get("client").and_then(Value::as_u64) == Some(client)
            && (first..=last).contains(&t_us);
        if !(touches(r, tag, ids, streams) || switch) {
            continue;
        }
        n += 1;
        let t = r.get("t_us").and_then(Value::as_u64).unwrap_or(0) as f64 / 1e6;
        let _ = writeln!(
            out,
            "{t:>12.6}  {:<7} {:<22}{}",
            side(r, &k),
            k,
            describe(r)
        );
    }
    n
}

/// The oracle's verdict on the operation, one line: failed with its
/// primary cause, degraded, ok, or not in the trace.
fn verdict_line(recs: &[Value], tag: &str) -> String {
    let verdict = recs
        .iter()
        .find(|r| kind(r) == "op_verdict" && r.get("tag").and_then(Value::as_str) == Some(tag));
    let judged = recs.iter().any(|r| kind(r) == "oracle");
    match (verdict, judged) {
        (Some(v), _) => {
            let failures: Vec<String> = v
                .get("failures")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
                .unwrap_or_default();
            match v.get("cause").and_then(Value::as_str) {
                Some(c) => format!(
                    "oracle: failed ({}), primary cause {c}{}\n",
                    failures.join(", "),
                    v.get("detail")
                        .and_then(Value::as_str)
                        .map_or(String::new(), |d| format!(" ({d})"))
                ),
                None => "oracle: degraded (it missed only events the server announced)\n".into(),
            }
        }
        (None, true) => "oracle: ok\n".into(),
        (None, false) => "oracle: not in this trace (written by an older mcp-chaos; run `repro` again for the verdict)\n".into(),
    }
}

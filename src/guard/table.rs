//! Rule M as a table the `rules` command prints: each row's situation
//! built on a fresh guard and the verdict [`SessionGuard::check`] gives
//! there (computed, not transcribed).

use super::{Limits, PostFacts, Reason, SessionGuard, Verdict};

/// A session with one stream whose request produced an event past its
/// priming event, the client not told of it yet.
fn producing() -> (SessionGuard, crate::guard::StreamIdx) {
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.request_started(s);
    g.produced(s, 2);
    (g, s)
}

/// Rule M's rows, each shown with the verdict the guard gives on a session
/// built to that situation (computed, not transcribed).
pub fn decision_table() -> String {
    let limits = Limits { queue_capacity: 1 };
    let non_idem = PostFacts::default();
    let deduped = PostFacts {
        idempotent: false,
        dedup_honored: true,
    };
    let mut rows: Vec<(&str, &str, Verdict)> = Vec::new();
    // Row 0.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.produced(s, 2);
    g.close_seen(s);
    g.resumed(s, Some(1), 1);
    rows.push((
        "0",
        "replay backlog pending, queue has room",
        g.check(non_idem, limits).verdict,
    ));
    let d = g.check(non_idem, limits);
    g.apply(&d);
    rows.push((
        "0",
        "replay backlog pending, queue full",
        g.check(non_idem, limits).verdict,
    ));
    // Row 1.
    let mut g = SessionGuard::new();
    g.open_stream(1);
    rows.push(("1", "no dropped stream", g.check(non_idem, limits).verdict));
    let (mut g, s) = producing();
    g.paused(s);
    rows.push((
        "1",
        "paused stream (retry: close), events owed",
        g.check(non_idem, limits).verdict,
    ));
    // Row 2.
    let (mut g, s) = producing();
    g.close_seen(s);
    rows.push((
        "2",
        "dropped stream, watermark < last produced",
        g.check(deduped, limits).verdict,
    ));
    // Row 3.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.request_started(s);
    g.close_seen(s);
    rows.push((
        "3",
        "dropped stream drained, request still producing",
        g.check(deduped, limits).verdict,
    ));
    // Rows 4 and 5.
    let mut g = SessionGuard::new();
    let s = g.open_stream(1);
    g.close_seen(s);
    rows.push((
        "4",
        "drained, non-idempotent, no honored token",
        g.check(non_idem, limits).verdict,
    ));
    rows.push((
        "5",
        "drained, honored dedup token",
        g.check(deduped, limits).verdict,
    ));
    let mut out =
        String::from("Rule M (guarded server), evaluated in row order for every POST:\n\n");
    out.push_str(&format!("{:<4} {:<50} {}\n", "row", "situation", "verdict"));
    for (row, what, v) in rows {
        let verdict = match v {
            Verdict::Reject(r) => {
                let status = match r {
                    Reason::StreamLost => "410",
                    Reason::ReplayInProgress => "409",
                    _ => "409 + Last-Event-ID hint",
                };
                format!("reject ({}) -> {status}", r.as_str())
            }
            other => format!("{other:?}").to_lowercase(),
        };
        out.push_str(&format!("{row:<4} {what:<50} {verdict}\n"));
    }
    out.push_str("\n`mcp-chaos compare` runs these rules under faults against the other arms.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table_shows_each_verdict() {
        let t = decision_table();
        for needle in [
            "queue",
            "replay_in_progress",
            "fresh",
            "not_drained",
            "in_flight",
            "non_idempotent",
            "allow",
        ] {
            assert!(t.contains(needle), "{needle} missing from:\n{t}");
        }
    }
}

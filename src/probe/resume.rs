//! The resume hazards: GET with `Last-Event-ID` after a drop, and a POST
//! right behind it.

use super::ctx::{dropped_at, Counter, Ctx, Dropped, Step, Verdict, CHUNKS};
use super::peer::{End, Failure, Got, Reply, Session};
use crate::protocol::jsonrpc::RequestId;
use ::http::StatusCode;
use std::time::Duration;

impl Ctx<'_> {
    /// A dropped call with an event id to resume from, in a new session.
    pub(super) async fn dropped_with_cursor(
        &self,
        name: &str,
        chunks: u32,
    ) -> Step<(Session, Dropped, String)> {
        self.need_tool()?;
        if let Counter::Tool { .. } = self.counter {
            return Err("needs a tool that streams events before its result (the ledger tools); a counter tool's call is dropped before any answer".into());
        }
        let s = self.session().await?;
        let d = self.start_and_drop(&s, name, chunks).await?;
        let Some(last) = d.last_id().map(str::to_string) else {
            self.peer.end(&s).await;
            return Err(format!(
                "the call's events carry no ids (dropped {}): the server offers no resumption",
                dropped_at(&d)
            ));
        };
        Ok((s, d, last))
    }

    /// A GET resuming from `last`, which the server must accept for the
    /// hazard to be tested (a refusal ends the session: untestable).
    pub(super) async fn resumed(&self, s: &Session, last: &str) -> Step<Reply> {
        let mut g = self
            .peer
            .get(s, Some(last))
            .await
            .map_err(|e| e.to_string())?;
        if !g.status.is_success() {
            g.read_until(self.peer.within(self.wait), |_| false).await;
            self.peer.end(s).await;
            return Err(format!("the resume was refused: GET {}", g.describe()));
        }
        Ok(g)
    }

    pub(super) async fn resume_inclusive(&self) -> Step<(Verdict, String)> {
        let (s, d, last) = self.dropped_with_cursor("resume-inclusive", CHUNKS).await?;
        let g = self.resumed(&s, &last).await?;
        let (g, _) = self
            .read_answer(
                &s,
                g,
                std::slice::from_ref(&d.id),
                self.wait + self.settle_window(),
            )
            .await;
        self.peer.end(&s).await;
        let had: Vec<_> = d.seen.iter().filter_map(Got::chunk).collect();
        let story = format!("resumed after {last}: GET {}", g.describe());
        Ok(redelivered(&g.seen, &last, &had, &story))
    }

    pub(super) async fn resume_after_completion(&self) -> Step<(Verdict, String)> {
        let (s, d, last) = self
            .dropped_with_cursor("resume-after-completion", CHUNKS)
            .await?;
        tokio::time::sleep_until(self.peer.within(self.settle_window())).await;
        let g = self
            .peer
            .get(&s, Some(&last))
            .await
            .map_err(|e| e.to_string())?;
        let (g, end) = self
            .read_answer(&s, g, std::slice::from_ref(&d.id), self.wait)
            .await;
        self.peer.end(&s).await;
        let story = format!(
            "GET Last-Event-ID {last} after the tool finished: {}",
            g.describe()
        );
        Ok(match g.status {
            st if st.is_success() && end == End::Found => {
                (Verdict::Absent, format!("the result arrived ({story})"))
            }
            st if st.is_success() => (
                Verdict::Present,
                format!("the resume {} without the result ({story})", ending(&end)),
            ),
            StatusCode::GONE => (Verdict::Absent, format!("the loss was announced ({story})")),
            StatusCode::METHOD_NOT_ALLOWED => {
                return Err(format!("the server does not resume ({story})"))
            }
            _ => (
                Verdict::Present,
                format!("the result cannot be resumed ({story})"),
            ),
        })
    }

    pub(super) async fn resume_malformed(&self) -> Step<(Verdict, String)> {
        let s = self.session().await?;
        let bad = "mcp-chaos-not-an-event-id";
        let got = self.peer.get(&s, Some(bad)).await;
        let verdict = match got {
            Err(Failure::Http(e)) => (
                Verdict::Present,
                format!("the connection closed without an answer: {e}"),
            ),
            Err(e) => return Err(e.to_string()),
            Ok(mut g) => {
                g.read_until(self.peer.within(self.ms(1000)), |_| false)
                    .await;
                let story = format!("GET Last-Event-ID {bad}: {}", g.describe());
                if g.status.is_client_error() {
                    (Verdict::Absent, format!("refused ({story})"))
                } else {
                    (Verdict::Present, format!("not refused ({story})"))
                }
            }
        };
        self.peer.end(&s).await;
        Ok(verdict)
    }

    pub(super) async fn resume_foreign(&self) -> Step<(Verdict, String)> {
        self.need_tool()?;
        let a = self.session().await?;
        let id = self.peer.fresh_id();
        let tag = self.peer.tag("resume-foreign-session");
        let msg = self.op(&id, &tag, 3, self.ms(50));
        let mut r = self
            .peer
            .post(&a, &msg, self.key_for(&tag).as_deref())
            .await
            .map_err(|e| e.to_string())?;
        r.read_response(&id, self.peer.within(self.wait + self.settle_window()))
            .await;
        let Some(first) = r.seen.iter().find_map(|g| g.id.clone()) else {
            self.peer.end(&a).await;
            return Err(format!(
                "session A's call carried no event ids: {}",
                r.describe()
            ));
        };
        let b = self.session().await?;
        let mut g = self
            .peer
            .get(&b, Some(&first))
            .await
            .map_err(|e| e.to_string())?;
        g.read_until(self.peer.within(self.ms(1000)), |_| false)
            .await;
        self.peer.end(&a).await;
        self.peer.end(&b).await;
        let leaked = g
            .seen
            .iter()
            .filter(|e| e.answers(&id) || e.chunk().is_some_and(|c| *c.tag == tag))
            .count();
        let story = format!(
            "session B, GET Last-Event-ID {first} (A's): {}",
            g.describe()
        );
        Ok(if leaked > 0 {
            (
                Verdict::Present,
                format!("{leaked} of A's events reached B ({story})"),
            )
        } else {
            (
                Verdict::Absent,
                format!("none of A's events reached B ({story})"),
            )
        })
    }

    pub(super) async fn resume_then_post(&self) -> Step<(Verdict, String)> {
        let (s, d, last) = self.dropped_with_cursor("resume-then-post-1", 6).await?;
        let mut g = self.resumed(&s, &last).await?;
        let id2 = self.peer.fresh_id();
        let tag2 = self.peer.tag("resume-then-post-2");
        let msg2 = self.op(&id2, &tag2, 1, Duration::ZERO);
        let mut p = self
            .peer
            .post(&s, &msg2, self.key_for(&tag2).as_deref())
            .await
            .map_err(|e| e.to_string())?;
        let until = self.peer.within(self.wait + self.settle_window());
        let (id1, both) = (d.id.clone(), [d.id.clone(), id2.clone()]);
        tokio::join!(
            g.read_until(until, |e| e.answers(&id1)),
            p.read_until(until, |e| both.iter().any(|i| e.answers(i)))
        );
        // Let anything sent after the results show up too.
        let linger = self.peer.within(self.ms(300));
        tokio::join!(
            g.read_until(linger, |_| false),
            p.read_until(linger, |_| false)
        );
        self.peer.end(&s).await;
        let mut wrong = Vec::new();
        // Chunks the client had before the drop coming again are
        // resume-inclusive's finding, not counted twice here: order and
        // repeats are judged among the rest.
        let had: Vec<_> = d.seen.iter().filter_map(Got::chunk).collect();
        let mut index = 0;
        for c in g
            .seen
            .iter()
            .filter_map(Got::chunk)
            .filter(|c| *c.tag == d.tag && !had.contains(c))
        {
            if c.index <= index {
                wrong.push(format!(
                    "call 1's chunk {} came after chunk {index}",
                    c.index
                ));
            }
            index = index.max(c.index);
        }
        if g.seen.iter().any(|e| e.answers(&id2)) {
            wrong.push("call 2's response came on call 1's resumed stream".into());
        }
        let count = |id: &RequestId| {
            g.seen
                .iter()
                .chain(&p.seen)
                .filter(|e| e.answers(id))
                .count()
        };
        for (n, id) in [(1, &d.id), (2, &id2)] {
            if count(id) > 1 {
                wrong.push(format!("call {n}'s result arrived {} times", count(id)));
            }
        }
        let story = format!(
            "resume GET {}; call 2 POST {}; results: call 1 {}, call 2 {}",
            g.describe(),
            p.describe(),
            count(&d.id),
            count(&id2)
        );
        Ok(if wrong.is_empty() {
            (
                Verdict::Absent,
                format!("in order, each result once ({story})"),
            )
        } else {
            (Verdict::Present, format!("{} ({story})", wrong.join("; ")))
        })
    }
}

fn ending(end: &End) -> &'static str {
    match end {
        End::Found => "delivered",
        End::Ended => "ended",
        End::TimedOut => "stayed silent",
        End::Broken(_) => "broke",
    }
}

/// Whether a resume from `cursor` delivered again what the client had
/// (the event `cursor` names, or a chunk among `had`): the verdict, with
/// `story` as its evidence.
pub(super) fn redelivered(
    seen: &[Got],
    cursor: &str,
    had: &[crate::protocol::mcp::ChunkRef],
    story: &str,
) -> (Verdict, String) {
    // An event that restates the position (a priming event, a replay's
    // end marker) re-delivers nothing: only a message counts.
    let again_id = seen
        .iter()
        .any(|e| e.msg.is_some() && e.id.as_deref() == Some(cursor));
    let again = seen.iter().filter_map(Got::chunk).find(|c| had.contains(c));
    match (again_id, again) {
        (true, _) => (
            Verdict::Present,
            format!("event {cursor} was delivered again ({story})"),
        ),
        (_, Some(c)) => (
            Verdict::Present,
            format!(
                "chunk {} of execution {} was delivered again ({story})",
                c.index, c.execution
            ),
        ),
        _ => (
            Verdict::Absent,
            format!("nothing the client had came again ({story})"),
        ),
    }
}

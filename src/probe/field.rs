//! Hazards reported from the field: a forged cursor past a stream's end, a
//! second resume, one that names no position at once, a replay dropped
//! mid-way, two calls under one request id, a polling close's `retry:`
//! honoured to the millisecond, and a `notifications/cancelled` the server
//! drops.

use super::ctx::{Ctx, Step, Verdict, CHUNKS, MAX_POLLS};
use super::peer::{Failure, Got, Reply, Session};
use crate::protocol::jsonrpc::{Message, RequestId};
use crate::protocol::mcp;
use crate::protocol::mcp::ChunkRef;
use ::http::StatusCode;
use std::time::Duration;

/// `id` with its last run of digits moved far past where the stream
/// stands (the same shape, a number no event of it reached yet).
fn forged_past(id: &str) -> Option<String> {
    let end = id.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = id[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let n: u64 = id[start..end].parse().ok()?;
    Some(format!(
        "{}{}{}",
        &id[..start],
        n.checked_add(1_000)?,
        &id[end..]
    ))
}

/// A stream resumed once and dropped again ([`Ctx::resumed_and_dropped`]).
struct ResumedOnce {
    s: Session,
    d: super::ctx::Dropped,
    had: Vec<ChunkRef>,
    first: String,
    cursor: String,
}

/// The chunks among `seen`.
fn chunks(seen: &[Got]) -> Vec<ChunkRef> {
    seen.iter().filter_map(Got::chunk).collect()
}

impl Ctx<'_> {
    /// Reads a resume (or a stream) until the call's result or `wait`.
    async fn to_result(&self, r: &mut Reply, id: &RequestId, wait: Duration) {
        r.read_response(id, self.peer.within(wait)).await;
    }

    /// A GET from `cursor` that brings at least one new chunk, then is
    /// dropped (the reply is returned read so far, its connection gone).
    async fn resume_one_more(&self, s: &Session, cursor: &str, had: &[ChunkRef]) -> Step<Reply> {
        let mut g = self.resumed(s, cursor).await?;
        g.read_until(self.peer.within(self.wait), |e| {
            e.chunk().is_some_and(|c| !had.contains(&c))
        })
        .await;
        if !g
            .seen
            .iter()
            .filter_map(Got::chunk)
            .any(|c| !had.contains(&c))
        {
            self.peer.end(s).await;
            return Err(format!(
                "the resume brought nothing new (GET {}): resume-after-completion's finding, not this one's",
                g.describe()
            ));
        }
        Ok(g)
    }

    pub(super) async fn resume_future_cursor(&self) -> Step<(Verdict, String)> {
        let (s, d, last) = self
            .dropped_with_cursor("resume-future-cursor", CHUNKS)
            .await?;
        let Some(forged) = forged_past(&last) else {
            self.peer.end(&s).await;
            return Err(format!(
                "event id {last:?} has no number to move past the end"
            ));
        };
        let got = self.peer.get(&s, Some(&forged)).await;
        let verdict = match got {
            Err(Failure::Http(e)) => (
                Verdict::Present,
                format!("the connection closed without an answer to Last-Event-ID {forged}: {e}"),
            ),
            Err(e) => return Err(e.to_string()),
            Ok(g) => {
                let (g, _) = self
                    .read_answer(
                        &s,
                        g,
                        std::slice::from_ref(&d.id),
                        self.wait + self.settle_window(),
                    )
                    .await;
                let story = format!(
                    "GET Last-Event-ID {forged} (last real {last}): {}",
                    g.describe()
                );
                match g.status {
                    st if st.is_client_error() => (Verdict::Absent, format!("refused ({story})")),
                    st if st.is_success() && g.response(&d.id).is_some() => (
                        Verdict::Absent,
                        format!("the cursor was not trusted: the result arrived ({story})"),
                    ),
                    st if st.is_success() => (
                        Verdict::Present,
                        format!("accepted, and the call's result never came ({story})"),
                    ),
                    _ => (Verdict::Present, format!("the server failed ({story})")),
                }
            }
        };
        self.peer.end(&s).await;
        Ok(verdict)
    }

    /// A call's stream dropped after its first event, resumed until one new
    /// chunk came, that resume dropped too: the session, the call, the
    /// chunks had, the first resume's story and the cursor it left.
    async fn resumed_and_dropped(&self, name: &str) -> Step<ResumedOnce> {
        let (s, d, last) = self.dropped_with_cursor(name, CHUNKS * 2).await?;
        let mut had = chunks(&d.seen);
        let g1 = self.resume_one_more(&s, &last, &had).await?;
        had.extend(chunks(&g1.seen));
        let Some(cursor) = g1.last_id().map(str::to_string) else {
            self.peer.end(&s).await;
            return Err(format!(
                "the first resume's events carry no ids: GET {}",
                g1.describe()
            ));
        };
        let first = format!("first resume from {last}: GET {}", g1.describe());
        Ok(ResumedOnce {
            s,
            d,
            had,
            first,
            cursor,
        })
    }

    /// resume-unnamed: a resume that has nothing to replay yet, read for a
    /// quarter of the call's chunk interval (its next chunk is most of an
    /// interval away): does an event with an id name the stream's
    /// position at once?
    pub(super) async fn resume_unnamed(&self) -> Step<(Verdict, String)> {
        let r = self.resumed_and_dropped("resume-unnamed").await?;
        let mut g = self.resumed(&r.s, &r.cursor).await?;
        let window = self.interval() / 4;
        g.read_until(self.peer.within(window), |e| e.id.is_some())
            .await;
        self.peer.end(&r.s).await;
        let story = format!(
            "{}; second from {} at once: GET {}",
            r.first,
            r.cursor,
            g.describe()
        );
        let ms = window.as_millis();
        Ok(match g.seen.iter().find_map(|e| e.id.as_deref()) {
            Some(id) => (
                Verdict::Absent,
                format!("an event with id {id} came within {ms} ms ({story})"),
            ),
            None => (
                Verdict::Present,
                format!("no event with an id within {ms} ms of the answer: a break now leaves a reader that keeps its cursor per stream without one ({story})"),
            ),
        })
    }

    pub(super) async fn resume_twice(&self) -> Step<(Verdict, String)> {
        let ResumedOnce {
            s,
            d,
            had,
            first,
            cursor,
        } = self.resumed_and_dropped("resume-twice").await?;
        tokio::time::sleep(self.interval() / 2).await;
        let g2 = self.resumed(&s, &cursor).await?;
        let (g2, _) = self
            .read_answer(
                &s,
                g2,
                std::slice::from_ref(&d.id),
                self.wait + self.settle_window(),
            )
            .await;
        self.peer.end(&s).await;
        let story = format!("{first}; second from {cursor}: GET {}", g2.describe());
        Ok(super::resume::redelivered(&g2.seen, &cursor, &had, &story))
    }

    pub(super) async fn replay_dropped(&self) -> Step<(Verdict, String)> {
        let (s, d, last) = self.dropped_with_cursor("replay-dropped", CHUNKS).await?;
        // The tool finishes meanwhile: the resume is a replay of several
        // events, and the probe drops it after the first.
        tokio::time::sleep_until(self.peer.within(self.settle_window())).await;
        let had = chunks(&d.seen);
        let g1 = self.resume_one_more(&s, &last, &had).await?;
        if g1.response(&d.id).is_some() {
            self.peer.end(&s).await;
            return Err(format!(
                "the replay's first event was the result: GET {}",
                g1.describe()
            ));
        }
        let Some(cursor) = g1.last_id().map(str::to_string) else {
            self.peer.end(&s).await;
            return Err(format!(
                "the replay's events carry no ids: GET {}",
                g1.describe()
            ));
        };
        let first = g1.describe();
        drop(g1);
        tokio::time::sleep(self.interval() / 2).await;
        let g2 = self
            .peer
            .get(&s, Some(&cursor))
            .await
            .map_err(|e| e.to_string())?;
        let (g2, _) = self
            .read_answer(&s, g2, std::slice::from_ref(&d.id), self.wait)
            .await;
        self.peer.end(&s).await;
        let story = format!(
            "replay from {last} dropped: GET {first}; again from {cursor}: GET {}",
            g2.describe()
        );
        Ok(match g2.status {
            st if st.is_success() && g2.response(&d.id).is_some() => (
                Verdict::Absent,
                format!("the rest of the replay arrived ({story})"),
            ),
            StatusCode::GONE => (Verdict::Absent, format!("the loss was announced ({story})")),
            _ => (
                Verdict::Present,
                format!("the rest of the replay is gone, unannounced ({story})"),
            ),
        })
    }

    pub(super) async fn duplicate_inflight_id(&self) -> Step<(Verdict, String)> {
        self.need_tool()?;
        if let super::ctx::Counter::Tool { .. } = self.counter {
            return Err("needs the ledger tools: results must name their call".into());
        }
        let s = self.session().await?;
        let id = self.peer.fresh_id();
        let (tag_a, tag_b) = (
            self.peer.tag("duplicate-inflight-a"),
            self.peer.tag("duplicate-inflight-b"),
        );
        let a_msg = self.op(&id, &tag_a, CHUNKS, self.interval());
        let mut a = self
            .peer
            .post(&s, &a_msg, self.key_for(&tag_a).as_deref())
            .await
            .map_err(|e| e.to_string())?;
        a.read_until(self.peer.within(self.wait), |e| {
            e.chunk().is_some() || e.answers(&id)
        })
        .await;
        if a.response(&id).is_some() {
            self.peer.end(&s).await;
            return Err(format!(
                "call A finished before the probe could send B: {}",
                a.describe()
            ));
        }
        let b_msg = self.op(&id, &tag_b, 1, Duration::ZERO);
        let mut b = self
            .peer
            .post(&s, &b_msg, self.key_for(&tag_b).as_deref())
            .await
            .map_err(|e| e.to_string())?;
        let until = self.peer.within(self.wait + self.settle_window());
        let (a_end, _) = tokio::join!(a.read_response(&id, until), b.read_response(&id, until));
        // A server that polls may have closed A's stream after `retry:`:
        // follow it, as a client must, before judging.
        let (a, _) = self
            .follow_polls(&s, a, a_end, std::slice::from_ref(&id))
            .await;
        self.peer.end(&s).await;
        let own = |r: &Reply, tag: &str| -> Option<Result<bool, ()>> {
            match r.response(&id)?.msg.as_ref()? {
                Message::Error { .. } => Some(Err(())),
                m => Some(Ok(
                    crate::protocol::mcp::chunk_of(m).is_some_and(|c| *c.tag == *tag)
                )),
            }
        };
        let story = format!(
            "A (id {id}) POST {}; B (same id) POST {}",
            a.describe(),
            b.describe()
        );
        let b_refused = b.status.is_client_error() || own(&b, &tag_b) == Some(Err(()));
        Ok(match (own(&a, &tag_a), own(&b, &tag_b)) {
            (Some(Ok(true)), _) if b_refused => (
                Verdict::Absent,
                format!("B was refused, A got its result ({story})"),
            ),
            (Some(Ok(true)), Some(Ok(true))) => (
                Verdict::Absent,
                format!("each call got its own result ({story})"),
            ),
            (Some(Ok(false)), _) => (
                Verdict::Present,
                format!("A's stream got B's result ({story})"),
            ),
            (_, Some(Ok(false))) => (
                Verdict::Present,
                format!("B's stream got A's result ({story})"),
            ),
            (None, _) => (
                Verdict::Present,
                format!("A's stream never got a result ({story})"),
            ),
            _ => (
                Verdict::Present,
                format!("the two calls' answers crossed or were lost ({story})"),
            ),
        })
    }

    pub(super) async fn retry_honoured(&self) -> Step<(Verdict, String)> {
        self.need_tool()?;
        let s = self.session().await?;
        let id = self.peer.fresh_id();
        let tag = self.peer.tag("retry-honoured");
        let msg = self.op(&id, &tag, CHUNKS * 2, self.interval() / 2);
        let mut r = self
            .peer
            .post(&s, &msg, self.key_for(&tag).as_deref())
            .await
            .map_err(|e| e.to_string())?;
        self.to_result(&mut r, &id, self.wait + self.settle_window())
            .await;
        let mut had = chunks(&r.seen);
        let mut path = vec![format!("POST {}", r.describe())];
        let mut polls = 0;
        let outcome = loop {
            if r.response(&id).is_some() {
                break None;
            }
            let advised = r.seen.iter().rev().find_map(|g| g.retry_ms);
            let (Some(wait), Some(cursor)) = (advised, r.last_id().map(str::to_string)) else {
                break Some(Err(
                    "the stream ended or stalled without a `retry:` close before the result: the server does not poll".to_string(),
                ));
            };
            polls += 1;
            if polls > MAX_POLLS {
                break Some(Ok((
                    Verdict::Present,
                    format!("no result after {MAX_POLLS} polls"),
                )));
            }
            tokio::time::sleep(Duration::from_millis(wait)).await;
            r = match self.peer.get(&s, Some(&cursor)).await {
                Ok(g) => g,
                Err(e) => {
                    break Some(Ok((
                        Verdict::Present,
                        format!("the resume {wait} ms after `retry: {wait}` failed: {e}"),
                    )))
                }
            };
            if !r.status.is_success() {
                r.read_until(self.peer.within(self.wait), |_| false).await;
                path.push(format!("after {wait} ms GET {}", r.describe()));
                break Some(Ok((
                    Verdict::Present,
                    format!("the resume made exactly {wait} ms after `retry: {wait}` was refused"),
                )));
            }
            self.to_result(&mut r, &id, self.wait + self.settle_window())
                .await;
            path.push(format!("after {wait} ms GET {}", r.describe()));
            let again = chunks(&r.seen).into_iter().find(|c| had.contains(c));
            if let Some(c) = again {
                break Some(Ok((
                    Verdict::Present,
                    format!(
                        "the resume re-sent chunk {} it had before the cursor",
                        c.index
                    ),
                )));
            }
            had.extend(chunks(&r.seen));
        };
        self.peer.end(&s).await;
        let story = path.join("; ");
        match outcome {
            None if polls == 0 => Err(format!("the stream was never closed with `retry:`: the server does not poll ({story})")),
            None => Ok((Verdict::Absent, format!("{polls} polling close(s), each resumed after exactly its `retry:` from the cursor; the result arrived ({story})"))),
            Some(Ok((v, why))) => Ok((v, format!("{why} ({story})"))),
            Some(Err(why)) => Err(format!("{why} ({story})")),
        }
    }

    /// cancel-ignored: a call the client cancels with
    /// `notifications/cancelled` after its first event.
    pub(super) async fn cancel_ignored(&self) -> Step<(Verdict, String)> {
        self.need_ledger()?;
        let s = self.session().await?;
        let id = self.peer.fresh_id();
        let tag = self.peer.tag("cancel-ignored");
        let msg = self.op(&id, &tag, CHUNKS, self.interval());
        let mut reply = self
            .peer
            .post(&s, &msg, None)
            .await
            .map_err(|e| format!("the call failed: {e}"))?;
        if !reply.status.is_success() {
            self.peer.end(&s).await;
            return Err(format!("the call was refused: {}", reply.describe()));
        }
        reply
            .read_until(self.peer.within(self.wait), |g| {
                g.chunk().is_some() || g.answers(&id)
            })
            .await;
        if reply.seen.iter().any(|g| g.answers(&id)) {
            self.peer.end(&s).await;
            return Err("the call finished before the probe could cancel it".into());
        }
        let note = Message::Notification {
            method: mcp::CANCELLED.into(),
            params: Some(mcp::cancelled_params(&id, "mcp-chaos probe")),
        };
        let ack = match self.peer.post(&s, &note, None).await {
            Ok(a) => a.status,
            Err(e) => {
                self.peer.end(&s).await;
                return Err(format!("the cancellation failed: {e}"));
            }
        };
        reply
            .read_response(&id, self.peer.within(self.wait + self.settle_window()))
            .await;
        let answered = reply.seen.iter().any(|g| g.answers(&id));
        drop(reply);
        tokio::time::sleep_until(self.peer.within(self.settle_window())).await;
        let counts = self.ledger_counts(&s, &tag).await;
        self.peer.end(&s).await;
        let (n, finished) = counts?;
        let seen = format!("the cancellation got {}", ack.as_u16());
        Ok(match (answered, finished) {
            (true, _) => (
                Verdict::Present,
                format!("{seen}; the call's result arrived after it"),
            ),
            (false, Some(f)) if f > 0 => (
                Verdict::Present,
                format!("{seen}; no result came, but {f} of {n} executions ran to their result"),
            ),
            (false, Some(_)) => (
                Verdict::Absent,
                format!("{seen}; the stream ended without the result and no execution finished"),
            ),
            (false, None) => (
                Verdict::Untestable,
                format!("{seen}; no result came, and ledger_read gives no finished count"),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::forged_past;

    #[test]
    fn a_forged_cursor_keeps_the_ids_shape_past_its_end() {
        assert_eq!(forged_past("42").as_deref(), Some("1042"));
        assert_eq!(forged_past("0/7").as_deref(), Some("0/1007"));
        assert_eq!(forged_past("s_12_x").as_deref(), Some("s_1012_x"));
        assert_eq!(forged_past("abc"), None);
    }
}

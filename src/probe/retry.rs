//! The retry hazards: a call re-sent by POST after its connection dropped.

use super::ctx::{dropped_at, Ctx, Dropped, Step, Verdict, CHUNKS};
use super::peer::{End, Reply, Session};
use crate::protocol::headers;
use crate::protocol::jsonrpc::{Message, RequestId};
use ::http::StatusCode;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Retry {
    NewId,
    SameId,
    AfterCompletion,
}

/// What following a retry to its end gave.
struct Settled {
    /// Each answer on the way (`409 → GET 200 → result`).
    path: Vec<String>,
    /// Whether a result arrived.
    result: bool,
}

impl Ctx<'_> {
    pub(super) async fn retry(&self, how: Retry) -> Step<(Verdict, String)> {
        self.need_tool()?;
        let s = self.session().await?;
        let base = self.baseline(&s).await?;
        let name = match how {
            Retry::NewId => "retry-new-id",
            Retry::SameId => "retry-same-id",
            Retry::AfterCompletion => "retry-after-completion",
        };
        let d = self.start_and_drop(&s, name, CHUNKS).await?;
        if d.finished() {
            return Err("the call finished before the probe could drop it".into());
        }
        if how == Retry::AfterCompletion {
            tokio::time::sleep_until(self.peer.within(self.settle_window())).await;
        }
        let id = match how {
            Retry::SameId => d.id.clone(),
            _ => self.peer.fresh_id(),
        };
        let settled = self.settle(&s, &d, id).await;
        let n = self.executions(&s, &d.tag, base).await;
        self.peer.end(&s).await;
        let story = format!(
            "dropped {}, retried: {}; {}",
            dropped_at(&d),
            runs(&settled.path),
            if settled.result {
                "a result arrived"
            } else {
                "no result arrived"
            }
        );
        let n = n.map_err(|e| format!("{e} ({story})"))?;
        Ok(match n {
            0 => (Verdict::Untestable, format!("the tool never ran ({story})")),
            1 => (Verdict::Absent, format!("the tool ran once ({story})")),
            n => (
                Verdict::Present,
                format!("the tool ran {n} times for one call ({story})"),
            ),
        })
    }

    /// Re-sends `d`'s call as `id` and follows the server's answers to a
    /// result, a refusal, or the end of the attempts.
    async fn settle(&self, s: &Session, d: &Dropped, id: RequestId) -> Settled {
        let mut path = Vec::new();
        let mut id = id;
        for _ in 0..20 {
            let msg = self.op(&id, &d.tag, CHUNKS, self.interval());
            let mut r = match self.peer.post(s, &msg, d.key.as_deref()).await {
                Ok(r) => r,
                Err(e) => {
                    path.push(e.to_string());
                    break;
                }
            };
            let ids = [id.clone(), d.id.clone()];
            if r.status.is_success() {
                let (mut r, end) = self
                    .read_answer(s, r, &ids, self.wait + self.settle_window())
                    .await;
                self.drain(&mut r).await;
                path.push(format!("POST {}", r.describe()));
                return Settled {
                    path,
                    result: end == End::Found && is_result(&r, &ids),
                };
            }
            r.read_response(&id, self.peer.within(self.wait)).await;
            path.push(format!("POST {}", r.describe()));
            match r.status {
                StatusCode::CONFLICT => match d.last_id().or(r.header(headers::LAST_EVENT_ID)) {
                    Some(hint) if r.header(headers::LAST_EVENT_ID).is_some() => {
                        // Rule M: resume the owed stream from our own cursor.
                        let hint = hint.to_string();
                        match self.peer.get(s, Some(&hint)).await {
                            Ok(g) => {
                                let (mut g, end) = self
                                    .read_answer(s, g, &ids, self.wait + self.settle_window())
                                    .await;
                                self.drain(&mut g).await;
                                path.push(format!("GET Last-Event-ID {hint}: {}", g.describe()));
                                if end == End::Found && is_result(&g, &ids) {
                                    return Settled { path, result: true };
                                }
                            }
                            Err(e) => path.push(format!("GET: {e}")),
                        }
                        id = self.peer.fresh_id();
                    }
                    _ => tokio::time::sleep(self.ms(200)).await,
                },
                // The result is gone: re-issue under a new id, same key.
                StatusCode::GONE => id = self.peer.fresh_id(),
                _ => break,
            }
        }
        Settled {
            path,
            result: false,
        }
    }
}

fn is_result(r: &Reply, ids: &[RequestId]) -> bool {
    ids.iter().any(|i| {
        matches!(
            r.response(i).and_then(|g| g.msg.as_ref()),
            Some(Message::Result { .. })
        )
    })
}

/// Steps joined by arrows, a repeated step once with its count.
fn runs(path: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < path.len() {
        let n = path[i..].iter().take_while(|p| **p == path[i]).count();
        out.push(if n > 1 {
            format!("{} (x{n})", path[i])
        } else {
            path[i].clone()
        });
        i += n;
    }
    out.join(" → ")
}

//! What a proxy between the clients and the server does to the responses
//! it relays (`[intermediary]`): it can hold an SSE response until it ends
//! (`buffer`, unless the server said `X-Accel-Buffering: no`), cut off a
//! response silent too long (`idle_timeout_ms`), and rewrite SSE events
//! as they pass (`rechunk`, `strip_priming`, `strip_fields`,
//! `drop_control`). The balancer
//! relays every response through here; with nothing on, the body passes
//! through as it comes.

use crate::scenario::Intermediary;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::task::AbortHandle;
use tokio::time::Sleep;

/// The error a relayed body fails with: the upstream's, or the proxy's
/// own cut.
pub type RelayError = Box<dyn std::error::Error + Send + Sync>;

/// Closes a forward's connection to its upstream when dropped.
pub struct ConnGuard(pub AbortHandle);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response body as the proxy relays it.
pub enum Relay {
    /// An upstream body, streamed as it comes (rewritten and watched when
    /// the intermediary says so); dropping it closes the upstream
    /// connection.
    Upstream {
        /// The body.
        body: Incoming,
        /// Its connection.
        _conn: ConnGuard,
        /// The SSE rewrite, when one is on.
        rewrite: Option<SseRewrite>,
        /// Frames rewritten and not yet sent.
        ready: VecDeque<Bytes>,
        /// The idle limit, and the timer running for it.
        idle: Option<(Duration, Pin<Box<Sleep>>)>,
    },
    /// The proxy's own body (an error, or a buffered response).
    Local(Option<Bytes>),
}

impl Relay {
    /// `body` relayed as it comes, under `i`'s rewrite and idle limit when
    /// it is an SSE body.
    pub fn upstream(body: Incoming, conn: ConnGuard, i: &Intermediary, sse: bool) -> Relay {
        let idle = (sse && i.idle_timeout_ms > 0).then(|| {
            let d = Duration::from_millis(i.idle_timeout_ms);
            (d, Box::pin(tokio::time::sleep(d)))
        });
        Relay::Upstream {
            body,
            _conn: conn,
            rewrite: (sse && i.rewrites_sse()).then(|| SseRewrite::new(i)),
            ready: VecDeque::new(),
            idle,
        }
    }
}

impl Body for Relay {
    type Data = Bytes;
    type Error = RelayError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, RelayError>>> {
        let (body, rewrite, ready, idle) = match self.get_mut() {
            Relay::Upstream {
                body,
                rewrite,
                ready,
                idle,
                ..
            } => (body, rewrite, ready, idle),
            Relay::Local(bytes) => return Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        };
        loop {
            if let Some(b) = ready.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            let frame = match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Pending => {
                    if let Some((_, timer)) = idle {
                        if timer.as_mut().poll(cx).is_ready() {
                            // Silent too long: the proxy cuts it off.
                            return Poll::Ready(Some(Err("the upstream was idle too long".into())));
                        }
                    }
                    return Poll::Pending;
                }
                Poll::Ready(f) => f,
            };
            if let Some((d, timer)) = idle {
                timer.as_mut().reset(tokio::time::Instant::now() + *d);
            }
            match (frame, rewrite.as_mut()) {
                (Some(Ok(f)), Some(rw)) => match f.into_data() {
                    Ok(data) => rw.feed(&data, ready),
                    Err(f) => return Poll::Ready(Some(Ok(f))),
                },
                (Some(Ok(f)), None) => return Poll::Ready(Some(Ok(f))),
                (Some(Err(e)), _) => return Poll::Ready(Some(Err(e.into()))),
                (None, _) => return Poll::Ready(None),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Relay::Upstream { body, ready, .. } => ready.is_empty() && body.is_end_stream(),
            Relay::Local(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Relay::Upstream {
                body,
                rewrite: None,
                ..
            } => body.size_hint(),
            Relay::Upstream { .. } => SizeHint::default(),
            Relay::Local(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Relay::Local(None) => SizeHint::with_exact(0),
        }
    }
}

/// Whether a response head is an SSE stream's.
pub fn is_sse<B>(r: &Response<B>) -> bool {
    r.headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// Whether the proxy holds this response until it ends: it buffers, the
/// response is SSE, and the server did not say `X-Accel-Buffering: no`.
pub fn buffers<B>(i: &Intermediary, r: &Response<B>) -> bool {
    i.buffer
        && is_sse(r)
        && r.headers().get("x-accel-buffering") != Some(&HeaderValue::from_static("no"))
}

/// Reads `resp`'s body whole, as a buffering proxy does (rewritten by
/// `i`), then answers with it; 503 when the upstream is silent for
/// `idle_timeout_ms` first (nothing was sent yet), 502 when it breaks.
pub async fn buffered(
    i: &Intermediary,
    resp: Response<Incoming>,
    conn: ConnGuard,
) -> Result<Response<Relay>, (StatusCode, &'static str)> {
    let (parts, mut body) = resp.into_parts();
    let mut whole = VecDeque::new();
    let mut rewrite = i.rewrites_sse().then(|| SseRewrite::new(i));
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        let frame = match i.idle_timeout_ms {
            0 => next.await,
            ms => match tokio::time::timeout(Duration::from_millis(ms), next).await {
                Ok(f) => f,
                Err(_) => {
                    return Err((
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the upstream was idle too long",
                    ))
                }
            },
        };
        match frame {
            None => break,
            Some(Err(_)) => return Err((StatusCode::BAD_GATEWAY, "the upstream broke off")),
            Some(Ok(f)) => {
                if let Ok(data) = f.into_data() {
                    match &mut rewrite {
                        Some(rw) => rw.feed(&data, &mut whole),
                        None => whole.push_back(data),
                    }
                }
            }
        }
    }
    drop(conn);
    let mut all = BytesMut::new();
    for b in whole {
        all.extend_from_slice(&b);
    }
    let mut r = Response::from_parts(parts, Relay::Local(Some(all.freeze())));
    r.headers_mut().remove(http::header::TRANSFER_ENCODING);
    Ok(r)
}

/// Rewrites an SSE body block by block as it passes: drops priming events
/// (an `id:` and empty data), drops the Events extension's control
/// messages, drops `event:` and `retry:` lines, and sends each line as a
/// frame of its own, as the intermediary says.
pub struct SseRewrite {
    strip_priming: bool,
    drop_control: bool,
    strip_fields: bool,
    rechunk: bool,
    /// The current line so far.
    line: BytesMut,
    /// The current block's lines (each with its line end).
    block: Vec<Bytes>,
}

impl SseRewrite {
    /// The rewrite `i` asks for.
    pub fn new(i: &Intermediary) -> SseRewrite {
        SseRewrite {
            strip_priming: i.strip_priming,
            drop_control: i.drop_control,
            strip_fields: i.strip_fields,
            rechunk: i.rechunk,
            line: BytesMut::new(),
            block: Vec::new(),
        }
    }

    /// Takes `data`; every block it completes goes to `out`, rewritten.
    pub fn feed(&mut self, data: &[u8], out: &mut VecDeque<Bytes>) {
        let mut rest = data;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..=end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.line).freeze();
            let blank = line.as_ref() == b"\n" || line.as_ref() == b"\r\n";
            self.block.push(line);
            if blank {
                self.flush(out);
            }
        }
        self.line.extend_from_slice(rest);
    }

    /// One block is complete (its blank line is last).
    fn flush(&mut self, out: &mut VecDeque<Bytes>) {
        let block = std::mem::take(&mut self.block);
        let field = |l: &Bytes, name: &[u8]| l.starts_with(name);
        if self.strip_priming {
            let has_id = block.iter().any(|l| field(l, b"id:"));
            let datas: Vec<&Bytes> = block.iter().filter(|l| field(l, b"data:")).collect();
            let empty = !datas.is_empty()
                && datas
                    .iter()
                    .all(|l| l[5..].iter().all(|c| matches!(c, b' ' | b'\r' | b'\n')));
            if has_id && empty {
                return;
            }
        }
        if self.drop_control && is_control(&block) {
            return;
        }
        let kept: Vec<Bytes> = block
            .into_iter()
            .filter(|l| !(self.strip_fields && (field(l, b"event:") || field(l, b"retry:"))))
            .collect();
        // Only the blank line left: nothing to send.
        if kept.len() <= 1 {
            return;
        }
        if self.rechunk {
            out.extend(kept);
        } else {
            let mut b = BytesMut::new();
            for l in kept {
                b.extend_from_slice(&l);
            }
            out.push_back(b.freeze());
        }
    }
}

/// Whether an SSE block carries an Events control message
/// (`notifications/events/active`): its data lines, joined, are a JSON-RPC
/// notification with that method.
fn is_control(block: &[Bytes]) -> bool {
    let mut data = Vec::new();
    for l in block.iter().filter(|l| l.starts_with(b"data:")) {
        let v = &l[5..];
        let v = v.strip_prefix(b" ").unwrap_or(v);
        data.extend_from_slice(v.trim_ascii_end());
        data.push(b'\n');
    }
    serde_json::from_slice::<serde_json::Value>(&data)
        .ok()
        .and_then(|m| {
            m.get("method")?
                .as_str()
                .map(|s| s == crate::protocol::events::ACTIVE)
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(i: Intermediary, input: &[u8]) -> Vec<Bytes> {
        let mut rw = SseRewrite::new(&i);
        let mut out = VecDeque::new();
        // Byte by byte: a rewrite does not depend on how writes were cut.
        for b in input {
            rw.feed(std::slice::from_ref(b), &mut out);
        }
        out.into_iter().collect()
    }

    const BODY: &[u8] =
        b"id: 1\ndata: \n\n: keep-alive\n\nid: 2\nevent: message\nretry: 500\ndata: {\"a\":1}\n\n";

    #[test]
    fn strip_priming_drops_the_empty_event_only() {
        let i = Intermediary {
            strip_priming: true,
            ..Intermediary::default()
        };
        let got = run(i, BODY).concat();
        assert_eq!(
            got,
            b": keep-alive\n\nid: 2\nevent: message\nretry: 500\ndata: {\"a\":1}\n\n".to_vec()
        );
    }

    #[test]
    fn strip_fields_drops_event_and_retry_lines() {
        let i = Intermediary {
            strip_fields: true,
            ..Intermediary::default()
        };
        let got = run(i, BODY).concat();
        assert_eq!(
            got,
            b"id: 1\ndata: \n\n: keep-alive\n\nid: 2\ndata: {\"a\":1}\n\n".to_vec()
        );
    }

    #[test]
    fn drop_control_drops_the_events_active_message_only() {
        let i = Intermediary {
            drop_control: true,
            ..Intermediary::default()
        };
        let active = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/events/active\",\"params\":{\"truncated\":true}}\n\n";
        let event = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/events/event\",\"params\":{}}\n\n";
        let input = [&active[..], &event[..], BODY].concat();
        let got = run(i, &input).concat();
        assert_eq!(got, [&event[..], BODY].concat());
    }

    #[test]
    fn rechunk_sends_each_line_alone_and_changes_no_byte() {
        let i = Intermediary {
            rechunk: true,
            ..Intermediary::default()
        };
        let got = run(i, BODY);
        assert_eq!(got.concat(), BODY.to_vec());
        assert_eq!(got.len(), BODY.iter().filter(|&&b| b == b'\n').count());
    }
}

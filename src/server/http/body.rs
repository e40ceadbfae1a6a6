//! The response body: a whole JSON (or empty) body, or an SSE stream fed by
//! the stream's writer task through a bounded channel.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Frames buffered between a writer and hyper: one in the channel, so that
/// "written" means hyper took it (the write deadline measures the rest).
pub(crate) const SSE_CHANNEL_FRAMES: usize = 1;

/// A response body.
pub enum ServerBody {
    /// A complete body (JSON, or empty when `None`).
    Full(Option<Bytes>),
    /// An SSE stream; ends when the writer drops its sender.
    Sse(mpsc::Receiver<Bytes>),
}

impl ServerBody {
    /// An empty body.
    pub fn empty() -> Self {
        ServerBody::Full(None)
    }

    /// A new SSE body and the sender its writer feeds.
    pub(crate) fn sse() -> (mpsc::Sender<Bytes>, Self) {
        let (tx, rx) = mpsc::channel(SSE_CHANNEL_FRAMES);
        (tx, ServerBody::Sse(rx))
    }
}

impl Body for ServerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ServerBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            ServerBody::Sse(rx) => rx.poll_recv(cx).map(|f| f.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ServerBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ServerBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            ServerBody::Full(None) => SizeHint::with_exact(0),
            ServerBody::Sse(_) => SizeHint::default(),
        }
    }
}

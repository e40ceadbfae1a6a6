//! Coming back when the server says so: a stream the server closed after
//! its `retry:` advice (SEP-1699 polling) is resumed in exactly the
//! advised wait, in simulated time, with no backoff and no jitter (backoff
//! is for failures), and it costs no attempt; and rmcp's reconnect
//! policy, which answers a quietly failed resume (200, nothing) with the
//! same resume again after a fixed wait, without end.

use super::actor::{Client, Timer};
use super::core::SlotId;
use crate::history::ClientRecord;
use std::time::Duration;

/// rmcp's fixed reconnect wait when the server advised none, ms.
pub(super) const RMCP_RECONNECT_MS: u64 = 1_000;

impl Client {
    /// Whether `stream` is to be resumed as the server asked (or the
    /// reconnect policy says): paused, not gone.
    pub(super) fn coming_back(&self, stream: u64) -> bool {
        self.io
            .timers
            .values()
            .any(|t| matches!(t, Timer::Reconnect(s) if *s == stream))
    }

    /// `retry:` advice arrived on `slot`'s stream.
    pub(super) fn advised(&mut self, slot: SlotId, retry_ms: u64) {
        if let Some(s) = self.slots.get_mut(&slot) {
            s.retry_ms = Some(retry_ms);
        }
    }

    /// The server closed `stream` after `retry: retry_ms`: resume it then.
    pub(super) fn poll_resume(&mut self, stream: Option<u64>, retry_ms: Option<u64>) {
        let (Some(stream), Some(retry_ms)) = (stream, retry_ms) else {
            return;
        };
        self.record(ClientRecord::Paused {
            client: self.spec.index,
            stream,
            retry_ms,
        });
        if self.ignores_retry() {
            return;
        }
        self.schedule_resume(Duration::from_millis(retry_ms), stream, false);
    }

    /// A resume of `stream` failed quietly: rmcp's client tries the same
    /// resume again after the server's `retry:`, else a second.
    pub(super) fn reconnect(&mut self, stream: Option<u64>, retry_ms: Option<u64>) {
        if let Some(stream) = stream {
            let wait = Duration::from_millis(retry_ms.unwrap_or(RMCP_RECONNECT_MS));
            self.schedule_resume(wait, stream, false);
        }
    }
}

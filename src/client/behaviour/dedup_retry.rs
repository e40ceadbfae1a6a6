//! `dedup-retry`: re-POSTs after a broken stream like `retry-by-post`, but
//! every attempt carries `Idempotency-Key` (= the tag), so the server can
//! answer a retry without running the tool again.

use super::Policy;
use crate::client::core::Client;
use std::time::Duration;

/// See the module docs.
pub(in crate::client) struct DedupRetry;

impl Policy for DedupRetry {
    fn keyed(&self) -> bool {
        true
    }

    fn on_interrupted(&self, c: &mut Client, op: usize, _stream: u64, wait: Duration) {
        c.repost_after(op, wait);
    }
}

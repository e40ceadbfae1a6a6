//! `retry-by-post`: a broken stream is answered by a new POST of the call
//! (new request id, same tag); the client never resumes on its own.

use super::Policy;
use crate::client::core::Client;
use std::time::Duration;

/// See the module docs.
pub(in crate::client) struct RetryByPost;

impl Policy for RetryByPost {
    fn on_interrupted(&self, c: &mut Client, op: usize, _stream: u64, wait: Duration) {
        c.repost_after(op, wait);
    }
}

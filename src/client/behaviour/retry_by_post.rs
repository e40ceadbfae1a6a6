//! `retry-by-post`: a broken stream is answered by a new POST of the call
//! (new request id, same tag); the client never resumes on its own.

use super::Policy;
use crate::client::core::OnBreak;
use crate::history::Transport;

/// See the module docs.
pub(in crate::client) struct RetryByPost;

impl Policy for RetryByPost {
    fn on_interrupted(&self, _transport: Transport) -> OnBreak {
        OnBreak::Repost
    }
}

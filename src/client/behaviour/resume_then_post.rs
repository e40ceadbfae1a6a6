//! `resume-then-post`: resumes a broken stream like `resume`, and sends its
//! next call as soon as the resume is accepted, without waiting for the
//! owed result.

use super::Policy;
use crate::client::core::OnBreak;
use crate::history::Transport;

/// See the module docs.
pub(in crate::client) struct ResumeThenPost;

impl Policy for ResumeThenPost {
    /// The next call goes out as soon as the resume is accepted (its
    /// headers arrive), without waiting for the owed result.
    fn on_interrupted(&self, _transport: Transport) -> OnBreak {
        OnBreak::Resume { move_on: true }
    }
}

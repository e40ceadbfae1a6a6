//! `resume-then-post`: resumes a broken stream like `resume`, and sends its
//! next call as soon as the resume is accepted, without waiting for the
//! owed result.

use super::Policy;
use crate::client::core::Client;
use std::time::Duration;

/// See the module docs.
pub(in crate::client) struct ResumeThenPost;

impl Policy for ResumeThenPost {
    fn on_interrupted(&self, c: &mut Client, op: usize, stream: u64, wait: Duration) {
        c.schedule_resume(wait, stream);
        // The next call goes out as soon as the resume is accepted (its
        // headers arrive), without waiting for the owed result.
        if op + 1 == c.next_op {
            c.next_on_resume = true;
        }
    }
}

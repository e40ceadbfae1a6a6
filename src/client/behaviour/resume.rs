//! `resume`: a broken stream is resumed (GET with `Last-Event-ID`); the
//! client waits for the owed result before its next call.

use super::Policy;
use crate::client::core::Client;
use std::time::Duration;

/// See the module docs.
pub(in crate::client) struct Resume;

impl Policy for Resume {
    fn on_interrupted(&self, c: &mut Client, _op: usize, stream: u64, wait: Duration) {
        c.schedule_resume(wait, stream);
    }
}

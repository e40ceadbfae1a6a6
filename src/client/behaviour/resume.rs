//! `resume`: a broken stream is resumed (GET with `Last-Event-ID`); the
//! client waits for the owed result before its next call.

use super::Policy;
use crate::client::core::OnBreak;
use crate::history::Transport;

/// See the module docs.
pub(in crate::client) struct Resume;

impl Policy for Resume {
    fn on_interrupted(&self, _transport: Transport) -> OnBreak {
        OnBreak::Resume { move_on: false }
    }
}

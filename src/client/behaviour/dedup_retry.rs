//! `dedup-retry`: re-POSTs after a broken stream like `retry-by-post`, but
//! every attempt carries `Idempotency-Key` (= the tag), so the server can
//! answer a retry without running the tool again.

use super::Policy;
use crate::client::core::OnBreak;
use crate::history::Transport;

/// See the module docs.
pub(in crate::client) struct DedupRetry;

/// Its keys are the group's default capability (`ClientGroup::keyed`), the
/// one rule that decides them; here it reacts like `retry-by-post`.
impl Policy for DedupRetry {
    fn on_interrupted(&self, _transport: Transport) -> OnBreak {
        OnBreak::Repost
    }
}

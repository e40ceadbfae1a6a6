//! The field behaviours a client group may show (`[[clients]] field`):
//! where a client users run does not honour the server, on purpose. Each
//! is one decision the actor asks here; a client without any behaves as
//! every other file of the client says.

use super::actor::Client;
use crate::history::{ClientRecord, Outcome};
use crate::scenario::Field;
use std::borrow::Cow;

impl Client {
    /// The `Idempotency-Key` a call's POST carries: its tag (the key of
    /// every attempt), or under `key-per-attempt` a key minted afresh for
    /// each attempt.
    pub(super) fn key_for<'t>(&self, op: usize, tag: &'t str) -> Cow<'t, str> {
        let posts = self.ops[op].posts;
        if !self.g().shows(Field::KeyPerAttempt) {
            return Cow::Borrowed(tag);
        }
        if posts > 1 {
            self.record(ClientRecord::KeyChanged {
                client: self.spec.index,
                tag: tag.into(),
            });
        }
        Cow::Owned(format!("{tag}/attempt-{posts}"))
    }

    /// Whether a stream the server paused (`retry:`) is reconnected at
    /// once without `Last-Event-ID` (`ignore-retry-field`): a plain GET is
    /// sent now, and nothing resumes the paused stream.
    pub(super) fn ignores_retry(&mut self) -> bool {
        if !self.g().shows(Field::IgnoreRetryField) {
            return false;
        }
        self.send_open();
        true
    }

    /// The server answered 404 (the session is gone): a new session, every
    /// unresolved operation re-issued; under `never-reinit-after-404` the
    /// client keeps the stale session id, and every operation waiting on
    /// it fails with the 404 (the next call goes out on it again).
    pub(super) fn session_gone(&mut self) {
        if !self.g().shows(Field::NeverReinitAfter404) {
            return self.reinit();
        }
        let active: Vec<usize> = self.active.iter().copied().collect();
        for op in active {
            self.finish(op, Outcome::Abandoned);
        }
    }
}

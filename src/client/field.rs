//! The field behaviours a client group may show (`[[clients]] field`):
//! where a client users run does not honour the server, on purpose. Each
//! is one decision the actor asks here; a client without any behaves as
//! every other file of the client says.

use super::actor::{Client, Slot, SlotKind};
use super::core::SlotId;
use crate::history::Transport;
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

    /// A resume answered and then ended before any event with an id came
    /// on it: under `no-cursor-on-second-resume` the client reconnects
    /// with a plain GET (no `Last-Event-ID`), records that it dropped the
    /// cursor of every operation waiting on the stream, and nothing
    /// resumes the stream again.
    pub(super) fn drops_cursor(&mut self, slot: SlotId, s: &Slot) -> bool {
        let SlotKind::Resume { stream } = s.kind else {
            return false;
        };
        if !self.g().shows(Field::NoCursorOnSecondResume) || s.id_seen || !s.answered {
            return false;
        }
        let waiting = self.resuming_for(stream);
        if waiting.is_empty() {
            return false;
        }
        for op in waiting {
            self.record(ClientRecord::CursorDropped {
                client: self.spec.index,
                tag: self.ops.tag(op),
            });
        }
        if let Some(st) = self.streams.get_mut(&stream) {
            if st.live == Some(slot) {
                st.live = None;
            }
        }
        self.end_hold(stream);
        self.send_open();
        true
    }

    /// Under `fresh-session-per-call`, every call after the first starts
    /// on a session of its own: a fresh `initialize` (on the 2026-07-28
    /// wire, a fresh `server/discover`) goes out first, the old session
    /// left as it is (no DELETE), and the call starts once it is answered.
    /// The fresh initialize is not an attempt; a failed one, retried, is.
    pub(super) fn fresh_session_first(&mut self) -> bool {
        let next = self.next_op;
        if !self.g().shows(Field::FreshSessionPerCall)
            || next == 0
            || self.fresh_for == Some(next)
            || self.transport == Transport::Legacy
            || !self.active.is_empty()
        {
            return false;
        }
        self.fresh_for = Some(next);
        self.fresh_init = true;
        self.reinit();
        true
    }
}

//! What differs per behaviour ([`Behaviour`]), one module each: a
//! [`Policy`] the shared client asks at the few points where behaviours
//! part ways. Everything else (sending, receiving, the reaction table,
//! attempts, holds) is shared.
//!
//! Adding a behaviour: a variant of [`Behaviour`] (the scenario schema),
//! a module here with a unit struct implementing [`Policy`], and its arm
//! in [`of`].

mod dedup_retry;
mod resume;
mod resume_then_post;
mod retry_by_post;
mod transport_switch;

use super::core::Client;
use crate::history::Transport;
use crate::protocol::mcp;
use crate::scenario::Behaviour;
use serde_json::{json, Value};
use std::time::Duration;

/// The decisions that differ per behaviour. Hooks get the whole client:
/// they act through its shared steps (schedule a resume, a re-POST, a
/// switch), in the order the behaviour needs.
pub(super) trait Policy {
    /// Whether the client starts on the legacy HTTP+SSE transport and
    /// leaves it for streamable HTTP at a network change.
    fn legacy_first(&self) -> bool {
        false
    }

    /// The protocol revision and capabilities `initialize` asks for on
    /// `transport`.
    fn init(&self, _transport: Transport) -> (&'static str, Value) {
        (mcp::LATEST_VERSION, json!({}))
    }

    /// A session was negotiated (first, or again after a 404 or a
    /// switch); runs before the shared steps (the session stream, the
    /// workload).
    fn after_init(&self, _c: &mut Client) {}

    /// The stream `op`'s result rides ended or broke before the result
    /// (already on the record as `Interrupted`); `wait` is the backoff
    /// for the attempts it made so far.
    fn on_interrupted(&self, c: &mut Client, op: usize, stream: u64, wait: Duration);

    /// The network change (planned, or the legacy stream lost). Only a
    /// client that starts on legacy has one.
    fn switch(&self, _c: &mut Client) {}
}

/// The policy of behaviour `b`.
pub(super) fn of(b: Behaviour) -> &'static dyn Policy {
    match b {
        Behaviour::RetryByPost => &retry_by_post::RetryByPost,
        Behaviour::ResumeThenPost => &resume_then_post::ResumeThenPost,
        Behaviour::Resume => &resume::Resume,
        Behaviour::DedupRetry => &dedup_retry::DedupRetry,
        Behaviour::TransportSwitch => &transport_switch::TransportSwitch,
    }
}

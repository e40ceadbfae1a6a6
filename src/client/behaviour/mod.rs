//! What differs per behaviour ([`Behaviour`]), one module each: a
//! [`Policy`] the shared client asks at the few points where behaviours
//! part ways. A policy decides and returns data (the core's [`OnBreak`],
//! [`AfterInit`]); the client acts on it. Everything else (sending,
//! receiving, the reaction table, attempts, holds) is shared.
//!
//! Adding a behaviour: a variant of [`Behaviour`] (the scenario schema),
//! a module here with a unit struct implementing [`Policy`], and its arm
//! in [`of`].

mod dedup_retry;
mod resume;
mod resume_then_post;
mod retry_by_post;
mod transport_switch;

use super::core::{AfterInit, OnBreak};
use crate::history::Delivery;
use crate::history::Transport;
use crate::protocol::mcp;
use crate::scenario::Behaviour;
use serde_json::{json, Value};

/// The decisions that differ per behaviour, each a function of what the
/// client tells it: the client performs them with its shared steps.
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

    /// A session was negotiated on `transport` (first, or again after a
    /// 404 or a switch) with a server of `delivery`: what to do before the
    /// shared steps (the session stream, the workload).
    fn after_init(&self, _transport: Transport, _delivery: Delivery) -> AfterInit {
        AfterInit::default()
    }

    /// The stream an operation's result rides ended or broke before the
    /// result (already on the record as `Interrupted`), on `transport`.
    fn on_interrupted(&self, transport: Transport) -> OnBreak;
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

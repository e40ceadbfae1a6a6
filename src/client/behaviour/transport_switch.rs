//! `transport-switch`: starts on the legacy HTTP+SSE transport (legacy
//! revision, its own capabilities) and subscribes to the clock there. At
//! the network change (after its planned call, or when the legacy stream
//! is lost) it moves to streamable HTTP with the same session id and the
//! last legacy event id as `Last-Event-ID`; from then on a broken stream
//! is resumed as under `resume`.

use super::Policy;
use crate::client::core::{AfterInit, OnBreak};
use crate::history::Delivery;
use crate::history::Transport;
use crate::protocol::mcp;
use serde_json::{json, Value};

/// See the module docs. The switch itself is the client's
/// (`Client::switch`): only a client that starts on legacy has one.
pub(in crate::client) struct TransportSwitch;

impl Policy for TransportSwitch {
    fn legacy_first(&self) -> bool {
        true
    }

    /// The legacy revision and one capability set on legacy, a newer
    /// revision and another set on streamable HTTP.
    fn init(&self, transport: Transport) -> (&'static str, Value) {
        match transport {
            Transport::Legacy => (mcp::LEGACY_VERSION, json!({"sampling": {}})),
            Transport::Streamable => (mcp::LATEST_VERSION, json!({"roots": {"listChanged": true}})),
        }
    }

    /// Re-negotiated (or first negotiated): (re-)subscribe, and on
    /// streamable HTTP open the stream notifications ride.
    fn after_init(&self, transport: Transport, delivery: Delivery) -> AfterInit {
        AfterInit {
            subscribe: true,
            open: transport == Transport::Streamable && delivery != Delivery::SessionStream,
        }
    }

    /// A broken legacy stream is the network change; afterwards it
    /// resumes like `resume`.
    fn on_interrupted(&self, transport: Transport) -> OnBreak {
        match transport {
            Transport::Legacy => OnBreak::Switch,
            Transport::Streamable => OnBreak::Resume { move_on: false },
        }
    }
}

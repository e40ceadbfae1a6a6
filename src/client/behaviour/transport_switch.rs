//! `transport-switch`: starts on the legacy HTTP+SSE transport (legacy
//! revision, its own capabilities) and subscribes to the clock there. At
//! the network change (after its planned call, or when the legacy stream
//! is lost) it moves to streamable HTTP with the same session id and the
//! last legacy event id as `Last-Event-ID`; from then on a broken stream
//! is resumed as under `resume`.

use super::Policy;
use crate::client::core::{Action, Client};
use crate::history::{ClientRecord, Delivery, Transport};
use crate::protocol::mcp;
use serde_json::{json, Value};
use std::time::Duration;

/// See the module docs.
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

    fn after_init(&self, c: &mut Client) {
        // Re-negotiated (or first negotiated): (re-)subscribe, and on
        // streamable HTTP open the stream notifications ride.
        c.subscribe();
        if c.transport == Transport::Streamable && c.spec.delivery != Delivery::SessionStream {
            c.send_open();
        }
    }

    fn on_interrupted(&self, c: &mut Client, _op: usize, stream: u64, wait: Duration) {
        // A broken legacy stream is the network change; afterwards it
        // resumes like `resume`.
        if c.transport == Transport::Legacy {
            c.schedule(Duration::ZERO, Action::Switch)
        } else {
            c.schedule_resume(wait, stream)
        }
    }

    /// The planned network change: leave the legacy stream and reconnect
    /// over streamable HTTP with the same session id and the last legacy
    /// event id as `Last-Event-ID`.
    fn switch(&self, c: &mut Client) {
        let planned = std::mem::take(&mut c.switch_due);
        if c.transport != Transport::Legacy {
            return;
        }
        c.switched = Some((!planned).then(|| {
            let during = c
                .next_op
                .checked_sub(1)
                .map_or("before its first call".to_string(), |n| {
                    format!("during call {n}")
                });
            match c.legacy_dropped {
                Some(n) => format!("a planned drop closed its legacy stream during call {n}"),
                None => format!("its legacy stream broke {during}"),
            }
        }));
        let stream = c.standalone;
        let cursor = stream
            .and_then(|k| c.streams.get(&k))
            .map(|st| st.last_seen);
        c.record(ClientRecord::Switched {
            client: c.spec.index,
            from: Transport::Legacy,
            cursor,
        });
        c.transport = Transport::Streamable;
        if let Some(k) = stream {
            if let Some(old) = c.streams.get_mut(&k).and_then(|st| st.live.take()) {
                if let Some(o) = c.slots.remove(&old) {
                    o.task.abort();
                }
            }
            c.switch_pending = true;
            c.send_resume(k);
        } else {
            c.reinit();
        }
    }
}

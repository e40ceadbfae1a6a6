//! The `[intermediary]` table: what a proxy between the clients and the
//! server does to their traffic, as gateways and reverse proxies do in the
//! field. Any key set puts a proxy in front of the one server (a
//! deployment's balancer does it itself).

use serde::{Deserialize, Serialize};

/// The proxy's behaviours, all off by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Intermediary {
    /// Holds each SSE response until it ends, then sends it whole, unless
    /// the server said `X-Accel-Buffering: no` (as nginx honours it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub buffer: bool,
    /// No byte from the server for this long, ms (0: no limit): before
    /// the response began (or while buffering), the proxy answers 503; once
    /// it streams, it cuts the response off.
    #[serde(skip_serializing_if = "is_zero")]
    pub idle_timeout_ms: u64,
    /// Sends each SSE line as a write of its own (events split across
    /// writes).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rechunk: bool,
    /// Drops SSE events whose data is empty (the priming events).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strip_priming: bool,
    /// Drops `retry:` and `event:` lines from SSE events.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strip_fields: bool,
    /// Drops the Events extension's control messages from push streams
    /// (`notifications/events/active`, which carries `truncated`), as a
    /// forward proxy that relays only the messages it knows.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub drop_control: bool,
    /// Sends a POST again, once, when its upstream connection failed
    /// before the response began (or `idle_timeout_ms` passed waiting for
    /// it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retry_post: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Intermediary {
    /// No behaviour on: no proxy.
    pub fn is_off(&self) -> bool {
        *self == Intermediary::default()
    }

    /// Whether it rewrites SSE bodies as they pass.
    pub fn rewrites_sse(&self) -> bool {
        self.rechunk || self.strip_priming || self.strip_fields || self.drop_control
    }
}

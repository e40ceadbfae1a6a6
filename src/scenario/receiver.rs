//! A webhook client's receiver (`[clients.receiver]`, the Events
//! extension, docs/events.md): the HTTP endpoint on the client's host
//! that takes the server's deliveries, what it keeps to deduplicate, how
//! often it is too busy, and the subscription it holds.

use serde::{Deserialize, Serialize};

/// What a receiver deduplicates on (`dedup`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dedup {
    /// Nothing: every delivery it takes is applied.
    None,
    /// The `webhook-id` (the draft's SHOULD): a retry with the same id is
    /// answered 200 and not applied again.
    #[default]
    WebhookId,
    /// The body's `eventId`, whatever the `webhook-id`.
    EventId,
}

impl Dedup {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Dedup::None => "none",
            Dedup::WebhookId => "webhook-id",
            Dedup::EventId => "event-id",
        }
    }
}

/// A webhook client's receiver and subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverSpec {
    /// What it deduplicates on.
    pub dedup: Dedup,
    /// How long it remembers an id it took, ms (0: for the whole run).
    pub dedup_window_ms: u64,
    /// Verify each delivery's signature and refuse one older than five
    /// minutes (401), as the draft requires.
    pub verify: bool,
    /// The share of deliveries it answers 503 (busy), drawn per delivery
    /// from the client's seed.
    pub busy_rate: f64,
    /// How late it answers a delivery it took (applied first), ms: a slow
    /// receiver, whose answer a sender's timeout may not wait for.
    pub delay_ms: u64,
    /// The TTL its subscription asks for, ms.
    pub ttl_ms: u64,
    /// How often it refreshes the subscription, ms (below `ttl_ms`).
    pub refresh_ms: u64,
}

impl Default for ReceiverSpec {
    fn default() -> Self {
        ReceiverSpec {
            dedup: Dedup::WebhookId,
            dedup_window_ms: 0,
            verify: true,
            busy_rate: 0.0,
            delay_ms: 0,
            ttl_ms: 10_000,
            refresh_ms: 5_000,
        }
    }
}

impl ReceiverSpec {
    /// Whether it is the default (not written out).
    pub fn is_default(&self) -> bool {
        *self == ReceiverSpec::default()
    }
}

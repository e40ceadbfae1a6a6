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

impl super::Scenario {
    /// Its events readers in words, one per client group that reads
    /// events, in file order: `poll`, `push`, or `webhook` with what sets
    /// its receiver apart (its deduplication, a window, a restart or lost
    /// refreshes the plan gives it, no signature check, busy or slow
    /// answers): the rows of the events decision table.
    pub fn readers(&self) -> Vec<String> {
        use crate::fault::Fault;
        let mut first = 0u32;
        let mut out = Vec::new();
        for g in &self.clients {
            let clients = first..first.saturating_add(g.count);
            first = clients.end;
            let Some(mode) = g.events else { continue };
            let r = &g.receiver;
            let mut words = vec![match mode {
                super::EventsMode::Poll => "poll".to_string(),
                super::EventsMode::Push => "push".to_string(),
                super::EventsMode::Webhook => match r.dedup {
                    Dedup::None => "webhook, no dedup".to_string(),
                    d => format!("webhook, dedup on {}", d.as_str()),
                },
            }];
            if mode == super::EventsMode::Webhook {
                let hit = |f: &Fault| match *f.acting() {
                    Fault::ReceiverRestart { client, .. } => clients.contains(&client),
                    _ => false,
                };
                let lost = |f: &Fault| match *f.acting() {
                    Fault::RefreshLost { client, .. } => clients.contains(&client),
                    _ => false,
                };
                let plan = &self.faults.explicit;
                let said = [
                    (r.dedup != Dedup::None && r.dedup_window_ms > 0)
                        .then(|| format!("forgets after {} ms", r.dedup_window_ms)),
                    plan.iter().any(hit).then(|| "restarts".to_string()),
                    plan.iter().any(lost).then(|| "refreshes lost".to_string()),
                    (!r.verify).then(|| "no signature check".to_string()),
                    (r.busy_rate > 0.0).then(|| "busy".to_string()),
                    (r.delay_ms > 0).then(|| "slow".to_string()),
                ];
                words.extend(said.into_iter().flatten());
            }
            out.push(words.join(", "));
        }
        out
    }
}

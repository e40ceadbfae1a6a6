//! Webhook delivery of the Events extension (`events/subscribe`, the
//! SEP-3415 draft, docs/events.md): the subscribe and unsubscribe
//! params, the delivery's headers and Standard Webhooks signature, and the
//! control envelopes, without I/O. The server's senders and the clients'
//! receivers share this one reading.

use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

/// `events/subscribe`: create or refresh a webhook subscription.
pub const SUBSCRIBE: &str = "events/subscribe";
/// `events/unsubscribe`: end one.
pub const UNSUBSCRIBE: &str = "events/unsubscribe";

/// The delivery's id: the occurrence's `eventId` (the same on every
/// attempt), or `msg_<type>_<n>` for a control envelope.
pub const WEBHOOK_ID: &str = "webhook-id";
/// Unix seconds of this attempt (regenerated on each).
pub const WEBHOOK_TIMESTAMP: &str = "webhook-timestamp";
/// `v1,<base64 HMAC-SHA256(key, id.timestamp.body)>`.
pub const WEBHOOK_SIGNATURE: &str = "webhook-signature";
/// The subscription the delivery belongs to.
pub const SUBSCRIPTION_ID: &str = "x-mcp-subscription-id";

/// A principal not permitted (a subscription needs an authenticated one).
pub const FORBIDDEN: i64 = -32024;
/// A limit reached (`data.limit`, `data.max`).
pub const RESOURCE_EXHAUSTED: i64 = -32025;

/// How old a delivery's timestamp may be before a receiver refuses it,
/// seconds (the draft's SHOULD: five minutes).
pub const TOLERANCE_SECS: i64 = 300;

/// Where a webhook subscription delivers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// `webhook` (the only mode `events/subscribe` takes).
    #[serde(default)]
    pub mode: String,
    /// The receiver's URL.
    pub url: String,
    /// `whsec_` and the base64 of 24 to 64 bytes (absent on unsubscribe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// The params of `events/subscribe` (and, without `secret`, `cursor` and
/// `ttlMs`, of `events/unsubscribe`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (`{}` for `clock-tick`).
    #[serde(default)]
    pub arguments: Value,
    /// Where it delivers.
    pub delivery: Delivery,
    /// The watermark the client holds (`null`: from now).
    #[serde(default)]
    pub cursor: Option<String>,
    /// The TTL asked for, ms (absent: the server's default; `null` asks
    /// for no expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
}

/// What `events/subscribe` answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeResult {
    /// The subscription's id: the same for the same key on every refresh.
    pub id: String,
    /// Refresh before this (ISO 8601), or the subscription lapses.
    pub refresh_before: String,
    /// Where delivery resumes (the watermark).
    pub cursor: String,
    /// Occurrences after the cursor asked for are no longer retained.
    pub truncated: bool,
}

/// A webhook body with a top-level `type`: a control envelope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Envelope {
    /// Occurrences were lost: resume from `cursor`, as after `truncated`.
    Gap {
        /// The fresh watermark.
        cursor: String,
    },
    /// The subscription no longer exists on the server.
    Terminated {
        /// Why, as a JSON-RPC error object.
        error: Value,
    },
}

/// The signing key a `whsec_` secret names, or `None` when it is not one
/// (a prefix, then the base64 of 24 to 64 bytes).
pub fn key_of(secret: &str) -> Option<Vec<u8>> {
    let b64 = secret.strip_prefix("whsec_")?;
    let key = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    (24..=64).contains(&key.len()).then_some(key)
}

/// The `webhook-signature` of one attempt: `v1,` and the base64 of
/// HMAC-SHA256 over `id.timestamp.body`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let Ok(mut m) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    m.update(id.as_bytes());
    m.update(b".");
    m.update(timestamp.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    let tag = m.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag)
    )
}

/// Whether `header` (one or more space-separated signatures) carries the
/// signature of this delivery under `key`.
pub fn verify(key: &[u8], id: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
    let want = sign(key, id, timestamp, body);
    header.split(' ').any(|s| s == want)
}

/// The `whsec_` secret of these key bytes.
pub fn secret_of(key: &[u8]) -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_whsec_and_24_to_64_bytes() {
        let s = secret_of(&[7; 32]);
        assert!(s.starts_with("whsec_"));
        assert_eq!(key_of(&s), Some(vec![7; 32]));
        assert_eq!(key_of(&secret_of(&[1; 65])), None, "65 bytes");
        assert_eq!(key_of("whsec_AAAA"), None, "3 bytes");
        assert_eq!(key_of(&s[6..]), None, "no prefix");
        assert_eq!(key_of("whsec_!!"), None, "not base64");
    }

    #[test]
    fn a_signature_covers_id_timestamp_and_body() {
        let key = vec![1u8; 32];
        let sig = sign(&key, "clock-tick-3", 1_785_196_800, b"{}");
        assert!(sig.starts_with("v1,"));
        assert!(verify(&key, "clock-tick-3", 1_785_196_800, b"{}", &sig));
        let rotated = format!("v1,old {sig}");
        assert!(verify(&key, "clock-tick-3", 1_785_196_800, b"{}", &rotated));
        assert!(!verify(&key, "clock-tick-4", 1_785_196_800, b"{}", &sig));
        assert!(!verify(&key, "clock-tick-3", 1_785_196_801, b"{}", &sig));
        assert!(!verify(&key, "clock-tick-3", 1_785_196_800, b"{ }", &sig));
    }

    #[test]
    fn envelopes_are_tagged_by_type() {
        let g = Envelope::Gap {
            cursor: "clock-tick@9".into(),
        };
        let v = serde_json::to_value(&g).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"type": "gap", "cursor": "clock-tick@9"})
        );
        let back: Envelope =
            serde_json::from_value(v).unwrap_or(Envelope::Terminated { error: Value::Null });
        assert_eq!(back, g);
    }
}

//! The 2026-07-28 wire: the stateless request, tasks (with the
//! conformance suite's task fixtures) and input-required retries. It never
//! imports the 2025-11-25 floor; `routes.rs` picks one.

pub(in crate::server) mod events;
pub(in crate::server) mod join;
pub(in crate::server) mod mrtr;
pub(in crate::server) mod request;
pub(in crate::server) mod task_fixtures;
pub(in crate::server) mod tasks;
pub(in crate::server) mod webhooks;

use crate::server::http::body::ServerBody;
use http::{HeaderValue, Response};

/// A 2026 SSE response: proxies must not buffer it.
fn modern_stream(mut r: Response<ServerBody>) -> Response<ServerBody> {
    r.headers_mut().insert(
        crate::protocol::y2026::X_ACCEL_BUFFERING,
        HeaderValue::from_static("no"),
    );
    r
}

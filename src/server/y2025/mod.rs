//! The 2025-11-25 wire (and the legacy HTTP+SSE transport): a session's
//! POST and GET, Rule M and Rule T, resumption. It never imports the
//! 2026-07-28 floor; `routes.rs` picks one.

pub(in crate::server) mod get;
pub(in crate::server) mod legacy;
pub(in crate::server) mod post;
pub(in crate::server) mod rule_m;
pub(in crate::server) mod transport;

//! The 2026-07-28 wire: the stateless request, tasks (with the
//! conformance suite's task fixtures) and input-required retries. It never
//! imports the 2025-11-25 floor; `routes.rs` picks one.

pub(in crate::server) mod mrtr;
pub(in crate::server) mod request;
pub(in crate::server) mod task_fixtures;
pub(in crate::server) mod tasks;

//! The 2026-07-28 wire's client side: input-required retries (`mrtr.rs`)
//! and tasks (`tasks.rs`), as methods of the client's actor; the events
//! readers (`events.rs`: poll and push; `webhook.rs`: a receiver and its
//! subscription), actors of their own beside it.

pub mod events;
mod mrtr;
mod tasks;
pub mod webhook;

//! The 2026-07-28 wire's client side: input-required retries (`mrtr.rs`)
//! and tasks (`tasks.rs`), as methods of the client's actor; the events
//! reader (`events.rs`), an actor of its own beside it.

pub mod events;
mod mrtr;
mod tasks;

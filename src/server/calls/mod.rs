//! A tool call, on either wire: how it starts (`start.rs`), runs and
//! ends (`tools.rs`), and the conformance suite's fixture tools
//! (`fixtures/`).

pub(in crate::server) mod fixtures;
pub(in crate::server) mod start;
pub(in crate::server) mod tools;

//! mcp-chaos: a deterministic network simulator for MCP streamable-HTTP
//! servers. See ARCHITECTURE.md for the map.

#![warn(clippy::too_many_lines)]

pub mod base;
pub mod check;
pub mod cli;
pub mod client;
pub mod commands;
pub mod compare;
pub mod explore;
pub mod fault;
pub mod guard;
pub mod history;
pub mod hosts;
pub mod ledger;
pub mod oracle;
pub mod probe;
pub mod protocol;
pub mod report;
#[cfg(feature = "rmcp")]
pub mod rmcp;
pub mod run;
pub mod scale;
pub mod scenario;
pub mod server;
pub mod settings;
pub mod shrink;
pub mod store;
pub mod sweep;
pub mod world;

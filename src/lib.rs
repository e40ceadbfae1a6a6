//! mcp-chaos: a deterministic network simulator for MCP streamable-HTTP
//! servers. See ARCHITECTURE.md for the map.

#![warn(clippy::too_many_lines)]

pub mod balancer;
mod bounded;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod client;
pub mod compare;
pub mod console;
pub mod deployments;
pub mod explain;
pub mod explore;
pub mod fault;
pub mod flags;
pub mod gate;
pub mod guard;
pub mod history;
pub mod intermediary;
pub mod ledger;
pub mod locate;
pub mod merge;
pub mod never_applied;
pub mod one_run;
pub mod oracle;
pub mod probe;
pub mod profile;
pub mod protocol;
pub mod report;
#[cfg(feature = "rmcp")]
pub mod rmcp;
pub mod run;
pub mod scale;
pub mod scenario;
pub mod seed;
pub mod serve;
pub mod server;
pub mod settings;
pub mod shrink;
pub mod stop;
pub mod store;
pub mod sut;
pub mod sweep;
pub mod world;

//! mcp-chaos: a deterministic network simulator for MCP streamable-HTTP
//! servers. See ARCHITECTURE.md for the map.

mod bounded;
pub mod catalog;
pub mod cli;
pub mod client;
pub mod compare;
pub mod console;
pub mod explain;
pub mod fault;
pub mod flags;
pub mod guard;
pub mod history;
pub mod ledger;
pub mod locate;
pub mod never_applied;
pub mod one_run;
pub mod oracle;
pub mod probe;
pub mod protocol;
pub mod report;
pub mod run;
pub mod scale;
pub mod scenario;
pub mod schema;
#[cfg(feature = "rmcp")]
pub mod sdk;
pub mod seed;
pub mod serve;
pub mod server;
pub mod shrink;
pub mod stop;
pub mod sut;
pub mod sweep;
pub mod world;

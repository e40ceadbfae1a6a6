//! mcp-chaos: a deterministic network simulator for MCP streamable-HTTP
//! servers. See ARCHITECTURE.md for the map.

pub mod cli;
pub mod client;
pub mod guard;
pub mod history;
pub mod protocol;
pub mod server;
pub mod seed;
pub mod scenario;
pub mod fault;

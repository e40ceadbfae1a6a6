//! mcp-chaos: a deterministic network simulator for MCP streamable-HTTP
//! servers. See ARCHITECTURE.md for the map.

pub mod guard;
pub mod protocol;

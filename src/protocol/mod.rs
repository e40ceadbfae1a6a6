//! The wire: JSON-RPC 2.0 and the MCP subset the simulator speaks, the SSE
//! codec, and header names. No I/O lives here, so both the server and the
//! clients (and the tests) share one reading of every byte.

pub mod events;
pub mod headers;
pub mod json;
pub mod jsonrpc;
pub mod mcp;
pub mod sse;
pub mod webhook;
pub mod y2026;

pub use headers::{CursorEntry, CursorList};
pub use json::Json;
pub use jsonrpc::{ErrorObject, Message, RequestId};
pub use sse::{SseDecoder, SseEvent};

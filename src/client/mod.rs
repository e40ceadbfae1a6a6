//! Clients of the MCP server. [`http`] is the wire layer (one HTTP/1.1
//! connection per request, SSE reading) shared by the virtual clients of
//! the simulator, the loopback tests, and anyone driving a real server.
//! [`virtual_client`] is the simulator's client; its actor is split over
//! the private modules below.

mod actor;
mod behaviour;
mod core;
mod event_ids;
mod field;
pub mod http;
mod ops;
mod polling;
mod reactions;
mod reader;
mod receive;
mod retries;
mod send;
mod unapplied;
pub mod virtual_client;
pub mod y2026;

pub use virtual_client::{ClientSpec, Connector, Reports, Tap, TcpConnector};

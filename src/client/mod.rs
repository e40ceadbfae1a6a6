//! Clients of the MCP server. [`http`] is the wire layer (one HTTP/1.1
//! connection per request, SSE reading) shared by the virtual clients of
//! the simulator, the loopback tests, and anyone driving a real server.

pub mod http;
pub mod virtual_client;

pub use virtual_client::{ClientSpec, Connector, TcpConnector};

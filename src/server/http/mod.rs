//! The server's lowest floor: HTTP bodies and responses, who a request
//! acts for, and `serve`'s exposure bounds and edge checks. It knows no
//! session.

pub(in crate::server) mod body;
pub(in crate::server) mod edges;
pub(in crate::server) mod exposure;
pub(in crate::server) mod principal;
pub(in crate::server) mod respond;

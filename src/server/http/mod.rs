pub(in crate::server) mod body;
pub(in crate::server) mod edges;
pub(in crate::server) mod exposure;
pub(in crate::server) mod principal;
pub(in crate::server) mod respond;

pub(in crate::server) mod get;
pub(in crate::server) mod legacy;
pub(in crate::server) mod post;
pub(in crate::server) mod rule_m;
pub(in crate::server) mod transport;

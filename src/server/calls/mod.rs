pub(in crate::server) mod fixtures;
pub(in crate::server) mod tools;

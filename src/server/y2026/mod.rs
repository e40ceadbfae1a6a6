pub(in crate::server) mod modern;
pub(in crate::server) mod mrtr;
pub(in crate::server) mod tasks;

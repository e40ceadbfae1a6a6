pub(in crate::server) mod shared_guard;
pub(in crate::server) mod stored;

//! A replica's side of a shared store: what it writes there and reads
//! back (`stored.rs`) and the Rule M record replicas share
//! (`shared_guard.rs`). Without a store none of it runs.

pub(in crate::server) mod shared_guard;
pub(in crate::server) mod stored;

//! The programs the world hosts beside the clients and the server: the
//! system under test and its arms (`sut`), the balancer in front of a
//! deployment's replicas, and the intermediaries between clients and it.

pub mod balancer;
pub mod intermediary;
pub mod sut;

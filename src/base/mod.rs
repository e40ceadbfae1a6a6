//! The leaves every layer may use, importing nothing of the crate but
//! each other: the seeds, the per-principal budget, the flags, the console,
//! the stop signal, the clients' capability profiles, a host's wall clock.

pub(crate) mod bounded;
pub mod clock;
pub mod console;
pub mod flags;
pub mod profile;
pub mod seed;
pub mod stop;

//! One integration-test binary (faster to build than many), with modules.

mod build;
mod loopback;
mod sim;

//! One integration-test binary (faster to build than many), with modules.

mod build;
mod cli;
mod loopback;
mod oracle;
mod sim;

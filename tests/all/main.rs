//! One integration-test binary (faster to build than many), with modules.

mod bad_input;
mod build;
mod causes;
mod cli;
mod loopback;
mod oracle;
mod own_server;
mod rmcp;
mod serve;
mod sim;
mod turmoil_patch;

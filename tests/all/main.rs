//! One integration-test binary (faster to build than many), with modules.

mod bad_input;
mod build;
mod causes;
mod cli;
mod cli_loop;
mod loopback;
mod oracle;
mod own_server;
mod probe;
mod report;
mod rmcp;
mod serve;
mod serve_edges;
mod serve_fixtures;
mod sim;
mod soak;
mod turmoil_patch;

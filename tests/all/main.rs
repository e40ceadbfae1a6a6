//! One integration-test binary (faster to build than many), with modules.

mod bad_input;
mod build;
mod causes;
mod charts;
mod cli;
mod cli_loop;
mod first_contact;
mod loopback;
mod oracle;
mod own_server;
mod probe;
mod report;
mod rmcp;
mod serve;
mod serve_edges;
mod shrink_loop;
mod sim;
mod soak;
mod turmoil_patch;

//! The `mcp-chaos` command line.

fn main() -> std::process::ExitCode {
    mcp_chaos::cli::main()
}

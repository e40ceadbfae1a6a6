//! The `mcp-chaos` command line.

/// mimalloc instead of the C library's allocator: a simulation allocates
/// and frees small buffers by the million (events, requests, records), and
/// glibc's bins spent about an eighth of a large run's time on it.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    mcp_chaos::cli::main()
}

//! `serve`'s flags: the arm, the socket and its limits, the wire, the
//! Events extension, fixtures and quirks.

use crate::base::flags;
use crate::hosts::sut::Arm;
use crate::server::{self, Delivery};
use std::path::PathBuf;

// `serve`'s flags (no doc comment: clap would take it for the
// subcommand's about, which the variant of [`Cmd`] writes).
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Which server arm: {arms}.
    #[arg(long, default_value = "guarded")]
    pub server: Arm,
    /// One line on stderr per request: connection, method, path, session,
    /// status and content type (built-in arms).
    #[arg(long)]
    pub log: bool,
    /// Address to listen on, HOST:PORT (a host name is resolved:
    /// localhost:8080; port 0 to 65535, 0 picks a free one). Loopback
    /// by default: anything else exposes the server beyond this machine.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = flags::addr)]
    pub addr: String,
    /// Where tool-call responses go: post-stream or session-stream.
    #[arg(long, default_value = "post-stream", value_parser = parse_delivery)]
    pub delivery: Delivery,
    /// A browser origin allowed besides the loopback ones
    /// (scheme://host[:port]; repeatable). Requests with any other
    /// Origin get 403; requests without one are served.
    #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = server::parse_origin)]
    pub allow_origin: Vec<String>,
    /// A host name requests may name in `Host` besides localhost,
    /// 127.0.0.1, [::1] and the --addr host (any port; repeatable).
    /// Requests naming any other get 403 (DNS rebinding).
    #[arg(long = "allow-host", value_name = "NAME", value_parser = server::parse_host)]
    pub allow_host: Vec<String>,
    /// Most connections held at once, 1 to 1048576 (default: 1024, or
    /// fewer when the file-descriptor limit is lower); past it the
    /// oldest idle connection is closed, or the new one gets 503.
    #[arg(long, value_parser = flags::whole("--max-connections", 1, flags::MAX_CONNECTIONS))]
    pub max_connections: Option<u64>,
    /// Longest a client may take to send a request head, ms, 1 to
    /// 3600000 (also how long an idle connection is kept).
    #[arg(long, default_value_t = 10_000, value_parser = flags::whole("--header-timeout-ms", 1, flags::MAX_SERVE_TIMEOUT_MS))]
    pub header_timeout_ms: u64,
    /// Longest a client may take to send a request body, ms, 1 to
    /// 3600000 (past it: 408 and the connection is closed).
    #[arg(long, default_value_t = 10_000, value_parser = flags::whole("--body-timeout-ms", 1, flags::MAX_SERVE_TIMEOUT_MS))]
    pub body_timeout_ms: u64,
    /// A session unused this long, with no stream open, ends, seconds,
    /// 1 to 86400.
    #[arg(long, default_value_t = 600, value_parser = flags::whole("--session-idle-secs", 1, flags::MAX_SESSION_IDLE_SECS))]
    pub session_idle_secs: u64,
    /// Polling (the SSE `retry:` of 2025-11-25): after this many messages
    /// on one connection of a stream, with more to come, the server sends
    /// `retry:` and ends the response itself; the client is to resume
    /// after the wait it names. 0 (the default): never. Built-in arms only.
    #[arg(long, default_value_t = 0, value_parser = flags::whole("--poll-after", 0, 1_000_000))]
    pub poll_after: u64,
    /// The `retry:` a polling close sends, ms, 1 to 3600000.
    #[arg(long, default_value_t = 1_000, value_parser = flags::whole("--poll-retry-ms", 1, flags::MAX_SERVE_TIMEOUT_MS))]
    pub poll_retry_ms: u64,
    /// Offer the Events extension (2026-07-28 wire, docs/events.md): a
    /// `clock-tick` every so many ms, by poll, push or webhook. 0: not.
    #[arg(long, default_value_t = 0, value_parser = flags::whole("--events-tick-ms", 0, flags::MAX_SERVE_TIMEOUT_MS))]
    pub events_tick_ms: u64,
    /// Deliver webhooks to receivers off loopback too (default: loopback).
    #[arg(long)]
    pub allow_remote: bool,
    /// Offer test fixtures beside the ledger tools: `conformance` adds
    /// what the official MCP conformance suite's server scenarios call
    /// (its tools, resources, prompts, completion; built-in arms only).
    #[arg(long, value_name = "SET", value_parser = |s: &str| s.parse::<server::Fixtures>())]
    pub fixtures: Option<server::Fixtures>,
    /// Which revision of the MCP wire to speak: 2025-11-25 (sessions,
    /// resumption), 2026-07-28 (no sessions: every request a POST of its
    /// own; GET and DELETE get 405), or both (a request naming 2026-07-28
    /// in its version header or `_meta`, or `server/discover`, takes the
    /// 2026 path; any other the 2025 one). Built-in arms only.
    #[arg(long, value_name = "ERA", default_value = "2025-11-25", value_parser = parse_wire)]
    pub era: server::Wire,
    /// Serve with one SDK's quirks, as a scenario's `[server] sdk`: `rmcp`
    /// (3.11: inclusive replay, an empty resume once the result was
    /// produced), `python` (`mcp` 2.3.0: a POSTed
    /// `notifications/cancelled` answered 202 and dropped, a resume opened
    /// with a priming event), `typescript` (2.4.0: cancellations dropped,
    /// a close stops nothing), `csharp` (2.2.0: the defaults) or `go` (no
    /// `X-Accel-Buffering: no`, a close stops nothing, 2025-11-25 only).
    /// Built-in arms only.
    #[arg(long, value_name = "SDK", value_parser = |s: &str| s.parse::<server::Sdk>())]
    pub sdk: Option<server::Sdk>,
    /// The file holding the key input-required states (`requestState`,
    /// 2026-07-28) are signed with: 64 hex digits. Created with a key
    /// from the OS when missing, so that a restarted server with the same
    /// file still verifies what the one before signed. Without it, each
    /// process draws its own key.
    #[arg(long, value_name = "PATH")]
    pub state_key_file: Option<PathBuf>,
    /// Override a server setting, as a scenario's `[server]` (repeatable;
    /// applied after the flags above), e.g. `--set
    /// server.events_sender=naive --set server.events_truncation=silent
    /// --set server.events_retention=8` (sims/README.md lists the keys).
    /// Built-in arms only.
    #[arg(long = "set", value_name = "server.KEY=VALUE", value_parser = parse_server_set)]
    pub sets: Vec<(String, String)>,
}

/// `--set server.KEY=VALUE`: a `[server]` key and a value of its type.
fn parse_server_set(s: &str) -> Result<(String, String), String> {
    let (k, v) = crate::run::Options::parse_set(s)?;
    let Some(field) = k.strip_prefix("server.") else {
        return Err(format!(
            "{k:?} is not a server setting: serve takes --set server.KEY=VALUE (sims/README.md lists the [server] keys)"
        ));
    };
    crate::scenario::schema::set_server(&server::ServerConfig::default(), field, &v)?;
    Ok((field.to_string(), v))
}

fn parse_wire(s: &str) -> Result<server::Wire, String> {
    match s {
        "both" => Ok(server::Wire::Both),
        other => other
            .parse::<server::Era>()
            .map(server::Wire::of)
            .map_err(|e| format!("{e}, or both")),
    }
}

fn parse_delivery(s: &str) -> Result<Delivery, String> {
    match s {
        "post-stream" => Ok(Delivery::PostStream),
        "session-stream" => Ok(Delivery::SessionStream),
        other => Err(format!(
            "unknown delivery {other:?}: use post-stream or session-stream"
        )),
    }
}

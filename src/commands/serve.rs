//! `mcp-chaos serve`: one arm on a real socket. The built-in arms run
//! `server::Server` with a served `Exposure`; the rmcp arms run the
//! official SDK's server (`sdk`). It stands above both, so `server/`
//! never imports `sdk`.

use crate::base::console::errln;
use crate::history::History;
use crate::hosts::sut::Arm;
use crate::ledger::Ledger;
use crate::server::{Delivery, Exposure, Pacing, Sdk, Server, ServerConfig, Wire};
use anyhow::Context;

/// The connection cap when `--max-connections` is not given: 1024, or the
/// file-descriptor limit less a reserve for the server's own files when
/// that is lower (Linux: read from /proc/self/limits).
pub fn default_max_connections() -> usize {
    const CAP: usize = 1024;
    const RESERVE: usize = 32;
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|n| n.parse::<usize>().ok())
        });
    soft.map_or(CAP, |n| CAP.min(n.saturating_sub(RESERVE).max(1)))
}

/// The key `path` holds (64 hex digits, surrounding whitespace ignored);
/// a missing file is made, readable by its owner only, with a key from the
/// operating system.
pub fn state_key_file(path: &std::path::Path) -> anyhow::Result<[u8; 32]> {
    let shown = path.display();
    match std::fs::read_to_string(path) {
        Ok(text) => parse_hex_key(text.trim()).ok_or_else(|| {
            anyhow::anyhow!("--state-key-file {shown} holds no key: it must hold 64 hex digits (delete it and one is made)")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut k = [0u8; 32];
            rand::TryRngCore::try_fill_bytes(&mut rand::rngs::OsRng, &mut k)
                .map_err(|e| anyhow::anyhow!("drawing a state key: {e}"))?;
            let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .and_then(|mut f| writeln!(f, "{hex}"))
                .with_context(|| format!("--state-key-file {shown}: cannot make it: give a path in a writable directory"))?;
            Ok(k)
        }
        Err(e) => Err(anyhow::anyhow!("--state-key-file {shown}: cannot read it ({e}): give a readable file")),
    }
}

/// 64 hex digits as 32 bytes.
fn parse_hex_key(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut k = [0u8; 32];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(k)
}

/// `serve`'s server settings: the defaults, bounded for a real socket
/// (sims/README.md names each).
fn served_config(delivery: Delivery) -> ServerConfig {
    ServerConfig {
        delivery,
        max_body_bytes: 64 * 1024,
        max_chunks: 1_000,
        max_sessions: 10_000,
        store_capacity: 256,
        dedup_capacity: 4_096,
        session_seed: rand::random(),
        ..ServerConfig::default()
    }
}

/// `cfg` with `[server] key = value`: the value read as a scenario reads
/// it, the rest of `cfg` kept (a served config holds values TOML cannot
/// write, its random session seed, so the one key is carried over
/// through JSON).
fn with_set(cfg: &ServerConfig, key: &str, value: &str) -> Result<ServerConfig, String> {
    let one = crate::scenario::schema::set_server(&ServerConfig::default(), key, value)?;
    let one = serde_json::to_value(&one).map_err(|e| e.to_string())?;
    let mut all = serde_json::to_value(cfg).map_err(|e| e.to_string())?;
    if let Some(fields) = all.as_object_mut() {
        match one.get(key) {
            Some(v) => fields.insert(key.to_string(), v.clone()),
            // Written only when not its default: the default it is.
            None => fields.remove(key),
        };
    }
    let mut out: ServerConfig = serde_json::from_value(all).map_err(|e| e.to_string())?;
    // The wire is no `[server]` key (a scenario's `era` sets it).
    out.wire = cfg.wire;
    Ok(out)
}

/// Serves `arm` on `addr` until the process ends; `exposure` holds the
/// served bounds the flags chose.
pub fn serve(
    arm: Arm,
    addr: &str,
    delivery: Delivery,
    (wire, sdk): (Wire, Option<Sdk>),
    (poll_after, poll_retry_ms): (u32, u64),
    (events_tick_ms, allow_remote): (u64, bool),
    (exposure, sets): (Exposure, &[(String, String)]),
) -> anyhow::Result<()> {
    if arm.variant().is_none() && !sets.is_empty() {
        anyhow::bail!("--set changes a built-in arm's settings, not {arm}'s: drop --set or pick a built-in --server");
    }
    if allow_remote && events_tick_ms == 0 {
        anyhow::bail!("--allow-remote lets webhook deliveries leave loopback, and webhooks need the Events extension: add --events-tick-ms (and --era 2026-07-28), or drop --allow-remote");
    }
    if events_tick_ms > 0 && (arm.variant().is_none() || wire == Wire::Y2025) {
        anyhow::bail!("--events-tick-ms offers the Events extension on the 2026-07-28 wire of a built-in arm: add --era 2026-07-28 (or both) and pick guarded, unguarded or keys, or drop --events-tick-ms");
    }
    // The settings are held to the loader's rules before the socket opens.
    if arm.variant().is_none() && exposure.fixtures.offered() {
        anyhow::bail!("--fixtures is offered by the built-in arms (guarded, unguarded, keys, cancel), not by {arm}: drop --fixtures or pick a built-in --server");
    }
    if arm.variant().is_none() && wire != Wire::Y2025 {
        anyhow::bail!("--era is chosen for the built-in arms (guarded, unguarded, keys, cancel); {arm} picks its wire per request: drop --era or pick a built-in --server");
    }
    if arm.variant() == Some(crate::server::Variant::Cancel) && wire != Wire::Y2025 {
        anyhow::bail!("--server cancel is the 2026-07-28 remedy on the 2025-11-25 wire; on the 2026-07-28 wire every arm cancels on close: drop --era or pick guarded, unguarded or keys");
    }
    if let (None, Some(sdk)) = (arm.variant(), sdk) {
        anyhow::bail!("--sdk {} gives a built-in arm one SDK's quirks; {arm} is an SDK of its own: drop --sdk or pick a built-in --server", sdk.as_str());
    }
    if arm.variant().is_none() && poll_after > 0 {
        anyhow::bail!("--poll-after is a setting of the built-in arms (guarded, unguarded, keys, cancel), not of {arm}: drop it or pick a built-in --server");
    }
    if poll_after > 0 && wire == Wire::Y2026 {
        anyhow::bail!("--poll-after closes 2025-11-25 SSE streams with `retry:`, and --era 2026-07-28 has none to close: drop --poll-after, or use --era 2025-11-25 or both");
    }
    if poll_after > 0 && arm.variant() == Some(crate::server::Variant::Cancel) {
        anyhow::bail!("--poll-after is not a setting of --server cancel (it cancels a call when its stream closes, so it never polls): drop --poll-after or pick guarded, unguarded or keys");
    }
    let mut cfg = ServerConfig {
        wire,
        sdk,
        poll_after,
        poll_retry_ms,
        events_tick_ms,
        ..served_config(delivery)
    };
    for (key, value) in sets {
        cfg = with_set(&cfg, key, value)
            .map_err(|e| anyhow::anyhow!("serve --set server.{key}: {e}"))?;
    }
    crate::scenario::check_server(&cfg).map_err(|e| anyhow::anyhow!("serve: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
            format!("cannot listen on --addr {addr}: give HOST:PORT with a free port, e.g. 127.0.0.1:8080")
        })?;
        let bound = listener
            .local_addr()
            .context("reading the bound address")?;
        let mut exposure = exposure;
        exposure.allow_bound_host(addr, bound);
        let history = History::off();
        let ledger = Ledger::new(history.clone());
        let Some(variant) = arm.variant() else {
            return serve_sdk(arm, cfg, listener, history, ledger, exposure).await;
        };
        let origins = exposure
            .allowed_origins
            .iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>();
        errln!(
            "mcp-chaos: {}{} server on http://{bound}/mcp ({}; {}; session ids from the OS; origins: loopback{}{}; at most {} connections{})",
            variant.as_str(),
            sdk.map(|s| format!(" (sdk {})", s.as_str())).unwrap_or_default(),
            match wire {
                Wire::Y2025 => "wire 2025-11-25",
                Wire::Y2026 => "wire 2026-07-28",
                Wire::Both => "wires 2025-11-25 and 2026-07-28",
            },
            variant.delivery(delivery).as_str(),
            if origins.is_empty() { "" } else { ", " },
            origins.join(", "),
            exposure.max_connections.unwrap_or(usize::MAX),
            if exposure.fixtures.offered() { "; with the conformance fixtures" } else { "" },
        );
        Server::exposed(variant, cfg, history, ledger, Pacing::Timer, exposure)
            .deliver_through(egress(allow_remote))
            .serve(listener)
            .await
            .context("accepting connections")
    })
}

/// Webhook deliveries over the machine's TCP: to loopback receivers only
/// (the subscription's URL is checked, and the address the name resolved
/// to here), or, with `remote` (`--allow-remote`), to any.
fn egress(remote: bool) -> crate::server::Egress {
    // A live receiver checks a signature's timestamp against its own
    // clock: the server's wall clock is the machine's, not the
    // simulation's origin.
    let wall = crate::base::clock::WallClock::default();
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    wall.step(unix_ms - crate::protocol::events::unix_secs(0) * 1_000);
    crate::server::Egress {
        wall,
        dial: std::rc::Rc::new(move |host: &str, port: u16| {
            let host = host.to_string();
            Box::pin(async move {
                let s = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
                let peer = s.peer_addr()?;
                if !remote && !peer.ip().is_loopback() {
                    return Err(std::io::Error::other("webhook receiver is not on loopback"));
                }
                Ok(Box::new(s) as Box<dyn crate::server::EgressIo>)
            })
        }),
        remote,
    }
}

/// `serve --server rmcp|rmcp-es`: the official SDK's server with the
/// ledger tools, on a real socket.
#[cfg(feature = "rmcp")]
async fn serve_sdk(
    arm: Arm,
    cfg: ServerConfig,
    listener: tokio::net::TcpListener,
    history: History,
    ledger: Ledger,
    exposure: Exposure,
) -> anyhow::Result<()> {
    use crate::hosts::sut::{Host, SystemUnderTest};
    let seed = cfg.session_seed;
    errln!(
        "mcp-chaos: {arm} server (rmcp) on http://{}/mcp (post-stream)",
        listener.local_addr().context("reading the bound address")?
    );
    let sut = crate::rmcp::Rmcp {
        event_store: arm == Arm::RmcpEs,
        cfg,
        exposure,
    };
    sut.serve(Host {
        listener,
        seed,
        incarnation: 0,
        ledger,
        history,
        replica: None,
        egress: None,
    })
    .await
    .context("accepting connections")
}

#[cfg(not(feature = "rmcp"))]
async fn serve_sdk(
    arm: Arm,
    _: ServerConfig,
    _: tokio::net::TcpListener,
    _: History,
    _: Ledger,
    _: Exposure,
) -> anyhow::Result<()> {
    anyhow::bail!("server {arm} needs the rmcp feature: build without --no-default-features")
}

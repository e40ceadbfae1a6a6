//! `mcp-chaos scale`: the same traffic through a bare turmoil + hyper
//! program and through mcp-chaos, at several client counts, each side in
//! its own child process so that its peak memory is its own. The baseline
//! is what the simulation costs without MCP, the guard, the history or the
//! oracle: the ratio between the two is mcp-chaos's own overhead.
//!
//! The traffic: `clients` clients spread round robin over `hosts` client
//! hosts; each opens one connection per exchange (as the virtual clients
//! do), makes two short exchanges (initialize, initialized), then `calls`
//! calls whose answer is an SSE stream of `chunks` events
//! `chunk_interval_ms` apart, `think_ms` between calls. No faults.

use crate::console::{errln, notes_of, outln, write, NOTES_MARKER};
use crate::run::{self, Options};
use crate::scenario::Scenario;
use crate::server::Variant;
use anyhow::{bail, Context};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// One size of traffic.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Traffic {
    /// Clients.
    pub clients: u32,
    /// Client hosts.
    pub hosts: u32,
    /// Calls per client.
    pub calls: u32,
    /// Events per call (the last is the result).
    pub chunks: u32,
    /// Time between events, ms.
    pub chunk_interval_ms: u64,
    /// Pause between calls, ms.
    pub think_ms: u64,
}

/// What one side measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figures {
    /// `baseline`, `mcp-chaos` or `mixed-fleet`.
    pub side: String,
    /// Wall time of the run, s (the simulation and, for mcp-chaos, the
    /// oracle and the trace hash).
    pub wall_s: f64,
    /// Simulated time, s.
    pub sim_s: f64,
    /// Peak resident memory of the process, MB.
    pub peak_mb: f64,
    /// Exchanges completed (baseline) or operations judged (mcp-chaos).
    pub work: u64,
}

impl Figures {
    /// Simulated seconds per wall second.
    pub fn speed(&self) -> f64 {
        self.sim_s / self.wall_s.max(1e-9)
    }
}

/// Runs one side in this process; prints nothing.
pub fn measure(side: &str, t: Traffic) -> Result<Figures, String> {
    let started = Instant::now();
    let (sim_s, work) = match side {
        "baseline" => baseline(t)?,
        "mcp-chaos" => chaos(t)?,
        "mixed-fleet" => mixed_fleet()?,
        other => {
            return Err(format!(
                "unknown side {other:?}: use baseline, mcp-chaos or mixed-fleet"
            ))
        }
    };
    Ok(Figures {
        side: side.to_string(),
        wall_s: started.elapsed().as_secs_f64(),
        sim_s,
        peak_mb: peak_rss_mb(),
        work,
    })
}

/// The scenario mcp-chaos runs for `t`.
pub fn scenario(t: Traffic) -> Result<Scenario, String> {
    let text = format!(
        "name = \"scale-{clients}\"\nduration_ms = 1000\n\
         [[clients]]\nbehaviour = \"retry-by-post\"\ncount = {clients}\ncalls = {calls}\n\
         chunks = {chunks}\nchunk_interval_ms = {ci}\nthink_ms = {think}\n\
         connect_timeout_ms = 30000\nread_timeout_ms = 30000\n\
         [network]\nclient_hosts = {hosts}\ntcp_capacity = {cap}\nlatency_ms = [1, 5]\n\
         [heal]\nduration_ms = 600000\n",
        clients = t.clients,
        calls = t.calls,
        chunks = t.chunks,
        ci = t.chunk_interval_ms,
        think = t.think_ms,
        hosts = t.hosts,
        cap = (t.clients as usize * 3).max(1024),
    );
    crate::check::parse(&text).map_err(|e| e.to_string())
}

fn chaos(t: Traffic) -> Result<(f64, u64), String> {
    let s = scenario(t)?;
    let (r, _) = run::run(&s, 0, Variant::Unguarded, &Options::default()).map_err(|e| e.0)?;
    if !r.clients_finished {
        return Err("mcp-chaos: the clients did not finish".into());
    }
    Ok((r.sim_ms as f64 / 1e3, r.metrics.operations))
}

/// The mixed-fleet scenario as shipped in `sims/` (264 clients of every
/// behaviour, drops, partitions, latency spikes), run once on seed 0 under
/// the guarded arm: how fast faulted traffic runs against real time.
pub const MIXED_FLEET: &str = include_str!("../sims/mixed-fleet.toml");

fn mixed_fleet() -> Result<(f64, u64), String> {
    let s = crate::check::parse(MIXED_FLEET).map_err(|e| e.to_string())?;
    let (r, _) = run::run(&s, 0, Variant::Guarded, &Options::default()).map_err(|e| e.0)?;
    Ok((r.sim_ms as f64 / 1e3, r.metrics.operations))
}

/// The bare program: hyper over turmoil, the same connections and events.
fn baseline(t: Traffic) -> Result<(f64, u64), String> {
    let mut sim = turmoil::Builder::new()
        .epoch(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
        .rng_seed(0)
        .simulation_duration(Duration::from_secs(3600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .tcp_capacity((t.clients as usize * 3).max(1024))
        .ephemeral_ports(crate::scenario::EPHEMERAL_PORTS)
        .build();
    sim.host("server", move || async move {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
        loop {
            let (io, _) = listener.accept().await?;
            tokio::task::spawn_local(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    answer(req, t)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .auto_date_header(false)
                    .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
                    .await;
            });
        }
    });
    let done = std::rc::Rc::new(std::cell::Cell::new(0u64));
    for h in 0..t.hosts {
        let n = (t.clients / t.hosts) + u32::from(h < t.clients % t.hosts);
        let done = done.clone();
        sim.client(format!("client{h}"), async move {
            let tasks: Vec<_> = (0..n)
                .map(|_| {
                    let done = done.clone();
                    tokio::task::spawn_local(async move {
                        for k in 0..t.calls + 2 {
                            let path = if k < 2 { "/init" } else { "/call" };
                            if exchange(path).await.is_ok() {
                                done.set(done.get() + 1);
                            }
                            if k >= 2 {
                                tokio::time::sleep(Duration::from_millis(t.think_ms)).await;
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await?;
            }
            Ok(())
        });
    }
    sim.run().map_err(|e| format!("baseline: {e}"))?;
    Ok((sim.elapsed().as_secs_f64(), done.get()))
}

type Body = http_body_util::Either<Full<Bytes>, events::Events>;

async fn answer(
    req: Request<hyper::body::Incoming>,
    t: Traffic,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let _ = req.into_body().collect().await;
    let resp = if path == "/call" {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(http_body_util::Either::Right(events::Events::new(
                t.chunks,
                t.chunk_interval_ms,
            )))
    } else {
        Response::builder()
            .header("content-type", "application/json")
            .body(http_body_util::Either::Left(Full::new(Bytes::from_static(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
            ))))
    };
    Ok(resp.expect("a valid response"))
}

async fn exchange(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let io = turmoil::net::TcpStream::connect(("server", 80)).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
    let task = tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    let req = Request::post(path)
        .header("host", "server")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"c0-op0#1\",\"method\":\"tools/call\",\"params\":{}}",
        )))?;
    let resp = sender.send_request(req).await?;
    let _ = resp.into_body().collect().await?;
    task.abort();
    Ok(())
}

/// The SSE events of one call, produced on a timer.
mod events {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct Events {
        left: u32,
        next: u32,
        interval: Duration,
        sleep: Pin<Box<tokio::time::Sleep>>,
    }

    impl Events {
        pub fn new(chunks: u32, interval_ms: u64) -> Events {
            let interval = Duration::from_millis(interval_ms);
            Events {
                left: chunks,
                next: 1,
                interval,
                sleep: Box::pin(tokio::time::sleep(interval)),
            }
        }
    }

    impl hyper::body::Body for Events {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            if self.left == 0 {
                return Poll::Ready(None);
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let at = tokio::time::Instant::now() + self.interval;
            self.sleep.as_mut().reset(at);
            let n = self.next;
            self.next += 1;
            self.left -= 1;
            let ev = format!(
                "id: {n}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"c0-op0#1\",\"progress\":{n},\"message\":\"ledger:1:{n}:c0-op0\"}}}}\n\n"
            );
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(ev)))))
        }
    }
}

/// Peak resident memory of this process, MB (Linux `VmHWM`; 0 elsewhere).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A target the scale figures are held to, and whether they meet it.
pub struct Target {
    /// What is measured.
    pub what: &'static str,
    /// The target, as text.
    pub target: &'static str,
    /// The measured value, as text.
    pub measured: String,
    /// Met.
    pub met: bool,
}

/// The targets at the largest size measured (`big`, with `base` its
/// baseline), the exponent from the smallest to the largest, and the
/// mixed-fleet speed.
pub fn targets(big: (&Figures, &Figures), exponent: Option<f64>, fleet: &Figures) -> Vec<Target> {
    let (base, chaos) = big;
    let ratio = chaos.wall_s / base.wall_s.max(1e-9);
    let mut t = vec![
        Target {
            what: "wall time, largest size",
            target: "<= 30 s",
            measured: format!("{:.1} s", chaos.wall_s),
            met: chaos.wall_s <= 30.0,
        },
        Target {
            what: "peak memory, largest size",
            target: "<= 1024 MB",
            measured: format!("{:.0} MB", chaos.peak_mb),
            met: chaos.peak_mb <= 1024.0,
        },
        Target {
            what: "wall time against the baseline",
            target: "<= 1.5x",
            measured: format!("{ratio:.2}x"),
            met: ratio <= 1.5,
        },
    ];
    if let Some(k) = exponent {
        t.push(Target {
            what: "wall-time exponent",
            target: "<= 1.1",
            measured: format!("{k:.2}"),
            met: k <= 1.1,
        });
    }
    t.push(Target {
        what: "mixed-fleet against real time",
        target: ">= 100x",
        measured: format!("{:.0}x", fleet.speed()),
        met: fleet.speed() >= 100.0,
    });
    t
}

/// `scale`: each size's two sides and the mixed fleet, each in a child
/// process; the table printed and, with `out`, written with the machine
/// (notes below the marker kept). With `one`, this process is such a
/// child: it runs that side and prints its figures as JSON.
pub fn command(
    sizes: &[u32],
    base: Traffic,
    out: Option<&Path>,
    one: Option<&str>,
) -> anyhow::Result<u8> {
    if base.hosts == 0 {
        bail!("--hosts must be at least 1");
    }
    if let Some(side) = one {
        let t = Traffic {
            clients: *sizes.first().context("--clients names no size")?,
            ..base
        };
        let f = measure(side, t).map_err(anyhow::Error::msg)?;
        outln!("{}", serde_json::to_string(&f).expect("figures serialize"));
        return Ok(0);
    }
    check_sizes(sizes, base)?;
    let exe = std::env::current_exe().context("finding this program to run each side")?;
    let mut rows: Vec<(u32, Figures, Figures)> = Vec::new();
    for &n in sizes {
        let b = side_figures(&exe, "baseline", n, base)?;
        let c = side_figures(&exe, "mcp-chaos", n, base)?;
        rows.push((n, b, c));
    }
    let fleet = side_figures(&exe, "mixed-fleet", 0, base)?;
    let table = table(base, &rows, &fleet);
    outln!("{table}");
    if let Some(p) = out {
        write_perf(p, &table)?;
    }
    Ok(0)
}

/// Every size checked before the first side runs: the baseline would run
/// what the simulator's loader refuses.
fn check_sizes(sizes: &[u32], base: Traffic) -> anyhow::Result<()> {
    if sizes.is_empty() || sizes.contains(&0) {
        bail!("--clients needs sizes of at least 1, e.g. --clients 1000,10000");
    }
    let smallest = sizes.iter().copied().min().unwrap_or(1);
    if base.hosts > smallest {
        bail!(
            "--hosts {} is above the smallest --clients size {smallest}: a host without a \
             client runs nothing; use at most {smallest} hosts",
            base.hosts
        );
    }
    for &n in sizes {
        scenario(Traffic { clients: n, ..base })
            .map_err(|e| anyhow::anyhow!("scale --clients {n}: {e}"))?;
    }
    Ok(())
}

/// The Markdown the command prints: one row per size and side, the mixed
/// fleet, the wall-time exponent between the first and last size, the
/// targets at the last.
fn table(base: Traffic, rows: &[(u32, Figures, Figures)], fleet: &Figures) -> String {
    let mut table = format!(
        "{} client hosts, {} calls per client of {} SSE events {} ms apart, {} ms think time, \
         no faults; one connection per exchange.\n\n\
         | clients | side | wall s | simulated s | sim s / wall s | peak MB | wall ratio | memory ratio |\n\
         |---|---|---|---|---|---|---|---|\n",
        base.hosts, base.calls, base.chunks, base.chunk_interval_ms, base.think_ms
    );
    for (n, b, c) in rows {
        for f in [b, c] {
            let (wr, mr) = if f.side == "baseline" {
                ("1".to_string(), "1".to_string())
            } else {
                (
                    format!("{:.2}", f.wall_s / b.wall_s.max(1e-9)),
                    format!("{:.2}", f.peak_mb / b.peak_mb.max(1e-9)),
                )
            };
            table.push_str(&format!(
                "| {n} | {} | {:.2} | {:.1} | {:.1} | {:.0} | {wr} | {mr} |\n",
                f.side,
                f.wall_s,
                f.sim_s,
                f.speed(),
                f.peak_mb
            ));
        }
    }
    table.push_str(&format!(
        "\nmixed-fleet (sims/mixed-fleet.toml, guarded, seed 0: {} operations, faults on): \
         {:.1} simulated s in {:.2} s wall, {:.0}x real time, peak {:.0} MB.\n",
        fleet.work,
        fleet.sim_s,
        fleet.wall_s,
        fleet.speed(),
        fleet.peak_mb
    ));
    let mut exponent = None;
    if let [(n1, b1, c1), .., (n2, b2, c2)] = rows {
        let k = |w1: f64, w2: f64| (w2 / w1).ln() / (f64::from(*n2) / f64::from(*n1)).ln();
        exponent = Some(k(c1.wall_s, c2.wall_s));
        table.push_str(&format!(
            "\nWall-time exponent from {n1} to {n2} clients: baseline {:.2}, mcp-chaos {:.2}.\n",
            k(b1.wall_s, b2.wall_s),
            k(c1.wall_s, c2.wall_s)
        ));
    }
    if let Some((n, b, c)) = rows.last() {
        table.push_str(&format!(
            "\nTargets ({n} clients for the sizes):\n\n| what | target | measured | met |\n|---|---|---|---|\n"
        ));
        for t in targets((b, c), exponent, fleet) {
            table.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                t.what,
                t.target,
                t.measured,
                if t.met { "yes" } else { "**no**" }
            ));
        }
    }
    table
}

/// Writes the table to `p` with the machine it ran on, keeping the notes
/// an earlier file holds below the marker.
fn write_perf(p: &Path, table: &str) -> anyhow::Result<()> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let notes = std::fs::read_to_string(p)
        .ok()
        .and_then(|old| notes_of(&old).map(str::to_string));
    let notes = notes.unwrap_or_else(|| NOTES_MARKER.to_string());
    write(
        p,
        &format!(
            "# Scale: mcp-chaos against a bare turmoil + hyper program\n\n\
             Machine: {cpu}, {} cores visible (each side runs on one). Written by \
             `mcp-chaos scale`; one run, wall-clock figures on a shared machine.\n\n{table}\n{notes}\n",
            crate::sweep::cores()
        ),
    )
}

/// Runs one side of the scale bench in a child process (so that its peak
/// memory is its own) and reads its figures.
fn side_figures(exe: &Path, name: &str, n: u32, base: Traffic) -> anyhow::Result<Figures> {
    errln!("mcp-chaos scale: {n} clients, {name}");
    let o = std::process::Command::new(exe)
        // The mixed-fleet side runs its own 264 clients (n = 0); --clients
        // still takes a valid size.
        .args(["scale", "--one", name, "--clients", &n.max(1).to_string()])
        .args(["--hosts", &base.hosts.to_string()])
        .args(["--calls", &base.calls.to_string()])
        .args(["--chunks", &base.chunks.to_string()])
        .args(["--chunk-interval-ms", &base.chunk_interval_ms.to_string()])
        .args(["--think-ms", &base.think_ms.to_string()])
        .output()
        .context("running a side")?;
    if !o.status.success() {
        bail!(
            "the {name} side at {n} clients failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    serde_json::from_slice(&o.stdout).context("reading a side's figures")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(side: &str, wall_s: f64, peak_mb: f64) -> Figures {
        Figures {
            side: side.into(),
            wall_s,
            sim_s: 60.0,
            peak_mb,
            work: 1,
        }
    }

    #[test]
    fn targets_say_which_are_met() {
        let base = figures("baseline", 20.0, 700.0);
        let fleet = figures("mixed-fleet", 0.5, 100.0);
        let met = targets(
            (&base, &figures("mcp-chaos", 29.0, 1000.0)),
            Some(1.05),
            &fleet,
        );
        assert!(met.iter().all(|t| t.met), "all met");
        let missed = targets(
            (&base, &figures("mcp-chaos", 31.0, 1100.0)),
            Some(1.2),
            &figures("mixed-fleet", 1.0, 100.0),
        );
        assert_eq!(missed.len(), 5);
        assert!(missed.iter().all(|t| !t.met), "none met");
    }

    #[test]
    fn the_ten_thousand_client_fleet_loads() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/scale/ten-thousand.toml");
        let s = Scenario::load(&p).expect("it validates");
        assert_eq!(s.client_count(), 10_000);
        assert_eq!(s.network.client_hosts, 4);
    }
}

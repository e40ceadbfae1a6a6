//! `mcp-chaos probe`: the seed hazards against a live streamable-HTTP MCP
//! server over real TCP, in real time. Unlike the simulator this is not
//! deterministic (a real server, real timing); each verdict follows a
//! written rule ([`hazards::HAZARDS`]) from what one client can see, and
//! executions are counted through the documented ledger tools or one
//! counter tool, never by calling anything else.

pub mod ctx;
mod events;
mod field;
pub mod hazards;
pub mod peer;
mod resume;
mod retry;
mod sessions;
pub mod target;
mod y2026;

use crate::client::http::{Budget, Limits};
use ctx::{Counter, Ctx, Verdict};
use hazards::{Finding, HAZARDS};
use http::HeaderMap;
use peer::{Bounds, Failure, Peer};
use std::fmt::Write as _;
use std::time::Duration;
use target::{Refused, Target};

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A verdict per line, evidence below.
    Text,
    /// A Markdown table, then the rules.
    Markdown,
    /// A JSON list of `{hazard, title, verdict, evidence}`.
    Json,
}

/// The probe's client profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// No idempotency key.
    Plain,
    /// `Idempotency-Key` on every tool call (the same on each retry).
    Keys,
}

/// `mcp-chaos probe`'s command line.
#[derive(Clone, Debug, clap::Args)]
pub struct ProbeArgs {
    /// The server's streamable-HTTP endpoint, http://HOST:PORT/PATH
    /// (loopback unless --allow-remote).
    #[arg(long)]
    url: String,
    /// Send an Idempotency-Key on every tool call (the same on a retry).
    #[arg(long, value_enum, default_value = "plain")]
    profile: Profile,
    /// Count executions with this tool instead of ledger_append/ledger_read:
    /// each call runs it once, and the first number in its text result is
    /// how many times it has run. No other tool is ever called.
    #[arg(long)]
    tool: Option<String>,
    /// The counter tool's arguments, a JSON object.
    #[arg(long, requires = "tool", value_name = "JSON")]
    tool_args: Option<String>,
    /// A header sent on every request, 'Name: value' (repeatable), e.g.
    /// 'Authorization: Bearer TOKEN'.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// The legacy HTTP+SSE endpoint (default: /sse on the same server).
    #[arg(long, value_name = "URL")]
    legacy_url: Option<String>,
    /// Only this hazard (repeatable; all by default); the help lists them
    /// from the registry ([`hazards::HAZARDS`], [`hazards::HAZARDS_2026`]).
    #[arg(long, value_name = "HAZARD", help = only_help())]
    only: Vec<String>,
    /// The wire to speak (its hazards listed from the registry).
    #[arg(long, default_value = "2025-11-25", value_parser = parse_era, help = era_help())]
    era: crate::settings::Era,
    /// Output: text, markdown or json.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Bound on the whole probe, seconds, 1 to 3600.
    #[arg(long, default_value_t = 120, value_parser = crate::base::flags::whole("--timeout", 1, 3_600))]
    timeout: u64,
    /// Multiply every real-time window the hazard tests rely on by N, 1 to
    /// 20: the pacing of their calls, their pauses after a drop, how long
    /// they wait for a close to be seen or a call to finish. For a server
    /// far away or slow to notice a close, or a loaded machine.
    #[arg(long, default_value_t = 1, value_parser = crate::base::flags::whole32("--time-scale", 1, 20))]
    time_scale: u32,
    /// Bound on one response or result, milliseconds, 100 to 600000.
    #[arg(long, default_value_t = 10_000, value_parser = crate::base::flags::whole("--request-timeout-ms", 100, 600_000))]
    request_timeout_ms: u64,
    /// Most requests the probe sends, 1 to 1000000.
    #[arg(long, default_value_t = 500, value_parser = crate::base::flags::whole32("--max-requests", 1, crate::base::flags::MAX_PROBE_REQUESTS as u32))]
    max_requests: u32,
    /// Most bytes of one response head (status line and fields; at most
    /// 100 fields).
    #[arg(long, default_value_t = 65_536, value_parser = crate::base::flags::whole("--max-header-bytes", 8192, 16 << 20))]
    max_header_bytes: u64,
    /// Most bytes of one response body: a JSON body or a whole SSE stream.
    #[arg(long, default_value_t = 4 << 20, value_parser = crate::base::flags::whole("--max-body-bytes", 1024, 1 << 30))]
    max_body_bytes: u64,
    /// Most bytes of one SSE line or event.
    #[arg(long, default_value_t = 1 << 20, value_parser = crate::base::flags::whole("--max-event-bytes", 1024, 1 << 30))]
    max_event_bytes: u64,
    /// Most SSE events on one response.
    #[arg(long, default_value_t = 10_000, value_parser = crate::base::flags::whole("--max-events", 1, 10_000_000))]
    max_events: u64,
    /// Most bytes the probe reads from the server in all (heads and
    /// bodies).
    #[arg(long, default_value_t = 64 << 20, value_parser = crate::base::flags::whole("--max-total-bytes", 1024, 1 << 36))]
    max_total_bytes: u64,
    /// Allow a --url, --legacy-url or server-sent endpoint that is not a
    /// loopback address.
    #[arg(long)]
    allow_remote: bool,
}

/// The hazards' names, comma-separated, in the order the probe tries them.
fn names(list: &[hazards::Hazard]) -> String {
    list.iter().map(|h| h.name).collect::<Vec<_>>().join(", ")
}

/// `--only`'s help: every hazard of both wires, from the registry.
fn only_help() -> String {
    format!(
        "Only this hazard (repeatable; all by default). On 2025-11-25: {}. On 2026-07-28: {} (docs/probe.md)",
        names(hazards::HAZARDS),
        names(hazards::HAZARDS_2026)
    )
}

/// `--era`'s help, naming the 2026-07-28 wire's own hazards.
fn era_help() -> String {
    format!(
        "The wire to speak: 2025-11-25 (sessions, resumption) or 2026-07-28 (no sessions; its own hazards: {})",
        names(hazards::HAZARDS_2026)
    )
}

fn parse_era(s: &str) -> Result<crate::settings::Era, String> {
    s.parse()
}

/// Runs `probe` from its command line: the report to print, the exit code,
/// and a line for standard error when the budget ran out first.
pub fn main(args: &ProbeArgs) -> anyhow::Result<(String, u8, Option<String>)> {
    let opts = Options {
        url: args.url.clone(),
        legacy_url: args.legacy_url.clone(),
        profile: args.profile,
        tool: args.tool.clone(),
        tool_args: args.tool_args.clone(),
        headers: args.headers.clone(),
        only: args.only.clone(),
        era: args.era,
        timeout: Duration::from_secs(args.timeout),
        request_timeout: Duration::from_millis(args.request_timeout_ms),
        time_scale: args.time_scale,
        max_requests: args.max_requests,
        limits: ReadLimits {
            head_bytes: usize::try_from(args.max_header_bytes).unwrap_or(usize::MAX),
            body_bytes: args.max_body_bytes,
            event_bytes: usize::try_from(args.max_event_bytes).unwrap_or(usize::MAX),
            events: args.max_events,
            total_bytes: args.max_total_bytes,
        },
        allow_remote: args.allow_remote,
    };
    let report = run(&opts)?;
    let text = report.render(args.format).trim_end().to_string();
    if let Some(line) = report.stopped.clone() {
        // What was judged before the stop stands in the report, but a
        // probe that could not read its server is neither a pass nor a
        // finding.
        return Ok((text, 3, Some(line)));
    }
    Ok(match (report.any_present(), report.budget_spent) {
        (true, _) => (text, 1, None),
        // Nothing present, but not everything was tried: not a pass.
        (false, true) => (
            text,
            3,
            Some("the probe's budget ran out before every hazard was tried: raise --timeout or --max-requests".into()),
        ),
        (false, false) => (text, 0, None),
    })
}

/// Everything `probe` needs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The server's streamable-HTTP endpoint.
    pub url: String,
    /// The legacy transport's SSE endpoint (default: `/sse` beside it).
    pub legacy_url: Option<String>,
    /// Key-sending or not.
    pub profile: Profile,
    /// A counter tool to use instead of the ledger tools.
    pub tool: Option<String>,
    /// Its arguments (a JSON object).
    pub tool_args: Option<String>,
    /// Extra headers, `Name: value`.
    pub headers: Vec<String>,
    /// Only these hazards (all when empty).
    pub only: Vec<String>,
    /// The wire spoken, which picks the hazards.
    pub era: crate::settings::Era,
    /// The whole probe's time bound.
    pub timeout: Duration,
    /// One response's time bound.
    pub request_timeout: Duration,
    /// What the hazard tests' real-time windows are multiplied by.
    pub time_scale: u32,
    /// Most requests sent.
    pub max_requests: u32,
    /// Bounds on what the probe reads.
    pub limits: ReadLimits,
    /// Probe a non-loopback address.
    pub allow_remote: bool,
}

/// Bounds on what the probe reads from the server (the `--max-*-bytes`
/// and `--max-events` flags).
#[derive(Clone, Copy, Debug)]
pub struct ReadLimits {
    /// One response head.
    pub head_bytes: usize,
    /// One response body (JSON, or a whole SSE stream).
    pub body_bytes: u64,
    /// One SSE line or event.
    pub event_bytes: usize,
    /// SSE events on one response.
    pub events: u64,
    /// Everything read, in all.
    pub total_bytes: u64,
}

/// What the probe found.
#[derive(Debug)]
pub struct Report {
    /// The endpoint probed.
    pub target: String,
    /// How executions were counted.
    pub counting: String,
    /// The profile.
    pub profile: Profile,
    /// One finding per hazard tried, in [`HAZARDS`] order.
    pub findings: Vec<Finding>,
    /// The request or time budget ran out before every hazard was tried.
    pub budget_spent: bool,
    /// The probe stopped at a limit or a remote URL: the line saying which
    /// and the flag that allows it.
    pub stopped: Option<String>,
}

impl Report {
    /// Whether any hazard is present (exit 1).
    pub fn any_present(&self) -> bool {
        self.findings.iter().any(|f| f.verdict == Verdict::Present)
    }

    fn tally(&self) -> String {
        let n = |v| self.findings.iter().filter(|f| f.verdict == v).count();
        format!(
            "{} present, {} absent, {} untestable",
            n(Verdict::Present),
            n(Verdict::Absent),
            n(Verdict::Untestable)
        )
    }

    /// The report in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => {
                let mut s = serde_json::to_string_pretty(&self.findings).unwrap_or_default();
                s.push('\n');
                s
            }
            Format::Text => {
                let mut s = format!(
                    "probe {} ({}, profile {}): {}\n",
                    self.target,
                    self.counting,
                    profile_name(self.profile),
                    self.tally()
                );
                for f in &self.findings {
                    let _ = writeln!(s, "{:<10} {:<24} {}", f.verdict.as_str(), f.hazard, f.title);
                    let _ = writeln!(s, "{:<10} {}", "", f.evidence);
                }
                s
            }
            Format::Markdown => {
                let mut s = format!(
                    "# Probe of {}\n\nCounting: {}. Profile: {}. {}.\n\n| hazard | verdict | evidence |\n|---|---|---|\n",
                    self.target,
                    self.counting,
                    profile_name(self.profile),
                    self.tally()
                );
                for f in &self.findings {
                    let _ = writeln!(
                        s,
                        "| {} (`{}`) | **{}** | {} |",
                        f.title,
                        f.hazard,
                        f.verdict.as_str(),
                        f.evidence.replace('|', "\\|")
                    );
                }
                s.push_str("\n## Rules\n\n");
                for h in HAZARDS
                    .iter()
                    .chain(hazards::HAZARDS_2026)
                    .filter(|h| self.findings.iter().any(|f| f.hazard == h.name))
                {
                    let _ = writeln!(s, "- `{}`: {}", h.name, h.rule);
                }
                s
            }
        }
    }
}

fn profile_name(p: Profile) -> &'static str {
    match p {
        Profile::Plain => "plain",
        Profile::Keys => "keys",
    }
}

/// Why the probe could not run (exit 3): one line naming the input and
/// the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The options as checked before anything is sent: the two endpoints,
/// the extra headers and the counter tool's arguments.
struct Checked {
    target: Target,
    legacy: Target,
    extra: HeaderMap,
    tool_args: serde_json::Value,
}

/// Checks the options and runs every chosen hazard against the server.
pub fn run(opts: &Options) -> Result<Report, UsageError> {
    let checked = check(opts)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    let report = local.block_on(&rt, probe(opts, checked));
    // Nothing may outlive the probe: not a name lookup still blocking a
    // thread, nor a connection task.
    drop(local);
    rt.shutdown_background();
    report
}

/// What the options say, checked without touching the network: one line
/// naming the flag and the fix.
fn check(opts: &Options) -> Result<Checked, UsageError> {
    let target = Target::parse(&opts.url, "--url").map_err(UsageError)?;
    let legacy = match &opts.legacy_url {
        Some(u) => Target::parse(u, "--legacy-url").map_err(UsageError)?,
        None => target.with_path("/sse"),
    };
    let mut extra = HeaderMap::new();
    for h in &opts.headers {
        let (name, value) = peer::parse_header(h).map_err(UsageError)?;
        extra.append(name, value);
    }
    let hazards = hazards::of(opts.era);
    for name in &opts.only {
        if !hazards.iter().any(|h| h.name == name) {
            let known: Vec<_> = hazards.iter().map(|h| h.name).collect();
            return Err(UsageError(format!(
                "--only {name:?} is no hazard of the {} wire (known: {})",
                opts.era.as_str(),
                known.join(", ")
            )));
        }
    }
    let tool_args = match &opts.tool_args {
        None => serde_json::json!({}),
        Some(a) => match serde_json::from_str::<serde_json::Value>(a) {
            Ok(v) if v.is_object() => v,
            _ => {
                return Err(UsageError(format!(
                    "--tool-args {a:?} is not a JSON object: give e.g. '{{\"name\":\"x\"}}'"
                )))
            }
        },
    };
    Ok(Checked {
        target,
        legacy,
        extra,
        tool_args,
    })
}

/// The probe itself, on the runtime: both endpoints resolved (and held
/// to loopback), one session to read the tool list, then each chosen
/// hazard's test in turn.
async fn probe(opts: &Options, checked: Checked) -> Result<Report, UsageError> {
    let Checked {
        target,
        legacy,
        extra,
        tool_args,
    } = checked;
    for t in [&target, &legacy] {
        let resolved =
            tokio::time::timeout(opts.request_timeout, target::resolve(t, opts.allow_remote));
        match resolved.await {
            Ok(Ok(_)) => {}
            Ok(Err(Refused::Unresolved(e) | Refused::Remote(e))) => return Err(UsageError(e)),
            Err(_) => {
                return Err(UsageError(format!(
                    "{} host {:?} did not resolve within --request-timeout-ms",
                    t.from, t.host
                )))
            }
        }
    }
    let peer = Peer::new(target.clone(), extra, bounds(opts));
    let peer = match opts.era {
        crate::settings::Era::Y2025 => peer,
        crate::settings::Era::Y2026 => peer.speaking_2026(),
    };
    let counter = counter(opts, &peer, &target, tool_args).await?;
    let counting = match &counter {
        Counter::Ledger => "executions counted with ledger_append/ledger_read".to_string(),
        Counter::Tool { name, .. } => {
            format!("executions counted with the counter tool {name}")
        }
        Counter::None => "no counting tool: only what a client sees".to_string(),
    };
    let ctx = Ctx {
        peer: &peer,
        counter,
        keys: opts.profile == Profile::Keys,
        legacy,
        wait: opts.request_timeout,
        scale: opts.time_scale,
    };
    let mut findings = Vec::new();
    for h in hazards::of(opts.era)
        .iter()
        .filter(|h| opts.only.is_empty() || opts.only.iter().any(|o| o == h.name))
    {
        findings.push(ctx.run(h).await);
    }
    Ok(Report {
        target: target.to_string(),
        counting,
        profile: opts.profile,
        findings,
        // A read cut short by the probe's end may have judged too soon.
        budget_spent: peer.spent() || peer.out_of_time(),
        stopped: peer.stopped(),
    })
}

/// The peer's bounds: the probe's deadline from now, and every read
/// bounded by `--max-*`.
fn bounds(opts: &Options) -> Bounds {
    let l = opts.limits;
    Bounds {
        request_timeout: opts.request_timeout,
        max_requests: opts.max_requests,
        deadline: tokio::time::Instant::now() + opts.timeout,
        limits: Limits {
            head_bytes: Some(l.head_bytes),
            body_bytes: Some(l.body_bytes),
            event_bytes: Some(l.event_bytes),
            events: Some(l.events),
            budget: Some(Budget::new(l.total_bytes)),
        },
        allow_remote: opts.allow_remote,
    }
}

/// How executions will be counted: `--tool` if the server lists it, else
/// the ledger tools if it lists both, else not at all. Reading the list is
/// the first contact, so a server that cannot be reached is told here.
async fn counter(
    opts: &Options,
    peer: &Peer,
    target: &Target,
    tool_args: serde_json::Value,
) -> Result<Counter, UsageError> {
    let unreachable = |f: Failure| {
        let fix = match (&f, peer.stopped()) {
            (_, Some(line)) => return UsageError(format!("{target}: {line}")),
            (Failure::Budget, _) => "raise --timeout or --max-requests",
            (Failure::Timeout, _) => "raise --request-timeout-ms for a slow server, or fix --url",
            (Failure::Redirected(_), _) => {
                "point --url at the endpoint itself (probe follows no redirect)"
            }
            _ => "start the server, or fix --url (and --header for a server that needs one)",
        };
        UsageError(format!("{target}: {f}: {fix}"))
    };
    let session = peer.initialize().await.map_err(unreachable)?;
    let tools = peer.tool_names(&session).await.map_err(unreachable)?;
    peer.end(&session).await;
    let has = |t: &str| tools.iter().any(|n| n == t);
    Ok(match &opts.tool {
        Some(name) if !has(name) => {
            return Err(UsageError(format!(
                "--tool {name:?}: {target} lists no such tool (it lists: {})",
                if tools.is_empty() {
                    "none".to_string()
                } else {
                    tools.join(", ")
                }
            )))
        }
        Some(name) => Counter::Tool {
            name: name.clone(),
            args: tool_args,
        },
        None if has(crate::protocol::mcp::LEDGER_APPEND)
            && has(crate::protocol::mcp::LEDGER_READ) =>
        {
            Counter::Ledger
        }
        None => Counter::None,
    })
}

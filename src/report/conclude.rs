//! The parts of a report that conclude: a verdict per scenario × arm with
//! its reason, a glossary, each scenario's description, the provenance
//! block, and every failing run with the command that reproduces it.

use super::matrix::{arm_rank, profile_rank, profiles};
use super::{causes_line, columns};
use crate::run::{self, RunReport};
use crate::sut::Arm;
use crate::sweep::{Aggregate, Summary};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How one scenario × arm (× client profile) came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `pass`, `degraded`, `fails` or `na`: the CSS class of its cell.
    pub class: &'static str,
    /// The verdict, e.g. `fails: 12 failed ops`.
    pub label: String,
    /// One line: which expectation failed, which cause dominates.
    pub reason: String,
}

/// The verdict of one aggregate, reading its runs for the expectations
/// that failed.
pub fn verdict(s: &Summary, a: &Aggregate) -> Verdict {
    let m = &a.metrics;
    if a.not_applicable() {
        return Verdict {
            class: "na",
            label: "not applicable".into(),
            reason: format!(
                "the arm has no legacy HTTP+SSE transport: {} legacy clients not run",
                a.not_applicable_clients
            ),
        };
    }
    let runs: Vec<&RunReport> = s
        .runs
        .iter()
        .filter(|r| r.scenario == a.scenario && r.server == a.server && r.clients == a.clients)
        .collect();
    let mut parts = Vec::new();
    if a.failed_runs > 0 {
        parts.push(broken_expectation(&a.server, &runs, a.runs));
    } else if m.ops_failed > 0 {
        parts.push(format!(
            "expected: no run broke the scenario's expectations for `{}` ({} runs), which do not forbid these failures",
            a.server, a.runs
        ));
    }
    if m.ops_failed > 0 {
        parts.push(dominant_cause(m));
    }
    if m.ops_degraded > 0 {
        parts.push(format!(
            "{} ops degraded (they missed only events the server announced as lost)",
            m.ops_degraded
        ));
    }
    let (class, label) = if m.ops_failed > 0 {
        ("fails", format!("fails: {} failed ops", m.ops_failed))
    } else if a.failed_runs > 0 {
        ("fails", "fails expectations".to_string())
    } else if m.ops_degraded > 0 {
        ("degraded", format!("degraded: {} ops", m.ops_degraded))
    } else {
        parts.push(format!(
            "all {} operations ok in every run; expectations hold",
            m.operations
        ));
        ("pass", "pass".to_string())
    };
    Verdict {
        class,
        label,
        reason: parts.join("; "),
    }
}

/// The expectation most runs broke, as the lowest seed's run says it,
/// with how many runs broke it.
fn broken_expectation(arm: &str, runs: &[&RunReport], total: u64) -> String {
    // Metric name (the text before ` = `) -> (runs, first message).
    let mut by_metric: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    for r in runs {
        let mut seen: Vec<&str> = Vec::new();
        for f in &r.failed_expectations {
            let metric = f.split(" = ").next().unwrap_or(f);
            if seen.contains(&metric) {
                continue;
            }
            seen.push(metric);
            by_metric.entry(metric).or_insert((0, f)).0 += 1;
        }
        if !r.clients_finished && r.failed_expectations.is_empty() {
            by_metric
                .entry("clients still running at the end")
                .or_insert((0, "clients still running at the end"))
                .0 += 1;
        }
    }
    let mut v: Vec<(&str, (u64, &str))> = by_metric.into_iter().collect();
    v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    let failing = runs.iter().filter(|r| r.failed()).count();
    match v.first() {
        Some((_, (n, msg))) => {
            let more = if v.len() > 1 {
                format!(" (+{} other expectations)", v.len() - 1)
            } else {
                String::new()
            };
            format!(
                "breaks `[expect.{arm}]` in {failing} of {total} runs: {msg} (in {n} runs){more}"
            )
        }
        None => format!("breaks `[expect.{arm}]` in {failing} of {total} runs"),
    }
}

/// The cause with the most failed operations, and its share.
fn dominant_cause(m: &crate::oracle::Metrics) -> String {
    let mut v: Vec<(&String, &u64)> = m.failures_by_cause.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    match v.first() {
        Some((c, n)) if v.len() == 1 => format!("all {n} by cause `{c}`"),
        Some((c, n)) => format!(
            "mostly `{c}` ({n} of {}; all: {})",
            m.ops_failed,
            causes_line(m)
        ),
        None => "no cause recorded".into(),
    }
}

/// The verdict table: one row per scenario × client profile × arm, in
/// report order.
pub fn verdicts_markdown(s: &Summary) -> String {
    let many = profiles(s).len() > 1;
    let mut out = String::from(
        "## Verdicts\n\nOne line per scenario and arm: **pass** (every operation ok, expectations hold), **degraded** (no failed operation, some missed only announced events), **fails** (operations failed, or the run broke the scenario's `[expect.ARM]` table), **not applicable** (the arm cannot serve the scenario's clients). Failing the baseline arms is often what a scenario expects: the reason says whether the expectations held. Totals over all seeds.\n\n",
    );
    out.push_str(if many {
        "| scenario | clients | arm | verdict | why |\n|---|---|---|---|---|\n"
    } else {
        "| scenario | arm | verdict | why |\n|---|---|---|---|\n"
    });
    for sc in super::scenarios(s) {
        for a in columns(s, sc) {
            let v = verdict(s, a);
            if many {
                let _ = writeln!(
                    out,
                    "| {sc} | {} | {} | {} | {} |",
                    a.clients, a.server, v.label, v.reason
                );
            } else {
                let _ = writeln!(out, "| {sc} | {} | {} | {} |", a.server, v.label, v.reason);
            }
        }
    }
    out.push('\n');
    out
}

/// What every term in the report means.
pub const GLOSSARY: &str = "## Glossary

**Arms** (the server under test):

- `unguarded`: the baseline, behaving as today's SDK servers do: no resumption guard, `Idempotency-Key` ignored, evicted events skipped without a word.
- `keys`: `unguarded` plus `Idempotency-Key` honoured per principal: a retried call with the same key gets the first execution's result instead of running again.
- `guarded`: `keys` plus the session guard: Rule M decides whether a POST may run while a dropped stream is still owed events, Rule T handles a session used across transports, evicted events are announced with an `event: gap`, finished streams retire.
- `cancel`: `unguarded` plus: a connection close the server sees cancels the request still running; resume GETs are refused (405).
- `rmcp`: the official Rust MCP SDK's server as shipped, judged from the outside only.
- `rmcp-es`: `rmcp` with an in-memory event store, so a resume replays the stream up to its result.

**Client profiles**: `scenario` (clients as the scenario file writes them), `plain` (no key, no cursor), `keys` (an `Idempotency-Key` on every non-idempotent call), `cursors` (the last event ids seen go with every POST), `keys+cursors` (both).

**Outcomes** (each operation, i.e. one logical tool call across all its retries, gets exactly one):

- **ok**: its result was handled and it missed nothing.
- **degraded**: not failed, but it missed events the server announced as lost (a gap named them, or the result came from the key table marked as a replay): the client knows.
- **failed**: it ran more than once (duplicated), missed an event nobody announced (silent loss), had its result handled after a later call's (out of order), got a result no execution of its produced (wrong result), or never got a result (lost). It counts once, under one primary cause.

**Events and costs**:

- **orphaned event**: an event the server emitted for an operation whose result was handled, that no client ever received.
- **silent loss**: an event of the handled execution that never arrived and was never announced: the client cannot know it is missing. Makes the operation failed.
- **announced loss**: an event that never arrived but was announced (gap event, or a key-table replay): makes the operation degraded, not failed.
- **duplicate side effect**: an extra execution of a non-idempotent tool that took its effect (counted per operation as executions − 1).
- **migration**: an operation interrupted by a fault (drop, partition, restart, switch) that still got its result, by resuming its stream or retrying. **Migration latency**: simulated time from the interrupting fault to the handled result.
- **extra executions**: executions beyond each operation's first, whatever they committed; **replayed events**: events written again from the store on resumes.

**Causes** (why a failed operation failed; the first that applies, in this order):

- `restart_mid_execution`: a server restart hit while the tool was running: its effect was taken, no result came, and the re-issue ran it again (or nothing finished it).
- `restart_lost_session`: a server restart hit after the result was produced but before the client got it: the session vanished (404) and the client re-issued.
- `eviction`: events owed to the client left the server's bounded event store before it came back for them (a 410, or a resume that skipped a hole).
- `transport_reissue`: the client switched transport, was refused (404) on the new one, re-initialized and re-issued while the first execution ran or had run.
- `lost_response_head`: a POST reached the server and ran, but the client never saw its response begin, so it sent it again.
- `fin_race`: the connection broke just as the server finished the stream: the server saw a finished stream, the client a broken one, and retried.
- `retry_without_key`: the client re-sent the call without an `Idempotency-Key` after losing its stream, and the server ran it again.
- `key_not_honored`: every attempt carried the same key and the server ran the call again anyway.
- `replay_live_interleave`: a result came back in a resume's replay after a later call's result arrived live: handled out of order.
- `gave_up`: the client used up its attempts.
- `run_ended`: the run (faults, then the heal phase) ended with the call unresolved.

";

/// Each scenario's description, from the provenance.
pub fn scenarios_markdown(s: &Summary) -> String {
    let mut out = String::from("## Scenarios\n\n");
    for sc in super::scenarios(s) {
        let what = s
            .provenance
            .scenarios
            .get(sc)
            .map(|i| i.description.as_str())
            .filter(|d| !d.is_empty())
            .unwrap_or("(no description recorded in this summary)");
        let _ = writeln!(out, "- `{sc}`: {what}");
    }
    out.push('\n');
    out
}

/// The provenance block: how to produce this summary again.
pub fn provenance_markdown(s: &Summary) -> String {
    let p = &s.provenance;
    let mut out = String::from("## Provenance\n\n");
    if p.command.is_empty() {
        out.push_str("This summary records no provenance (it was written by an older mcp-chaos, or merged from shards).\n\n");
        return out;
    }
    let _ = writeln!(out, "- command: `{}`", p.command.join(" "));
    let _ = writeln!(out, "- seeds: `{}` (end exclusive)", p.seeds);
    let _ = writeln!(out, "- arms: {}", p.arms.join(", "));
    let _ = writeln!(out, "- client profiles: {}", p.clients.join(", "));
    let _ = writeln!(out, "- mcp-chaos version: {}", p.version);
    let _ = writeln!(out, "- git commit: `{}`", p.commit);
    out.push_str("\n| scenario | file | SHA-256 |\n|---|---|---|\n");
    for (name, i) in &p.scenarios {
        let _ = writeln!(out, "| {name} | `{}` | `{}` |", i.file, i.sha256);
    }
    out.push('\n');
    out
}

/// Most failing runs listed one per row; the rest are counted.
const FAILING_SHOWN: usize = 200;

/// Every run that broke its expectations: what broke and the command that
/// reproduces it.
pub fn failing_markdown(s: &Summary) -> String {
    let mut failing: Vec<&RunReport> = s.runs.iter().filter(|r| r.failed()).collect();
    failing.sort_by_key(|r| {
        (
            r.scenario.as_str(),
            profile_rank(&r.clients),
            arm_rank(&r.server),
            r.seed,
        )
    });
    let mut out = String::from("## Failing runs\n\n");
    if failing.is_empty() {
        out.push_str("No run broke its scenario's expectations.\n\n");
        return out;
    }
    let _ = writeln!(
        out,
        "{} runs broke their scenario's expectations. Each command re-runs one with its full fault plan and writes its trace; `mcp-chaos explain --trace FILE --op TAG` then tells one operation's story.\n",
        failing.len()
    );
    out.push_str("| scenario | arm | clients | seed | verdict | failed expectations | reproduce |\n|---|---|---|---|---|---|---|\n");
    for r in failing.iter().take(FAILING_SHOWN) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | `{}` |",
            r.scenario,
            r.server,
            r.clients,
            r.seed,
            r.verdict,
            r.failed_expectations.join("; ").replace('|', "\\|"),
            repro(s, r)
        );
    }
    if failing.len() > FAILING_SHOWN {
        let _ = writeln!(
            out,
            "\n{} more failing runs are in summary.json (`runs[].failed_expectations`).",
            failing.len() - FAILING_SHOWN
        );
    }
    out.push('\n');
    out
}

/// The command that reproduces run `r`: its scenario file from the
/// provenance (else `sims/NAME.toml`), its arm, profile and overrides.
pub fn repro(s: &Summary, r: &RunReport) -> String {
    let path = super::repro::scenario_path(s, r);
    let opts = r.options();
    match r.server.parse::<Arm>() {
        Ok(arm) => run::repro_command(&path, r.seed, arm, &opts),
        Err(_) => format!(
            "cargo run --release -- repro --scenario {path} --seed {} --server {}{}",
            r.seed,
            r.server,
            opts.flags()
        ),
    }
}

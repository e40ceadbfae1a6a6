//! The parts of a report that conclude, after the recommendation: one
//! line per scenario (its expectations, the baseline's and the
//! recommendation's rates), a glossary, each scenario's description, the
//! provenance block, and every run whose expectations broke with the
//! command that reproduces it.

use super::commands::repro;
use super::matrix::{arm_rank, profile_rank};
use super::numbers::{per_1000, rate_text, thousands};
use super::recommend::Recommendation;
use super::{causes_line, columns};
use crate::hosts::sut::ArmEntry;
use crate::oracle::causes;
use crate::run::RunReport;
use crate::sweep::{Aggregate, Summary};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One scenario's line: whether its expectations hold, the baseline's
/// and the recommendation's rates, the configuration that does best on it,
/// and what remains under the recommendation.
fn scenario_line(s: &Summary, sc: &str, rec: &Recommendation) -> String {
    let cols = columns(s, sc);
    // A configuration's aggregate here: its arm, profile and, on a
    // `--deployments` axis, the deployment its overrides name.
    let best_of = |server: &str, clients: &str, settings: &[String]| {
        let label = s
            .runs
            .iter()
            .find(|r| {
                r.scenario == sc
                    && r.server == server
                    && r.clients == clients
                    && r.overrides == settings
            })
            .map_or("", |r| r.deployment.as_str());
        cols.iter()
            .find(|a| a.server == server && a.clients == clients && a.deployment == label)
            .copied()
    };
    let runs: u64 = cols.iter().map(|a| a.runs).sum();
    let broken: Vec<&&Aggregate> = cols.iter().filter(|a| a.failed_runs > 0).collect();
    let expectations = if broken.is_empty() {
        super::numbers::held_in_all(runs)
    } else {
        let mut parts = Vec::new();
        for a in &broken {
            let rs: Vec<&RunReport> = s
                .runs
                .iter()
                .filter(|r| {
                    r.scenario == a.scenario
                        && r.server == a.server
                        && r.clients == a.clients
                        && r.deployment == a.deployment
                })
                .collect();
            parts.push(broken_expectation(&a.server, &rs, a.runs));
        }
        format!(
            "**break** in {} of {runs} runs: {}",
            broken.iter().map(|a| a.failed_runs).sum::<u64>(),
            parts.join("; ")
        )
    };
    let rate = |a: Option<&Aggregate>| match a {
        None => "–".to_string(),
        Some(a) if a.not_applicable() => "not applicable".to_string(),
        Some(a) => format!(
            "{} ({} failed{})",
            rate_text(per_1000(a.metrics.ops_failed, a.metrics.operations)),
            thousands(a.metrics.ops_failed),
            if a.metrics.ops_degraded > 0 {
                format!(", {} degraded", thousands(a.metrics.ops_degraded))
            } else {
                String::new()
            }
        ),
    };
    let base = rec
        .baseline()
        .and_then(|b| best_of(&b.server, &b.clients, &b.settings));
    let settings = rec.ranked.first().map_or(&[][..], |b| &b.settings[..]);
    let chosen = best_of(&rec.server, &rec.clients, settings);
    // The configurations with the scenario's lowest rate (ties all named).
    let applicable: Vec<&&Aggregate> = cols
        .iter()
        .filter(|a| !a.not_applicable() && a.metrics.operations > 0)
        .collect();
    let key = |a: &Aggregate| {
        (
            u128::from(a.metrics.ops_failed),
            u128::from(a.metrics.operations),
        )
    };
    let lowest = applicable
        .iter()
        .map(|a| key(a))
        .min_by(|x, y| (x.0 * y.1).cmp(&(y.0 * x.1)));
    let best: Vec<String> = match lowest {
        Some(l) => applicable
            .iter()
            .filter(|a| key(a).0 * l.1 == l.0 * key(a).1)
            .map(|a| super::heading(a))
            .collect(),
        None => Vec::new(),
    };
    let remains = chosen.map_or("–".to_string(), |a| {
        if a.metrics.ops_failed == 0 {
            "nothing".to_string()
        } else {
            causes_line(&a.metrics)
        }
    });
    let ops = cols
        .first()
        .map_or(0, |a| a.metrics.operations / a.runs.max(1));
    format!(
        "| {sc} | {} | {expectations} | {} | {} | {} | {remains} |",
        thousands(ops),
        rate(base),
        rate(chosen),
        if best.is_empty() {
            "–".to_string()
        } else {
            best.join(", ")
        },
    )
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

/// One line per scenario: whether its expectations hold, and failed
/// operations per 1,000 under the baseline and the recommendation.
pub fn per_scenario_markdown(s: &Summary) -> String {
    let Some(rec) = super::recommend::recommend(s) else {
        return String::new();
    };
    let base = rec
        .baseline()
        .map_or("unguarded (not run)".to_string(), |b| {
            super::heading_of(&b.server, &b.clients)
        });
    let chosen = super::heading_of(&rec.server, &rec.clients);
    let mut out = format!(
        "## Per scenario\n\nOne line per scenario: its operations per run; whether its expectations (the scenario's `[expect]` tables, what each arm is expected to do) hold; failed operations per 1,000 under the baseline `{base}` and the recommendation `{chosen}` (totals over all seeds in parentheses); which configuration fails the fewest there; and what remains under the recommendation, by cause.\n\n| scenario | operations per run | expectations | {base} per 1,000 | {chosen} per 1,000 | fewest failed | remains under {chosen} |\n|---|---|---|---|---|---|---|\n"
    );
    for sc in super::scenarios(s) {
        out.push_str(&scenario_line(s, sc, &rec));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// What every term in the report means: the arms, the causes and the
/// fault kinds from their registries ([`ArmEntry`],
/// [`causes::PRECEDENCE`], [`crate::history::FaultKind::ALL`]), the rest
/// as written here.
pub fn glossary() -> String {
    let mut out = String::from(GLOSSARY_HEAD);
    for e in ArmEntry::in_report_order() {
        let _ = writeln!(out, "- `{}`: {}", e.name, e.glossary);
    }
    out.push_str(GLOSSARY_TERMS);
    for c in causes::PRECEDENCE {
        let _ = writeln!(out, "- `{}`: {}", c.as_str(), c.glossary());
    }
    out.push_str(
        "\n**Fault kinds** (docs/faults.md: what each does on the wire, the cause it \
         produces, its minimal scenario):\n\n",
    );
    for k in crate::history::FaultKind::ALL {
        let _ = writeln!(out, "- `{}`: {}", k.name(), k.description());
    }
    out.push('\n');
    out
}

const GLOSSARY_HEAD: &str = "## Glossary

**Arms** (the server under test):

";

/// The glossary between the arms and the causes.
const GLOSSARY_TERMS: &str = "
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
    // An argument a shell would split (`--deployments 'a;b'`) is quoted.
    let shell = |a: &String| {
        if a.contains([';', ' ', '\'', '"', '*', '&', '|', '$']) {
            format!("'{}'", a.replace('\'', "'\\''"))
        } else {
            a.clone()
        }
    };
    let command: Vec<String> = p.command.iter().map(shell).collect();
    let _ = writeln!(out, "- command: `{}`", command.join(" "));
    let _ = writeln!(out, "- seeds: `{}` (end exclusive)", p.seeds);
    let _ = writeln!(out, "- arms: {}", p.arms.join(", "));
    let _ = writeln!(out, "- client profiles: {}", p.clients.join(", "));
    if !p.deployments.is_empty() {
        let _ = writeln!(out, "- deployments: {}", p.deployments.join("; "));
    }
    let _ = writeln!(out, "- mcp-chaos version: {}", p.version);
    if p.commit.is_empty() {
        out.push_str("- git commit: in `compare-meta.json` beside this report, with the command as typed and the wall-clock times (kept out of these files, so running the comparison again changes none of them)\n");
    } else {
        let _ = writeln!(out, "- git commit: `{}`", p.commit);
    }
    out.push_str("\n| scenario | file | SHA-256 |\n|---|---|---|\n");
    for (name, i) in &p.scenarios {
        let _ = writeln!(out, "| {name} | `{}` | `{}` |", i.file, i.sha256);
    }
    out.push('\n');
    out
}

/// Most failing runs listed one per row; the rest are counted.
const FAILING_SHOWN: usize = 200;

/// Every run whose expectations broke: what broke and the command that
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
    let mut out = String::from("## Runs whose expectations broke\n\n");
    if failing.is_empty() {
        out.push_str("Every run passes: the expectations of every scenario hold in every run. (Failed operations are counted above; an expectation says which of them an arm is expected to have.)\n\n");
        return out;
    }
    let _ = writeln!(
        out,
        "In {} a scenario's expectations broke. Each command re-runs one with its full fault plan and writes its trace; `mcp-chaos explain --trace FILE --op TAG` then tells one operation's story.\n",
        super::numbers::counted(failing.len() as u64, "run")
    );
    out.push_str("| scenario | arm | clients | seed | broken | expectations that broke | reproduce |\n|---|---|---|---|---|---|---|\n");
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

//! The report's events section (the Events extension, docs/events.md):
//! when a comparison's scenarios read events, what each configuration
//! delivered, per scenario, as rates per 1,000 deliveries, and the
//! configuration that failed the fewest deliveries. Absent otherwise, so
//! a comparison without events writes what it wrote before.

use super::heading;
use super::numbers::{self, rate_text, thousands};
use crate::oracle::causes::DELIVERY_CAUSES;
use crate::sweep::{Aggregate, Summary};
use std::collections::BTreeMap;
use std::fmt::Write;

fn per_1000(n: u64, of: u64) -> String {
    match of {
        0 => "–".into(),
        _ => rate_text(numbers::per_1000(n, of)),
    }
}

/// The delivery causes of `a`, most first: each delivery cause but
/// `run_ended` as counted, and `run_ended` as what of the failed
/// deliveries the others leave (operations may end with the run too).
fn causes(a: &Aggregate) -> String {
    let m = &a.metrics;
    let mut named: Vec<(&str, u64)> = DELIVERY_CAUSES
        .iter()
        .map(|c| c.as_str())
        .filter(|&c| c != "run_ended")
        .filter_map(|c| m.failures_by_cause.get(c).map(|&n| (c, n)))
        .collect();
    let rest = m.deliveries_failed
        - named
            .iter()
            .map(|c| c.1)
            .sum::<u64>()
            .min(m.deliveries_failed);
    if rest > 0 {
        named.push(("run_ended", rest));
    }
    named.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    match named.is_empty() {
        true => "–".into(),
        false => named
            .iter()
            .map(|(c, n)| format!("`{c}` {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The section, or nothing when no run read events: the answer, the
/// decision table ([`super::events_table`], candidates `beside` it
/// too), then per scenario and configuration.
pub fn markdown(s: &Summary, beside: &super::Beside) -> String {
    let with: Vec<&Aggregate> = s
        .aggregates
        .iter()
        .filter(|a| a.metrics.deliveries > 0)
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Events: deliveries\n\nEach occurrence owed to a reader is a delivery (docs/events.md): ok (applied once), announced lost (a `truncated` or `gap` told the reader), or failed, under one cause. Per scenario and configuration, over all seeds; rates per 1,000 deliveries.\n\n",
    );
    // Per configuration over every scenario: the answer.
    let mut by: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for a in &with {
        let t = by.entry(heading(a)).or_default();
        t.0 += a.metrics.deliveries;
        t.1 += a.metrics.deliveries_failed;
        t.2 += a.metrics.deliveries_announced_lost;
    }
    let rate = |t: &(u64, u64, u64)| numbers::per_1000(t.1, t.0);
    let fewest = by.values().map(rate).fold(f64::INFINITY, f64::min);
    let tied: Vec<(&String, &(u64, u64, u64))> =
        by.iter().filter(|(_, t)| rate(t) == fewest).collect();
    let (n, failed, announced) = tied
        .iter()
        .fold((0, 0, 0), |a, (_, t)| (a.0 + t.0, a.1 + t.1, a.2 + t.2));
    let rates = format!(
        "{} per 1,000 ({} of {} failed; {} per 1,000 lost and announced)",
        per_1000(failed, n),
        thousands(failed),
        thousands(n),
        per_1000(announced, n),
    );
    match tied.as_slice() {
        [(name, _)] => {
            let _ = write!(
                out,
                "**For events, deploy `{name}`**: of the {} run, it fails the fewest deliveries: {rates}.\n\n",
                numbers::counted(by.len() as u64, "configuration"),
            );
        }
        _ => {
            let names: Vec<String> = tied.iter().map(|(k, _)| format!("`{k}`")).collect();
            let _ = write!(
                out,
                "**For events, the arm is not what decides**: {} fail the same fewest deliveries, {rates}. The arms differ in how they answer tool calls; events are delivered alike by each, and what changes them is the server's event settings (`events_sender`, `events_retention`, `events_truncation`, the retry schedule) and the readers' (`events`, `[clients.receiver]`): sims/README.md.\n\n",
                names.join(", "),
            );
        }
    }
    out.push_str(&super::events_table::markdown(s, beside));
    out.push_str("| scenario | configuration | deliveries | ok | announced lost per 1,000 | failed per 1,000 | failed, by cause | latency p50 / p99 (over all seeds) |\n|---|---|---|---|---|---|---|---|\n");
    for a in &with {
        let m = &a.metrics;
        let l = &m.delivery_latency_us;
        let latency = match l.count {
            0 => "–".into(),
            _ => format!("{} / {}", super::ms(l.p50), super::ms(l.p99)),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {latency} |",
            a.scenario,
            heading(a),
            thousands(m.deliveries),
            thousands(m.deliveries_ok),
            per_1000(m.deliveries_announced_lost, m.deliveries),
            per_1000(m.deliveries_failed, m.deliveries),
            causes(a),
        );
    }
    out.push('\n');
    out
}

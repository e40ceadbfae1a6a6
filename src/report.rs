//! Reports of a sweep: Markdown for reviews, JUnit XML for CI systems.

use crate::oracle::Metrics;
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// The metrics reports show, in order: operations by outcome, then
/// event counts and costs. (Failed operations by cause follow them.)
pub const SHOWN: &[&str] = &[
    "operations",
    "ops_ok",
    "ops_degraded",
    "ops_failed",
    "ops_duplicated",
    "ops_silent_loss",
    "ops_announced_loss",
    "ops_out_of_order",
    "ops_wrong_result",
    "ops_lost",
    "duplicate_side_effects",
    "orphaned_events",
    "silent_losses",
    "announced_losses",
    "truncated_responses",
    "order_violations",
    "capability_violations",
    "foreign_cursor_replays",
    "reinitializations",
    "rejections",
    "guard_bugs",
];

/// `failures_by_cause` as one line: `cause n, cause n` (most first).
pub fn causes_line(m: &Metrics) -> String {
    let mut v: Vec<(&String, &u64)> = m.failures_by_cause.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if v.is_empty() {
        return "–".into();
    }
    v.iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn find<'a>(s: &'a Summary, scenario: &str, server: &str) -> Option<&'a Aggregate> {
    // The clients as written, else the baseline profile, else any.
    let of = |a: &&Aggregate| a.scenario == scenario && a.server == server;
    let with = |clients: &str| {
        s.aggregates
            .iter()
            .filter(of)
            .find(|a| a.clients == clients)
    };
    with(crate::run::AS_WRITTEN)
        .or_else(|| with(crate::run::Profile::Plain.as_str()))
        .or_else(|| s.aggregates.iter().find(of))
}

fn cell(a: Option<&Aggregate>, name: &str) -> String {
    match a.and_then(|a| a.metrics.get(name).map(|v| (v, a.runs))) {
        Some((v, runs)) => format!("{v} ({:.2}/seed)", v as f64 / runs.max(1) as f64),
        None => "–".into(),
    }
}

fn latency(m: &Metrics) -> String {
    let l = &m.migration_latency_us;
    format!(
        "{} / {} / {} / {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.max)
    )
}

fn ms(us: u64) -> String {
    if us >= 1000 {
        format!("{:.0} ms", us as f64 / 1000.0)
    } else {
        format!("{:.2} ms", us as f64 / 1000.0)
    }
}

/// The headline: per scenario, each violation metric's total for both
/// servers (what the README shows).
pub fn headline(s: &Summary) -> String {
    let mut out = String::from("| scenario | server | runs | operations | ok | degraded | failed | duplicated | silent loss | out of order | lost | failed by cause | guard bugs |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for a in &s.aggregates {
        let m = &a.metrics;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            a.scenario,
            heading(a),
            a.runs,
            m.operations,
            m.ops_ok,
            m.ops_degraded,
            m.ops_failed,
            m.ops_duplicated,
            m.ops_silent_loss,
            m.ops_out_of_order,
            m.ops_lost,
            causes_line(m),
            m.guard_bugs.map_or("–".to_string(), |b| b.to_string()),
        );
    }
    out
}

/// A column's heading: the arm, with its client profile when it is not
/// the scenario's own.
fn heading(a: &Aggregate) -> String {
    if a.clients == crate::run::AS_WRITTEN {
        a.server.clone()
    } else {
        format!("{} ({})", a.server, a.clients)
    }
}

/// One row per key any column has in a keyed metric.
fn keyed_rows(
    out: &mut String,
    cols: &[&Aggregate],
    metric: &str,
    label: &str,
    map: fn(&Metrics) -> &std::collections::BTreeMap<String, u64>,
) {
    let mut keys: Vec<&String> = cols.iter().flat_map(|a| map(&a.metrics).keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let name = format!("{metric}.{k}");
        row(out, &format!("{label}: {k}"), cols, |a| {
            cell(Some(a), &name)
        });
    }
}

/// One table row: a label, then one cell per column.
fn row(out: &mut String, label: &str, cols: &[&Aggregate], f: impl Fn(&Aggregate) -> String) {
    let _ = write!(out, "| {label} |");
    for a in cols {
        let _ = write!(out, " {} |", f(a));
    }
    out.push('\n');
}

/// The columns of one scenario: its aggregates, arms in the order of
/// `Variant::ALL`, then client profiles as written first.
fn columns<'a>(s: &'a Summary, scenario: &str) -> Vec<&'a Aggregate> {
    let arm_rank = |a: &Aggregate| {
        crate::server::Variant::ALL
            .iter()
            .position(|v| v.as_str() == a.server)
            .unwrap_or(usize::MAX)
    };
    let profile_rank = |a: &Aggregate| {
        if a.clients == crate::run::AS_WRITTEN {
            0
        } else {
            1 + crate::run::Profile::ALL
                .iter()
                .position(|p| p.as_str() == a.clients)
                .unwrap_or(usize::MAX - 1)
        }
    };
    let mut cols: Vec<&Aggregate> = s
        .aggregates
        .iter()
        .filter(|a| a.scenario == scenario)
        .collect();
    cols.sort_by_key(|a| (profile_rank(a), arm_rank(a)));
    cols
}

/// `report.md`: per scenario, the arms (and client profiles) side by side.
pub fn markdown(s: &Summary) -> String {
    let mut out = String::from("# mcp-chaos comparison\n\nTotals over all seeds (per-seed mean in parentheses). Each operation is ok, degraded (it missed only announced events) or failed; a failed operation is counted once, under its one primary cause.\n\n");
    for (sc, hz) in &s.uncovered_hazards {
        let _ = writeln!(
            out,
            "**Warning:** scenario `{sc}` declares hazards that none of its runs exercised: {}. Its fault plan tests nothing there.\n",
            hz.join(", ")
        );
    }
    let mut scenarios: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    scenarios.dedup();
    for sc in scenarios {
        let cols = columns(s, sc);
        let runs = cols.first().map_or(0, |a| a.runs);
        let _ = write!(out, "## {sc}\n\n{runs} seeds per column.\n\n| metric |");
        for a in &cols {
            let _ = write!(out, " {} |", heading(a));
        }
        let _ = writeln!(out, "\n|---|{}", "---|".repeat(cols.len()));
        for name in SHOWN {
            row(&mut out, name, &cols, |a| cell(Some(a), name));
        }
        keyed_rows(
            &mut out,
            &cols,
            "failures_by_cause",
            "failed by cause",
            |m| &m.failures_by_cause,
        );
        keyed_rows(
            &mut out,
            &cols,
            "failures_by_detail",
            "of which (server records)",
            |m| &m.failures_by_detail,
        );
        row(&mut out, "operations exposed, by hazard", &cols, |a| {
            format!("{:?}", a.metrics.hazards)
        });
        row(
            &mut out,
            "migration latency p50 / p90 / p99 / max",
            &cols,
            |a| latency(&a.metrics),
        );
        row(&mut out, "rejections by reason", &cols, |a| {
            format!("{:?}", a.metrics.rejections)
        });
        row(&mut out, "faults", &cols, |a| {
            format!(
                "planned {:?}, applied {:?}",
                a.faults.planned, a.faults.applied
            )
        });
        row(&mut out, "runs failing expectations", &cols, |a| {
            a.failed_runs.to_string()
        });
        out.push('\n');
    }
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one test case per scenario × server; a failure lists each
/// failing seed with its expectations and the command that reproduces it.
pub fn junit(s: &Summary, repro: &dyn Fn(&crate::run::RunReport) -> String) -> String {
    let failures = s.aggregates.iter().filter(|a| a.failed_runs > 0).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcp-chaos\" tests=\"{}\" failures=\"{failures}\">\n<testsuite name=\"mcp-chaos\" tests=\"{}\" failures=\"{failures}\">\n",
        s.aggregates.len(),
        s.aggregates.len()
    );
    for a in &s.aggregates {
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\"",
            xml(&a.scenario),
            xml(&a.server)
        );
        if a.failed_runs == 0 {
            out.push_str("/>\n");
            continue;
        }
        let mut text = String::new();
        for r in s
            .runs
            .iter()
            .filter(|r| r.scenario == a.scenario && r.server == a.server && r.verdict != "pass")
        {
            let _ = writeln!(
                text,
                "seed {} ({}): {}\nreproduce: {}",
                r.seed,
                r.verdict,
                r.failed_expectations.join("; "),
                repro(r)
            );
        }
        let _ = write!(
            out,
            ">\n    <failure message=\"{} of {} seeds failed\">{}</failure>\n  </testcase>\n",
            a.failed_runs,
            a.runs,
            xml(&text)
        );
    }
    out.push_str("</testsuite>\n</testsuites>\n");
    out
}

/// A representative run's timeline: fault windows and violations in time.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// What the timeline shows (scenario, seed, server).
    pub title: String,
    /// Simulated length, µs.
    pub end_us: u64,
    /// Fault windows (start, end, kind), µs.
    pub faults: Vec<(u64, u64, String)>,
    /// Instantaneous faults (client drops, switches), µs.
    pub ticks: Vec<u64>,
    /// Violations (duplicate executions), µs.
    pub violations: Vec<u64>,
}

impl Timeline {
    /// Reads fault windows and duplicate executions out of a history.
    pub fn of(title: String, h: &crate::history::History) -> Timeline {
        use crate::history::{ClientRecord, LedgerRecord, Rec, WorldRecord};
        let mut t = Timeline {
            title,
            ..Timeline::default()
        };
        let mut open: BTreeMap<u32, (u64, &'static str)> = BTreeMap::new();
        for e in h.entries().iter() {
            t.end_us = t.end_us.max(e.t_us);
            match &e.record {
                Rec::World(WorldRecord::FaultStarted { index, kind, .. }) => {
                    open.insert(*index, (e.t_us, kind));
                }
                Rec::World(WorldRecord::FaultEnded { index }) => {
                    if let Some((s, k)) = open.remove(index) {
                        t.faults.push((s, e.t_us, k.to_string()));
                    }
                }
                Rec::Client(ClientRecord::Dropped { .. } | ClientRecord::Switched { .. }) => {
                    t.ticks.push(e.t_us)
                }
                Rec::Ledger(LedgerRecord::Execution { n, .. }) if *n > 1 => {
                    t.violations.push(e.t_us)
                }
                _ => {}
            }
        }
        for (_, (s, k)) in open {
            t.faults.push((s, t.end_us, k.to_string()));
        }
        t
    }
}

use std::collections::BTreeMap;

const W: f64 = 720.0;
const H: f64 = 260.0;
const PAD: f64 = 50.0;

fn svg_open(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"11\"><title>{}</title><rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>",
        xml(title)
    )
}

/// Migration-latency CDF per server, over every run of the summary.
pub fn cdf_svg(s: &Summary) -> String {
    let mut out = svg_open("migration latency CDF per server");
    let mut series = Vec::new();
    let mut max_v: u64 = 1;
    for (server, color) in [("guarded", "#1b7837"), ("unguarded", "#c51b7d")] {
        let mut pairs: Vec<(u64, u64)> = s
            .runs
            .iter()
            .filter(|r| r.server == server)
            .flat_map(|r| r.migration_latency_hist.iter().copied())
            .collect();
        pairs.sort();
        let total: u64 = pairs.iter().map(|p| p.1).sum();
        max_v = max_v.max(pairs.last().map_or(1, |p| p.0));
        series.push((server, color, pairs, total));
    }
    let min_v = series
        .iter()
        .filter_map(|(_, _, p, _)| p.first().map(|x| x.0))
        .min()
        .unwrap_or(1)
        .max(1);
    let lo = (min_v as f64).log10().floor();
    let hi = (max_v.max(10) as f64).log10().ceil().max(lo + 1.0);
    let lx = |v: u64| {
        PAD + (((v.max(1) as f64).log10() - lo) / (hi - lo)).clamp(0.0, 1.0) * (W - 2.0 * PAD)
    };
    let ly = |q: f64| H - PAD - q * (H - 2.0 * PAD);
    let _ = write!(out, "<line x1=\"{PAD}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{}\" stroke=\"black\"/>", H - PAD, W - PAD, H - PAD, H - PAD);
    let mut decade = 10u64.pow(lo as u32);
    while decade as f64 <= 10f64.powf(hi) {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            lx(decade),
            H - PAD + 14.0,
            ms(decade)
        );
        decade *= 10;
    }
    for q in [0.0, 0.5, 0.9, 1.0] {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{q}</text>",
            PAD - 4.0,
            ly(q) + 4.0
        );
    }
    for (i, (server, color, pairs, total)) in series.iter().enumerate() {
        if *total == 0 {
            continue;
        }
        let mut acc = 0;
        let mut pts = String::new();
        for (v, n) in pairs {
            acc += n;
            let _ = write!(pts, "{:.1},{:.1} ", lx(*v), ly(acc as f64 / *total as f64));
        }
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{pts}\"/>"
        );
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{server} ({total} samples)</text>",
            W - PAD - 150.0,
            PAD + 14.0 * i as f64
        );
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">migration latency (log scale)</text></svg>",
        W / 2.0,
        H - 12.0
    );
    out
}

/// Failed operations per scenario as grouped bars (guarded, unguarded).
pub fn bars_svg(s: &Summary) -> String {
    let mut out = svg_open("failed operations per scenario");
    let corruption = |a: Option<&Aggregate>| a.map_or(0, |a| a.metrics.ops_failed);
    let mut scenarios: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    scenarios.dedup();
    let max = scenarios
        .iter()
        .flat_map(|sc| {
            [
                corruption(find(s, sc, "guarded")),
                corruption(find(s, sc, "unguarded")),
            ]
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let slot = (W - 2.0 * PAD) / scenarios.len().max(1) as f64;
    let scale =
        |v: u64| ((v as f64 + 1.0).log10() / (max as f64 + 1.0).log10()) * (H - 2.0 * PAD - 40.0);
    for (i, sc) in scenarios.iter().enumerate() {
        let x = PAD + slot * i as f64;
        for (j, (server, color)) in [("guarded", "#1b7837"), ("unguarded", "#c51b7d")]
            .iter()
            .enumerate()
        {
            let v = corruption(find(s, sc, server));
            let h = scale(v);
            let bx = x + 4.0 + j as f64 * (slot - 8.0) / 2.0;
            let _ = write!(
                out,
                "<rect x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{color}\"><title>{sc} {server}: {v}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"9\">{v}</text>",
                H - PAD - 40.0 - h,
                (slot - 8.0) / 2.0 - 2.0,
                bx + (slot - 8.0) / 4.0,
                H - PAD - 44.0 - h
            );
        }
        let _ = write!(
            out,
            "<text transform=\"translate({:.1},{}) rotate(25)\" font-size=\"9\">{}</text>",
            x + 4.0,
            H - PAD - 30.0,
            xml(sc)
        );
    }
    let _ = write!(out, "<text x=\"{PAD}\" y=\"16\">failed operations (each counted once), totals over seeds (log scale); green guarded, red unguarded</text></svg>");
    out
}

/// One run's timeline: fault windows shaded, drops and switches as ticks,
/// duplicate executions marked.
pub fn timeline_svg(t: &Timeline) -> String {
    let mut out = svg_open(&t.title);
    let x = |us: u64| PAD + (us as f64 / t.end_us.max(1) as f64) * (W - 2.0 * PAD);
    for (s, e, k) in &t.faults {
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{PAD}\" width=\"{:.1}\" height=\"{}\" fill=\"#fdb863\" opacity=\"0.35\"><title>{k}</title></rect>",
            x(*s),
            (x(*e) - x(*s)).max(1.0),
            H - 2.0 * PAD
        );
    }
    for tk in &t.ticks {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{}\" x2=\"{:.1}\" y2=\"{}\" stroke=\"#e08214\"/>",
            x(*tk),
            H - PAD - 20.0,
            x(*tk),
            H - PAD
        );
    }
    for v in &t.violations {
        let _ = write!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{}\" r=\"3\" fill=\"#c51b7d\"/>",
            x(*v),
            H / 2.0
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{PAD}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><text x=\"{PAD}\" y=\"{}\">0 s</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.1} s</text><text x=\"{PAD}\" y=\"20\">{}: fault windows shaded, drops and switches as ticks, duplicate executions as dots ({})</text></svg>",
        H - PAD,
        W - PAD,
        H - PAD,
        H - PAD + 14.0,
        W - PAD,
        H - PAD + 14.0,
        t.end_us as f64 / 1e6,
        xml(&t.title),
        t.violations.len()
    );
    out
}

/// `report.html`: one self-contained page (no scripts, no external files)
/// with the Markdown report's tables and the three plots.
pub fn html(s: &Summary, timeline: Option<&Timeline>) -> String {
    let mut out = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-chaos comparison</title><style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}th:first-child,td:first-child{text-align:left}</style></head><body><h1>mcp-chaos comparison</h1>");
    let _ = write!(
        out,
        "<h2>Migration latency</h2>{}<h2>Failed operations per scenario</h2>{}{}",
        cdf_svg(s),
        bars_svg(s),
        if s.aggregates
            .iter()
            .any(|a| a.clients == crate::run::AS_WRITTEN)
        {
            ""
        } else {
            "<p>The bars show each arm under the plain client profile (when it ran); the latency curves pool every profile; the tables below show each profile apart.</p>"
        }
    );
    if let Some(t) = timeline {
        let _ = write!(out, "<h2>Timeline of one run</h2>{}", timeline_svg(t));
    }
    // The Markdown tables, as HTML tables.
    for line in markdown(s).lines() {
        if let Some(h) = line.strip_prefix("## ") {
            let _ = write!(out, "<h2>{}</h2>", xml(h));
        } else if line.starts_with("|---") {
            continue;
        } else if let Some(row) = line.strip_prefix('|') {
            let cells: Vec<&str> = row
                .trim_end_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let tag = if cells.first() == Some(&"metric") {
                "th"
            } else {
                "td"
            };
            if tag == "th" {
                out.push_str("<table>");
            }
            out.push_str("<tr>");
            for c in cells {
                let _ = write!(out, "<{tag}>{}</{tag}>", xml(c));
            }
            out.push_str("</tr>");
        } else if line.is_empty() {
            out.push_str("</table>");
        } else if !line.starts_with('#') {
            let _ = write!(out, "<p>{}</p>", xml(line));
        }
    }
    out.push_str("</body></html>\n");
    out
}

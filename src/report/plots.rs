//! The SVG plots: latency CDF, failed operations per scenario, one run's
//! timeline.

use super::matrix::arms;
use super::{ms, xml};
use crate::sweep::Summary;
use std::collections::BTreeMap;
use std::fmt::Write;

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

const W: f64 = 720.0;
const H: f64 = 260.0;
const PAD: f64 = 50.0;

fn svg_open(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"11\"><title>{}</title><rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>",
        xml(title)
    )
}

/// An arm's colour in every plot.
pub(super) fn color(arm: &str) -> &'static str {
    match arm {
        "guarded" => "#1b7837",
        "unguarded" => "#c51b7d",
        "keys" => "#2166ac",
        "cancel" => "#e08214",
        _ => "#555555",
    }
}

/// Migration-latency CDF per arm, over every run of the summary with
/// client profile `profile`.
pub fn cdf_svg(s: &Summary, profile: &str) -> String {
    let mut out = svg_open(&format!("migration latency CDF per arm, clients {profile}"));
    let mut series = Vec::new();
    let mut max_v: u64 = 1;
    for server in arms(s) {
        let color = color(server);
        let mut pairs: Vec<(u64, u64)> = s
            .runs
            .iter()
            .filter(|r| r.server == server && r.clients == profile)
            .flat_map(|r| r.migration_latency_hist_us.iter().copied())
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
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">migration latency (log scale)</text><text x=\"{PAD}\" y=\"16\">share of migrations completed within a latency; clients {}</text></svg>",
        W / 2.0,
        H - 12.0,
        xml(profile)
    );
    out
}

/// Failed operations per scenario as grouped bars, one bar per arm, for
/// the runs with client profile `profile`.
pub fn bars_svg(s: &Summary, profile: &str) -> String {
    let mut out = svg_open(&format!(
        "failed operations per scenario, clients {profile}"
    ));
    let arms = arms(s);
    let failed = |sc: &str, arm: &str| {
        s.aggregates
            .iter()
            .find(|a| a.scenario == sc && a.server == arm && a.clients == profile)
            .map(|a| a.metrics.ops_failed)
    };
    let mut scenarios: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    scenarios.dedup();
    let max = scenarios
        .iter()
        .flat_map(|sc| arms.iter().filter_map(|a| failed(sc, a)))
        .max()
        .unwrap_or(0)
        .max(1);
    let slot = (W - 2.0 * PAD) / scenarios.len().max(1) as f64;
    let bar = (slot - 8.0) / arms.len().max(1) as f64;
    let scale =
        |v: u64| ((v as f64 + 1.0).log10() / (max as f64 + 1.0).log10()) * (H - 2.0 * PAD - 40.0);
    for (i, sc) in scenarios.iter().enumerate() {
        let x = PAD + slot * i as f64;
        for (j, arm) in arms.iter().enumerate() {
            let Some(v) = failed(sc, arm) else { continue };
            let h = scale(v);
            let bx = x + 4.0 + j as f64 * bar;
            let _ = write!(
                out,
                "<rect x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{sc} {arm}: {v}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"8\">{v}</text>",
                H - PAD - 40.0 - h,
                (bar - 1.0).max(1.0),
                color(arm),
                bx + bar / 2.0,
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
    let _ = write!(
        out,
        "<text x=\"{PAD}\" y=\"16\">failed operations (each counted once), totals over seeds, log scale; clients {}</text>",
        xml(profile)
    );
    for (j, arm) in arms.iter().enumerate() {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"30\" fill=\"{}\">{}</text>",
            PAD + 110.0 * j as f64,
            color(arm),
            xml(arm)
        );
    }
    out.push_str("</svg>");
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

//! The SVG plots, written by hand (plain `<rect>`, `<polyline>`, `<text>`
//! and `<title>` tooltips, no scripts): per-scenario migration-latency
//! CDFs as small multiples, failed operations per scenario as grouped
//! bars, and a Jepsen-style timeline of one run (one lane per client,
//! operations as bars, faults as shaded windows and marks).

use super::matrix::arms;
use super::{ms, xml};
use crate::history::{ClientRecord, History, LedgerRecord, Outcome, Rec, WorldRecord};
use crate::oracle::OpVerdict;
use crate::sweep::Summary;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// An arm's colour in every plot and legend.
pub(super) fn color(arm: &str) -> &'static str {
    match arm {
        "unguarded" => "#c51b7d",
        "keys" => "#2166ac",
        "guarded" => "#1b7837",
        "cancel" => "#e08214",
        "rmcp" => "#762a83",
        "rmcp-es" => "#35978f",
        _ => "#555555",
    }
}

/// Colour of an operation's outcome in timelines.
fn outcome_color(outcome: &str) -> &'static str {
    match outcome {
        "failed" => "#d7191c",
        "degraded" => "#fdae61",
        "unresolved" => "#999999",
        _ => "#a6d96a",
    }
}

fn svg_open(w: f64, h: f64, title: &str, class: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\"><title>{}</title><rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>",
        xml(title)
    )
}

/// Ticks for a linear axis from 0 to at least `max`: a step of 1, 2 or 5
/// times a power of ten giving at most about `n` ticks.
pub(super) fn linear_ticks(max: f64, n: usize) -> Vec<f64> {
    let max = if max > 0.0 { max } else { 1.0 };
    let raw = max / n.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p);
    let mut v = vec![0.0];
    while *v.last().expect("non-empty") < max - 1e-9 {
        let next = v.len() as f64 * step;
        v.push(next);
    }
    v
}

/// `1234567` as `1,234,567`.
pub(super) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The scenarios of a summary, in summary order.
fn scenarios(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    v.dedup();
    v
}

/// One small-multiple panel: the migration-latency CDF of one scenario
/// under client profile `profile`, one curve per arm, log-scale x axis in
/// milliseconds, y the share of migrations done within that latency.
pub fn cdf_panel_svg(s: &Summary, scenario: &str, profile: &str) -> String {
    const W: f64 = 440.0;
    const H: f64 = 270.0;
    let (l, r, t, b) = (52.0, 14.0, 30.0, 42.0);
    let mut out = svg_open(
        W,
        H,
        &format!("migration latency CDF, {scenario}, clients {profile}"),
        "cdf-panel",
    );
    let mut series = Vec::new();
    for arm in arms(s) {
        let mut pairs: Vec<(u64, u64)> = s
            .runs
            .iter()
            .filter(|x| x.scenario == scenario && x.server == arm && x.clients == profile)
            .flat_map(|x| x.migration_latency_hist_us.iter().copied())
            .collect();
        if !s
            .aggregates
            .iter()
            .any(|a| a.scenario == scenario && a.server == arm && a.clients == profile)
        {
            continue;
        }
        pairs.sort_unstable();
        let p90 = s
            .aggregates
            .iter()
            .find(|a| a.scenario == scenario && a.server == arm && a.clients == profile)
            .map_or(0, |a| a.metrics.migration_latency_us.p90);
        series.push((arm, pairs, p90));
    }
    let total = |p: &[(u64, u64)]| p.iter().map(|x| x.1).sum::<u64>();
    let min_v = series
        .iter()
        .filter_map(|(_, p, _)| p.first().map(|x| x.0))
        .min()
        .unwrap_or(1000)
        .max(1);
    let max_v = series
        .iter()
        .filter_map(|(_, p, _)| p.last().map(|x| x.0))
        .max()
        .unwrap_or(10_000)
        .max(min_v + 1);
    // Decades of µs, at least 100 µs wide.
    let lo = (min_v as f64).log10().floor().max(2.0);
    let hi = (max_v as f64).log10().ceil().max(lo + 1.0);
    let (pw, ph) = (W - l - r, H - t - b);
    let x = |v: u64| l + (((v.max(1) as f64).log10() - lo) / (hi - lo)).clamp(0.0, 1.0) * pw;
    let y = |q: f64| t + (1.0 - q) * ph;
    let _ = write!(
        out,
        "<text x=\"{l}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>",
        xml(scenario)
    );
    // Grid and axes.
    for q in [0.0, 0.25, 0.5, 0.75, 0.9, 1.0] {
        let _ = write!(
            out,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            l + pw,
            l - 4.0,
            y(q) + 4.0,
            q,
            yy = y(q)
        );
    }
    let mut d = lo as i32;
    while d <= hi as i32 {
        let v = 10u64.pow(d as u32);
        let xx = x(v);
        let label = if v >= 1_000_000 {
            format!("{} s", v / 1_000_000)
        } else {
            ms(v)
        };
        let _ = write!(
            out,
            "<line x1=\"{xx:.1}\" y1=\"{t}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            t + ph + 4.0,
            t + ph + 15.0
        );
        d += 1;
    }
    let _ = write!(
        out,
        "<rect x=\"{l}\" y=\"{t}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"black\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">migration latency (ms, log scale)</text><text transform=\"translate(13,{:.1}) rotate(-90)\" text-anchor=\"middle\">share of migrations done</text>",
        l + pw / 2.0,
        H - 6.0,
        t + ph / 2.0
    );
    // Curves: a step CDF per arm.
    let mut legend = Vec::new();
    for (arm, pairs, p90) in &series {
        let n = total(pairs);
        if n == 0 {
            legend.push((arm, format!("{arm}: no migrations"), false));
            continue;
        }
        let mut pts = format!("{:.1},{:.1} ", x(pairs[0].0), y(0.0));
        let mut acc = 0;
        for (v, c) in pairs {
            let before = acc as f64 / n as f64;
            acc += c;
            let _ = write!(
                pts,
                "{:.1},{:.1} {:.1},{:.1} ",
                x(*v),
                y(before),
                x(*v),
                y(acc as f64 / n as f64)
            );
        }
        let _ = write!(
            out,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"><title>{arm}: {n} migrations, p90 {}</title></polyline>",
            color(arm),
            pts.trim_end(),
            ms(*p90)
        );
        legend.push((
            arm,
            format!("{arm}: p90 {} (n={})", ms(*p90), thousands(n)),
            true,
        ));
    }
    // Legend, bottom right inside the plot (where a CDF has no curve).
    let lh = 14.0;
    let ly0 = t + ph - 6.0 - lh * legend.len() as f64;
    let lx = l + pw - 170.0;
    let _ = write!(
        out,
        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"166\" height=\"{:.1}\" fill=\"white\" opacity=\"0.85\" stroke=\"#ccc\"/>",
        lx - 2.0,
        ly0 - 2.0,
        lh * legend.len() as f64 + 4.0
    );
    for (i, (arm, text, has)) in legend.iter().enumerate() {
        let yy = ly0 + lh * i as f64 + 7.0;
        let c = if *has { color(arm) } else { "#999" };
        let _ = write!(
            out,
            "<line x1=\"{lx:.1}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"{c}\" stroke-width=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{}\">{}</text>",
            lx + 16.0,
            lx + 20.0,
            yy + 3.5,
            if *has { "black" } else { "#777" },
            xml(text)
        );
    }
    out.push_str("</svg>");
    out
}

/// The CDF panels of every scenario under client profile `profile`, in
/// summary order.
pub fn cdf_panels(s: &Summary, profile: &str) -> Vec<String> {
    scenarios(s)
        .into_iter()
        .filter(|sc| {
            s.aggregates
                .iter()
                .any(|a| a.scenario == *sc && a.clients == profile)
        })
        .map(|sc| cdf_panel_svg(s, sc, profile))
        .collect()
}

/// Failed operations per scenario as grouped bars on a linear axis, one
/// bar per arm (colours as the legend), for the runs with client profile
/// `profile`; a short note instead of a plot when none failed.
pub fn bars_svg(s: &Summary, profile: &str) -> String {
    let arms = arms(s);
    let failed = |sc: &str, arm: &str| {
        s.aggregates
            .iter()
            .find(|a| a.scenario == sc && a.server == arm && a.clients == profile)
            .map(|a| a.metrics.ops_failed)
    };
    let scenarios: Vec<&str> = scenarios(s)
        .into_iter()
        .filter(|sc| arms.iter().any(|a| failed(sc, a).is_some()))
        .collect();
    let max = scenarios
        .iter()
        .flat_map(|sc| arms.iter().filter_map(|a| failed(sc, a)))
        .max()
        .unwrap_or(0);
    let seeds = s
        .aggregates
        .iter()
        .filter(|a| a.clients == profile)
        .map(|a| a.runs)
        .max()
        .unwrap_or(0);
    if max == 0 {
        const W: f64 = 720.0;
        const H: f64 = 44.0;
        let mut out = svg_open(
            W,
            H,
            &format!("failed operations per scenario, clients {profile}"),
            "bars-empty",
        );
        let _ = write!(
            out,
            "<text x=\"12\" y=\"27\" font-size=\"14\">No failed operations: every arm, every scenario, all {seeds} seeds (clients {}).</text></svg>",
            xml(profile)
        );
        return out;
    }
    let (l, r, t, b) = (64.0, 16.0, 46.0, 96.0);
    let slot_w = (36.0 + 14.0 * arms.len() as f64).max(70.0);
    let w = (l + r + slot_w * scenarios.len() as f64).max(720.0);
    let h = 380.0;
    let (pw, ph) = (w - l - r, h - t - b);
    let slot = pw / scenarios.len().max(1) as f64;
    let bar = ((slot - 12.0) / arms.len().max(1) as f64).min(28.0);
    let ticks = linear_ticks(max as f64, 6);
    let top = *ticks.last().expect("ticks");
    let y = |v: f64| t + ph - v / top * ph;
    let mut out = svg_open(
        w,
        h,
        &format!("failed operations per scenario, clients {profile}"),
        "bars",
    );
    let _ = write!(
        out,
        "<text x=\"{l}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">Failed operations per scenario and arm (clients {}; totals over {seeds} seeds; linear axis)</text>",
        xml(profile)
    );
    for tk in &ticks {
        let _ = write!(
            out,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            l + pw,
            l - 4.0,
            y(*tk) + 4.0,
            thousands(*tk as u64),
            yy = y(*tk)
        );
    }
    let _ = write!(
        out,
        "<line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{:.1}\" stroke=\"black\"/><line x1=\"{l}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\"/><text transform=\"translate(14,{:.1}) rotate(-90)\" text-anchor=\"middle\">failed operations</text>",
        t + ph,
        t + ph,
        l + pw,
        t + ph,
        t + ph / 2.0
    );
    for (i, sc) in scenarios.iter().enumerate() {
        let x0 = l + slot * i as f64 + (slot - bar * arms.len() as f64) / 2.0;
        for (j, arm) in arms.iter().enumerate() {
            let Some(v) = failed(sc, arm) else { continue };
            let bx = x0 + j as f64 * bar;
            let hh = (t + ph - y(v as f64)).max(if v > 0 { 1.0 } else { 0.0 });
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{hh:.1}\" fill=\"{}\"><title>{} · {arm}: {} failed</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"9\">{}</text>",
                t + ph - hh,
                (bar - 1.0).max(1.0),
                color(arm),
                xml(sc),
                thousands(v),
                bx + bar / 2.0,
                t + ph - hh - 3.0,
                thousands(v)
            );
        }
        let _ = write!(
            out,
            "<text transform=\"translate({:.1},{:.1}) rotate(30)\" font-size=\"10\">{}</text>",
            l + slot * i as f64 + slot / 2.0 - 6.0,
            t + ph + 12.0,
            xml(sc)
        );
    }
    let mut lx = l;
    for arm in &arms {
        let _ = write!(
            out,
            "<rect x=\"{lx:.1}\" y=\"26\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"36\">{}</text>",
            color(arm),
            lx + 16.0,
            xml(arm)
        );
        lx += 24.0 + 7.0 * arm.len() as f64 + 16.0;
    }
    out.push_str("</svg>");
    out
}

/// One operation in a timeline: a bar from its start to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpBar {
    /// Operation tag.
    pub tag: String,
    /// Began, µs.
    pub start_us: u64,
    /// Ended for its client (result handled or given up), µs; the run's
    /// end when unresolved.
    pub end_us: u64,
    /// `ok`, `degraded`, `failed` or `unresolved`.
    pub outcome: &'static str,
    /// The oracle's failures and cause, for failed ones.
    pub why: String,
}

/// One client's lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// Client index.
    pub client: u32,
    /// The client host it runs on.
    pub host: u32,
    /// Its operations, in the order they began.
    pub ops: Vec<OpBar>,
    /// Drops (`drop`), transport switches (`switch`) and duplicate
    /// executions (`duplicate`), with their time in µs.
    pub marks: Vec<(u64, &'static str)>,
}

/// A timed fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultWindow {
    /// Began, µs.
    pub start_us: u64,
    /// Ended, µs (the run's end when it never ended).
    pub end_us: u64,
    /// `partition`, `restart` or `latency`.
    pub kind: String,
    /// The client host it acts on, if one.
    pub host: Option<u32>,
}

/// A run's history as a Jepsen-style timeline: one lane per client (the
/// clients with failed or degraded operations first, at most
/// [`Timeline::MAX_LANES`]), operations as bars coloured by outcome,
/// timed faults as shaded windows, drops, switches and duplicate
/// executions as marks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// What the timeline shows (scenario, seed, arm, clients).
    pub title: String,
    /// The command that reproduces the run (empty when unknown).
    pub repro: String,
    /// Simulated length, µs.
    pub end_us: u64,
    /// When the heal phase began, µs.
    pub heal_us: Option<u64>,
    /// Clients in the run.
    pub clients: u32,
    /// The lanes shown, by client.
    pub lanes: Vec<Lane>,
    /// Timed faults.
    pub faults: Vec<FaultWindow>,
    /// Operations by outcome over the whole run (not only the lanes).
    pub outcomes: BTreeMap<&'static str, u64>,
}

impl Timeline {
    /// Most lanes a timeline shows.
    pub const MAX_LANES: usize = 40;

    /// Reads a history, with the oracle's verdicts of the run's failed and
    /// degraded operations; client `c` runs on host `c % hosts`.
    pub fn of(title: String, h: &History, verdicts: &[OpVerdict], hosts: u32) -> Timeline {
        let verdict: BTreeMap<&str, &OpVerdict> =
            verdicts.iter().map(|v| (v.tag.as_str(), v)).collect();
        let mut t = Timeline {
            title,
            ..Timeline::default()
        };
        let mut open: BTreeMap<u32, (u64, &'static str, Option<u32>)> = BTreeMap::new();
        let mut lanes: BTreeMap<u32, Lane> = BTreeMap::new();
        let mut started: BTreeMap<String, (u32, usize)> = BTreeMap::new();
        for e in h.entries().iter() {
            t.end_us = t.end_us.max(e.t_us);
            match &e.record {
                // A restart is an instant: it has no end record.
                Rec::World(WorldRecord::FaultStarted { kind, host, .. }) if *kind == "restart" => {
                    t.faults.push(FaultWindow {
                        start_us: e.t_us,
                        end_us: e.t_us,
                        kind: kind.to_string(),
                        host: *host,
                    });
                }
                Rec::World(WorldRecord::FaultStarted { index, kind, host }) => {
                    open.insert(*index, (e.t_us, kind, *host));
                }
                Rec::World(WorldRecord::FaultEnded { index }) => {
                    if let Some((s, k, host)) = open.remove(index) {
                        t.faults.push(FaultWindow {
                            start_us: s,
                            end_us: e.t_us,
                            kind: k.to_string(),
                            host,
                        });
                    }
                }
                Rec::World(WorldRecord::HealStarted) => t.heal_us = Some(e.t_us),
                Rec::Client(ClientRecord::OpStarted { client, tag }) => {
                    let l = lanes
                        .entry(*client)
                        .or_insert_with(|| new_lane(*client, hosts));
                    let (outcome, why) = match verdict.get(&**tag) {
                        Some(v) if v.cause.is_some() || !v.failures.is_empty() => (
                            "failed",
                            format!(
                                "{} (cause {})",
                                v.failures.join(", "),
                                v.cause.as_deref().unwrap_or("?")
                            ),
                        ),
                        Some(_) => ("degraded", "missed announced events".to_string()),
                        None => ("ok", String::new()),
                    };
                    started.insert(tag.to_string(), (*client, l.ops.len()));
                    l.ops.push(OpBar {
                        tag: tag.to_string(),
                        start_us: e.t_us,
                        end_us: u64::MAX,
                        outcome,
                        why,
                    });
                }
                Rec::Client(ClientRecord::Outcome {
                    tag, outcome: o, ..
                }) => {
                    if let Some(&(c, i)) = started.get(&**tag) {
                        if let Some(op) = lanes.get_mut(&c).and_then(|l| l.ops.get_mut(i)) {
                            op.end_us = e.t_us;
                            if *o == Outcome::Unresolved && op.outcome == "ok" {
                                op.outcome = "unresolved";
                            }
                        }
                    }
                }
                Rec::Client(ClientRecord::Dropped { client, .. }) => lanes
                    .entry(*client)
                    .or_insert_with(|| new_lane(*client, hosts))
                    .marks
                    .push((e.t_us, "drop")),
                Rec::Client(ClientRecord::Switched { client, .. }) => lanes
                    .entry(*client)
                    .or_insert_with(|| new_lane(*client, hosts))
                    .marks
                    .push((e.t_us, "switch")),
                Rec::Ledger(LedgerRecord::Execution { tag, n, .. }) if *n > 1 => {
                    if let Some(&(c, _)) = started.get(&**tag) {
                        if let Some(l) = lanes.get_mut(&c) {
                            l.marks.push((e.t_us, "duplicate"));
                        }
                    }
                }
                _ => {}
            }
        }
        for (_, (s, k, host)) in open {
            t.faults.push(FaultWindow {
                start_us: s,
                end_us: t.end_us,
                kind: k.to_string(),
                host,
            });
        }
        t.faults
            .sort_by(|a, b| (a.start_us, &a.kind).cmp(&(b.start_us, &b.kind)));
        t.clients = lanes.len() as u32;
        for l in lanes.values_mut() {
            for op in &mut l.ops {
                op.end_us = op.end_us.min(t.end_us);
                *t.outcomes.entry(op.outcome).or_insert(0) += 1;
            }
        }
        // Lanes: clients with failed ops, then degraded, then with marks,
        // then the rest, by client index; at most MAX_LANES, shown in
        // client order.
        let rank = |l: &Lane| {
            if l.ops.iter().any(|o| o.outcome == "failed") {
                0
            } else if l.ops.iter().any(|o| o.outcome != "ok") {
                1
            } else if !l.marks.is_empty() {
                2
            } else {
                3
            }
        };
        let mut chosen: Vec<(u8, u32)> = lanes.values().map(|l| (rank(l), l.client)).collect();
        chosen.sort_unstable();
        chosen.truncate(Self::MAX_LANES);
        let keep: BTreeSet<u32> = chosen.into_iter().map(|(_, c)| c).collect();
        t.lanes = lanes
            .into_values()
            .filter(|l| keep.contains(&l.client))
            .collect();
        t
    }
}

fn new_lane(client: u32, hosts: u32) -> Lane {
    Lane {
        client,
        host: client % hosts.max(1),
        ops: Vec::new(),
        marks: Vec::new(),
    }
}

/// A timeline as SVG: x in simulated seconds with ticks, one labelled lane
/// per client shown, a legend.
pub fn timeline_svg(t: &Timeline) -> String {
    let lane_h = 16.0;
    let (l, r, top, b) = (92.0, 20.0, 64.0, 40.0);
    let w = 1200.0;
    let h = top + lane_h * t.lanes.len().max(1) as f64 + b;
    let pw = w - l - r;
    let end = t.end_us.max(1) as f64;
    let x = |us: u64| l + us as f64 / end * pw;
    let mut out = svg_open(w, h, &t.title, "timeline");
    let _ = write!(
        out,
        "<text x=\"{l}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{}</text><text x=\"{l}\" y=\"32\">{} of {} clients shown (those with failed or degraded operations first); operations over the whole run: {}</text>",
        xml(&t.title),
        t.lanes.len(),
        t.clients,
        t.outcomes
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Legend.
    let mut lx = l;
    for (label, c) in [
        ("ok", outcome_color("ok")),
        ("degraded", outcome_color("degraded")),
        ("failed", outcome_color("failed")),
        ("unresolved", outcome_color("unresolved")),
    ] {
        let _ = write!(
            out,
            "<rect x=\"{lx:.1}\" y=\"40\" width=\"18\" height=\"9\" fill=\"{c}\"/><text x=\"{:.1}\" y=\"49\">{label}</text>",
            lx + 22.0
        );
        lx += 30.0 + 7.0 * label.len() as f64;
    }
    let _ = write!(
        out,
        "<rect x=\"{lx:.1}\" y=\"40\" width=\"18\" height=\"9\" fill=\"#2c7bb6\" opacity=\"0.18\"/><text x=\"{:.1}\" y=\"49\">partition (its host's lanes; latency grey)</text>",
        lx + 22.0
    );
    lx += 250.0;
    let _ = write!(
        out,
        "<line x1=\"{:.1}\" y1=\"38\" x2=\"{:.1}\" y2=\"51\" stroke=\"#7b3294\" stroke-width=\"3\"/><text x=\"{:.1}\" y=\"49\">server restart</text>",
        lx + 8.0,
        lx + 8.0,
        lx + 16.0
    );
    lx += 110.0;
    let _ = write!(
        out,
        "<path d=\"M{:.1},40 l4,9 l-8,0 z\" fill=\"black\"/><text x=\"{:.1}\" y=\"49\">drop</text><circle cx=\"{:.1}\" cy=\"44.5\" r=\"4\" fill=\"none\" stroke=\"#2c7bb6\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"49\">switch</text><path d=\"M{:.1},44.5 l5,-5 l5,5 l-5,5 z\" fill=\"#ffef00\" stroke=\"black\"/><text x=\"{:.1}\" y=\"49\">duplicate execution</text>",
        lx + 4.0,
        lx + 12.0,
        lx + 54.0,
        lx + 62.0,
        lx + 108.0,
        lx + 122.0
    );
    let lanes_h = lane_h * t.lanes.len().max(1) as f64;
    let lane_y: BTreeMap<u32, f64> = t
        .lanes
        .iter()
        .enumerate()
        .map(|(i, ln)| (ln.client, top + lane_h * i as f64))
        .collect();
    // Fault windows: restarts and latency over every lane, a partition
    // over the lanes of its host.
    for f in &t.faults {
        let (fill, op) = match f.kind.as_str() {
            "restart" => ("#7b3294", 0.25),
            "partition" => ("#2c7bb6", 0.18),
            _ => ("#888888", 0.12),
        };
        let wdt = (x(f.end_us) - x(f.start_us)).max(1.5);
        let tip = format!(
            "{}{} from {:.3} s to {:.3} s",
            f.kind,
            f.host.map_or(String::new(), |h| format!(" of host {h}")),
            f.start_us as f64 / 1e6,
            f.end_us as f64 / 1e6
        );
        match (f.kind.as_str(), f.host) {
            ("restart", _) => {
                let _ = write!(
                    out,
                    "<line x1=\"{xx:.1}\" y1=\"{:.1}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#7b3294\" stroke-width=\"3\"><title>server restart at {:.3} s</title></line><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#7b3294\" font-size=\"10\">restart</text>",
                    top - 4.0,
                    top + lanes_h,
                    f.start_us as f64 / 1e6,
                    top - 6.0,
                    xx = x(f.start_us)
                );
            }
            (_, Some(host)) => {
                for ln in t.lanes.iter().filter(|ln| ln.host == host) {
                    let _ = write!(
                        out,
                        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{wdt:.1}\" height=\"{lane_h}\" fill=\"{fill}\" opacity=\"{op}\"><title>{}</title></rect>",
                        x(f.start_us),
                        lane_y[&ln.client],
                        xml(&tip)
                    );
                }
            }
            _ => {
                let _ = write!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{top}\" width=\"{wdt:.1}\" height=\"{lanes_h}\" fill=\"{fill}\" opacity=\"{op}\"><title>{}</title></rect>",
                    x(f.start_us),
                    xml(&tip)
                );
            }
        }
    }
    if let Some(hs) = t.heal_us {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#1b7837\" stroke-dasharray=\"4,3\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#1b7837\" font-size=\"10\">heal phase →</text>",
            x(hs),
            top - 6.0,
            x(hs),
            top + lanes_h,
            x(hs) + 3.0,
            top - 2.0
        );
    }
    // Lanes.
    for (i, ln) in t.lanes.iter().enumerate() {
        let y0 = top + lane_h * i as f64;
        if i % 2 == 1 {
            let _ = write!(
                out,
                "<rect x=\"{l}\" y=\"{y0:.1}\" width=\"{pw}\" height=\"{lane_h}\" fill=\"#000\" opacity=\"0.03\"/>"
            );
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">client {} (host {})</text>",
            l - 6.0,
            y0 + lane_h - 4.0,
            ln.client,
            ln.host
        );
        for op in &ln.ops {
            let wdt = (x(op.end_us) - x(op.start_us)).max(2.0);
            let tip = format!(
                "{} {}: {:.3} s to {:.3} s{}",
                op.tag,
                op.outcome,
                op.start_us as f64 / 1e6,
                op.end_us as f64 / 1e6,
                if op.why.is_empty() {
                    String::new()
                } else {
                    format!(" · {}", op.why)
                }
            );
            let _ = write!(
                out,
                "<rect class=\"op\" x=\"{:.1}\" y=\"{:.1}\" width=\"{wdt:.1}\" height=\"{:.1}\" fill=\"{}\" stroke=\"white\" stroke-width=\"0.5\"><title>{}</title></rect>",
                x(op.start_us),
                y0 + 3.0,
                lane_h - 6.0,
                outcome_color(op.outcome),
                xml(&tip)
            );
        }
        for (tm, kind) in &ln.marks {
            let (xx, yy) = (x(*tm), y0 + lane_h / 2.0);
            let _ = match *kind {
                "drop" => write!(
                    out,
                    "<path d=\"M{xx:.1},{:.1} l4,9 l-8,0 z\" fill=\"black\"><title>drop at {:.3} s</title></path>",
                    y0 + 3.0,
                    *tm as f64 / 1e6
                ),
                "switch" => write!(
                    out,
                    "<circle cx=\"{xx:.1}\" cy=\"{yy:.1}\" r=\"4\" fill=\"none\" stroke=\"#2c7bb6\" stroke-width=\"2\"><title>transport switch at {:.3} s</title></circle>",
                    *tm as f64 / 1e6
                ),
                _ => write!(
                    out,
                    "<path d=\"M{:.1},{yy:.1} l5,-5 l5,5 l-5,5 z\" fill=\"#ffef00\" stroke=\"black\"><title>duplicate execution at {:.3} s</title></path>",
                    xx - 5.0,
                    *tm as f64 / 1e6
                ),
            };
        }
    }
    // X axis in simulated seconds.
    let ay = top + lanes_h;
    let _ = write!(
        out,
        "<line x1=\"{l}\" y1=\"{ay:.1}\" x2=\"{:.1}\" y2=\"{ay:.1}\" stroke=\"black\"/><line x1=\"{l}\" y1=\"{top}\" x2=\"{l}\" y2=\"{ay:.1}\" stroke=\"black\"/>",
        l + pw
    );
    for s in linear_ticks(end / 1e6, 12) {
        let us = (s * 1e6) as u64;
        if us as f64 > end + 1.0 {
            break;
        }
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{xx:.1}\" y1=\"{ay:.1}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"black\"/><text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            ay + 5.0,
            ay + 17.0,
            trim_float(s),
            xx = x(us)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">simulated time (s)</text></svg>",
        l + pw / 2.0,
        ay + 33.0
    );
    out
}

/// `2.0` as `2`, `0.5` as `0.5`.
fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

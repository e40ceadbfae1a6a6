//! Per-scenario migration-latency CDFs as small multiples: one panel per
//! scenario, one step curve per arm. Each arm has its own dash pattern,
//! and an arm whose curve is another's point for point says so in the
//! legend ("identical to X"), so coinciding curves never hide an arm. The
//! legend stands under the plot, clear of the curves.

use super::super::matrix::arms;
use super::super::ms;
use super::svg::{svg_open, text, thousands, vtext};
use super::{color, dashes, scenarios};
use crate::sweep::Summary;
use std::fmt::Write;

/// Font size of legend entries.
const LEGEND_FONT: f64 = 10.0;
/// One legend row.
const LEGEND_ROW: f64 = 14.0;

/// A decade tick's label: `0.10 ms` … `100 ms`, then seconds.
fn decade_label(v: u64) -> String {
    if v >= 1_000_000 {
        format!("{} s", v / 1_000_000)
    } else {
        ms(v)
    }
}

/// Panel width.
const W: f64 = 440.0;

/// One arm's curve: its name, its latency histogram as sorted (µs,
/// count) pairs, its p90, whether it was not applicable.
type Series<'a> = (&'a str, Vec<(u64, u64)>, u64, bool);

/// One small-multiple panel: the migration-latency CDF of one scenario
/// under client profile `profile`, one curve per arm, log-scale x axis in
/// milliseconds, y the share of migrations done within that latency; the
/// legend (p90 and sample count per arm) under the axes.
pub fn cdf_panel_svg(s: &Summary, scenario: &str, profile: &str) -> String {
    let series = series(s, scenario, profile);
    let f = Frame::new(&series, page_range(s));
    let mut out = svg_open(
        W,
        f.h,
        &format!("migration latency CDF, {scenario}, clients {profile}"),
        "cdf-panel",
    );
    text(
        &mut out,
        f.l,
        18.0,
        13.0,
        "start",
        "font-weight=\"bold\"",
        scenario,
    );
    axes(&mut out, &f);
    let legend = curves(&mut out, &f, &series);
    legend_svg(&mut out, &f, &legend);
    out.push_str("</svg>");
    out
}

/// Every arm's curve on `scenario` under `profile`, in arm order.
fn series<'a>(s: &'a Summary, scenario: &str, profile: &str) -> Vec<Series<'a>> {
    let mut series = Vec::new();
    for arm in arms(s) {
        let Some(agg) = s
            .aggregates
            .iter()
            .find(|a| a.scenario == scenario && a.server == arm && a.clients == profile)
        else {
            continue;
        };
        let mut pairs: Vec<(u64, u64)> = s
            .runs
            .iter()
            .filter(|x| {
                x.scenario == scenario
                    && x.server == arm
                    && x.clients == profile
                    && x.deployment == agg.deployment
            })
            .flat_map(|x| x.migration_latency_hist_us.iter().copied())
            .collect();
        pairs.sort_unstable();
        series.push((
            arm,
            pairs,
            agg.metrics.migration_latency_us.p90,
            agg.not_applicable(),
        ));
    }
    series
}

/// Where the panel's parts stand: the plot's left, top, width and
/// height, the log axis's decades of µs, the panel's height.
struct Frame {
    l: f64,
    t: f64,
    pw: f64,
    ph: f64,
    lo: f64,
    hi: f64,
    h: f64,
}

/// The x range every panel of a page shares, in decades of µs: from the
/// smallest migration latency of any run to the largest, at least one
/// decade wide, never below 100 µs.
fn page_range(s: &Summary) -> (f64, f64) {
    let pairs = || {
        s.runs
            .iter()
            .flat_map(|r| r.migration_latency_hist_us.iter())
    };
    let min_v = pairs().map(|x| x.0).min().unwrap_or(1000).max(1);
    let max_v = pairs().map(|x| x.0).max().unwrap_or(10_000).max(min_v + 1);
    let lo = (min_v as f64).log10().floor().max(2.0);
    (lo, (max_v as f64).log10().ceil().max(lo + 1.0))
}

impl Frame {
    /// The layout for `series` on the page's x range `(lo, hi)`; a legend
    /// row per arm.
    fn new(series: &[Series<'_>], (lo, hi): (f64, f64)) -> Frame {
        let (l, r, t, ph) = (52.0, 30.0, 30.0, 170.0);
        let h = t + ph + 40.0 + LEGEND_ROW * series.len().max(1) as f64 + 6.0;
        Frame {
            l,
            t,
            pw: W - l - r,
            ph,
            lo,
            hi,
            h,
        }
    }

    /// Latency `v` (µs) on the log axis.
    fn x(&self, v: u64) -> f64 {
        self.l
            + (((v.max(1) as f64).log10() - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
                * self.pw
    }

    /// Share `q` on the y axis.
    fn y(&self, q: f64) -> f64 {
        self.t + (1.0 - q) * self.ph
    }
}

/// The grid, the ticks, the frame and the axis titles.
fn axes(out: &mut String, f: &Frame) {
    let (l, t, pw, ph) = (f.l, f.t, f.pw, f.ph);
    for q in [0.0, 0.25, 0.5, 0.75, 0.9, 1.0] {
        let _ = write!(
            out,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>",
            l + pw,
            yy = f.y(q)
        );
        text(
            out,
            l - 4.0,
            f.y(q) + 4.0,
            11.0,
            "end",
            "class=\"tick\"",
            &q.to_string(),
        );
    }
    let mut d = f.lo as i32;
    while d <= f.hi as i32 {
        let v = 10u64.pow(d as u32);
        let xx = f.x(v);
        let _ = write!(
            out,
            "<line x1=\"{xx:.1}\" y1=\"{t}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>",
            t + ph + 4.0,
        );
        text(
            out,
            xx,
            t + ph + 15.0,
            11.0,
            "middle",
            "class=\"tick\"",
            &decade_label(v),
        );
        d += 1;
    }
    let _ = write!(
        out,
        "<rect x=\"{l}\" y=\"{t}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"black\"/>"
    );
    text(
        out,
        l + pw / 2.0,
        t + ph + 30.0,
        11.0,
        "middle",
        "",
        "migration latency (ms, log scale)",
    );
    vtext(
        out,
        14.0,
        t + ph / 2.0,
        11.0,
        "middle",
        "share of migrations done",
    );
}

/// Draws a step CDF per arm, each in its dash pattern; returns the
/// legend's entries (arm, label, whether it has a curve), which name an
/// arm whose curve another drew already.
fn curves<'a>(out: &mut String, f: &Frame, series: &[Series<'a>]) -> Vec<(&'a str, String, bool)> {
    let mut drawn: Vec<(&str, String)> = Vec::new();
    let mut legend = Vec::new();
    for (arm, pairs, p90, na) in series {
        let n: u64 = pairs.iter().map(|x| x.1).sum();
        if n == 0 {
            let why = if *na {
                "not applicable"
            } else {
                "no migrations"
            };
            legend.push((*arm, format!("{arm}: {why}"), false));
            continue;
        }
        let mut pts = format!("{:.1},{:.1} ", f.x(pairs[0].0), f.y(0.0));
        let mut acc = 0;
        for (v, c) in pairs {
            let before = acc as f64 / n as f64;
            acc += c;
            let _ = write!(
                pts,
                "{:.1},{:.1} {:.1},{:.1} ",
                f.x(*v),
                f.y(before),
                f.x(*v),
                f.y(acc as f64 / n as f64)
            );
        }
        let pts = pts.trim_end().to_string();
        let same = drawn.iter().find(|(_, p)| *p == pts).map(|(a, _)| *a);
        let _ = write!(
            out,
            "<polyline class=\"cdf\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{pts}\"><title>{arm}: {n} migrations, p90 {}</title></polyline>",
            color(arm),
            dash_attr(arm),
            ms(*p90)
        );
        let stats = format!("p90 {} (n={})", ms(*p90), thousands(n));
        legend.push((
            *arm,
            match same {
                Some(other) => format!("{arm}: identical to {other}, {stats}"),
                None => format!("{arm}: {stats}"),
            },
            true,
        ));
        drawn.push((arm, pts));
    }
    legend
}

/// ` stroke-dasharray="…"` for an arm drawn dashed, else nothing.
fn dash_attr(arm: &str) -> String {
    let dash = dashes(arm);
    if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    }
}

/// The legend, under the axis title: a line in the arm's colour and dash
/// (grey when it has no curve) and its label.
fn legend_svg(out: &mut String, f: &Frame, legend: &[(&str, String, bool)]) {
    let (l, ly0) = (f.l, f.t + f.ph + 40.0);
    for (i, (arm, label, has)) in legend.iter().enumerate() {
        let yy = ly0 + LEGEND_ROW * i as f64 + 7.0;
        let c = if *has { color(arm) } else { "#999" };
        let _ = write!(
            out,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"{c}\" stroke-width=\"3\"{}/>",
            l + 22.0,
            dash_attr(arm)
        );
        text(
            out,
            l + 28.0,
            yy + 3.5,
            LEGEND_FONT,
            "start",
            if *has {
                "class=\"legend\""
            } else {
                "class=\"legend\" fill=\"#777\""
            },
            label,
        );
    }
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

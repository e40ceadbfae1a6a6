//! Failed operations per 1,000 operations, per scenario and arm, as
//! grouped bars: on a linear axis when every bar reads beside the tallest,
//! else on a log axis of whole decades (0.28 beside 500). Each scenario's
//! name stands slanted under its group, whole. A not-applicable cell (no
//! client could run against the arm) is a hatched box labelled "n/a",
//! never a bar of 0.

use super::super::matrix::arms;
use super::super::xml;
use super::svg::{rate_label, svg_open, text, text_width, thousands, vtext};
use super::{color, scenarios};
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// Font size of the value labels above the bars.
const VALUE_FONT: f64 = 9.0;
/// Font size of the scenario names under the plot.
const NAME_FONT: f64 = 10.0;
/// A bar's width: wider than a value label standing on its end, so
/// neighbours' labels never touch.
const BAR: f64 = 14.0;
/// Height of the hatched box of a not-applicable cell.
const NA_H: f64 = 22.0;

/// What one cell of the chart holds.
enum Cell {
    /// Not run at all for this scenario and arm.
    Missing,
    /// Its clients could not run against the arm.
    NotApplicable,
    /// Failed, operations, failed per 1,000.
    Rate(u64, u64, f64),
}

fn cell(a: Option<&Aggregate>) -> Cell {
    match a {
        None => Cell::Missing,
        Some(a) if a.not_applicable() || a.metrics.operations == 0 => Cell::NotApplicable,
        Some(a) => Cell::Rate(
            a.metrics.ops_failed,
            a.metrics.operations,
            a.metrics.ops_failed as f64 * 1000.0 / a.metrics.operations as f64,
        ),
    }
}

/// A deployment label without the `key=value` pairs every label of the
/// axis shares (a bar group's name has little room): what sets it apart.
fn short(label: &str, s: &Summary) -> String {
    let shared = |pair: &str| {
        s.provenance
            .deployments
            .iter()
            .all(|l| l.split(',').any(|p| p == pair))
    };
    let own: Vec<&str> = label.split(',').filter(|p| !shared(p)).collect();
    if own.is_empty() {
        label.to_string()
    } else {
        own.join(",")
    }
}

/// Failed operations per 1,000 operations per scenario, as grouped bars
/// on the chart's [`Axis`], one bar per arm (colours as the legend, which stands
/// right of the plot), for the runs with client profile `profile`. Each
/// bar carries its rate above it, standing on its end so neighbours never
/// collide; its tooltip gives the counts. A short note instead of a plot
/// when none failed.
pub fn bars_svg(s: &Summary, profile: &str) -> String {
    let arms = arms(s);
    // One group per scenario, and per deployment on `--deployments`' axis.
    let find = |(sc, dep): (&str, &str), arm: &str| {
        s.aggregates.iter().find(|a| {
            a.scenario == sc && a.deployment == dep && a.server == arm && a.clients == profile
        })
    };
    let groups: Vec<(&str, &str)> = scenarios(s)
        .into_iter()
        .flat_map(|sc| {
            let mut deps: Vec<&str> = s
                .aggregates
                .iter()
                .filter(|a| a.scenario == sc)
                .map(|a| a.deployment.as_str())
                .collect();
            deps.dedup();
            deps.sort_by_key(|d| s.provenance.deployments.iter().position(|x| x == d));
            deps.dedup();
            deps.into_iter().map(move |d| (sc, d))
        })
        .filter(|g| arms.iter().any(|a| find(*g, a).is_some()))
        .collect();
    let names: Vec<String> = groups
        .iter()
        .map(|(sc, dep)| crate::report::matrix::scenario_label(sc, &short(dep, s)))
        .collect();
    let scenarios: Vec<&str> = names.iter().map(String::as_str).collect();
    let rates: Vec<f64> = groups
        .iter()
        .flat_map(|g| arms.iter().map(|a| cell(find(*g, a))))
        .filter_map(|c| match c {
            Cell::Rate(_, _, r) => Some(r),
            _ => None,
        })
        .collect();
    let seeds = s
        .aggregates
        .iter()
        .filter(|a| a.clients == profile)
        .map(|a| a.runs)
        .max()
        .unwrap_or(0);
    let title = format!("failed operations per 1,000 operations, per scenario, clients {profile}");
    if rates.iter().all(|r| *r == 0.0) {
        return empty_svg(&title, seeds, profile);
    }
    let legend: Vec<String> = arms
        .iter()
        .map(|a| a.to_string())
        .chain(["n/a: not applicable".to_string()])
        .collect();
    let f = Frame::new(&rates, &legend, arms.len(), &scenarios);
    let mut out = svg_open(f.w, f.h, &title, "bars");
    axes(&mut out, &f, profile, seeds);
    for (i, (g, name)) in groups.iter().zip(&scenarios).enumerate() {
        let cells: Vec<(&str, Cell)> = arms.iter().map(|a| (*a, cell(find(*g, a)))).collect();
        group(&mut out, &f, i, name, &cells);
    }
    legend_svg(&mut out, &f, &legend, &arms);
    out.push_str("</svg>");
    out
}

/// The note that stands for the chart when no operation failed.
fn empty_svg(title: &str, seeds: u64, profile: &str) -> String {
    const W: f64 = 720.0;
    const H: f64 = 44.0;
    let mut out = svg_open(W, H, title, "bars-empty");
    let _ = write!(
        out,
        "<text x=\"12\" y=\"27\" font-size=\"14\">No failed operations: every arm, every scenario, all {seeds} seeds (clients {}).</text></svg>",
        xml(profile)
    );
    out
}

/// Where the chart's parts stand: the plot's left, top, width and
/// height, one scenario's slot, the axis, the scenario names (each on one
/// line, slanted under its group), the picture's size.
struct Frame {
    l: f64,
    t: f64,
    ph: f64,
    pw: f64,
    slot: f64,
    axis: Axis,
    arms: usize,
    names: Vec<String>,
    w: f64,
    h: f64,
}

/// The value axis: linear when every bar above 0 stands at least
/// [`LINEAR_FLOOR`] of the tallest (each readable beside it), else log
/// over whole decades.
#[derive(Clone, Debug, PartialEq)]
enum Axis {
    /// Its ticks, from 0 to the top.
    Linear(Vec<f64>),
    /// The lowest and highest decade (powers of ten).
    Log(f64, f64),
}

/// The smallest bar above 0 a linear axis leaves readable, as a share of
/// the tallest (5 px of the plot's 240).
const LINEAR_FLOOR: f64 = 0.02;

/// The scenario names' slant: read upward to the right, each ending
/// under its group, never broken.
const SLANT_DEG: f64 = 40.0;

impl Axis {
    fn of(rates: &[f64]) -> Axis {
        let min_pos = rates
            .iter()
            .copied()
            .filter(|r| *r > 0.0)
            .fold(f64::MAX, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        if min_pos >= max * LINEAR_FLOOR {
            return Axis::Linear(super::svg::linear_ticks(max, 5));
        }
        // Whole decades, from at most 1 per 1,000 to the largest rate.
        let lo = min_pos.log10().floor().min(0.0);
        Axis::Log(lo, max.log10().ceil().max(lo + 1.0))
    }

    /// Where `v` stands, from 0 (the axis's foot) to 1 (its top).
    fn share(&self, v: f64) -> f64 {
        match self {
            Axis::Linear(ticks) => v / ticks.last().copied().unwrap_or(1.0).max(1e-9),
            Axis::Log(lo, hi) => (v.log10() - lo) / (hi - lo),
        }
        .clamp(0.0, 1.0)
    }

    /// The values its grid lines stand at.
    fn ticks(&self) -> Vec<f64> {
        match self {
            Axis::Linear(ticks) => ticks.clone(),
            Axis::Log(lo, hi) => (*lo as i32..=*hi as i32).map(|d| 10f64.powi(d)).collect(),
        }
    }

    fn words(&self) -> &'static str {
        match self {
            Axis::Linear(_) => "linear axis",
            Axis::Log(..) => "log axis (decades)",
        }
    }
}

impl Frame {
    /// The layout for `rates` (some above 0), the legend's labels, `arms`
    /// bars per group and one group per scenario.
    fn new(rates: &[f64], legend: &[String], arms: usize, scenarios: &[&str]) -> Frame {
        let legend_w = legend
            .iter()
            .map(|t| text_width(t, 11.0))
            .fold(0.0, f64::max);
        let value_h = text_width("1,000", VALUE_FONT) + 6.0;
        let (t, ph) = (46.0 + value_h, 240.0);
        let r = 16.0 + 16.0 + legend_w + 8.0;
        let slot =
            (BAR * arms as f64 + 22.0).max((720.0 - 64.0 - r) / scenarios.len().max(1) as f64);
        let (cos, sin) = (SLANT_DEG.to_radians().cos(), SLANT_DEG.to_radians().sin());
        // A slanted name reaches left of its group's middle by its width's
        // cosine: the plot starts right enough for the first ones.
        let l = scenarios
            .iter()
            .enumerate()
            .map(|(i, sc)| text_width(sc, NAME_FONT) * cos - slot * (i as f64 + 0.5) + 8.0)
            .fold(64.0, f64::max);
        let pw = slot * scenarios.len() as f64;
        let longest = scenarios
            .iter()
            .map(|sc| text_width(sc, NAME_FONT))
            .fold(0.0, f64::max);
        Frame {
            l,
            t,
            ph,
            pw,
            slot,
            axis: Axis::of(rates),
            arms,
            names: scenarios.iter().map(|s| s.to_string()).collect(),
            w: l + pw + r,
            h: t + ph + 14.0 + longest * sin + NAME_FONT + 8.0,
        }
    }

    /// The height of rate `v` on the axis.
    fn y(&self, v: f64) -> f64 {
        self.t + self.ph - self.axis.share(v) * self.ph
    }
}

/// The titles, the decade grid with its ticks, the axes, the hatch the
/// not-applicable cells are filled with.
fn axes(out: &mut String, f: &Frame, profile: &str, seeds: u64) {
    let (l, t, ph, pw) = (f.l, f.t, f.ph, f.pw);
    text(
        out,
        l,
        18.0,
        13.0,
        "start",
        "font-weight=\"bold\"",
        "Failed operations per 1,000 operations, per scenario and arm",
    );
    text(
        out,
        l,
        34.0,
        11.0,
        "start",
        "",
        &format!(
            "clients {profile} · over {seeds} seeds · {} · hover a bar for its counts",
            f.axis.words()
        ),
    );
    for v in f.axis.ticks() {
        let yy = f.y(v);
        let _ = write!(
            out,
            "<line x1=\"{l}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>",
            l + pw
        );
        text(
            out,
            l - 4.0,
            yy + 4.0,
            11.0,
            "end",
            "class=\"tick\"",
            &rate_label(v),
        );
    }
    let _ = write!(
        out,
        "<defs><pattern id=\"na-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f2f2f2\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#888\" stroke-width=\"2\"/></pattern></defs><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{:.1}\" stroke=\"black\"/><line x1=\"{l}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\"/>",
        t + ph,
        t + ph,
        l + pw,
        t + ph,
    );
    vtext(
        out,
        l - 46.0,
        t + ph / 2.0,
        11.0,
        "middle",
        "failed per 1,000 operations",
    );
}

/// Scenario `i`'s group: one bar (or hatched box) per arm with its label
/// standing on its end above it, and the scenario's name below.
fn group(out: &mut String, f: &Frame, i: usize, sc: &str, cells: &[(&str, Cell)]) {
    let (l, t, ph, slot) = (f.l, f.t, f.ph, f.slot);
    let x0 = l + slot * i as f64 + (slot - BAR * f.arms as f64) / 2.0;
    for (j, (arm, c)) in cells.iter().enumerate() {
        let bx = x0 + j as f64 * BAR;
        let cx = bx + BAR / 2.0;
        // The label's baseline, right of the bar's middle by the
        // share of the glyphs below it.
        let lx = cx + 0.3 * VALUE_FONT;
        match *c {
            Cell::Missing => {}
            Cell::NotApplicable => {
                let _ = write!(
                    out,
                    "<rect class=\"na\" x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{NA_H}\" fill=\"url(#na-hatch)\" stroke=\"{}\"><title>{} · {arm}: not applicable (its clients cannot run against this arm)</title></rect>",
                    t + ph - NA_H,
                    BAR - 1.0,
                    color(arm),
                    xml(sc)
                );
                vtext(out, lx, t + ph - NA_H - 3.0, VALUE_FONT, "start", "n/a");
            }
            Cell::Rate(failed, ops, rate) => {
                let hh = if rate > 0.0 {
                    (t + ph - f.y(rate)).max(2.0)
                } else {
                    0.0
                };
                let _ = write!(
                    out,
                    "<rect class=\"bar\" x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{hh:.1}\" fill=\"{}\"><title>{} · {arm}: {} failed of {} operations ({} per 1,000)</title></rect>",
                    t + ph - hh,
                    BAR - 1.0,
                    color(arm),
                    xml(sc),
                    thousands(failed),
                    thousands(ops),
                    rate_label(rate)
                );
                vtext(
                    out,
                    lx,
                    t + ph - hh - 3.0,
                    VALUE_FONT,
                    "start",
                    &rate_label(rate),
                );
            }
        }
    }
    let (cx, cy) = (l + slot * i as f64 + slot / 2.0, t + ph + 14.0);
    let _ = write!(
        out,
        "<text class=\"name\" x=\"{cx:.1}\" y=\"{cy:.1}\" transform=\"rotate(-{SLANT_DEG} {cx:.1} {cy:.1})\" font-size=\"{NAME_FONT}\" text-anchor=\"end\">{}</text>",
        xml(&f.names[i])
    );
}

/// The legend, right of the plot: one swatch per arm, then the hatch.
fn legend_svg(out: &mut String, f: &Frame, legend: &[String], arms: &[&str]) {
    let lx = f.l + f.pw + 16.0;
    for (i, label) in legend.iter().enumerate() {
        let ly = f.t + 16.0 * i as f64;
        let fill = arms.get(i).map_or("url(#na-hatch)", |a| color(a));
        let _ = write!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{ly:.1}\" width=\"12\" height=\"12\" fill=\"{fill}\" stroke=\"#888\" stroke-width=\"0.5\"/>"
        );
        text(
            out,
            lx + 16.0,
            ly + 10.0,
            11.0,
            "start",
            "class=\"legend\"",
            label,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Axis, Frame, SLANT_DEG};
    use crate::report::plots::svg::text_width;

    #[test]
    fn the_axis_is_linear_while_every_bar_reads_beside_the_tallest() {
        assert_eq!(
            Axis::of(&[0.0, 9.3, 83.0]),
            Axis::Linear(vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0])
        );
        assert_eq!(Axis::of(&[0.28, 500.0]), Axis::Log(-1.0, 3.0));
        let log = Axis::of(&[0.28, 500.0]);
        assert_eq!(log.ticks(), [0.1, 1.0, 10.0, 100.0, 1000.0]);
        assert!((log.share(10.0) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn slanted_names_stay_whole_and_inside_the_picture() {
        let long = "deploy-balancer-restart · store=shared,on_dead_upstream=repin";
        let names = [long, "eviction", long];
        let f = Frame::new(&[1.0, 50.0], &["guarded".into()], 6, &names);
        assert_eq!(f.names, names, "one line each, never cut");
        let cos = SLANT_DEG.to_radians().cos();
        for (i, n) in names.iter().enumerate() {
            let left = f.l + f.slot * (i as f64 + 0.5) - text_width(n, super::NAME_FONT) * cos;
            assert!(left >= 0.0, "{n} starts at {left}");
        }
        let below = f.h - (f.t + f.ph);
        assert!(
            below >= text_width(long, super::NAME_FONT) * SLANT_DEG.to_radians().sin(),
            "room under the plot: {below}"
        );
    }
}

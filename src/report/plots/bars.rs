//! Failed operations per 1,000 operations, per scenario and arm, as
//! grouped bars on a log axis: a scenario of 6 operations reads beside
//! one of 79,200. A not-applicable cell (no client could run against the
//! arm) is a hatched box labelled "n/a", never a bar of 0.

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

/// `name` cut into lines of at most `max` characters, after hyphens when
/// it can be.
fn wrap(name: &str, max: usize) -> Vec<String> {
    let max = max.max(4);
    let mut lines: Vec<String> = vec![String::new()];
    for part in name.split_inclusive('-') {
        let cur = lines.last_mut().expect("non-empty");
        if !cur.is_empty() && cur.chars().count() + part.chars().count() > max {
            lines.push(String::new());
        }
        let mut rest: Vec<char> = part.chars().collect();
        while !rest.is_empty() {
            let cur = lines.last_mut().expect("non-empty");
            let room = max - cur.chars().count();
            if room == 0 {
                lines.push(String::new());
                continue;
            }
            let take = room.min(rest.len());
            cur.extend(rest.drain(..take));
        }
    }
    lines
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
/// on a log axis, one bar per arm (colours as the legend, which stands
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
/// height, one scenario's slot, the log axis's decades, the scenario
/// names as wrapped, the picture's size.
struct Frame {
    l: f64,
    t: f64,
    ph: f64,
    pw: f64,
    slot: f64,
    lo: f64,
    hi: f64,
    arms: usize,
    names: Vec<Vec<String>>,
    w: f64,
    h: f64,
}

impl Frame {
    /// The layout for `rates` (some above 0), the legend's labels, `arms`
    /// bars per group and one group per scenario.
    fn new(rates: &[f64], legend: &[String], arms: usize, scenarios: &[&str]) -> Frame {
        // Log axis over whole decades, from at most 1 per 1,000 to the
        // largest rate.
        let min_pos = rates
            .iter()
            .copied()
            .filter(|r| *r > 0.0)
            .fold(f64::MAX, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        let lo = min_pos.log10().floor().min(0.0);
        let hi = max.log10().ceil().max(lo + 1.0);
        let legend_w = legend
            .iter()
            .map(|t| text_width(t, 11.0))
            .fold(0.0, f64::max);
        let value_h = text_width("1,000", VALUE_FONT) + 6.0;
        let (l, t, ph) = (64.0, 46.0 + value_h, 240.0);
        let r = 16.0 + 16.0 + legend_w + 8.0;
        let slot = (BAR * arms as f64 + 22.0).max((720.0 - l - r) / scenarios.len().max(1) as f64);
        let pw = slot * scenarios.len() as f64;
        let per_line = ((slot - 6.0) / (NAME_FONT * super::svg::CHAR_EM)) as usize;
        let names: Vec<Vec<String>> = scenarios.iter().map(|sc| wrap(sc, per_line)).collect();
        let name_lines = names.iter().map(Vec::len).max().unwrap_or(1);
        Frame {
            l,
            t,
            ph,
            pw,
            slot,
            lo,
            hi,
            arms,
            names,
            w: l + pw + r,
            h: t + ph + 8.0 + (NAME_FONT + 3.0) * name_lines as f64 + 8.0,
        }
    }

    /// The height of rate `v` on the log axis.
    fn y(&self, v: f64) -> f64 {
        self.t + self.ph - ((v.log10() - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0) * self.ph
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
        &format!("clients {profile} · over {seeds} seeds · log axis · hover a bar for its counts"),
    );
    let mut d = f.lo as i32;
    while d <= f.hi as i32 {
        let v = 10f64.powi(d);
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
        d += 1;
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
        18.0,
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
    let cx = l + slot * i as f64 + slot / 2.0;
    for (k, line) in f.names[i].iter().enumerate() {
        text(
            out,
            cx,
            t + ph + 8.0 + (NAME_FONT + 3.0) * (k + 1) as f64 - 3.0,
            NAME_FONT,
            "middle",
            "",
            line,
        );
    }
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
    use super::wrap;

    #[test]
    fn names_wrap_after_hyphens_within_the_width() {
        assert_eq!(
            wrap("seed-000-resume-then-post", 16),
            ["seed-000-resume-", "then-post"]
        );
        assert_eq!(wrap("eviction", 16), ["eviction"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        for line in wrap("a-very-long-scenario-name-indeed", 7) {
            assert!(line.chars().count() <= 7, "{line}");
        }
    }
}

//! Timelines as SVG: one run, or a group of runs (the recommended
//! configuration and the worst run on the same seed) stacked on one time
//! axis. A client's operations that overlap in time get rows of their own
//! inside its lane, so each reads as one operation.

use super::super::xml;
use super::svg::{linear_ticks, svg_open, text, trim_float};
use super::timeline::{rows, Mark, Timeline};
use crate::history::FaultKind;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Width of the picture.
const W: f64 = 1200.0;
/// Left margin (the lane labels), right margin.
const L: f64 = 140.0;
const R: f64 = 20.0;
/// A lane of one row; a bar in it.
const LANE_H: f64 = 16.0;
/// With rows: the pitch of a row and its bar's height.
const ROW_PITCH: f64 = 6.0;
const ROW_BAR: f64 = 5.0;

/// Colour of an operation's outcome in timelines.
fn outcome_color(outcome: &str) -> &'static str {
    match outcome {
        "failed" => "#d7191c",
        "degraded" => "#fdae61",
        "unresolved" => "#999999",
        _ => "#a6d96a",
    }
}

/// A timeline as SVG: x in simulated seconds with ticks, one labelled lane
/// per client shown, a legend.
pub fn timeline_svg(t: &Timeline) -> String {
    timeline_group_svg(std::slice::from_ref(t))
}

/// Timelines stacked on one time axis (the longest run's length), each
/// with its role and title above its lanes and the axis under them; one
/// legend for all.
pub fn timeline_group_svg(group: &[Timeline]) -> String {
    let end = group.iter().map(|t| t.end_us).max().unwrap_or(0).max(1) as f64;
    let pw = W - L - R;
    let x = |us: u64| L + us as f64 / end * pw;
    let heading = match group.first() {
        Some(t) if !t.group.is_empty() => t.group.clone(),
        Some(t) => t.title.clone(),
        None => String::new(),
    };
    let mut body = String::new();
    let mut y = 64.0;
    for (i, t) in group.iter().enumerate() {
        y = section(&mut body, t, y, &x, end, i + 1 == group.len());
    }
    let mut out = svg_open(W, y + 6.0, &heading, "timeline");
    text(
        &mut out,
        L,
        16.0,
        13.0,
        "start",
        "font-weight=\"bold\"",
        &heading,
    );
    legend(&mut out);
    out.push_str(&body);
    out.push_str("</svg>");
    out
}

/// The legend row under the heading.
fn legend(out: &mut String) {
    let mut lx = L;
    for label in ["ok", "degraded", "failed", "unresolved"] {
        let _ = write!(
            out,
            "<rect x=\"{lx:.1}\" y=\"30\" width=\"18\" height=\"9\" fill=\"{}\"/>",
            outcome_color(label)
        );
        text(out, lx + 22.0, 39.0, 11.0, "start", "", label);
        lx += 30.0 + 7.0 * label.len() as f64;
    }
    let _ = write!(
        out,
        "<rect x=\"{lx:.1}\" y=\"30\" width=\"18\" height=\"9\" fill=\"#2c7bb6\" opacity=\"0.18\"/>"
    );
    text(
        out,
        lx + 22.0,
        39.0,
        11.0,
        "start",
        "",
        "partition (its host's lanes; latency grey)",
    );
    lx += 300.0;
    let _ = write!(
        out,
        "<line x1=\"{:.1}\" y1=\"28\" x2=\"{:.1}\" y2=\"41\" stroke=\"#7b3294\" stroke-width=\"3\"/>",
        lx + 8.0,
        lx + 8.0
    );
    text(out, lx + 16.0, 39.0, 11.0, "start", "", "server restart");
    lx += 110.0;
    let _ = write!(
        out,
        "<path d=\"M{:.1},30 l4,9 l-8,0 z\" fill=\"black\"/><circle cx=\"{:.1}\" cy=\"34.5\" r=\"4\" fill=\"none\" stroke=\"#2c7bb6\" stroke-width=\"2\"/><path d=\"M{:.1},34.5 l5,-5 l5,5 l-5,5 z\" fill=\"#ffef00\" stroke=\"black\"/>",
        lx + 4.0,
        lx + 58.0,
        lx + 116.0,
    );
    text(out, lx + 12.0, 39.0, 11.0, "start", "", "drop");
    text(out, lx + 66.0, 39.0, 11.0, "start", "", "switch");
    text(
        out,
        lx + 130.0,
        39.0,
        11.0,
        "start",
        "",
        "duplicate execution",
    );
    text(
        out,
        L,
        54.0,
        11.0,
        "start",
        "",
        "A client's operations that overlap in time take rows of their own in its lane; a dashed green line marks the heal phase's start.",
    );
}

/// One timeline from `y0` down: its caption, lanes, faults, marks and
/// time axis (with the axis title when `last`); returns where the next
/// section starts.
fn section(
    out: &mut String,
    t: &Timeline,
    y0: f64,
    x: &impl Fn(u64) -> f64,
    end: f64,
    last: bool,
) -> f64 {
    caption(out, t, y0);
    let top = y0 + 40.0;
    let extent = |op: &super::OpBar| extent(x, op);
    let layout: Vec<(Vec<usize>, usize)> = t.lanes.iter().map(|ln| rows(&ln.ops, extent)).collect();
    let mut lane_y: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    let mut yy = top;
    for (ln, (_, n)) in t.lanes.iter().zip(&layout) {
        lane_y.insert(ln.client, (yy, lane_h(*n)));
        yy += lane_h(*n);
    }
    let lanes_h = (yy - top).max(LANE_H);
    faults(out, t, top, lanes_h, &lane_y, x);
    for (i, (ln, (row_of, n))) in t.lanes.iter().zip(&layout).enumerate() {
        lane(out, ln, lane_y[&ln.client], i % 2 == 1, (row_of, *n), x);
    }
    time_axis(out, (top, top + lanes_h), x, end, last)
}

/// The section's caption (its role and title) and the line under it:
/// how many clients are shown, the operations by outcome.
fn caption(out: &mut String, t: &Timeline, y0: f64) {
    let caption = if t.role.is_empty() {
        t.title.clone()
    } else {
        format!("{}: {}", t.role, t.title)
    };
    text(
        out,
        L,
        y0 + 14.0,
        12.0,
        "start",
        "font-weight=\"bold\"",
        &caption,
    );
    text(
        out,
        L,
        y0 + 28.0,
        11.0,
        "start",
        "",
        &format!(
            "{} of {} clients shown (those with failed or degraded operations first); operations over the whole run: {}",
            t.lanes.len(),
            t.clients,
            t.outcomes
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
}

/// An operation's extent as drawn (at least 2 units wide), rounded as
/// written, so rows keep drawn bars apart.
fn extent(x: &impl Fn(u64) -> f64, op: &super::OpBar) -> (f64, f64) {
    let round = |v: f64| (v * 10.0).round() / 10.0;
    let x0 = round(x(op.start_us));
    (x0, round(x(op.end_us).max(x0 + 2.0)))
}

/// A lane's height when its operations take `n` rows.
fn lane_h(n: usize) -> f64 {
    if n <= 1 {
        LANE_H
    } else {
        4.0 + ROW_PITCH * n as f64
    }
}

/// One client's lane at `(ly, lh)`: shaded when `shade`, its name, a bar
/// per operation in its row (`row_of`, of `n` rows) coloured by outcome,
/// then its marks (drops, transport switches, duplicate executions).
fn lane(
    out: &mut String,
    ln: &super::Lane,
    (ly, lh): (f64, f64),
    shade: bool,
    (row_of, n): (&[usize], usize),
    x: &impl Fn(u64) -> f64,
) {
    let pw = W - L - R;
    if shade {
        let _ = write!(
            out,
            "<rect x=\"{L}\" y=\"{ly:.1}\" width=\"{pw}\" height=\"{lh}\" fill=\"#000\" opacity=\"0.03\"/>"
        );
    }
    text(
        out,
        L - 6.0,
        ly + lh / 2.0 + 4.0,
        11.0,
        "end",
        "",
        &format!("client {} (host {})", ln.client, ln.host),
    );
    for (op, row) in ln.ops.iter().zip(row_of) {
        let (x0, x1) = extent(x, op);
        let (by, bh) = if n <= 1 {
            (ly + 3.0, LANE_H - 6.0)
        } else {
            (ly + 2.0 + ROW_PITCH * *row as f64, ROW_BAR)
        };
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
            "<rect class=\"op\" data-client=\"{}\" x=\"{x0:.1}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\"><title>{}</title></rect>",
            ln.client,
            x1 - x0,
            outcome_color(op.outcome),
            xml(&tip)
        );
    }
    for (tm, kind) in &ln.marks {
        let (xx, cy) = (x(*tm), ly + lh / 2.0);
        let _ = match *kind {
            Mark::Drop => write!(
                out,
                "<path d=\"M{xx:.1},{:.1} l4,9 l-8,0 z\" fill=\"black\"><title>drop at {:.3} s</title></path>",
                cy - 5.0,
                *tm as f64 / 1e6
            ),
            Mark::Switch => write!(
                out,
                "<circle cx=\"{xx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"none\" stroke=\"#2c7bb6\" stroke-width=\"2\"><title>transport switch at {:.3} s</title></circle>",
                *tm as f64 / 1e6
            ),
            Mark::Duplicate => write!(
                out,
                "<path d=\"M{:.1},{cy:.1} l5,-5 l5,5 l-5,5 z\" fill=\"#ffef00\" stroke=\"black\"><title>duplicate execution at {:.3} s</title></path>",
                xx - 5.0,
                *tm as f64 / 1e6
            ),
        };
    }
}

/// The x axis in simulated seconds under the lanes (from `top` to `ay`),
/// the same scale in every section, titled under the last; returns where
/// the next section starts.
fn time_axis(
    out: &mut String,
    (top, ay): (f64, f64),
    x: &impl Fn(u64) -> f64,
    end: f64,
    last: bool,
) -> f64 {
    let pw = W - L - R;
    let _ = write!(
        out,
        "<line x1=\"{L}\" y1=\"{ay:.1}\" x2=\"{:.1}\" y2=\"{ay:.1}\" stroke=\"black\"/><line x1=\"{L}\" y1=\"{top:.1}\" x2=\"{L}\" y2=\"{ay:.1}\" stroke=\"black\"/>",
        L + pw
    );
    for s in linear_ticks(end / 1e6, 12) {
        let us = (s * 1e6) as u64;
        if us as f64 > end + 1.0 {
            break;
        }
        let xx = x(us);
        let _ = write!(
            out,
            "<line class=\"tick\" x1=\"{xx:.1}\" y1=\"{ay:.1}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"black\"/>",
            ay + 5.0,
        );
        text(out, xx, ay + 17.0, 11.0, "middle", "", &trim_float(s));
    }
    if last {
        text(
            out,
            L + pw / 2.0,
            ay + 33.0,
            11.0,
            "middle",
            "",
            "simulated time (s)",
        );
        ay + 40.0
    } else {
        ay + 30.0
    }
}

/// Fault windows: restarts and latency over every lane, a partition
/// over the lanes of its host; the heal phase's start.
fn faults(
    out: &mut String,
    t: &Timeline,
    top: f64,
    lanes_h: f64,
    lane_y: &BTreeMap<u32, (f64, f64)>,
    x: &impl Fn(u64) -> f64,
) {
    for f in &t.faults {
        let (fill, op) = match f.kind {
            FaultKind::Restart => ("#7b3294", 0.25),
            FaultKind::Partition => ("#2c7bb6", 0.18),
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
        match (f.kind, f.host) {
            (FaultKind::Restart, _) => {
                let xx = x(f.start_us);
                let _ = write!(
                    out,
                    "<line x1=\"{xx:.1}\" y1=\"{:.1}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#7b3294\" stroke-width=\"3\"><title>server restart at {:.3} s</title></line>",
                    top - 4.0,
                    top + lanes_h,
                    f.start_us as f64 / 1e6,
                );
            }
            (_, Some(host)) => {
                for ln in t.lanes.iter().filter(|ln| ln.host == host) {
                    let (ly, lh) = lane_y[&ln.client];
                    let _ = write!(
                        out,
                        "<rect x=\"{:.1}\" y=\"{ly:.1}\" width=\"{wdt:.1}\" height=\"{lh}\" fill=\"{fill}\" opacity=\"{op}\"><title>{}</title></rect>",
                        x(f.start_us),
                        xml(&tip)
                    );
                }
            }
            _ => {
                let _ = write!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{wdt:.1}\" height=\"{lanes_h}\" fill=\"{fill}\" opacity=\"{op}\"><title>{}</title></rect>",
                    x(f.start_us),
                    xml(&tip)
                );
            }
        }
    }
    if let Some(hs) = t.heal_us {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#1b7837\" stroke-dasharray=\"4,3\"><title>heal phase from {:.3} s</title></line>",
            x(hs),
            top - 4.0,
            x(hs),
            top + lanes_h,
            hs as f64 / 1e6
        );
    }
}

//! `eras.html`'s chart: one horizontal bar per era and arm, the failed
//! operations per 1,000 of the arm's best client profile, on a linear
//! axis from 0 (labels never broken: each row's label is one line).

use super::svg::{linear_ticks, rate_label, svg_open, text, text_width};
use std::fmt::Write;

/// One bar: the era, the arm, its best profile and that profile's rate.
pub struct EraBar {
    pub era: &'static str,
    pub arm: String,
    pub profile: String,
    pub rate: f64,
}

/// The chart; an empty string when there is nothing to draw.
pub fn era_bars_svg(bars: &[EraBar]) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let label = |b: &EraBar| format!("{} · {}", b.era, b.arm);
    let size = 12.0;
    let l = bars
        .iter()
        .map(|b| text_width(&label(b), size))
        .fold(0.0, f64::max)
        + 16.0;
    let (w, row, t) = (900.0, 22.0, 24.0);
    let pw = w - l - 170.0;
    let h = t + row * bars.len() as f64 + 30.0;
    let max = bars.iter().map(|b| b.rate).fold(0.0, f64::max);
    let ticks = linear_ticks(max, 5);
    let top = ticks.last().copied().unwrap_or(1.0).max(1e-9);
    let x = |v: f64| l + v / top * pw;
    let mut out = svg_open(w, h, "failed per 1,000 per era and arm", "era-bars");
    for tk in &ticks {
        let _ = write!(
            out,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{t}\" y2=\"{1:.1}\" stroke=\"#ddd\"/>",
            x(*tk),
            h - 26.0
        );
        text(
            &mut out,
            x(*tk),
            h - 12.0,
            11.0,
            "middle",
            "",
            &rate_label(*tk),
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = t + row * i as f64;
        text(&mut out, l - 8.0, y + 15.0, size, "end", "", &label(b));
        let _ = write!(
            out,
            "<rect x=\"{l:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} · {} with {} clients: {} failed per 1,000</title></rect>",
            y + 3.0,
            (x(b.rate) - l).max(1.0),
            row - 6.0,
            super::color(&b.arm),
            b.era,
            crate::report::xml(&b.arm),
            crate::report::xml(&b.profile),
            rate_label(b.rate)
        );
        text(
            &mut out,
            x(b.rate) + 6.0,
            y + 15.0,
            11.0,
            "start",
            "",
            &format!("{} ({})", rate_label(b.rate), b.profile),
        );
    }
    out.push_str("</svg>");
    out
}

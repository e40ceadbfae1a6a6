//! What the plots share: the SVG document, text placed from an estimate
//! of the box it covers (so a layout can keep labels apart and inside the
//! picture), and number formats.

use super::super::xml;
use std::fmt::Write;

/// Width of one character as a share of the font size: a generous
/// average for sans-serif digits and lower case, so a box estimated with
/// it holds the drawn text.
pub(super) const CHAR_EM: f64 = 0.62;

/// The estimated width of `s` at font size `size`.
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * CHAR_EM * size
}

/// The opening of an SVG document `w` × `h` with its title and a white
/// background; font size 11 unless a text says otherwise.
pub(super) fn svg_open(w: f64, h: f64, title: &str, class: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\"><title>{}</title><rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>",
        xml(title)
    )
}

/// A `<text>` at (`x`, `y`), font size `size`, anchored `anchor`
/// (`start`, `middle`, `end`), with `attrs` (more attributes, may be
/// empty) and `content` escaped.
pub(super) fn text(
    out: &mut String,
    x: f64,
    y: f64,
    size: f64,
    anchor: &str,
    attrs: &str,
    content: &str,
) {
    let _ = write!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" text-anchor=\"{anchor}\"{}{attrs}>{}</text>",
        if attrs.is_empty() { "" } else { " " },
        xml(content)
    );
}

/// A `<text>` read bottom to top, starting at (`x`, `y`) (its baseline is
/// the vertical line through `x`; the glyphs stand left of it).
pub(super) fn vtext(out: &mut String, x: f64, y: f64, size: f64, anchor: &str, content: &str) {
    let _ = write!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" transform=\"rotate(-90 {x:.1} {y:.1})\" font-size=\"{size}\" text-anchor=\"{anchor}\">{}</text>",
        xml(content)
    );
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

pub(super) use crate::report::numbers::thousands;

/// A rate as a short label: whole numbers from 10 up (with thousands
/// separators), one decimal from 0.1, two below.
pub(super) fn rate_label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v >= 9.95 {
        thousands(v.round() as u64)
    } else if v >= 0.095 {
        trim_float_to(v, 1)
    } else {
        trim_float_to(v, 2)
    }
}

/// `v` with at most `places` decimals, trailing zeros dropped.
fn trim_float_to(v: f64, places: usize) -> String {
    let s = format!("{v:.places$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `2.0` as `2`, `0.5` as `0.5`.
pub(super) fn trim_float(v: f64) -> String {
    trim_float_to(v, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_short() {
        assert_eq!(rate_label(0.0), "0");
        assert_eq!(rate_label(1000.0), "1,000");
        assert_eq!(rate_label(489.58), "490");
        assert_eq!(rate_label(4.51), "4.5");
        assert_eq!(rate_label(1.0), "1");
        assert_eq!(rate_label(0.05), "0.05");
        assert_eq!(trim_float(2.0), "2");
        assert_eq!(trim_float(0.5), "0.5");
    }
}

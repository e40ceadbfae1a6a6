//! The SVG plots, written by hand (plain `<rect>`, `<polyline>`, `<text>`
//! and `<title>` tooltips, no scripts): failed operations per 1,000
//! operations per scenario as grouped bars (`bars.rs`), per-scenario
//! migration-latency CDFs as small multiples (`cdf.rs`), and Jepsen-style
//! timelines of runs (`timeline.rs` reads a history, `timeline_svg.rs`
//! draws one or a stacked group on one time axis). `svg.rs` holds the
//! pieces they share: the document, text placed from an estimate of its
//! box, number formats.

mod bars;
mod cdf;
mod svg;
mod timeline;
mod timeline_svg;

pub use bars::bars_svg;
pub use cdf::{cdf_panel_svg, cdf_panels};
pub use timeline::{share_lanes, FaultWindow, Lane, OpBar, Timeline};
pub use timeline_svg::{timeline_group_svg, timeline_svg};

use crate::sweep::Summary;

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

/// An arm's dash pattern in line plots (empty: solid), so two arms'
/// curves that coincide still show both: the gaps of one let the other
/// through.
pub(super) fn dashes(arm: &str) -> &'static str {
    match arm {
        "unguarded" => "",
        "keys" => "8,3",
        "guarded" => "2,2",
        "cancel" => "10,3,2,3",
        "rmcp" => "4,4",
        "rmcp-es" => "1,3",
        _ => "6,2,1,2",
    }
}

/// The scenarios of a summary, in summary order.
fn scenarios(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    v.dedup();
    v
}

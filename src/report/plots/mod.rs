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
mod era_bars;
mod svg;
mod timeline;
mod timeline_svg;

pub use bars::bars_svg;
pub use cdf::{cdf_panel_svg, cdf_panels};
pub use era_bars::{era_bars_svg, EraBar};
pub use timeline::{share_lanes, FaultWindow, Lane, OpBar, Timeline};
pub use timeline_svg::{timeline_group_svg, timeline_svg};

use crate::hosts::sut::ArmEntry;
use crate::sweep::Summary;

/// An arm's colour in every plot and legend ([`ArmEntry::colour`]; grey
/// for a name no entry has, as a summary from elsewhere may hold).
pub(super) fn color(arm: &str) -> &'static str {
    ArmEntry::named(arm).map_or("#555555", |e| e.colour)
}

/// An arm's dash pattern in line plots ([`ArmEntry::dashes`]).
pub(super) fn dashes(arm: &str) -> &'static str {
    ArmEntry::named(arm).map_or("6,2,1,2", |e| e.dashes)
}

/// The scenarios of a summary, in summary order.
fn scenarios(s: &Summary) -> Vec<&str> {
    let mut v: Vec<&str> = s.aggregates.iter().map(|a| a.scenario.as_str()).collect();
    v.dedup();
    v
}

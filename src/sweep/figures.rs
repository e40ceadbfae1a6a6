//! A run's latency figures held to the histograms beside them: what a
//! summary loaded from disk must satisfy before a sweep merges it.

use crate::oracle::{self, Latency};
use crate::run::RunReport;

/// Figures no run can have: a histogram with a value outside its bounds
/// (1 µs to 1 h), a zero count, values out of order, or samples that do
/// not match the run's own latency figures.
pub fn check_figures(r: &RunReport) -> Result<(), String> {
    let m = &r.metrics;
    check_hist(
        "migration",
        &r.migration_latency_hist_us,
        &m.migration_latency_us,
    )?;
    check_hist(
        "delivery",
        &r.delivery_latency_hist_us,
        &m.delivery_latency_us,
    )
}

/// One of a run's latency histograms against its figures.
fn check_hist(name: &str, pairs: &[(u64, u64)], figures: &Latency) -> Result<(), String> {
    let mut hist = oracle::new_hist();
    let mut samples = 0u64;
    let mut last = 0u64;
    for &(v, n) in pairs {
        let outside = || {
            format!(
                "{name}_latency_hist_us value {v} is outside the histogram's 1..={} µs",
                oracle::HIST_MAX_US
            )
        };
        if !(1..=oracle::HIST_MAX_US).contains(&v) {
            return Err(outside());
        }
        hist.record_n(v, n).map_err(|_| outside())?;
        if n == 0 || v <= last {
            return Err(format!(
                "{name}_latency_hist_us has ({v}, {n}): values rise and counts are at least 1"
            ));
        }
        last = v;
        samples = samples
            .checked_add(n)
            .ok_or_else(|| format!("{name}_latency_hist_us counts overflow a 64-bit count"))?;
    }
    let of = Latency::of(&hist);
    if of != *figures || samples != of.count {
        return Err(format!(
            "{name}_latency_hist_us ({samples} samples) does not match \
             metrics.{name}_latency_us (count {})",
            figures.count
        ));
    }
    Ok(())
}

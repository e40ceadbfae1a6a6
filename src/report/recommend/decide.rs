//! The rule that turns standings into one answer, the same for every
//! output: each rate's 95 % interval over seeds, ties judged against the
//! best configuration only, and among the tied the fewest mechanisms
//! first.
//!
//! **The interval.** Seeds are the units sampled: seed *i* ran `o_i`
//! operations of which `f_i` failed. The rate is the pooled ratio
//! `R = Σf / Σo`; its standard error is the ratio estimator's,
//! `sqrt(Σ (f_i − R·o_i)² / (n(n−1))) / ō` with `ō = Σo / n`, and the
//! interval is `R ± t(0.975, n−1) · SE`, clipped to 0–1,000 per 1,000.
//! One seed gives no spread: its interval is the rate itself.
//!
//! **Ties.** The best is the lowest rate. A configuration is tied with it
//! when its interval reaches down to the best's upper end; ties are never
//! chained (two configurations each tied with the best need not be tied
//! with each other).
//!
//! **Mechanisms.** An arm counts the mechanisms it adds on its baseline
//! chain (`unguarded` 0, `keys` 1, `guarded` 2); a client profile counts
//! its parts (`keys+cursors` 2; the scenarios' own clients and `plain`
//! 0); settings count one each, the era aside (a condition, never a
//! setting to deploy).

use super::Standing;
use crate::hosts::sut::ArmEntry;

/// Fewer seeds than this, and a page says the seeds are too few to
/// separate configurations.
pub const ENOUGH_SEEDS: usize = 5;

/// Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 0.975 quantile of Student's t with `df` degrees of freedom (`df`
/// of at least 1; past 30 from the standard table's rows, then the normal).
fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The 95 % interval (per 1,000) of the pooled rate of per-seed
/// `(failed, operations)` points; seeds that ran nothing are left out.
pub fn interval(points: &[(u64, u64)]) -> (f64, f64) {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(_, o)| *o > 0)
        .map(|&(f, o)| (f as f64, o as f64))
        .collect();
    let n = pts.len();
    let (f, o): (f64, f64) = pts.iter().fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
    if n == 0 || o == 0.0 {
        return (0.0, 0.0);
    }
    let r = f / o;
    if n == 1 {
        return (r * 1000.0, r * 1000.0);
    }
    let mean_o = o / n as f64;
    let ss: f64 = pts.iter().map(|&(fi, oi)| (fi - r * oi).powi(2)).sum();
    let se = (ss / (n as f64 * (n as f64 - 1.0))).sqrt() / mean_o;
    let half = t_975(n - 1) * se;
    (
        ((r - half) * 1000.0).max(0.0),
        ((r + half) * 1000.0).min(1000.0),
    )
}

/// An arm's mechanisms: the steps from it down its baseline chain.
pub fn arm_mechanisms(arm: &str) -> usize {
    let mut n = 0;
    let mut at = arm;
    while let Some(base) = ArmEntry::named(at).and_then(|e| e.baseline) {
        n += 1;
        at = base;
    }
    n
}

/// A client profile's mechanisms: its `+`-joined parts, `plain` and the
/// scenarios' own clients none.
pub fn profile_mechanisms(profile: &str) -> usize {
    if profile == crate::run::AS_WRITTEN || profile == "plain" {
        0
    } else {
        profile.split('+').count()
    }
}

/// The settings one deploys: every override but the era's.
pub fn deployed_settings(settings: &[String]) -> impl Iterator<Item = &String> {
    settings.iter().filter(|s| !s.starts_with("era="))
}

/// (arm, client profile, settings) mechanisms, compared in that order.
pub fn mechanisms(x: &Standing) -> (usize, usize, usize) {
    (
        arm_mechanisms(&x.server),
        profile_mechanisms(&x.clients),
        deployed_settings(&x.settings).count(),
    )
}

/// `x` is tied with `best`: its interval reaches `best`'s upper end.
pub fn tied(x: &Standing, best: &Standing) -> bool {
    x.operations > 0 && x.interval.0 <= best.interval.1
}

/// How a decision reads, from the standings it ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// One configuration is best, alone.
    Alone,
    /// The first of several tied with the best (fewest mechanisms).
    Tied,
    /// Nothing failed anywhere: the scenarios do not separate them.
    NothingFails,
}

/// What the ordered `ranked` say.
pub fn verdict(ranked: &[Standing]) -> Verdict {
    if ranked.len() > 1 && ranked.iter().all(|x| x.failed == 0) {
        Verdict::NothingFails
    } else if ranked.iter().filter(|x| x.tied).count() > 1 {
        Verdict::Tied
    } else {
        Verdict::Alone
    }
}

/// The sentence every output gives about ties and noise (empty when
/// there is nothing to say), in Markdown.
pub fn noise_sentence(ranked: &[Standing], seeds: usize) -> String {
    let mut out = String::new();
    match verdict(ranked) {
        Verdict::NothingFails => out.push_str(
            "No configuration failed an operation: these scenarios and seeds do not separate them, so the one with the fewest mechanisms is named.",
        ),
        Verdict::Tied => {
            let names: Vec<String> = ranked
                .iter()
                .filter(|x| x.tied)
                .skip(1)
                .map(|x| format!("{} ({})", x.name(), super::rate_text(x.rate())))
                .collect();
            out.push_str(&format!(
                "Tied with it (their 95 % intervals overlap the best's): {}. Among tied configurations the one with the fewest mechanisms (arm, then client profile, then settings) is named first.",
                names.join(", ")
            ));
        }
        Verdict::Alone => {}
    }
    if seeds < ENOUGH_SEEDS {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&format!(
            "With {seeds} seed{} (fewer than {ENOUGH_SEEDS}) the seeds are too few to separate configurations: read close rates as ties.",
            if seeds == 1 { "" } else { "s" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_has_no_spread_and_equal_seeds_none_either() {
        assert_eq!(interval(&[(3, 1000)]), (3.0, 3.0));
        let (lo, hi) = interval(&[(2, 1000), (2, 1000), (2, 1000)]);
        assert!((lo - 2.0).abs() < 1e-9 && (hi - 2.0).abs() < 1e-9);
        assert_eq!(interval(&[(0, 0), (0, 0)]), (0.0, 0.0));
    }

    #[test]
    fn the_interval_is_the_ratio_estimator_with_students_t() {
        // Two seeds of 1,000 operations, 1 and 3 failed: R = 2 per 1,000;
        // residuals -1 and +1, SE = sqrt(2 / 2) / 1000 = 0.001; t(1) = 12.706.
        let (lo, hi) = interval(&[(1, 1000), (3, 1000)]);
        assert_eq!(lo, 0.0, "clipped at zero");
        assert!((hi - (2.0 + 12.706)).abs() < 1e-6, "{hi}");
        // Five seeds narrow it: t(4) = 2.776.
        let pts = [(1, 1000), (3, 1000), (2, 1000), (2, 1000), (2, 1000)];
        let (lo, hi) = interval(&pts);
        let se = (2.0f64 / 20.0).sqrt() / 1000.0;
        assert!((hi - (2.0 + 2.776 * se * 1000.0)).abs() < 1e-6, "{hi}");
        assert!((lo - (2.0 - 2.776 * se * 1000.0)).abs() < 1e-6, "{lo}");
    }

    #[test]
    fn mechanisms_count_the_arm_chain_the_profile_parts_and_settings_but_the_era() {
        assert_eq!(arm_mechanisms("unguarded"), 0);
        assert_eq!(arm_mechanisms("keys"), 1);
        assert_eq!(arm_mechanisms("guarded"), 2);
        assert_eq!(arm_mechanisms("rmcp"), 0);
        assert_eq!(profile_mechanisms(crate::run::AS_WRITTEN), 0);
        assert_eq!(profile_mechanisms("plain"), 0);
        assert_eq!(profile_mechanisms("keys+cursors"), 2);
        assert_eq!(profile_mechanisms("tasks"), 1);
        let s = [
            "era=2026-07-28".to_string(),
            "server.effects=transactional".into(),
        ];
        assert_eq!(deployed_settings(&s).count(), 1);
    }
}

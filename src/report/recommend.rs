// placeholder: the lead's module replaces this file at merge
//! The configuration to deploy among those a summary ran.

use super::matrix::{arm_rank, profile_rank};
use crate::sweep::Summary;
use std::collections::BTreeMap;

/// A configuration to deploy: the arm and the client profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recommendation {
    /// The server arm.
    pub server: String,
    /// The client profile.
    pub clients: String,
}

/// The (server, clients) configuration with the fewest failed operations
/// per 1,000 operations summed over scenarios (not-applicable aggregates
/// left out); ties go to report order. `None` for an empty summary.
pub fn recommend(s: &Summary) -> Option<Recommendation> {
    let mut sums: BTreeMap<(usize, usize, &str, &str), f64> = BTreeMap::new();
    for a in &s.aggregates {
        let key = (
            profile_rank(&a.clients),
            arm_rank(&a.server),
            a.clients.as_str(),
            a.server.as_str(),
        );
        let sum = sums.entry(key).or_insert(0.0);
        if !a.not_applicable() && a.metrics.operations > 0 {
            *sum += a.metrics.ops_failed as f64 * 1000.0 / a.metrics.operations as f64;
        }
    }
    // The map iterates in report order, so the first minimum wins ties.
    let mut best: Option<(&str, &str, f64)> = None;
    for ((_, _, clients, server), v) in &sums {
        if best.is_none_or(|(_, _, b)| *v < b) {
            best = Some((clients, server, *v));
        }
    }
    best.map(|(clients, server, _)| Recommendation {
        server: server.to_string(),
        clients: clients.to_string(),
    })
}

//! Which runs a report draws as timelines: per affected scenario the
//! worst run, and beside it the recommended configuration's run on the
//! same scenario and seed. The timelines, the "worth a look" table and
//! `compare` (which has them run for their histories) read the same picks.

use super::matrix::{arm_rank, profile_rank};
use super::recommend::recommend;
use crate::run::RunReport;
use crate::sweep::Summary;

/// Per scenario with any failed or degraded operation (or a run failing
/// its expectations), the one run a timeline draws: most failed
/// operations, then failing expectations, then most degraded; ties go to
/// the arm and client profile first in report order, then the lowest seed.
/// At most one run per scenario, so compare re-runs at most as many runs
/// as there are scenarios.
pub fn pick_timeline_runs(s: &Summary) -> Vec<&RunReport> {
    let mut out = Vec::new();
    for sc in super::scenarios(s) {
        let best = s
            .runs
            .iter()
            .filter(|r| r.scenario == sc)
            .filter(|r| r.metrics.ops_failed > 0 || r.metrics.ops_degraded > 0 || r.failed())
            .max_by_key(|r| {
                (
                    r.metrics.ops_failed,
                    r.failed(),
                    r.metrics.ops_degraded,
                    std::cmp::Reverse((
                        profile_rank(&r.clients),
                        arm_rank(&r.server),
                        r.server.as_str(),
                        r.seed,
                    )),
                )
            });
        out.extend(best);
    }
    out
}

/// Per picked run (see [`pick_timeline_runs`]), the group of runs its
/// timeline draws, each with its role: the recommended configuration's
/// run on the same scenario and seed first (when it is another run and
/// applies there), then the worst run. The recommendation is
/// [`recommend`]'s.
pub fn pick_timeline_groups(s: &Summary) -> Vec<Vec<(&RunReport, String)>> {
    let rec = recommend(s);
    pick_timeline_runs(s)
        .into_iter()
        .map(|worst| {
            let Some(rec) = &rec else {
                return vec![(worst, "worst run".to_string())];
            };
            if worst.server == rec.server && worst.clients == rec.clients {
                return vec![(worst, "worst run, and the recommended configuration".into())];
            }
            let applies = s.aggregates.iter().any(|a| {
                a.scenario == worst.scenario
                    && a.server == rec.server
                    && a.clients == rec.clients
                    && !a.not_applicable()
            });
            let same_seed = s.runs.iter().find(|r| {
                r.scenario == worst.scenario
                    && r.seed == worst.seed
                    && r.server == rec.server
                    && r.clients == rec.clients
            });
            match same_seed {
                Some(r) if applies => vec![
                    (r, "recommended configuration".to_string()),
                    (worst, "worst run".to_string()),
                ],
                _ => vec![(
                    worst,
                    format!(
                        "worst run (the recommended {}, clients {}, does not apply here)",
                        rec.server, rec.clients
                    ),
                )],
            }
        })
        .collect()
}

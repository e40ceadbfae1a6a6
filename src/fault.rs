//! The fault plan: an explicit, printable list of faults drawn from the
//! `faults` child seed before the run, the same for both servers.

use crate::history::FaultKind;
use crate::scenario::{Fault, Scenario};
use crate::seed;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every fault of one run, in a canonical order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FaultPlan {
    /// The faults.
    pub faults: Vec<Fault>,
}

impl FaultPlan {
    /// Draws the plan for `scenario` under `root_seed`: the explicit faults
    /// plus whatever the generators produce.
    pub fn draw(scenario: &Scenario, root_seed: u64) -> FaultPlan {
        let mut rng = ChaCha8Rng::seed_from_u64(seed::child(root_seed, "faults"));
        let spec = &scenario.faults;
        let mut faults = spec.explicit.clone();
        let span = scenario.duration_ms.max(1);
        if spec.drop_rate > 0.0 {
            let mut client = 0u32;
            for g in &scenario.clients {
                for _ in 0..g.count {
                    for call in 0..g.calls {
                        if rng.random_bool(spec.drop_rate) {
                            let after_event = rng.random_range(1..=g.chunks);
                            faults.push(Fault::Drop {
                                client,
                                call,
                                after_event,
                            });
                        }
                    }
                    client += 1;
                }
            }
        }
        // Every transport-switch client switches once (unless the explicit
        // faults already say when), after a drawn call.
        let explicit_switch: std::collections::BTreeSet<u32> = spec
            .explicit
            .iter()
            .filter_map(|f| match f {
                Fault::Switch { client, .. } => Some(*client),
                _ => None,
            })
            .collect();
        let mut client = 0u32;
        for g in &scenario.clients {
            for _ in 0..g.count {
                if g.behaviour == crate::scenario::Behaviour::TransportSwitch
                    && !explicit_switch.contains(&client)
                {
                    let after_call = rng.random_range(0..g.calls.saturating_sub(1).max(1));
                    faults.push(Fault::Switch { client, after_call });
                }
                client += 1;
            }
        }
        // Only hosts that run clients exist in the world.
        let hosts = scenario
            .network
            .client_hosts
            .min(scenario.client_count())
            .max(1);
        let window = |rng: &mut ChaCha8Rng, range: Option<[u64; 2]>| {
            let [lo, hi] = range.unwrap_or([span / 20, span / 5]);
            let len = rng.random_range(lo.min(hi)..=hi.max(lo)).max(1);
            let at = rng.random_range(0..=span.saturating_sub(len));
            (at, len)
        };
        for _ in 0..spec.partitions {
            let host = rng.random_range(0..hosts);
            let (at_ms, duration_ms) = window(&mut rng, spec.partition_ms);
            faults.push(Fault::Partition {
                host,
                at_ms,
                duration_ms,
            });
        }
        for _ in 0..spec.restarts {
            let at_ms = rng.random_range(span / 10..=span * 9 / 10);
            faults.push(Fault::Restart { at_ms });
        }
        for _ in 0..spec.latency_spikes {
            let host = rng.random_range(0..hosts);
            let (at_ms, duration_ms) = window(&mut rng, spec.latency_spike_ms);
            faults.push(Fault::Latency {
                host,
                at_ms,
                duration_ms,
                max_ms: spec
                    .latency_spike_max_ms
                    .max(scenario.network.latency_ms[1]),
            });
        }
        faults.sort();
        faults.dedup_by(|a, b| match (a, b) {
            // One drop per client call: keep the first drawn position.
            (
                Fault::Drop {
                    client: c1,
                    call: n1,
                    ..
                },
                Fault::Drop {
                    client: c2,
                    call: n2,
                    ..
                },
            ) => c1 == c2 && n1 == n2,
            _ => false,
        });
        FaultPlan { faults }
    }

    /// Drops planned for one client: call → events before the drop.
    pub fn drops_for(&self, client: u32) -> BTreeMap<u32, u32> {
        self.faults
            .iter()
            .filter_map(|f| match f {
                Fault::Drop {
                    client: c,
                    call,
                    after_event,
                } if *c == client => Some((*call, *after_event)),
                _ => None,
            })
            .collect()
    }

    /// The call after which a client switches transport, if planned.
    pub fn switch_for(&self, client: u32) -> Option<u32> {
        self.faults.iter().find_map(|f| match f {
            Fault::Switch {
                client: c,
                after_call,
            } if *c == client => Some(*after_call),
            _ => None,
        })
    }

    /// Faults the world schedules in time (all but drops), by start time.
    pub fn timed(&self) -> Vec<(u64, Fault)> {
        let mut v: Vec<(u64, Fault)> = self
            .faults
            .iter()
            .filter_map(|f| match f {
                Fault::Partition { at_ms, .. }
                | Fault::Restart { at_ms }
                | Fault::Latency { at_ms, .. } => Some((*at_ms, f.clone())),
                Fault::Drop { .. } | Fault::Switch { .. } => None,
            })
            .collect();
        v.sort();
        v
    }

    /// Faults planned, by kind.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for f in &self.faults {
            *m.entry(kind_name(f).to_string()).or_insert(0) += 1;
        }
        m
    }

    /// The plan as TOML `[[faults.explicit]]` tables, replayable as-is.
    pub fn to_toml(&self) -> String {
        #[derive(Serialize)]
        struct Wrap<'a> {
            explicit: &'a [Fault],
        }
        toml::to_string(&Wrap {
            explicit: &self.faults,
        })
        .expect("faults serialize")
    }
}

/// A fault's kind ([`FaultKind`], the kinds' registry).
pub fn kind_of(f: &Fault) -> FaultKind {
    match f {
        Fault::Drop { .. } => FaultKind::Drop,
        Fault::Partition { .. } => FaultKind::Partition,
        Fault::Restart { .. } => FaultKind::Restart,
        Fault::Latency { .. } => FaultKind::Latency,
        Fault::Switch { .. } => FaultKind::Switch,
    }
}

/// The snake_case kind of a fault.
pub fn kind_name(f: &Fault) -> &'static str {
    kind_of(f).name()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario::parse(
            r#"
name = "t"
duration_ms = 10000
[[clients]]
behaviour = "resume"
count = 20
calls = 10
[faults]
drop_rate = 0.2
partitions = 3
restarts = 1
latency_spikes = 2
latency_spike_max_ms = 50
[[faults.explicit]]
kind = "restart"
at_ms = 5
"#,
        )
        .unwrap()
    }

    #[test]
    fn the_plan_is_a_function_of_the_seed() {
        let s = scenario();
        let a = FaultPlan::draw(&s, 1);
        assert_eq!(a, FaultPlan::draw(&s, 1));
        assert_ne!(a, FaultPlan::draw(&s, 2));
        let counts = a.counts();
        assert_eq!(counts["partition"], 3);
        assert_eq!(counts["restart"], 2, "one drawn, one explicit");
        assert_eq!(counts["latency"], 2);
        assert!(counts["drop"] > 10 && counts["drop"] < 80, "{counts:?}");
    }

    #[test]
    fn the_printed_plan_replays_as_explicit_faults() {
        let s = scenario();
        let plan = FaultPlan::draw(&s, 3);
        let text = format!(
            "name = \"r\"\nduration_ms = 10000\n[[clients]]\nbehaviour = \"resume\"\ncount = 20\ncalls = 10\n[faults]\n{}",
            plan.to_toml().replace("[[explicit]]", "[[faults.explicit]]")
        );
        let replay = Scenario::parse(&text).unwrap();
        assert_eq!(
            FaultPlan::draw(&replay, 99),
            plan,
            "explicit faults ignore the seed"
        );
    }
}

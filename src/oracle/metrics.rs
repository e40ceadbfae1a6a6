//! The metrics a run yields ([`Metrics`]) and their registry
//! ([`METRICS`]): each scalar metric's name, unit, meaning, and how it adds
//! up over runs, which expectations, `validate`, the sums and the reports
//! read.

use super::{causes, ops};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Migration latency summary (HdrHistogram), µs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Latency {
    /// Whether it has no sample.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Summarizes a histogram.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// Metrics of one run (or one client class of it). Operation counts first
/// (each failed operation counted once, with one cause), then event
/// counts, then costs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Logical operations in the workload (begun or not).
    pub operations: u64,
    /// Operations with a result handled and nothing missing.
    pub ops_ok: u64,
    /// Operations with at least one failure.
    pub ops_failed: u64,
    /// Operations not failed that missed announced events only.
    pub ops_degraded: u64,
    /// Operations executed more than once.
    pub ops_duplicated: u64,
    /// Operations that missed an unannounced event of their handled execution.
    pub ops_silent_loss: u64,
    /// Operations that missed announced events (degraded or also failed).
    pub ops_announced_loss: u64,
    /// Operations whose result was handled after a later operation's.
    pub ops_out_of_order: u64,
    /// Operations whose handled result no execution of theirs produced.
    pub ops_wrong_result: u64,
    /// Operations with no handled result (given up, unresolved, never begun).
    pub ops_lost: u64,
    /// Failed operations by primary cause.
    pub failures_by_cause: BTreeMap<String, u64>,
    /// Failed operations whose cause the built-in server's records refine,
    /// by `cause/detail` (e.g. `retry_without_key/half_open_write`).
    #[serde(default)]
    pub failures_by_detail: BTreeMap<String, u64>,
    /// Operations that met each hazard (whatever the server then did).
    pub hazards: BTreeMap<String, u64>,
    /// Σ over non-idempotent operations of (executions − 1)⁺.
    pub duplicate_side_effects: u64,
    /// Emitted events of handled operations that no client received (the
    /// handled execution's missing events plus abandoned executions' tails).
    pub orphaned_events: u64,
    /// Events of handled executions missing and never announced.
    pub silent_losses: u64,
    /// Events of handled executions missing but announced (a gap, or a
    /// result marked as replayed from the key table).
    pub announced_losses: u64,
    /// Operations handled while an event of their first execution never arrived.
    pub truncated_responses: u64,
    /// Pairs of one client's operations handled out of causal order.
    pub order_violations: u64,
    /// Operations with no handled result after the heal phase (= `ops_lost`).
    pub lost_operations: u64,
    /// From the interrupting fault to the handled result, µs.
    pub migration_latency_us: Latency,
    /// Guard rejections by reason (built-in guarded arms).
    pub rejections: BTreeMap<String, u64>,
    /// Decisions the guard audit disputes (present only where a guard is
    /// audited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard_bugs: Option<u64>,
    /// Requests or notifications served under a negotiation the client
    /// made on another transport, with no registered mapping.
    pub capability_violations: u64,
    /// Events replayed from a cursor of another namespace that were not
    /// owed, plus owed events such a replay skipped.
    pub foreign_cursor_replays: u64,
    /// Initializations beyond each client's first.
    pub reinitializations: u64,
    /// Cost: executions beyond each operation's first, whatever they
    /// committed (work the server did again).
    #[serde(default)]
    pub extra_executions: u64,
    /// Cost: events the server wrote again from its store on resumes
    /// (built-in arms; what a replay costs on the wire).
    #[serde(default)]
    pub replayed_events: u64,
    /// Occurrences owed to events readers (the Events extension).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deliveries: u64,
    /// Deliveries applied once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deliveries_ok: u64,
    /// Deliveries failed (each under its cause in `failures_by_cause`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deliveries_failed: u64,
    /// Deliveries lost with a `truncated` that told the reader.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deliveries_announced_lost: u64,
    /// From an occurrence's production to its application, µs, over the
    /// deliveries ok (a sweep's aggregate merges its runs' histograms).
    #[serde(default, skip_serializing_if = "Latency::is_empty")]
    pub delivery_latency_us: Latency,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// How a metric adds up over runs and client classes.
#[derive(Clone, Copy)]
pub enum Aggregation {
    /// Summed: the field it is.
    Sum(fn(&mut Metrics) -> &mut u64),
    /// Summed over the runs that have it: present only where a guard is
    /// audited (`None` elsewhere, never 0).
    WhereAudited,
    /// Merged from the runs' histograms, never summed as a number.
    Histogram,
    /// The sum of a by-key map, which adds key by key.
    ByKey,
}

/// One scalar metric as every part that names it reads it: expectations
/// and `validate` (the name), the oracle's output and the sums over runs
/// (how it aggregates), the verdict (whether it is a liveness metric), and
/// what a report says of it. A new metric is a field of [`Metrics`], its
/// count in the oracle, and one entry of [`METRICS`].
#[derive(Clone, Copy)]
pub struct MetricEntry {
    /// Its JSON name.
    pub name: &'static str,
    /// What it counts.
    pub unit: &'static str,
    /// One line on what it means.
    pub description: &'static str,
    /// How it adds up over runs.
    pub aggregates: Aggregation,
    /// A failed expectation on it alone is a liveness failure (the run
    /// ended without the operations, rather than breaking one).
    pub liveness: bool,
    /// Its value in a run's metrics (`None`: this run does not have it).
    pub read: fn(&Metrics) -> Option<u64>,
}

impl MetricEntry {
    /// The entry named `name`, if one.
    pub fn named(name: &str) -> Option<&'static MetricEntry> {
        METRICS.iter().find(|e| e.name == name)
    }
}

/// Every scalar metric, in the order error messages list them. The maps
/// (`failures_by_cause`, `failures_by_detail`, `hazards`, `rejections`)
/// are read by key, from their own registries.
pub const METRICS: [MetricEntry; 29] = [
    MetricEntry {
        name: "operations",
        unit: "operations",
        description: "Logical operations in the workload (begun or not).",
        aggregates: Aggregation::Sum(|m| &mut m.operations),
        liveness: false,
        read: |m| Some(m.operations),
    },
    MetricEntry {
        name: "ops_ok",
        unit: "operations",
        description: "Operations with a result handled and nothing missing.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_ok),
        liveness: false,
        read: |m| Some(m.ops_ok),
    },
    MetricEntry {
        name: "ops_failed",
        unit: "operations",
        description: "Operations with at least one failure.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_failed),
        liveness: false,
        read: |m| Some(m.ops_failed),
    },
    MetricEntry {
        name: "ops_degraded",
        unit: "operations",
        description: "Operations not failed that missed announced events only.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_degraded),
        liveness: false,
        read: |m| Some(m.ops_degraded),
    },
    MetricEntry {
        name: "ops_duplicated",
        unit: "operations",
        description: "Operations executed more than once.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_duplicated),
        liveness: false,
        read: |m| Some(m.ops_duplicated),
    },
    MetricEntry {
        name: "ops_silent_loss",
        unit: "operations",
        description: "Operations that missed an unannounced event of their handled execution.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_silent_loss),
        liveness: false,
        read: |m| Some(m.ops_silent_loss),
    },
    MetricEntry {
        name: "ops_announced_loss",
        unit: "operations",
        description: "Operations that missed announced events (degraded or also failed).",
        aggregates: Aggregation::Sum(|m| &mut m.ops_announced_loss),
        liveness: false,
        read: |m| Some(m.ops_announced_loss),
    },
    MetricEntry {
        name: "ops_out_of_order",
        unit: "operations",
        description: "Operations whose result was handled after a later operation's.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_out_of_order),
        liveness: false,
        read: |m| Some(m.ops_out_of_order),
    },
    MetricEntry {
        name: "ops_wrong_result",
        unit: "operations",
        description: "Operations whose handled result no execution of theirs produced.",
        aggregates: Aggregation::Sum(|m| &mut m.ops_wrong_result),
        liveness: false,
        read: |m| Some(m.ops_wrong_result),
    },
    MetricEntry {
        name: "ops_lost",
        unit: "operations",
        description: "Operations with no handled result (given up, unresolved, never begun).",
        aggregates: Aggregation::Sum(|m| &mut m.ops_lost),
        liveness: false,
        read: |m| Some(m.ops_lost),
    },
    MetricEntry {
        name: "duplicate_side_effects",
        unit: "executions",
        description: "Σ over non-idempotent operations of (executions − 1)⁺.",
        aggregates: Aggregation::Sum(|m| &mut m.duplicate_side_effects),
        liveness: false,
        read: |m| Some(m.duplicate_side_effects),
    },
    MetricEntry {
        name: "orphaned_events",
        unit: "events",
        description: "Emitted events of handled operations that no client received.",
        aggregates: Aggregation::Sum(|m| &mut m.orphaned_events),
        liveness: false,
        read: |m| Some(m.orphaned_events),
    },
    MetricEntry {
        name: "silent_losses",
        unit: "events",
        description: "Events of handled executions missing and never announced.",
        aggregates: Aggregation::Sum(|m| &mut m.silent_losses),
        liveness: false,
        read: |m| Some(m.silent_losses),
    },
    MetricEntry {
        name: "announced_losses",
        unit: "events",
        description: "Events of handled executions missing but announced (a gap, or a replayed key-table result).",
        aggregates: Aggregation::Sum(|m| &mut m.announced_losses),
        liveness: false,
        read: |m| Some(m.announced_losses),
    },
    MetricEntry {
        name: "truncated_responses",
        unit: "operations",
        description: "Operations handled while an event of their first execution never arrived.",
        aggregates: Aggregation::Sum(|m| &mut m.truncated_responses),
        liveness: false,
        read: |m| Some(m.truncated_responses),
    },
    MetricEntry {
        name: "order_violations",
        unit: "pairs",
        description: "Pairs of one client's operations handled out of causal order.",
        aggregates: Aggregation::Sum(|m| &mut m.order_violations),
        liveness: false,
        read: |m| Some(m.order_violations),
    },
    MetricEntry {
        name: "lost_operations",
        unit: "operations",
        description: "Operations with no handled result after the heal phase (= `ops_lost`): a liveness failure.",
        aggregates: Aggregation::Sum(|m| &mut m.lost_operations),
        liveness: true,
        read: |m| Some(m.lost_operations),
    },
    MetricEntry {
        name: "guard_bugs",
        unit: "decisions",
        description: "Decisions the guard audit disputes (only where a guard is audited).",
        aggregates: Aggregation::WhereAudited,
        liveness: false,
        read: |m| m.guard_bugs,
    },
    MetricEntry {
        name: "migration_latency_count",
        unit: "operations",
        description: "Migrations timed: operations interrupted by a fault that still got their result.",
        aggregates: Aggregation::Histogram,
        liveness: false,
        read: |m| Some(m.migration_latency_us.count),
    },
    MetricEntry {
        name: "rejections",
        unit: "requests",
        description: "Guard rejections, every reason (`rejections.<reason>` for one).",
        aggregates: Aggregation::ByKey,
        liveness: false,
        read: |m| Some(m.rejections.values().sum()),
    },
    MetricEntry {
        name: "capability_violations",
        unit: "requests",
        description: "Requests or notifications served under a negotiation made on another transport, with no mapping.",
        aggregates: Aggregation::Sum(|m| &mut m.capability_violations),
        liveness: false,
        read: |m| Some(m.capability_violations),
    },
    MetricEntry {
        name: "foreign_cursor_replays",
        unit: "events",
        description: "Events replayed from another namespace's cursor that were not owed, plus owed ones skipped.",
        aggregates: Aggregation::Sum(|m| &mut m.foreign_cursor_replays),
        liveness: false,
        read: |m| Some(m.foreign_cursor_replays),
    },
    MetricEntry {
        name: "reinitializations",
        unit: "initializations",
        description: "Initializations beyond each client's first.",
        aggregates: Aggregation::Sum(|m| &mut m.reinitializations),
        liveness: false,
        read: |m| Some(m.reinitializations),
    },
    MetricEntry {
        name: "extra_executions",
        unit: "executions",
        description: "Cost: executions beyond each operation's first, whatever they committed.",
        aggregates: Aggregation::Sum(|m| &mut m.extra_executions),
        liveness: false,
        read: |m| Some(m.extra_executions),
    },
    MetricEntry {
        name: "replayed_events",
        unit: "events",
        description: "Cost: events the server wrote again from its store on resumes (built-in arms).",
        aggregates: Aggregation::Sum(|m| &mut m.replayed_events),
        liveness: false,
        read: |m| Some(m.replayed_events),
    },
    MetricEntry {
        name: "deliveries",
        unit: "deliveries",
        description: "Events: occurrences owed to a reader (produced while it read, or applied).",
        aggregates: Aggregation::Sum(|m| &mut m.deliveries),
        liveness: false,
        read: |m| Some(m.deliveries),
    },
    MetricEntry {
        name: "deliveries_ok",
        unit: "deliveries",
        description: "Events: deliveries the reader's application took once.",
        aggregates: Aggregation::Sum(|m| &mut m.deliveries_ok),
        liveness: false,
        read: |m| Some(m.deliveries_ok),
    },
    MetricEntry {
        name: "deliveries_failed",
        unit: "deliveries",
        description: "Events: deliveries lost unannounced, each under its cause.",
        aggregates: Aggregation::Sum(|m| &mut m.deliveries_failed),
        liveness: false,
        read: |m| Some(m.deliveries_failed),
    },
    MetricEntry {
        name: "deliveries_announced_lost",
        unit: "deliveries",
        description: "Events: deliveries lost with a `truncated` that told the reader.",
        aggregates: Aggregation::Sum(|m| &mut m.deliveries_announced_lost),
        liveness: false,
        read: |m| Some(m.deliveries_announced_lost),
    },
];

/// The registry's names, in its order.
const fn metric_names() -> [&'static str; METRICS.len()] {
    let mut names = [""; METRICS.len()];
    let mut i = 0;
    while i < METRICS.len() {
        names[i] = METRICS[i].name;
        i += 1;
    }
    names
}

impl Metrics {
    /// A metric by its JSON name (for expectations): the scalar names in
    /// [`Metrics::NAMES`], and `failures_by_cause.<cause>`,
    /// `hazards.<hazard>`, `rejections.<reason>`.
    pub fn get(&self, name: &str) -> Option<u64> {
        if let Some((map, key)) = name.split_once('.') {
            let m = match map {
                "failures_by_cause" => &self.failures_by_cause,
                "failures_by_detail" => &self.failures_by_detail,
                "hazards" => &self.hazards,
                "rejections" => &self.rejections,
                _ => return None,
            };
            return Some(m.get(key).copied().unwrap_or(0));
        }
        (MetricEntry::named(name)?.read)(self)
    }

    /// Whether `name` names a metric (whether or not this run has it).
    pub fn is_known(name: &str) -> bool {
        match name.split_once('.') {
            Some(("failures_by_cause", c)) => causes::Cause::named(c).is_some(),
            Some(("hazards", h)) => ops::HAZARDS.contains(&h),
            Some(("failures_by_detail", _)) => true,
            Some(("rejections", _)) => true,
            Some(("deliveries_by_cause", c)) => {
                ["cursor_truncated_silently", "run_ended"].contains(&c)
            }
            Some(_) => false,
            None => MetricEntry::named(name).is_some(),
        }
    }

    /// The scalar metric names `get` understands (for error messages).
    pub const NAMES: [&'static str; METRICS.len()] = metric_names();
}

/// Adds the integer metrics of `m` to `t` (latency is merged separately,
/// from histograms; guard bugs add when both are known). Within one run
/// the loader's bounds keep every sum far below `u64::MAX`.
pub fn add(t: &mut Metrics, m: &Metrics) {
    if let Err(field) = try_add(t, m) {
        panic!("metrics.{field} overflowed within one run's bounded counts");
    }
}

/// [`add`] with checked sums: on an overflow, the field's name
/// (`operations`, `failures_by_cause.gave_up`, …) and `t` partly added.
/// Summaries from files (`merge`) hold any number a file writes.
pub fn try_add(t: &mut Metrics, m: &Metrics) -> Result<(), String> {
    let sum = |a: u64, b: u64, field: &str| a.checked_add(b).ok_or_else(|| field.to_string());
    t.guard_bugs = match (t.guard_bugs, m.guard_bugs) {
        (Some(a), Some(b)) => Some(sum(a, b, "guard_bugs")?),
        (a, None) => a,
        (None, b) => b,
    };
    for e in &METRICS {
        if let Aggregation::Sum(field) = e.aggregates {
            let v = (e.read)(m).unwrap_or(0);
            let dst = field(t);
            *dst = sum(*dst, v, e.name)?;
        }
    }
    for (map, dst, src) in [
        (
            "failures_by_cause",
            &mut t.failures_by_cause,
            &m.failures_by_cause,
        ),
        (
            "failures_by_detail",
            &mut t.failures_by_detail,
            &m.failures_by_detail,
        ),
        ("hazards", &mut t.hazards, &m.hazards),
        ("rejections", &mut t.rejections, &m.rejections),
    ] {
        add_counts(dst, src).map_err(|k| format!("{map}.{k}"))?;
    }
    Ok(())
}

/// Adds counts by key; on an overflow, the key.
pub fn add_counts(
    dst: &mut BTreeMap<String, u64>,
    src: &BTreeMap<String, u64>,
) -> Result<(), String> {
    for (k, v) in src {
        let e = dst.entry(k.clone()).or_insert(0);
        *e = e.checked_add(*v).ok_or_else(|| k.clone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number `Metrics` writes is a registered metric, with a unit
    /// and a description: a new field forgotten here would be summed as
    /// zero and unknown to expectations.
    #[test]
    fn every_scalar_metric_has_a_whole_entry() {
        // The deliveries are written only when a run has any (runs
        // without events keep their bytes): set, so that they show.
        let m = Metrics {
            guard_bugs: Some(0),
            deliveries: 1,
            deliveries_ok: 1,
            deliveries_failed: 1,
            deliveries_announced_lost: 1,
            ..Metrics::default()
        };
        let json = serde_json::to_value(&m).expect("metrics serialize");
        let obj = json.as_object().expect("an object");
        for (k, v) in obj {
            if v.is_u64() {
                assert!(MetricEntry::named(k).is_some(), "metric {k} has no entry");
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for e in &METRICS {
            assert!(names.insert(e.name), "{} twice", e.name);
            assert!(
                !e.unit.is_empty() && !e.description.is_empty(),
                "{}",
                e.name
            );
            assert!(m.get(e.name).is_some(), "{} unreadable", e.name);
            if matches!(e.aggregates, Aggregation::Sum(_)) {
                assert!(
                    obj.get(e.name).is_some_and(|v| v.is_u64()),
                    "{} is no field",
                    e.name
                );
            }
        }
    }

    /// Each summed metric adds its own field, and reads back what it adds.
    #[test]
    fn summed_metrics_add_their_own_field() {
        for (i, e) in METRICS.iter().enumerate() {
            let Aggregation::Sum(field) = e.aggregates else {
                continue;
            };
            let mut one = Metrics::default();
            *field(&mut one) = i as u64 + 1;
            let mut t = Metrics::default();
            add(&mut t, &one);
            add(&mut t, &one);
            assert_eq!(t.get(e.name), Some(2 * (i as u64 + 1)), "{}", e.name);
            let others: u64 = METRICS
                .iter()
                .filter(|o| o.name != e.name && matches!(o.aggregates, Aggregation::Sum(_)))
                .filter_map(|o| t.get(o.name))
                .sum();
            // `lost_operations` and `ops_lost` are separate fields.
            assert_eq!(others, 0, "{} added into another field", e.name);
        }
    }

    #[test]
    fn only_lost_operations_is_a_liveness_metric() {
        let live: Vec<&str> = METRICS
            .iter()
            .filter(|e| e.liveness)
            .map(|e| e.name)
            .collect();
        assert_eq!(live, ["lost_operations"]);
    }
}

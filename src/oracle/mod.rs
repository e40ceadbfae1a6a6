//! The oracle: turns a history into the metrics of docs/causes.md. It is a
//! black box first: every operation's outcome, every failure's cause and
//! every primary metric come from what the clients saw, what the
//! side-effect ledger recorded and the world's fault records ([`ops`],
//! [`causes`]), so the same verdict holds for any server under test. The
//! built-in server's own records feed only the guard audit ([`audit`]: it
//! rebuilds the guard's view at each decision, diffs it against the logged
//! one and re-applies the rules independently), the Rule T metrics
//! ([`transport`]) and a white-box recount that tests compare with the
//! black box ([`whitebox`]). The oracle imports neither the server nor the
//! guard.

mod audit;
pub mod causes;
mod intern;
pub mod ops;
mod transport;
pub mod whitebox;

use crate::history::Entry;
use hdrhistogram::Histogram;
use ops::{Failure, OpFacts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use audit::decision_errors;

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
        Some(match name {
            "operations" => self.operations,
            "ops_ok" => self.ops_ok,
            "ops_failed" => self.ops_failed,
            "ops_degraded" => self.ops_degraded,
            "ops_duplicated" => self.ops_duplicated,
            "ops_silent_loss" => self.ops_silent_loss,
            "ops_announced_loss" => self.ops_announced_loss,
            "ops_out_of_order" => self.ops_out_of_order,
            "ops_wrong_result" => self.ops_wrong_result,
            "ops_lost" => self.ops_lost,
            "duplicate_side_effects" => self.duplicate_side_effects,
            "orphaned_events" => self.orphaned_events,
            "silent_losses" => self.silent_losses,
            "announced_losses" => self.announced_losses,
            "truncated_responses" => self.truncated_responses,
            "order_violations" => self.order_violations,
            "lost_operations" => self.lost_operations,
            "guard_bugs" => self.guard_bugs?,
            "migration_latency_count" => self.migration_latency_us.count,
            "rejections" => self.rejections.values().sum(),
            "capability_violations" => self.capability_violations,
            "foreign_cursor_replays" => self.foreign_cursor_replays,
            "reinitializations" => self.reinitializations,
            "extra_executions" => self.extra_executions,
            "replayed_events" => self.replayed_events,
            _ => return None,
        })
    }

    /// Whether `name` names a metric (whether or not this run has it).
    pub fn is_known(name: &str) -> bool {
        match name.split_once('.') {
            Some(("failures_by_cause", c)) => causes::PRECEDENCE.iter().any(|x| x.as_str() == c),
            Some(("hazards", h)) => ops::HAZARDS.contains(&h),
            Some(("failures_by_detail", _)) => true,
            Some(("rejections", _)) => true,
            Some(_) => false,
            None => Self::NAMES.contains(&name),
        }
    }

    /// The scalar metric names `get` understands (for error messages).
    pub const NAMES: &'static [&'static str] = &[
        "operations",
        "ops_ok",
        "ops_failed",
        "ops_degraded",
        "ops_duplicated",
        "ops_silent_loss",
        "ops_announced_loss",
        "ops_out_of_order",
        "ops_wrong_result",
        "ops_lost",
        "duplicate_side_effects",
        "orphaned_events",
        "silent_losses",
        "announced_losses",
        "truncated_responses",
        "order_violations",
        "lost_operations",
        "guard_bugs",
        "migration_latency_count",
        "rejections",
        "capability_violations",
        "foreign_cursor_replays",
        "reinitializations",
        "extra_executions",
        "replayed_events",
    ];
}

/// One failed or degraded operation, for reports and `explain`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpVerdict {
    /// The operation's tag.
    pub tag: String,
    /// Its client.
    pub client: u32,
    /// Its failures (snake_case), empty when only degraded.
    pub failures: Vec<String>,
    /// Its primary cause, when failed.
    pub cause: Option<String>,
    /// What the built-in server's own records add to the cause (e.g.
    /// `half_open_write`: it wrote the result into a connection the client
    /// had lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What the run's world looked like, beyond the history.
#[derive(Clone, Copy, Debug)]
pub struct World<'a> {
    /// Client i's class label.
    pub classes: &'a [String],
    /// Client i's workload size (operations planned).
    pub calls: &'a [u32],
    /// Client i's host.
    pub hosts: &'a [u32],
    /// Every client finished before the run ended.
    pub clients_finished: bool,
    /// The server is a built-in guarded arm: audit its guard.
    pub audited: bool,
    /// The server is built in: its records may refine causes.
    pub built_in: bool,
}

/// What the oracle concluded.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// Whole-run metrics.
    pub metrics: Metrics,
    /// The whole run's migration-latency histogram as (value, count) pairs
    /// (lossless: merging runs re-records them).
    pub latency_hist: Vec<(u64, u64)>,
    /// Per client class (label → metrics).
    pub by_class: BTreeMap<String, Metrics>,
    /// Every failed or degraded operation, in the order they began.
    pub verdicts: Vec<OpVerdict>,
    /// Failed operations no cause explains: each is a defect of the oracle.
    pub defects: Vec<String>,
}

/// One class's running counts while judging: the string-keyed maps of
/// [`Metrics`] as arrays indexed by cause and hazard, filled in at the end.
struct Tally {
    m: Metrics,
    h: Histogram<u64>,
    /// By `Cause as usize`.
    causes: [u64; causes::PRECEDENCE.len()],
    /// `cause/half_open_write`, by `Cause as usize`.
    half_open: [u64; causes::PRECEDENCE.len()],
    /// By index in `ops::HAZARDS`.
    hazards: [u64; ops::HAZARDS.len()],
}

impl Tally {
    fn new() -> Tally {
        Tally {
            m: Metrics::default(),
            h: new_hist(),
            causes: [0; causes::PRECEDENCE.len()],
            half_open: [0; causes::PRECEDENCE.len()],
            hazards: [0; ops::HAZARDS.len()],
        }
    }

    /// The metrics, with the counted maps (non-zero entries only, as
    /// counting into the maps would have left them).
    fn finish(mut self) -> (Metrics, Histogram<u64>) {
        let m = &mut self.m;
        for c in causes::PRECEDENCE {
            let i = *c as usize;
            if self.causes[i] > 0 {
                *m.failures_by_cause.entry(c.as_str().into()).or_insert(0) += self.causes[i];
            }
            if self.half_open[i] > 0 {
                *m.failures_by_detail
                    .entry(format!("{}/half_open_write", c.as_str()))
                    .or_insert(0) += self.half_open[i];
            }
        }
        for (i, name) in ops::HAZARDS.iter().enumerate() {
            if self.hazards[i] > 0 {
                *m.hazards.entry((*name).into()).or_insert(0) += self.hazards[i];
            }
        }
        (self.m, self.h)
    }
}

/// Judges a history.
pub fn judge(entries: &[Entry], world: World<'_>) -> Judgement {
    let judged = ops::judge(entries, world.calls, world.hosts, world.clients_finished);
    // Classes by index in label order; clients by class index.
    let mut labels: Vec<&str> = world.classes.iter().map(String::as_str).collect();
    labels.sort_unstable();
    labels.dedup();
    let class_of_client: Vec<usize> = world
        .classes
        .iter()
        .map(|l| labels.binary_search(&l.as_str()).expect("a label"))
        .collect();
    // A client beyond `classes` has the empty label.
    let mut unlabelled: Option<usize> = None;
    let mut by_class: Vec<(String, Tally)> = labels
        .iter()
        .map(|l| ((*l).to_string(), Tally::new()))
        .collect();
    let mut class_of = |c: u32, by_class: &mut Vec<(String, Tally)>| -> usize {
        if let Some(&k) = class_of_client.get(c as usize) {
            return k;
        }
        *unlabelled.get_or_insert_with(|| match labels.binary_search(&"") {
            Ok(k) => k,
            Err(_) => {
                by_class.push((String::new(), Tally::new()));
                by_class.len() - 1
            }
        })
    };
    let mut verdicts = Vec::new();
    let mut defects = Vec::new();
    // Causes come after every operation is judged (the order check needs
    // all of a client's operations): one per failed operation.
    let cause_of: Vec<Option<causes::Cause>> = judged
        .ops
        .iter()
        .map(|op| {
            if op.failures.is_empty() {
                None
            } else {
                causes::primary(op, &judged.run)
            }
        })
        .collect();
    // The refinement reads the server's records once more: only for a
    // built-in server, and only when something failed.
    let half_open = if world.built_in && cause_of.iter().any(Option::is_some) {
        whitebox::half_open_writes(entries)
    } else {
        Default::default()
    };
    for (op, &cause) in judged.ops.iter().zip(&cause_of) {
        let k = class_of(op.client, &mut by_class);
        let t = &mut by_class[k].1;
        count_op(t, op, cause);
        if !op.failures.is_empty() || op.degraded() {
            let mut v = verdict(op, cause);
            if let (Some(c), true) = (cause, half_open.contains(&op.tag)) {
                v.detail = Some("half_open_write".into());
                t.half_open[c as usize] += 1;
            }
            if !op.failures.is_empty() && cause.is_none() {
                defects.push(format!(
                    "operation {} (client {}) failed ({}) and no cause explains it",
                    v.tag,
                    v.client,
                    v.failures.join(", ")
                ));
            }
            verdicts.push(v);
        }
    }
    let mut server_side = transport::server_side(entries);
    // `ops::judge` keeps one entry per client of the workload (and any
    // client a record names beyond it).
    for (c, cf) in judged.clients.iter().enumerate() {
        let k = class_of(c as u32, &mut by_class);
        let t = &mut by_class[k].1;
        let m = &mut t.m;
        // Operations never begun, with no record at all: lost. If the run
        // still had time, nothing explains them.
        m.operations += cf.never_begun;
        m.ops_failed += cf.never_begun;
        m.ops_lost += cf.never_begun;
        m.lost_operations += cf.never_begun;
        if cf.never_begun > 0 {
            let cause = if world.clients_finished {
                defects.push(format!(
                    "client {c} finished without beginning {} of its operations",
                    cf.never_begun
                ));
                None
            } else {
                t.causes[causes::Cause::RunEnded as usize] += cf.never_begun;
                Some(causes::Cause::RunEnded.as_str().to_string())
            };
            // Clients begin their operations in order: the last ones.
            let calls = world.calls.get(c).copied().unwrap_or(0);
            let first = calls.saturating_sub(cf.never_begun as u32);
            for n in first..calls {
                verdicts.push(OpVerdict {
                    tag: crate::history::op_tag(c as u32, n),
                    client: c as u32,
                    failures: vec!["lost".into()],
                    cause: cause.clone(),
                    detail: None,
                });
            }
        }
        let m = &mut t.m;
        m.reinitializations += cf.inits.saturating_sub(1);
        for &v in &cf.switch_latency_us {
            let _ = t.h.record(v.max(1));
        }
        if let Some(s) = server_side.remove(&(c as u32)) {
            m.capability_violations += s.capability_violations;
            m.foreign_cursor_replays += s.foreign_cursor_replays;
            m.replayed_events += s.replayed_events;
            for (reason, n) in s.rejections {
                *m.rejections.entry(reason.to_string()).or_insert(0) += n;
            }
        }
    }
    let audit = world.audited.then(|| audit::decision_errors(entries));
    let mut metrics = Metrics::default();
    let mut whole = new_hist();
    let mut by_class: Vec<(String, Metrics, Histogram<u64>)> = by_class
        .into_iter()
        .map(|(label, t)| {
            let (m, h) = t.finish();
            (label, m, h)
        })
        .collect();
    // Label order (the unlabelled class, when added, sorts first).
    by_class.sort_by(|a, b| a.0.cmp(&b.0));
    let by_class: BTreeMap<String, Metrics> = by_class
        .into_iter()
        .map(|(label, mut m, h)| {
            m.migration_latency_us = Latency::of(&h);
            add(&mut metrics, &m);
            whole.add(&h).expect("same bounds");
            (label, m)
        })
        .collect();
    metrics.migration_latency_us = Latency::of(&whole);
    metrics.guard_bugs = audit.map(|a| a.count);
    let latency_hist = whole
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    Judgement {
        metrics,
        latency_hist,
        by_class,
        verdicts,
        defects,
    }
}

/// Adds one operation's outcome to a class's counts.
fn count_op(t: &mut Tally, op: &OpFacts, cause: Option<causes::Cause>) {
    let m = &mut t.m;
    let f = op.failures;
    m.operations += 1;
    if !f.is_empty() {
        m.ops_failed += 1;
    } else if op.degraded() {
        m.ops_degraded += 1;
    } else {
        m.ops_ok += 1;
    }
    m.ops_duplicated += u64::from(f.contains(Failure::Duplicated));
    m.ops_silent_loss += u64::from(f.contains(Failure::SilentLoss));
    m.ops_announced_loss += u64::from(op.announced > 0);
    m.ops_out_of_order += u64::from(f.contains(Failure::OutOfOrder));
    m.ops_wrong_result += u64::from(f.contains(Failure::WrongResult));
    m.ops_lost += u64::from(f.contains(Failure::Lost));
    m.lost_operations += u64::from(f.contains(Failure::Lost));
    if let Some(c) = cause {
        t.causes[c as usize] += 1;
    }
    for (i, n) in t.hazards.iter_mut().enumerate() {
        *n += u64::from(op.hazards & (1 << i) != 0);
    }
    m.duplicate_side_effects += op.effects().saturating_sub(1);
    m.extra_executions += (op.execs.len() as u64).saturating_sub(1);
    m.orphaned_events += op.orphaned;
    m.silent_losses += op.silent;
    m.announced_losses += op.announced;
    m.truncated_responses += u64::from(op.truncated);
    m.order_violations += op.order_pairs;
    if let (Some(hd), Some(fault)) = (&op.handled, op.interrupted_us) {
        let _ = t.h.record(hd.t_us.saturating_sub(fault).max(1));
    }
}

fn verdict(op: &OpFacts, cause: Option<causes::Cause>) -> OpVerdict {
    let names = [
        (Failure::Duplicated, "duplicated"),
        (Failure::SilentLoss, "silent_loss"),
        (Failure::OutOfOrder, "out_of_order"),
        (Failure::WrongResult, "wrong_result"),
        (Failure::Lost, "lost"),
    ];
    OpVerdict {
        tag: op.tag.to_string(),
        client: op.client,
        failures: names
            .iter()
            .filter(|(f, _)| op.failures.contains(*f))
            .map(|(_, n)| (*n).to_string())
            .collect(),
        cause: cause.map(|c| c.as_str().to_string()),
        detail: None,
    }
}

/// The largest latency a histogram holds, µs (one hour).
pub const HIST_MAX_US: u64 = 3_600_000_000;

/// An empty migration-latency histogram (1 µs .. 1 h, 3 significant digits).
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid bounds")
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
    for (name, dst, v) in [
        ("operations", &mut t.operations, m.operations),
        ("ops_ok", &mut t.ops_ok, m.ops_ok),
        ("ops_failed", &mut t.ops_failed, m.ops_failed),
        ("ops_degraded", &mut t.ops_degraded, m.ops_degraded),
        ("ops_duplicated", &mut t.ops_duplicated, m.ops_duplicated),
        ("ops_silent_loss", &mut t.ops_silent_loss, m.ops_silent_loss),
        (
            "ops_announced_loss",
            &mut t.ops_announced_loss,
            m.ops_announced_loss,
        ),
        (
            "ops_out_of_order",
            &mut t.ops_out_of_order,
            m.ops_out_of_order,
        ),
        (
            "ops_wrong_result",
            &mut t.ops_wrong_result,
            m.ops_wrong_result,
        ),
        ("ops_lost", &mut t.ops_lost, m.ops_lost),
        (
            "duplicate_side_effects",
            &mut t.duplicate_side_effects,
            m.duplicate_side_effects,
        ),
        ("orphaned_events", &mut t.orphaned_events, m.orphaned_events),
        ("silent_losses", &mut t.silent_losses, m.silent_losses),
        (
            "announced_losses",
            &mut t.announced_losses,
            m.announced_losses,
        ),
        (
            "truncated_responses",
            &mut t.truncated_responses,
            m.truncated_responses,
        ),
        (
            "order_violations",
            &mut t.order_violations,
            m.order_violations,
        ),
        ("lost_operations", &mut t.lost_operations, m.lost_operations),
        (
            "capability_violations",
            &mut t.capability_violations,
            m.capability_violations,
        ),
        (
            "foreign_cursor_replays",
            &mut t.foreign_cursor_replays,
            m.foreign_cursor_replays,
        ),
        (
            "reinitializations",
            &mut t.reinitializations,
            m.reinitializations,
        ),
        (
            "extra_executions",
            &mut t.extra_executions,
            m.extra_executions,
        ),
        ("replayed_events", &mut t.replayed_events, m.replayed_events),
    ] {
        *dst = sum(*dst, v, name)?;
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
mod tests;

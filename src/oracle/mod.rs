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
pub mod deliveries;
mod facts;
pub mod finality;
mod intern;
mod metrics;
pub mod ops;
pub mod stream;
mod transport;
pub mod whitebox;

use crate::history::Entry;
use hdrhistogram::Histogram;
use ops::{Failure, OpFacts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use audit::decision_errors;
pub use metrics::{add, add_counts, try_add, Aggregation, Latency, MetricEntry, Metrics, METRICS};

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
    /// The deliveries' latency histogram, as `latency_hist`.
    pub delivery_hist: Vec<(u64, u64)>,
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

/// Judges a history, all of it at once: the reference the streaming
/// judge ([`stream::Judge`]) is held to.
pub fn judge(entries: &[Entry], world: World<'_>) -> Judgement {
    let judged = ops::judge(entries, world.calls, world.hosts, world.clients_finished);
    let mut classes = Classes::new(world.classes);
    let mut found = Findings::default();
    found.operations(entries, world, &judged, &mut classes);
    found.clients(
        world,
        &judged.clients,
        transport::server_side(entries),
        &mut classes,
    );
    let audit = world.audited.then(|| audit::decision_errors(entries));
    let mut d = deliveries::Deliveries::default();
    for e in entries
        .iter()
        .filter(|e| deliveries::Deliveries::concerns(e))
    {
        d.entry(e);
    }
    let mut j = conclude(classes, found, audit);
    let end_us = entries.last().map_or(0, |e| e.t_us);
    j.delivery_hist = d.finish(end_us).add_to(&mut j.metrics);
    j
}

/// The judgement from the tallies and findings.
fn conclude(classes: Classes, found: Findings, audit: Option<audit::DecisionErrors>) -> Judgement {
    let (mut metrics, whole, by_class) = classes.finish();
    metrics.guard_bugs = audit.map(|a| a.count);
    let latency_hist = pairs(&whole);
    let (verdicts, defects) = found.in_order();
    Judgement {
        metrics,
        latency_hist,
        delivery_hist: Vec::new(),
        by_class,
        verdicts,
        defects,
    }
}

/// The client classes' tallies: by index in label order, clients by class
/// index; a client beyond the world's classes has the empty label.
struct Classes {
    labels: Vec<String>,
    class_of_client: Vec<usize>,
    unlabelled: Option<usize>,
    tallies: Vec<(String, Tally)>,
}

impl Classes {
    fn new(classes: &[String]) -> Self {
        let mut labels: Vec<String> = classes.to_vec();
        labels.sort_unstable();
        labels.dedup();
        let class_of_client = classes
            .iter()
            .map(|l| labels.binary_search(l).expect("a label"))
            .collect();
        let tallies = labels.iter().map(|l| (l.clone(), Tally::new())).collect();
        Classes {
            labels,
            class_of_client,
            unlabelled: None,
            tallies,
        }
    }

    /// Client `c`'s class tally.
    fn of(&mut self, c: u32) -> &mut Tally {
        let k = match self.class_of_client.get(c as usize) {
            Some(&k) => k,
            None => *self.unlabelled.get_or_insert_with(|| {
                match self.labels.binary_search(&String::new()) {
                    Ok(k) => k,
                    Err(_) => {
                        self.tallies.push((String::new(), Tally::new()));
                        self.tallies.len() - 1
                    }
                }
            }),
        };
        &mut self.tallies[k].1
    }

    /// The whole run's metrics and latency histogram, and each class's
    /// metrics by label.
    fn finish(self) -> (Metrics, Histogram<u64>, BTreeMap<String, Metrics>) {
        let mut metrics = Metrics::default();
        let mut whole = new_hist();
        let mut by_class: Vec<(String, Metrics, Histogram<u64>)> = self
            .tallies
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
        (metrics, whole, by_class)
    }
}

/// The failed and degraded operations, and the failures no cause
/// explains (each a defect of the oracle), each with the order its
/// operation began in (operations never begun after every other).
#[derive(Default)]
struct Findings {
    verdicts: Vec<(u64, OpVerdict)>,
    defects: Vec<(u64, String)>,
}

impl Findings {
    /// Counts every judged operation into its class, with its cause.
    fn operations(
        &mut self,
        entries: &[Entry],
        world: World<'_>,
        judged: &ops::Ops,
        classes: &mut Classes,
    ) {
        // Causes come after every operation is judged (the order check
        // needs all of a client's operations): one per failed operation.
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
        for (i, (op, &cause)) in judged.ops.iter().zip(&cause_of).enumerate() {
            self.op(classes, i as u64, op, cause, half_open.contains(&op.tag));
        }
    }

    /// Counts one judged operation (begun `order`th) into its class, with
    /// its cause and whether the server wrote its result into a connection
    /// its client had lost.
    fn op(
        &mut self,
        classes: &mut Classes,
        order: u64,
        op: &OpFacts,
        cause: Option<causes::Cause>,
        half_open: bool,
    ) -> Option<usize> {
        let t = classes.of(op.client);
        count_op(t, op, cause);
        if op.failures.is_empty() && !op.degraded() {
            return None;
        }
        let mut v = verdict(op, cause);
        let mut refined = None;
        if let (Some(c), true) = (cause, half_open) {
            v.detail = Some("half_open_write".into());
            t.half_open[c as usize] += 1;
            refined = Some(self.verdicts.len());
        }
        if !op.failures.is_empty() && cause.is_none() {
            self.defects.push((
                order,
                format!(
                    "operation {} (client {}) failed ({}) and no cause explains it",
                    v.tag,
                    v.client,
                    v.failures.join(", ")
                ),
            ));
        }
        self.verdicts.push((order, v));
        refined
    }

    /// Takes back the half-open-write refinement of verdict `verdict` (its
    /// client's, under cause index `cause`).
    fn unrefine(&mut self, classes: &mut Classes, verdict: usize, client: u32, cause: usize) {
        self.verdicts[verdict].1.detail = None;
        classes.of(client).half_open[cause] -= 1;
    }

    /// Counts what belongs to each client rather than to one operation:
    /// operations never begun, re-initializations, switch latencies, and
    /// the server-side metrics of its requests.
    fn clients(
        &mut self,
        world: World<'_>,
        clients: &[ops::ClientFacts],
        mut server_side: BTreeMap<u32, transport::ServerSide>,
        classes: &mut Classes,
    ) {
        // One entry per client of the workload (and any client a record
        // names beyond it).
        for (c, cf) in clients.iter().enumerate() {
            let t = classes.of(c as u32);
            self.never_begun(t, world, c, cf);
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
    }

    /// Client `c`'s operations never begun, with no record at all: lost.
    /// A client refused every session since its last one had none to
    /// begin them on; otherwise, if the run still had time, nothing
    /// explains them.
    fn never_begun(&mut self, t: &mut Tally, world: World<'_>, c: usize, cf: &ops::ClientFacts) {
        let never_begun = cf.never_begun;
        let m = &mut t.m;
        m.operations += never_begun;
        m.ops_failed += never_begun;
        m.ops_lost += never_begun;
        m.lost_operations += never_begun;
        if never_begun == 0 {
            return;
        }
        let cause = if world.clients_finished {
            self.defects.push((
                u64::MAX,
                format!("client {c} finished without beginning {never_begun} of its operations"),
            ));
            None
        } else {
            let cause = if cf.session_refused {
                causes::Cause::SessionRefused
            } else {
                causes::Cause::RunEnded
            };
            t.causes[cause as usize] += never_begun;
            Some(cause.as_str().to_string())
        };
        // Clients begin their operations in order: the last ones.
        let calls = world.calls.get(c).copied().unwrap_or(0);
        let first = calls.saturating_sub(never_begun as u32);
        for n in first..calls {
            self.verdicts.push((
                u64::MAX,
                OpVerdict {
                    tag: crate::history::op_tag(c as u32, n),
                    client: c as u32,
                    failures: vec!["lost".into()],
                    cause: cause.clone(),
                    detail: None,
                },
            ));
        }
    }

    /// The verdicts and defects in the order their operations began.
    fn in_order(mut self) -> (Vec<OpVerdict>, Vec<String>) {
        // Stable: operations never begun keep their client order.
        self.verdicts.sort_by_key(|v| v.0);
        self.defects.sort_by_key(|d| d.0);
        (
            self.verdicts.into_iter().map(|v| v.1).collect(),
            self.defects.into_iter().map(|d| d.1).collect(),
        )
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

/// `h` as (value, count) pairs, lossless: merging runs re-records them.
pub fn pairs(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

#[cfg(test)]
mod tests;

//! The deployment matrix: balancer × store (× what the balancer does on
//! a dead upstream, × how a resume is routed, where those vary) × the
//! `--deployments` label (when an axis) × client profile down, arm across.
//! Each cell pools every run of its row's deployment over the scenarios
//! and seeds that ran it: failed operations per 1,000 with the top causes,
//! the p99 migration latency from the merged histograms, and what the
//! deployment cost in shared-store round trips per 1,000 operations.
//! Shown only when a summary holds a deployment (replicas behind a
//! balancer) or several deployments side by side.

use super::matrix::{arm_rank, arms, profile_rank};
use super::numbers::{most_first, per_1000, rate_text, thousands};
use super::{ms, xml};
use crate::oracle::{self, Latency, Metrics};
use crate::run::RunReport;
use crate::scenario::Topology;
use crate::sweep::Summary;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What one row is: its deployment and client profile.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RowKey {
    balancer: String,
    store: String,
    on_dead_upstream: String,
    resume: String,
    /// Where the `--deployments` label sorts (its place in the axis).
    label_rank: usize,
    label: String,
    profile_rank: usize,
    profile: String,
}

/// One row: what it is, a cell per arm, the scenarios it pools.
type Row<'a> = (RowKey, Vec<Option<Cell>>, BTreeSet<&'a str>);

/// One cell: the pooled runs of one row under one arm.
#[derive(Default)]
struct Cell {
    operations: u64,
    failed: u64,
    causes: BTreeMap<String, u64>,
    round_trips: u64,
    hist: Option<hdrhistogram::Histogram<u64>>,
}

impl Cell {
    fn add(&mut self, r: &RunReport) {
        let m: &Metrics = &r.metrics;
        self.operations += m.operations;
        self.failed += m.ops_failed;
        for (c, n) in &m.failures_by_cause {
            *self.causes.entry(c.clone()).or_insert(0) += n;
        }
        self.round_trips += r.store_round_trips;
        let hist = self.hist.get_or_insert_with(oracle::new_hist);
        for &(v, n) in &r.migration_latency_hist_us {
            // A run's figures were checked when its summary was read.
            let _ = hist.record_n(v, n);
        }
    }

    /// The cell's lines: failed per 1,000 with its top causes, the p99
    /// migration latency, the store round trips per 1,000 operations.
    fn lines(&self) -> [String; 3] {
        let rate = rate_text(per_1000(self.failed, self.operations));
        let head = if self.failed == 0 {
            format!("{rate} failed per 1,000")
        } else {
            let top: Vec<String> = most_first(&self.causes)
                .into_iter()
                .take(2)
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            format!("{rate} failed per 1,000 ({})", top.join(", "))
        };
        let l = self.hist.as_ref().map(Latency::of).unwrap_or_default();
        let latency = if l.count == 0 {
            "no migrations".to_string()
        } else {
            format!("p99 migration {}", ms(l.p99))
        };
        let trips = per_1000(self.round_trips, self.operations);
        let trips = if trips >= 1000.0 {
            thousands(trips.round() as u64)
        } else {
            rate_text(trips)
        };
        let trips = format!("{trips} store round trips per 1,000 ops");
        [head, latency, trips]
    }
}

/// The one-server world, for runs of a deployment axis that have none.
fn single() -> Topology {
    Topology {
        replicas: 1,
        balancer: "none".into(),
        store: "local".into(),
        on_dead_upstream: "wait".into(),
        resume: "pin-owner".into(),
    }
}

/// The rows, each with one cell per arm of `arms` and the scenarios it
/// pools; empty when the summary holds neither a deployment nor several.
/// The section's own style (only pages with the section carry it): the
/// describing columns narrow (the balancer and the store on one line, a
/// label broken after its commas, never inside a word), the arms' cells
/// wide enough to read.
const DEPLOYMENTS_STYLE: &str = "<style>table.deployments td{min-width:5em;max-width:16em;overflow-wrap:break-word}table.deployments td:nth-child(-n+2){white-space:nowrap}table.deployments td.ok,table.deployments td.bad{min-width:10em}</style>";

fn table<'a>(s: &'a Summary, arms: &[&str]) -> Vec<Row<'a>> {
    let labels: BTreeSet<&str> = s.runs.iter().map(|r| r.deployment.as_str()).collect();
    let axis = labels.len() > 1;
    let label_rank = |l: &str| {
        s.provenance
            .deployments
            .iter()
            .position(|x| x == l)
            .unwrap_or(usize::MAX)
    };
    let mut rows: BTreeMap<RowKey, (Vec<Option<Cell>>, BTreeSet<&str>)> = BTreeMap::new();
    for r in &s.runs {
        let t = match (&r.topology, axis) {
            (Some(t), _) => t.clone(),
            (None, true) => single(),
            (None, false) => continue,
        };
        let Some(col) = arms.iter().position(|a| *a == r.server) else {
            continue;
        };
        let key = RowKey {
            balancer: t.balancer,
            store: t.store,
            on_dead_upstream: t.on_dead_upstream,
            resume: t.resume,
            label_rank: label_rank(&r.deployment),
            label: r.deployment.clone(),
            profile_rank: profile_rank(&r.clients),
            profile: r.clients.clone(),
        };
        let (cells, scenarios) = rows
            .entry(key)
            .or_insert_with(|| (arms.iter().map(|_| None).collect(), BTreeSet::new()));
        cells[col].get_or_insert_with(Cell::default).add(r);
        scenarios.insert(&r.scenario);
    }
    rows.into_iter().map(|(k, (c, sc))| (k, c, sc)).collect()
}

/// Which optional columns vary across the rows: on_dead_upstream,
/// resume, the `--deployments` label, the client profile.
fn varying(rows: &[Row<'_>]) -> [bool; 4] {
    let differ = |f: &dyn Fn(&RowKey) -> &str| {
        let v: BTreeSet<&str> = rows.iter().map(|(k, ..)| f(k)).collect();
        v.len() > 1
    };
    [
        differ(&|k| &k.on_dead_upstream),
        differ(&|k| &k.resume),
        rows.iter().any(|(k, ..)| !k.label.is_empty()),
        true,
    ]
}

const INTRO: &str = "Per deployment (the balancer and store of each scenario's `[deployment]` with the overrides applied) and client profile, per arm: failed operations per 1,000 operations with the top causes, the p99 migration latency, and the shared store's round trips (requests the store host answered) per 1,000 operations. Each row pools every seed of the scenarios it names.";

/// The header cells and each row's leading cells.
fn leading(rows: &[Row<'_>]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let [dead, resume, label, profile] = varying(rows);
    let mut head = vec!["balancer", "store"];
    for (on, name) in [
        (dead, "on_dead_upstream"),
        (resume, "resume"),
        (label, "deployment"),
        (profile, "clients"),
    ] {
        if on {
            head.push(name);
        }
    }
    head.push("scenarios");
    let lead = rows
        .iter()
        .map(|(k, _, sc)| {
            let mut v = vec![k.balancer.clone(), k.store.clone()];
            for (on, val) in [
                (dead, &k.on_dead_upstream),
                (resume, &k.resume),
                (label, &k.label.replace(',', ", ")),
                (profile, &k.profile),
            ] {
                if on {
                    v.push(val.clone());
                }
            }
            v.push(sc.iter().copied().collect::<Vec<_>>().join(", "));
            v
        })
        .collect();
    (head, lead)
}

/// The arms of the section, in report order.
fn section_arms(s: &Summary) -> Vec<&str> {
    let mut v = arms(s);
    v.sort_by_key(|a| (arm_rank(a), *a));
    v
}

/// The section in Markdown, or nothing when the summary holds no
/// deployment.
pub fn markdown(s: &Summary) -> String {
    let arms = section_arms(s);
    let rows = table(s, &arms);
    if rows.is_empty() {
        return String::new();
    }
    let (head, lead) = leading(&rows);
    let mut out = format!("## Deployments\n\n{INTRO}\n\n|");
    for h in head.iter().copied().chain(arms.iter().copied()) {
        let _ = write!(out, " {h} |");
    }
    let _ = writeln!(out, "\n|{}", "---|".repeat(head.len() + arms.len()));
    for ((_, cells, _), lead) in rows.iter().zip(lead) {
        out.push('|');
        for v in lead {
            let _ = write!(out, " {v} |");
        }
        for c in cells {
            let text = c
                .as_ref()
                .map_or("–".to_string(), |c| c.lines().join("<br>"));
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\n{} operations in these rows.\n",
        thousands(
            rows.iter()
                .flat_map(|(_, c, _)| c.iter().flatten())
                .map(|c| c.operations)
                .sum()
        )
    );
    out
}

/// The section as HTML, cells coloured as the mechanism matrix's (green
/// when nothing failed, red when any did), or nothing.
pub fn html(s: &Summary) -> String {
    let arms = section_arms(s);
    let rows = table(s, &arms);
    if rows.is_empty() {
        return String::new();
    }
    let (head, lead) = leading(&rows);
    let mut out = format!(
        "<h2 id=\"deployments\">Deployments</h2><p>{}</p>{DEPLOYMENTS_STYLE}<table class=\"matrix deployments\"><tr>",
        xml(&INTRO.replace('`', ""))
    );
    for h in head.iter().copied().chain(arms.iter().copied()) {
        let _ = write!(out, "<th>{}</th>", xml(h));
    }
    out.push_str("</tr>");
    for ((_, cells, _), lead) in rows.iter().zip(lead) {
        out.push_str("<tr>");
        for v in lead {
            let _ = write!(out, "<td>{}</td>", xml(&v));
        }
        for c in cells {
            let Some(c) = c else {
                out.push_str("<td>–</td>");
                continue;
            };
            let class = if c.failed > 0 { "bad" } else { "ok" };
            let [head, latency, trips] = c.lines();
            let _ = write!(
                out,
                "<td class=\"{class}\"><b>{}</b><br>{}<br><small>{}</small></td>",
                xml(&head),
                xml(&latency),
                xml(&trips)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Faults, Meta};

    fn run(server: &str, label: &str, store: &str, failed: u64, trips: u64) -> RunReport {
        let mut metrics = Metrics {
            operations: 100,
            ops_failed: failed,
            ops_ok: 100 - failed,
            ..Metrics::default()
        };
        if failed > 0 {
            metrics
                .failures_by_cause
                .insert("wrong_replica".into(), failed);
        }
        RunReport {
            schema_version: crate::run::SCHEMA_VERSION,
            scenario: "rr".into(),
            seed: 0,
            server: server.into(),
            clients: crate::run::AS_WRITTEN.into(),
            overrides: vec![format!("deployment.store={store}")],
            deployment: label.into(),
            topology: Some(Topology {
                replicas: 3,
                balancer: "round-robin".into(),
                store: store.into(),
                on_dead_upstream: "wait".into(),
                resume: "pin-owner".into(),
            }),
            metrics,
            metrics_by_class: BTreeMap::new(),
            faults: Faults::default(),
            sim_ms: 0,
            clients_finished: true,
            records: 0,
            trace_sha256: String::new(),
            migration_latency_hist_us: vec![],
            delivery_latency_hist_us: vec![],
            declared_hazards: vec![],
            operations: vec![],
            operations_omitted: 0,
            failed_expectations: vec![],
            verdict: "pass".into(),
            not_applicable_clients: 0,
            store_round_trips: trips,
            deployment_overridden: false,
            meta: Meta::default(),
            reached: vec![],
        }
    }

    #[test]
    fn the_bar_chart_has_a_group_per_deployment_named_by_what_sets_it_apart() {
        let (local, shared) = (
            "store=local,resume=pin-owner",
            "store=shared,resume=pin-owner",
        );
        let mut s = Summary::from_runs(vec![
            run("unguarded", local, "local", 12, 0),
            run("unguarded", shared, "shared", 3, 400),
        ]);
        s.provenance.deployments = vec![local.into(), shared.into()];
        let svg = crate::report::plots::bars_svg(&s, crate::run::AS_WRITTEN);
        assert!(
            svg.contains("local") && svg.contains("shared"),
            "both deployments have a group: {svg}"
        );
        assert!(
            !svg.contains("pin-owner"),
            "what every label shares is left out of the names: {svg}"
        );
    }

    #[test]
    fn one_row_per_deployment_one_column_per_arm() {
        let mut s = Summary::from_runs(vec![
            run("unguarded", "store=local", "local", 12, 0),
            run("guarded", "store=local", "local", 10, 0),
            run("unguarded", "store=shared", "shared", 0, 400),
            run("guarded", "store=shared", "shared", 0, 450),
        ]);
        s.provenance.deployments = vec!["store=local".into(), "store=shared".into()];
        let md = markdown(&s);
        assert!(md.starts_with("## Deployments\n"), "{md}");
        assert!(
            md.contains(
                "| balancer | store | deployment | clients | scenarios | unguarded | guarded |"
            ),
            "{md}"
        );
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| round-robin"))
            .collect();
        assert_eq!(rows.len(), 2, "{md}");
        assert!(
            rows[0].starts_with("| round-robin | local | store=local | scenario | rr | 120.0 failed per 1,000 (wrong_replica 12)<br>no migrations<br>0 store round trips per 1,000 ops | 100.0 failed per 1,000"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains(
                "| 0 failed per 1,000<br>no migrations<br>4,000 store round trips per 1,000 ops |"
            ),
            "{}",
            rows[1]
        );
        let page = html(&s);
        assert_eq!(page.matches("class=\"bad\"").count(), 2, "{page}");
        assert_eq!(page.matches("class=\"ok\"").count(), 2, "{page}");
    }

    #[test]
    fn no_section_without_a_deployment() {
        let mut r = run("guarded", "", "local", 0, 0);
        r.topology = None;
        let s = Summary::from_runs(vec![r]);
        assert_eq!(markdown(&s), "");
        assert_eq!(html(&s), "");
    }
}

//! Running a scenario of `sims/` for a test: the report, the history and
//! the command that reproduces the run, with the checks the simulator
//! tests share. Every failure names its seed and that command.

use mcp_chaos::history::{ClientRecord, EventKind, History, LedgerRecord, Rec, Record};
use mcp_chaos::run::{self, Options, RunReport};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::collections::BTreeSet;
use std::path::PathBuf;

pub(crate) fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("sims")
        .join(name)
}

pub(crate) fn scenario(name: &str) -> Scenario {
    Scenario::load(&path(name)).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) struct Run {
    pub(crate) report: RunReport,
    pub(crate) history: History,
    pub(crate) repro: String,
}

pub(crate) fn simulate(name: &str, seed: u64, v: Variant, cursor_all: bool) -> Run {
    simulate_scenario(&scenario(name), name, seed, v, cursor_all)
}

pub(crate) fn simulate_scenario(
    s: &Scenario,
    name: &str,
    seed: u64,
    v: Variant,
    cursor_all: bool,
) -> Run {
    let opts = if cursor_all {
        Options::cursors()
    } else {
        Options::default()
    };
    let repro = run::repro_command(&format!("sims/{name}"), seed, v, &opts);
    let (report, history) =
        run::run(s, seed, v, &opts).unwrap_or_else(|e| panic!("{e}\nreproduce: {repro}"));
    Run {
        report,
        history,
        repro,
    }
}

impl Run {
    pub(crate) fn client_records(&self) -> Vec<ClientRecord> {
        self.history
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                Rec::Client(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn server_records(&self) -> Vec<Record> {
        self.history
            .server_records()
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    }

    /// Counted events (progress, result) of one request, by event id.
    pub(crate) fn events_of(&self, rpc: &str) -> Vec<u64> {
        self.server_records()
            .iter()
            .filter_map(|r| match r {
                Record::Produced {
                    event,
                    kind: EventKind::Progress | EventKind::Result,
                    rpc_id: Some(id),
                    ..
                } if id.to_string().trim_matches('"') == rpc => Some(*event),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn received(&self) -> BTreeSet<u64> {
        self.client_records()
            .iter()
            .filter_map(|r| match r {
                ClientRecord::Received { event, .. } => Some(*event),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn executions(&self, tag: &str) -> usize {
        self.history
            .entries()
            .iter()
            .filter(|e| matches!(&e.record, Rec::Ledger(LedgerRecord::Execution { tag: t, .. }) if &**t == tag))
            .count()
    }

    pub(crate) fn metric(&self, name: &str) -> u64 {
        self.report
            .metrics
            .get(name)
            .unwrap_or_else(|| panic!("no metric {name}"))
    }

    pub(crate) fn check(&self, ok: bool, what: &str) {
        assert!(
            ok,
            "{what}\nscenario {} seed {} server {}\nreproduce: {}\nmetrics: {:#?}",
            self.report.scenario,
            self.report.seed,
            self.report.server,
            self.repro,
            self.report.metrics
        );
    }
}

/// A scenario written inline (small regressions that need no file).
pub(crate) fn inline(text: &str) -> Scenario {
    Scenario::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

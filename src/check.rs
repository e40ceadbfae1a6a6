//! A scenario checked against the rest of the house: what the file format
//! alone cannot know. The loader (`scenario`) reads a file and holds it to
//! its own bounds; this step, above the client, the server, the arms and
//! the oracle and below `run`, adds the arm names (`sut`), the metrics and
//! hazards the oracle judges, the server's limit on a call's chunk
//! interval and the size of the clients' requests. Every command loads
//! scenarios through [`load`] and every run holds its scenario to
//! [`validate`]; each refusal is one line naming the key and the fix.

use crate::client::virtual_client::largest_request_body;
use crate::hosts::sut::Arm;
use crate::oracle::{ops::HAZARDS, Metrics};
use crate::scenario::{Scenario, ScenarioError};
use crate::server::MAX_CHUNK_INTERVAL_MS;
use std::path::Path;

/// Reads a scenario file and checks it: on its own (the loader), then
/// against the house.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let s = Scenario::load(path)?;
    house(&s).map_err(|message| ScenarioError::Parse {
        path: path.display().to_string(),
        message,
    })?;
    Ok(s)
}

/// Parses scenario text and checks it, as [`load`] does a file.
pub fn parse(text: &str) -> Result<Scenario, String> {
    let s = Scenario::parse(text)?;
    house(&s)?;
    Ok(s)
}

/// Holds a scenario (one built in code, or changed by a run's options)
/// to the loader's bounds and to the house's.
pub fn validate(s: &Scenario) -> Result<(), String> {
    s.validate()?;
    house(s)
}

/// The checks that need the rest of the house, in the order a reader
/// meets the tables: the regression, the clients against the server's
/// limits, then the hazards and expectations.
fn house(s: &Scenario) -> Result<(), String> {
    regression(s)?;
    server_limits(s)?;
    expectations(s)
}

/// The unknown-metric message: the metric names and the families a name
/// may be taken from.
fn unknown_metric(key: &str, name: &str) -> String {
    format!(
        "{key}: unknown metric {name:?} (known: {}, and failures_by_cause.CAUSE, \
         hazards.HAZARD, rejections.REASON)",
        Metrics::NAMES.join(", ")
    )
}

/// A `[regression]` names a known arm and known metrics.
fn regression(s: &Scenario) -> Result<(), String> {
    let Some(r) = &s.regression else {
        return Ok(());
    };
    if !Arm::NAMES.contains(&r.server.as_str()) {
        return Err(format!(
            "regression.server: unknown server arm {:?}: use one of {}",
            r.server,
            Arm::NAMES.join(", ")
        ));
    }
    match r.metrics.iter().find(|m| !Metrics::is_known(m)) {
        Some(m) => Err(unknown_metric("regression.metrics", m)),
        None => Ok(()),
    }
}

/// Limits of the server the workload must fit in: a call the server
/// refuses every time is an operation lost without any fault.
fn server_limits(s: &Scenario) -> Result<(), String> {
    for (i, g) in s.clients.iter().enumerate() {
        if g.chunk_interval_ms > MAX_CHUNK_INTERVAL_MS {
            return Err(format!(
                "clients[{i}].chunk_interval_ms = {} is above the server's limit of \
                 {MAX_CHUNK_INTERVAL_MS}: every call would be refused; lower it",
                g.chunk_interval_ms
            ));
        }
    }
    let mut index = 0u32;
    for (i, g) in s.clients.iter().enumerate() {
        let last = index + (g.count.max(1) - 1);
        let body = largest_request_body(g, last);
        if s.server.max_body_bytes < body {
            return Err(format!(
                "server.max_body_bytes = {} is below the {body}-byte requests of clients[{i}]: \
                 the server would refuse them with 413; raise it to at least {body}",
                s.server.max_body_bytes
            ));
        }
        index = index.saturating_add(g.count);
    }
    Ok(())
}

/// The hazards are ones the oracle knows, and expectations name known
/// arms and metrics.
fn expectations(s: &Scenario) -> Result<(), String> {
    for h in &s.hazards {
        if !HAZARDS.contains(&h.as_str()) {
            return Err(format!(
                "hazards: unknown hazard {h:?}: use one of {}",
                HAZARDS.join(", ")
            ));
        }
    }
    for (table_name, e) in s.expect.all() {
        // `arm`, or `era.arm` (an era's own table).
        let server = table_name.rsplit('.').next().unwrap_or(&table_name);
        if !Arm::NAMES.contains(&server) {
            return Err(format!(
                "expect.{table_name}: unknown server arm: use one of {}{}",
                Arm::NAMES.join(", "),
                if table_name.contains('.') {
                    ""
                } else {
                    " (or an era, 2025-11-25 or 2026-07-28, holding arms' tables)"
                }
            ));
        }
        for (bound, table) in [("min", &e.min), ("max", &e.max)] {
            if let Some(name) = table.keys().find(|m| !Metrics::is_known(m)) {
                return Err(unknown_metric(
                    &format!("expect.{table_name}.{bound}"),
                    name,
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario of one resume client: `top` among the top-level keys,
    /// `server` in its `[server]` table, `group` in its group, `tables`
    /// after it.
    fn text(top: &str, server: &str, group: &str, tables: &str) -> String {
        format!(
            "name = \"t\"\nduration_ms = 1000\n{top}[server]\n{server}\n[[clients]]\n\
             behaviour = \"resume\"\n{group}{tables}"
        )
    }

    /// Each is refused here (one line naming the key), though the file
    /// format alone takes it: only this step knows the arms, the metrics,
    /// the hazards and the server's limits.
    #[test]
    fn the_house_refuses_what_the_file_format_cannot_know() {
        let regression = |server: &str, metric: &str| {
            format!(
                "[regression]\nkind = \"bug\"\nserver = \"{server}\"\nmetrics = [\"{metric}\"]\n"
            )
        };
        let cases = [
            (
                text("", "", "", "[expect.guarded.max]\nbogus = 0\n"),
                "expect.guarded.max: unknown metric \"bogus\"",
            ),
            (
                text("", "", "", "[expect.unguarded.min]\nbogus = 0\n"),
                "expect.unguarded.min: unknown metric \"bogus\"",
            ),
            (
                text("", "", "", "[expect.nginx.max]\nguard_bugs = 0\n"),
                "expect.nginx: unknown server arm: use one of",
            ),
            (
                text("hazards = [\"meteor\"]\n", "", "", ""),
                "hazards: unknown hazard \"meteor\"",
            ),
            (
                text("", "", "", &regression("nginx", "guard_bugs")),
                "regression.server: unknown server arm \"nginx\"",
            ),
            (
                text("", "", "", &regression("guarded", "bogus")),
                "regression.metrics: unknown metric \"bogus\"",
            ),
            (
                text("", "max_body_bytes = 100", "", ""),
                "server.max_body_bytes = 100",
            ),
            (
                text("", "", "chunk_interval_ms = 3600001\n", ""),
                "clients[0].chunk_interval_ms",
            ),
        ];
        for (text, needle) in cases {
            let err = match parse(&text) {
                Ok(_) => panic!("accepted, expected {needle:?}:\n{text}"),
                Err(e) => e,
            };
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert!(!err.contains('\n'), "one line: {err:?}");
            assert!(
                Scenario::parse(&text).is_ok(),
                "the file format alone takes it:\n{text}"
            );
        }
    }

    #[test]
    fn every_committed_scenario_passes_the_house() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sims");
        let mut n = 0;
        for dir in [root.clone(), root.join("regressions"), root.join("causes")] {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "toml") {
                    load(&p).unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                }
            }
        }
        assert!(n >= 11);
    }
}

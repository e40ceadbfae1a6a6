//! The field's clients: per field client behaviour a run's scenarios
//! show (`[[clients]] field`), failed operations per 1,000 on each
//! configuration, with the top cause, and per behaviour the configuration
//! that fails fewest and what removes the rest. "Which of the clients
//! your users run lose work against which server."

use super::recommend::decide::{arm_mechanisms, profile_mechanisms};
use super::recommend::remedies::remedy;
use super::{columns, heading, numbers};
use crate::sweep::{Aggregate, Summary};
use std::fmt::Write;

/// What the client itself must change, per behaviour: a server can only
/// contain what the client does, and a row whose every arm fails has
/// only this.
const CLIENT_FIXES: &[(&str, &str)] = &[
    ("key-per-attempt", "one `Idempotency-Key` per call, kept across its attempts"),
    ("never-reinit-after-404", "a new session after a 404, and the call re-sent on it"),
    ("ignore-retry-field", "wait the advised `retry:`, then resume with `Last-Event-ID`"),
    ("no-cursor-on-second-resume", "keep the last event id across reconnects, not only in the broken stream's reader (typescript-sdk PR #2509)"),
    ("fresh-session-per-call", "one session across calls, or a DELETE of the one it leaves"),
    ("cancel-never-sent", "`notifications/cancelled` for the request of a call it gives up"),
];

/// Where a cause's general remedy does not reach a client with the
/// behaviour, what does (or that nothing on the server's side does): per
/// (behaviour, cause).
const FIELD_REMEDIES: &[(&str, &str, &str)] = &[
    (
        "key-per-attempt",
        "key_changed",
        "on the 2025-11-25 wire the `guarded` arm (Rule M answers the re-POST on the session that still holds the call's stream, whatever its key); on the 2026-07-28 wire, which has no session, nothing on the server's side: no server can tell a retry under a new key from a new call",
    ),
    (
        "key-per-attempt",
        "cancelled_after_effect",
        "`effects = \"transactional\"` (a cancelled execution commits nothing); keys cannot help, since each attempt's key is new",
    ),
    (
        "key-per-attempt",
        "retry_without_key",
        "`effects = \"transactional\"`, or the `guarded` arm on the 2025-11-25 wire (Rule M); keys cannot help, since each attempt's key is new",
    ),
];

/// The cause that is the behaviour itself: the failures it names happen
/// because the client does what the behaviour says. At an equal rate, a
/// configuration that shows fewer of them is the better answer (a call
/// given up before it ran beats one that ran after the client left).
const OWN_CAUSES: &[(&str, &str)] = &[
    ("key-per-attempt", "key_changed"),
    ("never-reinit-after-404", "stale_session"),
    ("ignore-retry-field", "retry_ignored"),
    ("no-cursor-on-second-resume", "cursor_dropped"),
    ("cancel-never-sent", "cancel_not_sent"),
];

/// How many of `cell`'s failures are under `behaviour`'s own cause.
fn own_failures(behaviour: &str, cell: &Cell) -> u64 {
    OWN_CAUSES
        .iter()
        .find(|(b, _)| *b == behaviour)
        .and_then(|(_, c)| cell.causes.get(*c))
        .copied()
        .unwrap_or(0)
}

/// What removes `cause` for a client with `behaviour`: the behaviour's
/// own line where the cause's general remedy does not reach it, else that
/// remedy.
fn remedy_for(behaviour: &str, cause: &str) -> &'static str {
    FIELD_REMEDIES
        .iter()
        .find(|(b, c, _)| *b == behaviour && *c == cause)
        .map_or_else(|| remedy(cause), |(_, _, r)| r)
}

/// The client's own fix for `behaviour`.
fn client_fix(behaviour: &str) -> &'static str {
    CLIENT_FIXES
        .iter()
        .find(|(b, _)| *b == behaviour)
        .map_or("none known to this version", |(_, f)| f)
}

/// One behaviour's row: its scenarios' aggregates pooled per column.
struct Row {
    behaviour: String,
    scenarios: Vec<String>,
    /// Per column heading: (failed, operations, causes).
    cells: Vec<Cell>,
}

#[derive(Clone, Default)]
struct Cell {
    heading: String,
    server: String,
    clients: String,
    failed: u64,
    operations: u64,
    causes: std::collections::BTreeMap<String, u64>,
}

impl Cell {
    fn rate(&self) -> f64 {
        1000.0 * self.failed as f64 / self.operations.max(1) as f64
    }

    fn text(&self) -> String {
        if self.operations == 0 {
            return "–".into();
        }
        match numbers::most_first(&self.causes).first() {
            Some((c, _)) => format!("{:.1} ({c})", self.rate()),
            None => format!("{:.1}", self.rate()),
        }
    }
}

/// The rows: one per behaviour, in sims/README.md's order of names as
/// first met in the summary's scenarios.
fn rows(s: &Summary) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for (name, info) in &s.provenance.scenarios {
        for b in &info.field {
            let at = match rows.iter().position(|r| &r.behaviour == b) {
                Some(i) => i,
                None => {
                    rows.push(Row {
                        behaviour: b.clone(),
                        scenarios: Vec::new(),
                        cells: Vec::new(),
                    });
                    rows.len() - 1
                }
            };
            rows[at].scenarios.push(name.clone());
            for a in columns(s, name) {
                add(&mut rows[at].cells, a);
            }
        }
    }
    rows.sort_by_key(|r| {
        crate::scenario::Field::ALL
            .iter()
            .position(|f| f.as_str() == r.behaviour)
    });
    rows
}

fn add(cells: &mut Vec<Cell>, a: &Aggregate) {
    let h = heading(a);
    let at = match cells.iter().position(|c| c.heading == h) {
        Some(i) => i,
        None => {
            cells.push(Cell {
                heading: h,
                server: a.server.clone(),
                clients: a.clients.clone(),
                ..Cell::default()
            });
            cells.len() - 1
        }
    };
    let c = &mut cells[at];
    c.failed += a.metrics.ops_failed;
    c.operations += a.metrics.operations;
    for (k, v) in &a.metrics.failures_by_cause {
        *c.causes.entry(k.clone()).or_default() += v;
    }
}

/// The cell that fails fewest per 1,000 (ties: fewest failures under the
/// behaviour's own cause, then fewest mechanisms, then column order).
fn best<'c>(behaviour: &str, cells: &'c [Cell]) -> Option<&'c Cell> {
    cells.iter().filter(|c| c.operations > 0).min_by(|a, b| {
        a.rate()
            .total_cmp(&b.rate())
            .then(own_failures(behaviour, a).cmp(&own_failures(behaviour, b)))
            .then(arm_mechanisms(&a.server).cmp(&arm_mechanisms(&b.server)))
            .then(profile_mechanisms(&a.clients).cmp(&profile_mechanisms(&b.clients)))
    })
}

/// What the row of `behaviour` recommends: the best configuration, and
/// for each cause it still fails, what removes it on the server's side
/// for such a client.
fn verdict(behaviour: &str, cells: &[Cell]) -> String {
    let Some(b) = best(behaviour, cells) else {
        return "–".into();
    };
    let mut out = format!("`{}` ({:.1})", b.heading, b.rate());
    let rest = numbers::most_first(&b.causes);
    if rest.is_empty() {
        out.push_str(": loses nothing here");
    }
    for (cause, _) in rest {
        let _ = write!(out, "; `{cause}` remains: {}", remedy_for(behaviour, cause));
    }
    out
}

/// `## The field's clients` (empty when no scenario shows a field
/// behaviour).
pub fn markdown(s: &Summary) -> String {
    let rows = rows(s);
    if rows.is_empty() {
        return String::new();
    }
    let mut headings: Vec<String> = Vec::new();
    for r in &rows {
        for c in &r.cells {
            if !headings.contains(&c.heading) {
                headings.push(c.heading.clone());
            }
        }
    }
    let mut out = String::from("## The field's clients\n\nClients users run that do not honour the server, on purpose (each behaviour with its source in sims/README.md): which of them lose work against which server. Per behaviour, failed operations per 1,000 on each configuration, pooled over the scenarios whose clients show it and every seed, with the top cause; then the configuration that fails fewest (ties: fewer failures under the behaviour's own cause, then fewest mechanisms), what removes what it still fails, and what the client itself must change.\n\n| behaviour (scenarios) |");
    for h in &headings {
        let _ = write!(out, " {h} |");
    }
    out.push_str(" fewest failed, what removes the rest, the client's fix |\n|---|");
    out.push_str(&"---|".repeat(headings.len() + 1));
    out.push('\n');
    for r in &rows {
        let _ = write!(out, "| `{}` ({}) |", r.behaviour, r.scenarios.join(", "));
        for h in &headings {
            let cell = r.cells.iter().find(|c| &c.heading == h);
            let _ = write!(out, " {} |", cell.map_or("–".into(), Cell::text));
        }
        let _ = writeln!(
            out,
            " {}; the client's own fix: {} |",
            verdict(&r.behaviour, &r.cells),
            client_fix(&r.behaviour)
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(server: &str, failed: u64, cause: &str) -> Cell {
        Cell {
            heading: server.into(),
            server: server.into(),
            clients: crate::run::AS_WRITTEN.into(),
            failed,
            operations: 10,
            causes: if failed > 0 {
                [(cause.to_string(), failed)].into()
            } else {
                Default::default()
            },
        }
    }

    #[test]
    fn every_field_behaviour_has_a_client_fix() {
        for f in crate::scenario::Field::ALL {
            assert_ne!(
                client_fix(f.as_str()),
                "none known to this version",
                "{}",
                f.as_str()
            );
        }
    }

    #[test]
    fn the_fewest_failed_wins_and_ties_go_to_fewer_mechanisms() {
        let cells = [
            cell("unguarded", 3, "key_changed"),
            cell("guarded", 0, ""),
            cell("keys", 0, ""),
        ];
        assert_eq!(best("key-per-attempt", &cells).unwrap().server, "keys");
        assert_eq!(
            verdict("key-per-attempt", &cells),
            "`keys` (0.0): loses nothing here"
        );
    }

    #[test]
    fn what_remains_under_the_best_is_named_with_its_remedy() {
        let cells = [
            cell("unguarded", 5, "stale_session"),
            cell("guarded", 5, "stale_session"),
        ];
        let v = verdict("never-reinit-after-404", &cells);
        assert!(
            v.starts_with("`unguarded` (500.0); `stale_session` remains: "),
            "{v}"
        );
        assert!(v.contains(remedy("stale_session")), "{v}");
    }

    /// A row of the field's tables keyed by behaviour and cause names both.
    fn names_a_behaviour_and_a_cause(behaviour: &str, cause: &str) {
        assert!(
            crate::scenario::Field::ALL
                .iter()
                .any(|f| f.as_str() == behaviour),
            "{behaviour} is a field behaviour"
        );
        assert!(
            crate::oracle::causes::Cause::named(cause).is_some(),
            "{cause} is a cause"
        );
    }

    /// At an equal rate, a configuration where the call was given up before
    /// it ran beats one where it ran after the client left, whatever the
    /// mechanisms.
    #[test]
    fn ties_go_first_to_fewer_failures_under_the_behaviours_own_cause() {
        let cells = [
            cell("unguarded", 5, "cancel_not_sent"),
            cell("cancel", 5, "gave_up"),
        ];
        assert_eq!(best("cancel-never-sent", &cells).unwrap().server, "cancel");
        // Another behaviour has no such cause here: fewest mechanisms wins.
        assert_eq!(
            best("fresh-session-per-call", &cells).unwrap().server,
            "unguarded"
        );
        for (b, c) in OWN_CAUSES {
            names_a_behaviour_and_a_cause(b, c);
        }
    }

    /// A key per attempt defeats the keys a cause's general remedy offers:
    /// its row names what still reaches such a client instead.
    #[test]
    fn a_remedy_that_cannot_reach_the_behaviour_is_not_offered() {
        let cells = [cell("unguarded", 10, "cancelled_after_effect")];
        let general = remedy("cancelled_after_effect");
        assert!(general.contains("keyed clients"), "{general}");
        let v = verdict("key-per-attempt", &cells);
        assert!(!v.contains(general), "{v}");
        assert!(v.contains("transactional"), "{v}");
        // Another behaviour still gets the general remedy.
        assert!(verdict("cancel-never-sent", &cells).contains(general));
        for (b, c, _) in FIELD_REMEDIES {
            names_a_behaviour_and_a_cause(b, c);
        }
    }
}

//! The events decision table: per kind of reader (its delivery mode and
//! its receiver's behaviour), the webhook sender that fails the fewest
//! deliveries, with each sender's rate beside it. Candidates are this
//! comparison's configurations and those of the comparisons beside it
//! (the committed `results/events/`), each counted only over the
//! scenarios of the row it ran all of, as the answer by what you control
//! counts operations.

use super::numbers::{per_1000, rate_text, thousands};
use super::recommend::Beside;
use crate::sweep::Summary;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The senders, in the order a tie goes: the draft's, then the one that
/// adds an outbox, then the one that breaks the draft.
const SENDERS: [&str; 3] = ["spec", "durable", "naive"];

/// One configuration's deliveries over one row's scenarios.
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    /// Where it ran: `this run` or the directory beside.
    from: String,
    /// The arm, and the `--set` overrides other than the sender.
    config: String,
    owed: u64,
    failed: u64,
}

impl Cell {
    fn rate(&self) -> f64 {
        per_1000(self.failed, self.owed)
    }

    fn text(&self) -> String {
        format!(
            "{} ({} of {})",
            rate_text(self.rate()),
            thousands(self.failed),
            thousands(self.owed)
        )
    }
}

/// A row: the readers' words, and the scenarios that have them.
type Rows = BTreeMap<String, Vec<String>>;

/// The rows of `s`: each scenario that delivered something, under its
/// readers' words (those of its provenance).
fn rows(s: &Summary) -> Rows {
    let delivered: BTreeSet<&str> = s
        .aggregates
        .iter()
        .filter(|a| a.metrics.deliveries > 0)
        .map(|a| a.scenario.as_str())
        .collect();
    let mut rows = Rows::new();
    for sc in delivered {
        let Some(info) = s.provenance.scenarios.get(sc) else {
            continue;
        };
        if info.readers.is_empty() {
            continue;
        }
        rows.entry(info.readers.join(" + "))
            .or_default()
            .push(sc.to_string());
    }
    rows
}

/// A configuration: its arm (and clients), its overrides but the sender.
type Config = (String, Vec<String>);
/// What a configuration's runs came to: the senders they ran, owed
/// deliveries, failed ones.
type Tally = (BTreeSet<String>, u64, u64);

/// The best configuration per sender of `src` over `scenarios` (none
/// when it did not run them all). A run's sender is its
/// `server.events_sender` override, else its scenario's own; a
/// configuration whose scenarios name different senders is `as written`.
fn cells((from, src): (&str, &Summary), scenarios: &[String], out: &mut BTreeMap<String, Cell>) {
    let ran: BTreeSet<&str> = src.runs.iter().map(|r| r.scenario.as_str()).collect();
    if !scenarios.iter().all(|sc| ran.contains(sc.as_str())) {
        return;
    }
    let mut by: BTreeMap<Config, Tally> = BTreeMap::new();
    for r in src.runs.iter().filter(|r| scenarios.contains(&r.scenario)) {
        let set = r
            .overrides
            .iter()
            .find_map(|o| o.strip_prefix("server.events_sender="));
        let own = src
            .provenance
            .scenarios
            .get(&r.scenario)
            .and_then(|i| i.sender.as_deref());
        let sender = set.or(own).unwrap_or("spec").to_string();
        let others: Vec<String> = r
            .overrides
            .iter()
            .filter(|o| !o.starts_with("server.events_sender="))
            .cloned()
            .collect();
        let arm = match r.clients.as_str() {
            crate::run::AS_WRITTEN => format!("`{}`", r.server),
            c => format!("`{}` (`{c}` clients)", r.server),
        };
        let key = (arm, others);
        let e = by.entry(key).or_default();
        e.0.insert(sender);
        e.1 += r.metrics.deliveries;
        e.2 += r.metrics.deliveries_failed;
    }
    // An arm that delivered nothing (one without the extension) answers
    // nothing here.
    let by = by.into_iter().filter(|(_, (_, owed, _))| *owed > 0);
    for ((arm, others), (senders, owed, failed)) in by {
        let sender = match senders.len() {
            1 => senders.into_iter().next().unwrap_or_default(),
            _ => "as written".to_string(),
        };
        // The era is the row's; the rest is what to deploy.
        let settings: Vec<String> = others
            .iter()
            .filter(|o| !o.starts_with("era="))
            .map(|o| format!("`{o}`"))
            .collect();
        let config = match settings.is_empty() {
            true => arm,
            false => format!("{arm} with {}", settings.join(", ")),
        };
        let c = Cell {
            from: from.to_string(),
            config,
            owed,
            failed,
        };
        let better = |x: &Cell| {
            c.rate()
                .total_cmp(&x.rate())
                .then(c.config.len().cmp(&x.config.len()))
                .is_lt()
        };
        match out.get(&sender) {
            Some(x) if !better(x) => {}
            _ => {
                out.insert(sender, c);
            }
        }
    }
}

/// The sender that failed the fewest, the first of [`SENDERS`] (then a
/// mixed `as written`) on a tie.
fn pick(best: &BTreeMap<String, Cell>) -> Option<(&'static str, &Cell)> {
    SENDERS
        .iter()
        .chain(std::iter::once(&"as written"))
        .filter_map(|&k| best.get(k).map(|c| (k, c)))
        .min_by(|a, b| a.1.rate().total_cmp(&b.1.rate()))
}

/// The table, or nothing when no scenario of `s` has readers.
pub fn markdown(s: &Summary, beside: &Beside) -> String {
    let rows = rows(s);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "### What to deploy, by delivery and receiver\n\nPer kind of reader (its delivery mode, and for a webhook what its receiver deduplicates on and what the plan does to it), the webhook sender that fails the fewest deliveries per 1,000 over the scenarios with those readers, and each sender's best configuration beside it. Candidates: this run and the comparisons beside it that ran every scenario of the row; ties go to the draft's sender (`spec`), then `durable`. The sender sends webhooks only: a row without one shows what its readers met whatever the sender.\n\n| readers | scenarios | deploy | naive | spec | durable |\n|---|---|---|---|---|---|\n",
    );
    let mut notes: BTreeSet<String> = BTreeSet::new();
    for (readers, scenarios) in &rows {
        let mut best: BTreeMap<String, Cell> = BTreeMap::new();
        cells(("this run", s), scenarios, &mut best);
        for (dir, other) in &beside.sources {
            cells((dir, other), scenarios, &mut best);
        }
        let webhook = readers.contains("webhook");
        let deploy = match pick(&best) {
            None => "–".to_string(),
            Some((_, c)) if !webhook => format!("any sender: {}", c.text()),
            Some((k, c)) => {
                let from = match c.from.as_str() {
                    "this run" => String::new(),
                    d => format!(" ({d})"),
                };
                let sender = match k {
                    "as written" => "each scenario's own sender".to_string(),
                    k => format!("`{k}`"),
                };
                format!("**{sender}**: {}, on {}{from}", c.text(), c.config)
            }
        };
        let mut cell = |k: &str| match best.get(k) {
            None => "not run".to_string(),
            Some(c) => {
                if c.from != "this run" {
                    notes.insert(c.from.clone());
                }
                match c.from.as_str() {
                    "this run" => rate_text(c.rate()),
                    d => format!("{} ({d})", rate_text(c.rate())),
                }
            }
        };
        let _ = writeln!(
            out,
            "| {readers} | {} | {deploy} | {} | {} | {} |",
            scenarios.join(", "),
            cell("naive"),
            cell("spec"),
            cell("durable"),
        );
    }
    out.push('\n');
    if notes.is_empty() {
        out.push_str("Only this run's senders are in the table: compare the others on the same scenarios with `--set server.events_sender=naive|spec|durable` into `results/events/<sender>` (or your `--out`) beside it.\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_drafts_sender_and_a_lower_rate_beats_any_order() {
        let c = |failed| Cell {
            from: "this run".into(),
            config: "`guarded`".into(),
            owed: 1_000,
            failed,
        };
        let mut best: BTreeMap<String, Cell> = BTreeMap::new();
        best.insert("naive".into(), c(0));
        best.insert("durable".into(), c(0));
        assert_eq!(pick(&best).map(|p| p.0), Some("durable"));
        best.insert("spec".into(), c(0));
        assert_eq!(pick(&best).map(|p| p.0), Some("spec"));
        best.insert("spec".into(), c(2));
        best.insert("durable".into(), c(1));
        best.insert("as written".into(), c(0));
        assert_eq!(pick(&best).map(|p| p.0), Some("naive"));
        assert_eq!(pick(&BTreeMap::new()).map(|p| p.0), None);
    }
}

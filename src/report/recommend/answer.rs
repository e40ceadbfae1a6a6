//! The answer by what the user controls: for each era, the best
//! configuration when only the server can change, when the clients can
//! change too, and when the deployment can change as well. Candidates are
//! this summary's configurations and those of the summaries beside it
//! that ran the same scenarios (their runs of those scenarios only), each
//! with its own seeds' interval; the rule that picks among them is
//! [`super::decide`]'s, the same as everywhere else.

use super::decide::deployed_settings;
use super::{standings_of, Beside, Standing};
use crate::report::numbers::{counted, rate_text};
use crate::run::AS_WRITTEN;
use crate::settings::Era;
use crate::sweep::Summary;
use std::collections::BTreeSet;
use std::fmt::Write;

/// What the user controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// The arm and its server settings; the clients are the scenarios'.
    Server,
    /// The client profile too.
    ServerClients,
    /// The deployment too (store, routing, failure handling).
    Everything,
}

impl Control {
    const ALL: [Control; 3] = [Control::Server, Control::ServerClients, Control::Everything];

    fn words(self) -> &'static str {
        match self {
            Control::Server => "the server only",
            Control::ServerClients => "server and clients",
            Control::Everything => "server, clients and deployment",
        }
    }

    fn admits(self, x: &Standing) -> bool {
        let deployment = changes_deployment(x);
        match self {
            Control::Server => x.clients == AS_WRITTEN && !deployment,
            Control::ServerClients => !deployment,
            Control::Everything => true,
        }
    }
}

/// `x` sets some `deployment.` key.
fn changes_deployment(x: &Standing) -> bool {
    x.settings.iter().any(|s| s.starts_with("deployment."))
}

/// A configuration that could answer, and where it ran.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Where it ran: `this run`, or the directory beside.
    pub from: String,
    /// The seeds it ran, as its summary gives them.
    pub seeds: String,
    /// Its standing over the shared scenarios.
    pub standing: Standing,
}

/// One row: the constraint, the era, and the best candidate (None: no
/// configuration of that constraint ran over these scenarios).
#[derive(Clone, Debug)]
pub struct Row {
    pub control: Control,
    pub era: Era,
    pub best: Option<Candidate>,
    /// The others tied with the best, in decision order.
    pub tied: Vec<Candidate>,
    /// Some candidate of this constraint changed the deployment.
    pub deployment_ran: bool,
    /// The era's baseline among the candidates (`unguarded` with the
    /// scenarios' own clients, else with `plain` ones).
    pub baseline: Option<Candidate>,
}

impl Row {
    /// Its best is the baseline itself: nothing this constraint allows
    /// beats what runs today beyond the noise.
    pub fn keeps_baseline(&self) -> bool {
        match (&self.best, &self.baseline) {
            (Some(x), Some(b)) => same(&x.standing, &b.standing),
            _ => false,
        }
    }
}

/// The era a configuration ran in: its `era=` setting, else the default.
fn era_of(x: &Standing) -> Era {
    x.settings
        .iter()
        .find_map(|s| s.strip_prefix("era="))
        .and_then(|e| Era::ALL.into_iter().find(|x| x.as_str() == e))
        .unwrap_or_default()
}

/// Every candidate: `s`'s configurations, then those of each summary
/// beside it that ran every scenario `s` ran (restricted to them).
pub fn candidates(s: &Summary, beside: &Beside) -> Vec<Candidate> {
    let scenarios: BTreeSet<&str> = s.runs.iter().map(|r| r.scenario.as_str()).collect();
    let mut out: Vec<Candidate> = super::standings(s)
        .into_iter()
        .map(|standing| Candidate {
            from: "this run".into(),
            seeds: s.provenance.seeds.clone(),
            standing,
        })
        .collect();
    for (dir, other) in &beside.sources {
        let ran: BTreeSet<&str> = other.runs.iter().map(|r| r.scenario.as_str()).collect();
        if !scenarios.is_subset(&ran) {
            continue;
        }
        let runs = other
            .runs
            .iter()
            .filter(|r| scenarios.contains(r.scenario.as_str()));
        for standing in standings_of(runs) {
            let c = Candidate {
                from: dir.clone(),
                seeds: other.provenance.seeds.clone(),
                standing,
            };
            match out.iter_mut().find(|x| same(&x.standing, &c.standing)) {
                // The same configuration twice: the one with more operations.
                Some(x) if x.standing.operations >= c.standing.operations => {}
                Some(x) => *x = c,
                None => out.push(c),
            }
        }
    }
    out
}

/// `a` and `b` are one configuration: one arm, clients and deployed
/// settings (an era set explicitly or by default is the same era).
fn same(a: &Standing, b: &Standing) -> bool {
    a.server == b.server
        && a.clients == b.clients
        && era_of(a) == era_of(b)
        && deployed_settings(&a.settings).eq(deployed_settings(&b.settings))
}

/// The rows: per era with some candidate, per constraint.
pub fn rows(s: &Summary, beside: &Beside) -> Vec<Row> {
    let all = candidates(s, beside);
    let mut out = Vec::new();
    for era in Era::ALL {
        let of_era: Vec<&Candidate> = all
            .iter()
            .filter(|c| era_of(&c.standing) == era && c.standing.operations > 0)
            .collect();
        if of_era.is_empty() {
            continue;
        }
        let baseline = [AS_WRITTEN, "plain"].iter().find_map(|p| {
            of_era
                .iter()
                .find(|c| {
                    c.standing.server == "unguarded"
                        && c.standing.clients == *p
                        && deployed_settings(&c.standing.settings).count() == 0
                })
                .map(|c| (*c).clone())
        });
        for control in Control::ALL {
            let pool: Vec<Standing> = of_era
                .iter()
                .filter(|c| control.admits(&c.standing))
                .map(|c| c.standing.clone())
                .collect();
            let deployment_ran = pool.iter().any(changes_deployment);
            let find = |b: &Standing| {
                of_era
                    .iter()
                    .find(|c| same(&c.standing, b))
                    .map(|c| (*c).clone())
            };
            let ordered = super::order(pool);
            let best = ordered.first().and_then(find);
            // The tied, the lowest rate first (the one the others tie with).
            let mut tied: Vec<Candidate> = ordered
                .iter()
                .skip(1)
                .filter(|x| x.tied)
                .filter_map(find)
                .collect();
            tied.sort_by(|a, b| a.standing.rate().total_cmp(&b.standing.rate()));
            out.push(Row {
                control,
                era,
                best,
                tied,
                deployment_ran,
                baseline: baseline.clone(),
            });
        }
    }
    out
}

/// The flags that run `x`.
pub fn flags(x: &Standing) -> String {
    let mut f = format!("--servers {}", x.server);
    if x.clients != AS_WRITTEN {
        let _ = write!(f, " --clients {}", x.clients);
    }
    for set in &x.settings {
        let _ = write!(f, " --set {set}");
    }
    f
}

/// The table, the commands that reproduce each row, and a glossary line
/// for every arm, profile and setting it names, in Markdown.
pub fn markdown(s: &Summary, beside: &Beside) -> String {
    let rows = rows(s, beside);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "### The answer, by what you control\n\nPer era: the configuration that fails the fewest operations per 1,000 when you can change only the server, the server and its clients, or the deployment too. Candidates: this run and the comparisons beside it that ran the same scenarios; each rate with its 95 % interval over its own seeds; ties go to the fewest mechanisms.\n",
    );
    let mut named: Vec<&Standing> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if i == 0 || rows[i - 1].era != r.era {
            let _ = write!(
                out,
                "\n**On the {} wire**\n\n| you control | deploy | failed per 1,000 (95 % interval) | against the baseline | from |\n|---|---|---|---|---|\n",
                r.era.as_str()
            );
        }
        let Some(c) = &r.best else {
            let _ = writeln!(
                out,
                "| {} | not run over these scenarios | – | – | – |",
                r.control.words(),
            );
            continue;
        };
        let x = &c.standing;
        named.push(x);
        let against = match &r.baseline {
            Some(b) if b.standing.rate() > 0.0 => format!(
                "{} → {}: removes {:.0} %",
                rate_text(b.standing.rate()),
                rate_text(x.rate()),
                (1.0 - x.rate() / b.standing.rate()) * 100.0
            ),
            Some(_) => "the baseline fails nothing".into(),
            None => "baseline not run".into(),
        };
        let mut deploy = if r.keeps_baseline() {
            // Nothing this constraint allows beats the baseline beyond
            // the noise: say so, rather than "deploy" what runs today.
            format!(
                "nothing beats the baseline here: keep {}",
                x.configuration()
            )
        } else {
            x.configuration()
        };
        if r.control == Control::Everything && !r.deployment_ran {
            deploy.push_str(" (no deployment setting ran over these scenarios)");
        }
        if !r.tied.is_empty() {
            let mut tied: Vec<String> = r
                .tied
                .iter()
                .take(3)
                .map(|t| {
                    format!(
                        "{} ({}, {})",
                        t.standing.configuration(),
                        rate_text(t.standing.rate()),
                        counted(t.standing.seeds as u64, "seed")
                    )
                })
                .collect();
            if r.tied.len() > 3 {
                tied.push(format!("{} more", r.tied.len() - 3));
            }
            let _ = write!(
                deploy,
                "; tied with {}: it has fewer mechanisms",
                tied.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} ({}–{}, {}) | {against} | {} |",
            r.control.words(),
            deploy,
            rate_text(x.rate()),
            rate_text(x.interval.0),
            rate_text(x.interval.1),
            counted(x.seeds as u64, "seed"),
            if c.from == "this run" {
                c.from.clone()
            } else {
                format!("`{}`", c.from)
            },
        );
    }
    out.push_str("\nTo reproduce a row:\n\n");
    let sims = sims_flags(&s.provenance.command);
    for r in &rows {
        if let Some(c) = &r.best {
            let _ = writeln!(
                out,
                "- {}, {}: `mcp-chaos compare{sims} {} --seeds {} --out target/compare-row`",
                r.control.words(),
                r.era.as_str(),
                flags(&c.standing),
                c.seeds
            );
        } else {
            let _ = writeln!(
                out,
                "- {}, {}: not run here; `mcp-chaos compare --set era={} --out target/compare-{}` runs the arms with the scenarios' own clients in that era (about as long as the main job)",
                r.control.words(),
                r.era.as_str(),
                r.era.as_str(),
                r.era.as_str()
            );
        }
    }
    out.push('\n');
    out.push_str(&glossary(&named));
    out
}

/// One line per arm, profile and setting the named configurations use.
/// The scenarios a comparison ran, as its command chose them (`--sims`),
/// each with a leading space; empty for the built-in defaults. Every
/// candidate ran the same scenarios, so a row reproduces with them.
fn sims_flags(command: &[String]) -> String {
    let mut out = String::new();
    let mut args = command.iter();
    while let Some(a) = args.next() {
        let dir = match a.strip_prefix("--sims=") {
            Some(d) => Some(d),
            None if a == "--sims" => args.next().map(String::as_str),
            None => None,
        };
        if let Some(d) = dir {
            out.push_str(" --sims ");
            out.push_str(d);
        }
    }
    out
}

fn glossary(named: &[&Standing]) -> String {
    let mut terms: BTreeSet<(u8, String)> = BTreeSet::new();
    for x in named {
        terms.insert((0, x.server.clone()));
        if x.clients != AS_WRITTEN {
            terms.insert((1, x.clients.clone()));
        }
        for s in deployed_settings(&x.settings) {
            terms.insert((2, s.clone()));
        }
    }
    let mut lines = Vec::new();
    for (kind, t) in terms {
        let words = match kind {
            0 => crate::hosts::sut::ArmEntry::named(&t).map(|e| e.glossary),
            1 => t
                .parse::<crate::base::profile::Profile>()
                .ok()
                .map(|p| p.words()),
            _ => setting_words(&t),
        };
        let label = if kind == 1 {
            format!("`{t}` clients")
        } else {
            format!("`{t}`")
        };
        lines.push(format!(
            "{label}: {}",
            words
                .unwrap_or("see the glossary at the end of this report")
                .trim_end_matches('.')
        ));
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("Terms: {}.\n\n", lines.join("; "))
}

/// What a setting the answer names does, in a few words.
pub fn setting_words(set: &str) -> Option<&'static str> {
    SETTING_WORDS
        .iter()
        .find(|(k, _)| *k == set)
        .map(|(_, w)| *w)
}

/// The settings the remedies and the zero configurations name.
pub const SETTING_WORDS: &[(&str, &str)] = &[
    (
        "server.durable_dedup=true",
        "completed keys survive a server restart (kept beside the ledger)",
    ),
    (
        "server.effects=transactional",
        "a tool's effect commits with its key when the tool finishes, so a cancelled or crashed execution commits nothing",
    ),
    (
        "deployment.store=shared",
        "every replica reads sessions, streams and keys from one shared store",
    ),
    (
        "deployment.on_dead_upstream=repin",
        "the balancer pins a session whose replica died to a live one",
    ),
    (
        "deployment.store_durable=true",
        "the shared store keeps its contents across its own restarts",
    ),
    (
        "deployment.resume=pin-owner",
        "resumes go to the replica that issued the cursor",
    ),
    (
        "deployment.balancer=hash",
        "the balancer routes by a hash ring that needs no table",
    ),
    (
        "deployment.balancer=sticky",
        "the balancer keeps a session on the replica that opened it",
    ),
];

/// The rows as terminal lines (what `compare` prints after its first line).
pub fn text(s: &Summary, beside: &Beside) -> String {
    let rows = rows(s, beside);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("  the answer by what you control (report.md has the table):\n");
    for r in rows {
        match &r.best {
            Some(c) => {
                let x = &c.standing;
                let tied = if r.tied.is_empty() {
                    String::new()
                } else {
                    format!(", tied with {} more", r.tied.len())
                };
                let keep = if r.keeps_baseline() {
                    "nothing beats the baseline, keep "
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "    {} ({}): {keep}{} — {} per 1,000 ({}–{}){tied}; from {}",
                    r.control.words(),
                    r.era.as_str(),
                    flags(x),
                    rate_text(x.rate()),
                    rate_text(x.interval.0),
                    rate_text(x.interval.1),
                    c.from
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "    {} ({}): not run over these scenarios",
                    r.control.words(),
                    r.era.as_str()
                );
            }
        }
    }
    out
}

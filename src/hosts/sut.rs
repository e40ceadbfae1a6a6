//! The system under test: what the world runs on its server host. It is
//! given the host's listener, the incarnation's seed and number, the ledger
//! and the history, and serves HTTP; the oracle judges it from the records
//! alone. The built-in arms ([`BuiltIn`]) are its first implementations.
//!
//! Neither the server nor this module imports the world or the oracle:
//! the world calls [`SystemUnderTest::serve`] once per incarnation (at the
//! start and after every restart), and the run reads its answers to fill in
//! the oracle's `World`.

use crate::history::History;
use crate::ledger::Ledger;
pub use crate::server::Replica;
use crate::server::{Listener, Pacing, Server, ServerConfig, Variant};
use std::future::Future;
use std::io;

/// What one incarnation of the system under test is given.
pub struct Host<L> {
    /// Accepts the clients' connections.
    pub listener: L,
    /// This incarnation's seed (a child of the run's seed): every choice
    /// the system makes that reaches output is drawn from it.
    pub seed: u64,
    /// 0 at the start, one more after each restart.
    pub incarnation: u32,
    /// The side-effect ledger: it outlives every incarnation.
    pub ledger: Ledger,
    /// The run's history, for the system's own records.
    pub history: History,
    /// Its place in a deployment; `None`: the one server of a world
    /// without replicas.
    pub replica: Option<Replica>,
    /// How it reaches webhook receivers (`None`: it cannot; the built-in
    /// arms then offer no webhook delivery).
    pub egress: Option<crate::server::Egress>,
}

/// A server the world can run and the oracle can judge.
pub trait SystemUnderTest {
    /// Its name in reports and expectations (`guarded`, `unguarded`, …).
    fn name(&self) -> &str;

    /// Whether its records carry a guard the oracle can audit (Rule M
    /// decisions with the views they were made from).
    fn audited(&self) -> bool;

    /// Whether it is built in: its server records may refine the causes the
    /// black box found.
    fn built_in(&self) -> bool;

    /// Whether it serves the legacy HTTP+SSE transport (`GET /sse`): when
    /// not, the scenario's legacy clients are *not applicable* to it and do
    /// not run.
    fn legacy_transport(&self) -> bool {
        true
    }

    /// Whether it takes part in the 2026-07-28 wire: when not, every
    /// client of a scenario in that era is *not applicable* to it.
    fn speaks_2026(&self) -> bool {
        true
    }

    /// Whether its replicas keep what they share on the deployment's
    /// shared store (`deployment.store = "shared"`): when not (a server
    /// with its own in-memory sessions, as the SDKs ship), the world hosts
    /// no store and each replica keeps its own memory.
    fn shared_store(&self) -> bool {
        false
    }

    /// Serves HTTP on `host.listener` until the listener fails, on the
    /// host's `LocalSet`. What runs before the returned future is first
    /// polled runs when the incarnation starts.
    fn serve<L: Listener + 'static>(
        &self,
        host: Host<L>,
    ) -> impl Future<Output = io::Result<()>> + 'static;
}

/// A built-in arm with its settings (a scenario's `[server]` table).
#[derive(Clone, Debug)]
pub struct BuiltIn {
    /// Which arm.
    pub variant: Variant,
    /// Its settings; `session_seed` is set per incarnation from the host's
    /// seed.
    pub cfg: ServerConfig,
}

impl SystemUnderTest for BuiltIn {
    fn name(&self) -> &str {
        self.variant.as_str()
    }

    fn audited(&self) -> bool {
        self.variant == Variant::Guarded
    }

    fn built_in(&self) -> bool {
        true
    }

    fn shared_store(&self) -> bool {
        true
    }

    /// `cancel` is the 2026-07-28 remedy on the 2025-11-25 wire: on the
    /// new wire every arm cancels on close, so it stands for nothing there.
    fn speaks_2026(&self) -> bool {
        self.variant != Variant::Cancel
    }

    fn serve<L: Listener + 'static>(
        &self,
        host: Host<L>,
    ) -> impl Future<Output = io::Result<()>> + 'static {
        let mut cfg = self.cfg.clone();
        cfg.session_seed = host.seed;
        // Created (and its start recorded) now, when the incarnation starts.
        let (v, h, l) = (self.variant, host.history, host.ledger);
        let server = match host.replica {
            Some(r) => Server::replica(v, cfg, h, l, Pacing::Timer, r),
            None => Server::new(v, cfg, h, l, Pacing::Timer),
        };
        let server = match host.egress {
            Some(e) => server.deliver_through(e),
            None => server,
        };
        server.serve(host.listener)
    }
}

/// An arm as `--server` names it: a built-in arm, or the official Rust
/// SDK's server (`rmcp`, `rmcp-es`; the `rmcp` cargo feature, on by
/// default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arm {
    /// A built-in arm.
    BuiltIn(Variant),
    /// rmcp's `StreamableHttpService` with its built-in cache.
    Rmcp,
    /// rmcp with an event store.
    RmcpEs,
}

/// One arm as every part that names it reads it: `--server`, the
/// scenario's `[expect.<arm>]` tables, the report's glossary, the matrix's
/// legend and order, the plots' colours. A new arm is one entry of
/// [`ARMS`] plus its implementation.
#[derive(Clone, Copy, Debug)]
pub struct ArmEntry {
    /// The arm.
    pub arm: Arm,
    /// Its name (`--server`, JSON, `[expect.<arm>]`).
    pub name: &'static str,
    /// The arm it adds one mechanism to (`None`: a baseline of its own).
    /// The reports put each arm right after its baseline.
    pub baseline: Option<&'static str>,
    /// What it adds to its baseline: one line of the matrix's legend.
    pub adds: &'static str,
    /// What it is: one line of the report's glossary.
    pub glossary: &'static str,
    /// Its colour in every plot and legend.
    pub colour: &'static str,
    /// Its dash pattern in line plots (empty: solid), so curves that
    /// coincide still show each other through their gaps.
    pub dashes: &'static str,
    /// Whether this build can run it (the rmcp arms need their feature;
    /// a scenario may name them in any build).
    pub runnable: bool,
}

/// Every arm, built-in ones first in [`Variant::ALL`] order, then rmcp's.
pub const ARMS: [ArmEntry; 6] = [
    ArmEntry {
        arm: Arm::BuiltIn(Variant::Guarded),
        name: "guarded",
        baseline: Some("keys"),
        adds: "keys + Rule M, Rule T, announced gaps and retirement",
        glossary: "`keys` plus the session guard: Rule M decides whether a POST may run while a dropped stream is still owed events, Rule T handles a session used across transports, evicted events are announced with an `event: gap`, finished streams retire.",
        colour: "#1b7837",
        dashes: "2,2",
        runnable: true,
    },
    ArmEntry {
        arm: Arm::BuiltIn(Variant::Unguarded),
        name: "unguarded",
        baseline: None,
        adds: "the baseline: today's SDK behaviour (no guard, keys ignored, silent gaps)",
        glossary: "the baseline, behaving as today's SDK servers do: no resumption guard, `Idempotency-Key` ignored, evicted events skipped without a word.",
        colour: "#c51b7d",
        dashes: "",
        runnable: true,
    },
    ArmEntry {
        arm: Arm::BuiltIn(Variant::Keys),
        name: "keys",
        baseline: Some("unguarded"),
        adds: "unguarded + `Idempotency-Key` honoured per principal",
        glossary: "`unguarded` plus `Idempotency-Key` honoured per principal: a retried call with the same key gets the first execution's result instead of running again.",
        colour: "#2166ac",
        dashes: "8,3",
        runnable: true,
    },
    ArmEntry {
        arm: Arm::BuiltIn(Variant::Cancel),
        name: "cancel",
        baseline: Some("unguarded"),
        adds: "unguarded + a close the server sees cancels the request; resume GETs get 405",
        glossary: "`unguarded` plus: a connection close the server sees cancels the request still running; resume GETs are refused (405).",
        colour: "#e08214",
        dashes: "10,3,2,3",
        runnable: true,
    },
    ArmEntry {
        arm: Arm::Rmcp,
        name: "rmcp",
        baseline: None,
        adds: "the official Rust SDK's server (rmcp 3.11) as shipped, judged black-box (so its replayed events are not counted): its per-stream cache of 16 events, inclusive replay, no resume once a request completed; no legacy transport; on the 2026-07-28 wire its own tasks (`TaskManager`; no key honoured), with seeded task ids and the TTL on the simulated clock",
        glossary: "the official Rust MCP SDK's server as shipped, judged from the outside only.",
        colour: "#762a83",
        dashes: "4,4",
        runnable: cfg!(feature = "rmcp"),
    },
    ArmEntry {
        arm: Arm::RmcpEs,
        name: "rmcp-es",
        baseline: Some("rmcp"),
        adds: "rmcp + an in-memory event store: exclusive replay that follows the stream to its result",
        glossary: "`rmcp` with an in-memory event store, so a resume replays the stream up to its result.",
        colour: "#35978f",
        dashes: "1,3",
        runnable: cfg!(feature = "rmcp"),
    },
];

/// The registry's names, in its order.
const fn arm_names() -> [&'static str; ARMS.len()] {
    let mut names = [""; ARMS.len()];
    let mut i = 0;
    while i < ARMS.len() {
        names[i] = ARMS[i].name;
        i += 1;
    }
    names
}

impl ArmEntry {
    /// The entry of the arm named `name`, if one.
    pub fn named(name: &str) -> Option<&'static ArmEntry> {
        ARMS.iter().find(|e| e.name == name)
    }

    /// Every arm in report order: each baseline, then the arms built on
    /// it (each followed by its own), in registry order.
    pub fn in_report_order() -> Vec<&'static ArmEntry> {
        fn after(base: Option<&str>, out: &mut Vec<&'static ArmEntry>) {
            for e in ARMS.iter().filter(|e| e.baseline == base) {
                out.push(e);
                after(Some(e.name), out);
            }
        }
        let mut out = Vec::with_capacity(ARMS.len());
        after(None, &mut out);
        out
    }
}

impl Arm {
    /// Every arm's name, whether or not this build can run it (a scenario
    /// may state expectations for the rmcp arms in any build).
    pub const NAMES: [&'static str; ARMS.len()] = arm_names();

    /// Every arm this build can run: the built-in arms, then rmcp's.
    pub fn all() -> Vec<Arm> {
        ARMS.iter().filter(|e| e.runnable).map(|e| e.arm).collect()
    }

    /// Its registry entry.
    pub fn entry(self) -> &'static ArmEntry {
        ARMS.iter()
            .find(|e| e.arm == self)
            .expect("every arm has an entry in ARMS (a test checks it)")
    }

    /// Its name (`--server`, JSON, `[expect.<arm>]`).
    pub fn as_str(self) -> &'static str {
        self.entry().name
    }

    /// The built-in arm, if it is one.
    pub fn variant(self) -> Option<Variant> {
        match self {
            Arm::BuiltIn(v) => Some(v),
            _ => None,
        }
    }
}

impl From<Variant> for Arm {
    fn from(v: Variant) -> Arm {
        Arm::BuiltIn(v)
    }
}

impl std::fmt::Display for Arm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Arm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(a) = Arm::all().into_iter().find(|a| a.as_str() == s) {
            return Ok(a);
        }
        if ArmEntry::named(s).is_some_and(|e| !e.runnable) {
            return Err(format!(
                "server {s:?} needs the rmcp feature: build without --no-default-features"
            ));
        }
        Err(format!(
            "unknown server {s:?}: use one of {}",
            Arm::all()
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forgotten or half-filled entry fails here, not as a grey bar or an
    /// arm sorted last in a report.
    #[test]
    fn every_arm_has_a_whole_entry() {
        let mut names = std::collections::BTreeSet::new();
        let mut colours = std::collections::BTreeSet::new();
        for e in &ARMS {
            assert!(names.insert(e.name), "{} twice", e.name);
            assert!(
                colours.insert(e.colour),
                "{}: colour {} twice",
                e.name,
                e.colour
            );
            assert!(
                e.colour.starts_with('#') && e.colour.len() == 7,
                "{}",
                e.name
            );
            assert!(!e.adds.is_empty() && !e.glossary.is_empty(), "{}", e.name);
            assert_eq!(e.arm.as_str(), e.name);
            if let Some(b) = e.baseline {
                assert!(
                    ArmEntry::named(b).is_some(),
                    "{}: baseline {b} is no arm",
                    e.name
                );
            }
        }
        for v in Variant::ALL {
            assert_eq!(Arm::BuiltIn(v).entry().name, v.as_str());
        }
        assert_eq!(Arm::NAMES.len(), ARMS.len());
    }

    #[test]
    fn reports_put_each_arm_after_its_baseline() {
        let order: Vec<&str> = ArmEntry::in_report_order().iter().map(|e| e.name).collect();
        assert_eq!(
            order,
            ["unguarded", "keys", "guarded", "cancel", "rmcp", "rmcp-es"]
        );
    }

    #[test]
    fn every_name_parses_back_or_says_what_it_needs() {
        for e in &ARMS {
            match e.name.parse::<Arm>() {
                Ok(a) => assert_eq!(a, e.arm),
                Err(m) => assert!(!e.runnable && m.contains("feature"), "{m}"),
            }
        }
    }
}

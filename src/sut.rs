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

    fn serve<L: Listener + 'static>(
        &self,
        host: Host<L>,
    ) -> impl Future<Output = io::Result<()>> + 'static {
        let mut cfg = self.cfg.clone();
        cfg.session_seed = host.seed;
        // Created (and its start recorded) now, when the incarnation starts.
        let server = Server::new(self.variant, cfg, host.history, host.ledger, Pacing::Timer);
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

impl Arm {
    /// Every arm's name, whether or not this build can run it (a scenario
    /// may state expectations for the rmcp arms in any build).
    pub const NAMES: [&'static str; 6] =
        ["guarded", "unguarded", "keys", "cancel", "rmcp", "rmcp-es"];

    /// Every arm this build can run: the built-in arms, then rmcp's.
    pub fn all() -> Vec<Arm> {
        let mut v: Vec<Arm> = Variant::ALL.map(Arm::BuiltIn).to_vec();
        if cfg!(feature = "rmcp") {
            v.extend([Arm::Rmcp, Arm::RmcpEs]);
        }
        v
    }

    /// Its name (`--server`, JSON, `[expect.<arm>]`).
    pub fn as_str(self) -> &'static str {
        match self {
            Arm::BuiltIn(v) => v.as_str(),
            Arm::Rmcp => "rmcp",
            Arm::RmcpEs => "rmcp-es",
        }
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
        if s == "rmcp" || s == "rmcp-es" {
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

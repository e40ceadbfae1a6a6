//! The small enums a fault's keys take: how a connection closes, a
//! direction on a link, whose clock a skew steps, how a replica goes down.

use serde::{Deserialize, Serialize};

/// How a connection closes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Close {
    /// A clean close: FIN. The peer reads an end.
    #[default]
    Fin,
    /// An abortive close: RST. The peer's read or write fails with a
    /// reset, and what it had not read is lost.
    Rst,
}

impl Close {
    /// Whether it is the default, clean close.
    pub fn is_fin(&self) -> bool {
        *self == Close::Fin
    }
}

/// A direction on a client host's link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the client host to the server.
    ToServer,
    /// From the server to the client host.
    ToClient,
}

impl Direction {
    pub(super) fn to_client() -> Direction {
        Direction::ToClient
    }
}

/// Whose clock a skew steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkewOn {
    /// Every server host (the server, or each replica).
    #[default]
    Server,
    /// The balancer of a deployment.
    Balancer,
    /// One client host.
    Client,
}

/// Which of a host's clocks a skew steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkewClock {
    /// Its timers: they fire early (ahead) or late (behind).
    #[default]
    Timers,
    /// Its wall clock only: the time it stamps and checks webhook
    /// signatures with (the Events extension); its timers keep time.
    Wall,
}

impl SkewClock {
    pub(super) fn is_timers(&self) -> bool {
        *self == SkewClock::Timers
    }
}

/// How a replica goes down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashMode {
    /// The process ends: its connections close at once (the balancer and
    /// the clients see the close), a connect to it is refused.
    #[default]
    Kill,
    /// The process freezes: it answers nothing and closes nothing, a
    /// connect to it never completes, until it is restarted.
    Hang,
}

impl CrashMode {
    /// The name a scenario writes.
    pub fn as_str(self) -> &'static str {
        match self {
            CrashMode::Kill => "kill",
            CrashMode::Hang => "hang",
        }
    }
}

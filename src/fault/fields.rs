//! A fault's common fields, over every kind: where it starts, how long it
//! lasts, the client host it acts on. Shrinking moves and shortens faults,
//! keeping fewer clients moves a window to another host, and the world
//! and the checks read them, all through these rather than a match per
//! kind of their own.

use super::{Fault, SkewOn};

impl Fault {
    /// What acts: the fault a placed one places, else the fault itself.
    pub fn acting(&self) -> &Fault {
        match self {
            Fault::Placed { fault, .. } => fault,
            f => f,
        }
    }

    /// Its start, ms, to read or set (`None`: a drop, a switch, a placed
    /// fault, which are not timed).
    pub fn at_mut(&mut self) -> Option<&mut u64> {
        match self {
            Fault::Partition { at_ms, .. }
            | Fault::Latency { at_ms, .. }
            | Fault::Restart { at_ms }
            | Fault::ReplicaCrash { at_ms, .. }
            | Fault::ReplicaDrain { at_ms, .. }
            | Fault::Deploy { at_ms, .. }
            | Fault::BalancerRestart { at_ms }
            | Fault::ReplicaAdd { at_ms }
            | Fault::ReplicaRemove { at_ms, .. }
            | Fault::StorePartition { at_ms, .. }
            | Fault::StoreLagWindow { at_ms, .. }
            | Fault::StoreRestart { at_ms }
            | Fault::Oneway { at_ms, .. }
            | Fault::Hold { at_ms, .. }
            | Fault::Truncate { at_ms, .. }
            | Fault::Slice { at_ms, .. }
            | Fault::Bandwidth { at_ms, .. }
            | Fault::SlowClose { at_ms, .. }
            | Fault::Skew { at_ms, .. }
            | Fault::Stall { at_ms, .. }
            | Fault::ReceiverRestart { at_ms, .. }
            | Fault::RefreshLost { at_ms, .. } => Some(at_ms),
            Fault::Drop { .. } | Fault::Switch { .. } | Fault::Placed { .. } => None,
        }
    }

    /// Its length, ms, to read or set: a window's duration, a drain's
    /// grace (`None`: an instant, or untimed).
    pub fn len_mut(&mut self) -> Option<&mut u64> {
        match self {
            Fault::Partition { duration_ms, .. }
            | Fault::Latency { duration_ms, .. }
            | Fault::ReplicaCrash { duration_ms, .. }
            | Fault::StorePartition { duration_ms, .. }
            | Fault::StoreLagWindow { duration_ms, .. }
            | Fault::Oneway { duration_ms, .. }
            | Fault::Hold { duration_ms, .. }
            | Fault::Truncate { duration_ms, .. }
            | Fault::Slice { duration_ms, .. }
            | Fault::Bandwidth { duration_ms, .. }
            | Fault::SlowClose { duration_ms, .. }
            | Fault::Stall { duration_ms, .. }
            | Fault::ReceiverRestart { duration_ms, .. }
            | Fault::RefreshLost { duration_ms, .. } => Some(duration_ms),
            Fault::ReplicaDrain { grace_ms, .. } | Fault::Deploy { grace_ms, .. } => Some(grace_ms),
            _ => None,
        }
    }

    /// The client host it acts on, to read or set (`None`: it acts on
    /// the server side, or on a client).
    pub fn host_mut(&mut self) -> Option<&mut u32> {
        match self {
            Fault::Partition { host, .. }
            | Fault::Latency { host, .. }
            | Fault::Oneway { host, .. }
            | Fault::Hold { host, .. }
            | Fault::Truncate { host, .. }
            | Fault::Slice { host, .. }
            | Fault::Bandwidth { host, .. }
            | Fault::SlowClose { host, .. }
            | Fault::Skew {
                on: SkewOn::Client,
                host,
                ..
            } => Some(host),
            _ => None,
        }
    }

    /// The client host it acts on.
    pub fn host(&self) -> Option<u32> {
        self.clone().host_mut().map(|h| *h)
    }

    /// A timed fault's start and length (an instant's length is 0).
    pub fn timing(&self) -> Option<(u64, u64)> {
        let mut f = self.clone();
        let len = f.len_mut().map_or(0, |l| *l);
        f.at_mut().map(|at| (*at, len))
    }

    /// The fault moved to start at `at` and last `len` (an instant
    /// ignores `len`; untimed faults are returned as they are).
    pub fn retimed(&self, at: u64, len: u64) -> Fault {
        let mut f = self.clone();
        if let Some(a) = f.at_mut() {
            *a = at;
        }
        if let Some(l) = f.len_mut() {
            *l = len;
        }
        f
    }

    /// The fault moved to client host `host` (one on no client host is
    /// returned as it is).
    pub fn on_host(&self, host: u32) -> Fault {
        let mut f = self.clone();
        if let Some(h) = f.host_mut() {
            *h = host;
        }
        f
    }
}

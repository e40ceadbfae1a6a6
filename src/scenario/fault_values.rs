//! What an explicit fault's own values are held to: the times it writes
//! (checked with every other time of the file) and the values its kind
//! cannot take.

use crate::fault::{Fault, SkewClock, SkewOn};

/// Explicit fault `i`'s values its kind cannot take (one line each).
pub(super) fn check_values(i: usize, fault: &Fault) -> Result<(), String> {
    match fault {
        Fault::Truncate { bytes: 0, .. } | Fault::Slice { bytes: 0, .. } => Err(format!(
            "faults.explicit[{i}]: {} bytes must be 1 or more",
            crate::fault::kind_name(fault)
        )),
        Fault::Bandwidth { bytes_per_s: 0, .. } => Err(format!(
            "faults.explicit[{i}]: bandwidth bytes_per_s must be 1 or more (a link \
                     that carries nothing is a partition)"
        )),
        Fault::Skew { offset_ms: 0, .. } => Err(format!(
            "faults.explicit[{i}]: skew offset_ms must not be 0 (ahead > 0, behind < 0)"
        )),
        Fault::Skew {
            on: SkewOn::Balancer,
            clock: SkewClock::Wall,
            ..
        } => Err(format!(
            "faults.explicit[{i}]: a wall-clock skew steps the server's or a client host's \
             clock (the balancer signs and checks no webhook): on = \"server\" or \"client\""
        )),
        _ => Ok(()),
    }
}

/// The times explicit fault `i` writes, each with its key: its start and
/// length (a placed fault's are its fault's, its start 0) and the
/// durations of its own.
pub(super) fn fault_times(i: usize, f: &Fault) -> Vec<(String, u64)> {
    let f = f.acting();
    let key = |k: &str| format!("faults.explicit[{i}].{k}");
    let mut out = Vec::new();
    let Some((at_ms, len)) = f.timing() else {
        return out;
    };
    out.push((key("at_ms"), at_ms));
    if f.clone().len_mut().is_some() {
        let grace = matches!(f, Fault::ReplicaDrain { .. } | Fault::Deploy { .. });
        out.push((key(if grace { "grace_ms" } else { "duration_ms" }), len));
    }
    match *f {
        Fault::Latency { max_ms, .. } => out.push((key("max_ms"), max_ms)),
        Fault::StoreLagWindow { lag_ms, .. } => out.push((key("lag_ms"), lag_ms)),
        Fault::Slice { delay_ms, .. } | Fault::SlowClose { delay_ms, .. } => {
            out.push((key("delay_ms"), delay_ms));
        }
        Fault::Skew { offset_ms, .. } => out.push((key("offset_ms"), offset_ms.unsigned_abs())),
        _ => {}
    }
    out
}

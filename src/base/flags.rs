//! Bounds of the command line's numeric flags, checked when the flag is
//! parsed (before anything runs). Every refusal is one line that names
//! the flag, the value and the range it must be in, so a typo never
//! becomes a million threads, a hang or an allocation the machine cannot
//! make. docs/guide.md (and, for `serve`, docs/serve.md; for `scale`,
//! CONTRIBUTING.md) states each bound.

use std::time::Duration;

/// Most `--jobs` (parallel simulations): more threads than this only
/// contend for the same cores and cost a stack each.
pub const MAX_JOBS: u64 = 1_024;
/// Most seeds one `compare` or `sweep` runs (`--seeds`, `MCP_CHAOS_SEEDS`);
/// also the largest shard count. A sweep holds every run's summary until
/// it writes them (about [`RUN_SUMMARY_KB`] each), so this is
/// [`MAX_RUNS`]: one arm's worth.
pub const MAX_SEEDS: u64 = MAX_RUNS;
/// Most runs one `compare` or `sweep` holds (scenarios x seeds x arms x
/// profiles x deployments), checked before any run is built: at
/// [`RUN_SUMMARY_KB`] a run, about 1.2 GB.
pub const MAX_RUNS: u64 = 100_000;
/// What one run's summary holds in a sweep, KB, roughly (measured: a
/// 1,200-seed sweep of sims/seed-000-retry-by-post.toml peaks 12 MB above
/// a 200-seed one, the runs' reports and their JSON).
pub const RUN_SUMMARY_KB: u64 = 12;
/// Longest `--timeout` of one run, seconds (one day).
pub const MAX_TIMEOUT_SECS: u64 = 86_400;
/// Most connections `serve --max-connections` holds: Linux's default
/// ceiling on one process's file descriptors.
pub const MAX_CONNECTIONS: u64 = 1 << 20;
/// Longest `serve --header-timeout-ms` and `--body-timeout-ms` (an hour).
pub const MAX_SERVE_TIMEOUT_MS: u64 = 3_600_000;
/// Longest `serve --session-idle-secs` (one day).
pub const MAX_SESSION_IDLE_SECS: u64 = 86_400;
/// Most requests `probe --max-requests` sends.
pub const MAX_PROBE_REQUESTS: u64 = 1_000_000;
/// Most simulations `shrink --max-runs` allows.
pub const MAX_SHRINK_RUNS: u64 = 100_000;
/// Most calls or SSE events per call in `scale`.
pub const MAX_SCALE_PER_CLIENT: u64 = 1_000;

/// A parser for a whole-number flag in `lo..=hi`: anything else (not a
/// number, negative, too large for any integer) is refused with one line
/// naming `flag` and both bounds.
pub fn whole(
    flag: &'static str,
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let t = s.trim();
        let out_of_range =
            || format!("{flag} takes a whole number from {lo} to {hi} (at most {hi}), not {t:?}");
        // Digits alone: a number too large for u64 is out of range, not
        // "not a number".
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(out_of_range());
        }
        match t.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(out_of_range()),
        }
    }
}

/// [`whole`] for a `u32` flag.
pub fn whole32(
    flag: &'static str,
    lo: u32,
    hi: u32,
) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    let p = whole(flag, u64::from(lo), u64::from(hi));
    move |s: &str| p(s).map(|n| u32::try_from(n).expect("within u32 bounds"))
}

/// `--connections`: `keep-alive` (true) or `per-exchange` (false).
pub fn connections(s: &str) -> Result<bool, String> {
    match s.trim() {
        "keep-alive" => Ok(true),
        "per-exchange" => Ok(false),
        other => Err(format!(
            "--connections {other:?} is not a mode: use keep-alive or per-exchange"
        )),
    }
}

/// `--jobs`: 1 to [`MAX_JOBS`] workers.
pub fn jobs(s: &str) -> Result<usize, String> {
    whole("--jobs", 1, MAX_JOBS)(s).map(|n| usize::try_from(n).expect("at most 1024"))
}

/// `--seed`: any u64.
pub fn seed(s: &str) -> Result<u64, String> {
    whole("--seed", 0, u64::MAX)(s)
}

/// `--timeout`: seconds above 0, at most [`MAX_TIMEOUT_SECS`] (fractions
/// allowed).
pub fn timeout(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= MAX_TIMEOUT_SECS as f64 => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!(
            "--timeout takes seconds above 0 and at most {MAX_TIMEOUT_SECS} (one day), not {:?}: \
             e.g. --timeout 30",
            s.trim()
        )),
    }
}

/// `serve --addr HOST:PORT`: the port must be 0 (any free one) to 65535.
pub fn addr(s: &str) -> Result<String, String> {
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!(
            "--addr {s:?} names no port: give HOST:PORT, e.g. 127.0.0.1:8080"
        ));
    };
    if host.is_empty() {
        return Err(format!(
            "--addr {s:?} names no host: give HOST:PORT, e.g. 127.0.0.1:8080"
        ));
    }
    whole("--addr's port", 0, u64::from(u16::MAX))(port)
        .map_err(|e| format!("{e} (0 picks a free port): give HOST:PORT, e.g. 127.0.0.1:8080"))?;
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_everything_else_is_refused() {
        let p = whole("--n", 1, 1024);
        assert_eq!(p("1"), Ok(1));
        assert_eq!(p(" 1024 "), Ok(1024));
        for bad in [
            "0",
            "1025",
            "-1",
            "+3",
            "1e3",
            "",
            "x",
            "18446744073709551616",
            "99999999999999999999999",
        ] {
            let e = p(bad).unwrap_err();
            assert!(
                e.contains("--n") && e.contains("at most 1024"),
                "{bad}: {e}"
            );
        }
        assert_eq!(seed("18446744073709551615"), Ok(u64::MAX));
        assert!(seed("18446744073709551616")
            .unwrap_err()
            .contains("18446744073709551615"));
        assert!(jobs("4294967296").unwrap_err().contains("1024"));
        assert!(timeout("86400").is_ok());
        for bad in ["0", "86401", "inf", "NaN", "-1", "1e300"] {
            assert!(timeout(bad).unwrap_err().contains("86400"), "{bad}");
        }
        assert!(addr("127.0.0.1:0").is_ok() && addr("[::1]:65535").is_ok());
        for bad in ["127.0.0.1:65536", "127.0.0.1", ":80", "h:-1", "h:"] {
            assert!(addr(bad).is_err(), "{bad}");
        }
        assert!(addr("h:99999").unwrap_err().contains("65535"));
    }
}

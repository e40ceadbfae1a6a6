//! The scale bench's Markdown: the sizes per connection mode against the
//! baseline, the fleets, the soak, the sweep's workers, and the targets
//! they are held to.

use super::{Figures, Measured, Measurements, Traffic};
use crate::base::console::{notes_of, write, NOTES_MARKER};
use std::fmt::Write as _;
use std::path::Path;

/// A target the scale figures are held to, and whether they meet it.
pub struct Target {
    /// What is measured.
    pub what: String,
    /// The target, as text.
    pub target: String,
    /// The measured value, as text.
    pub measured: String,
    /// Met.
    pub met: bool,
}

impl Target {
    fn of(
        what: impl Into<String>,
        target: impl Into<String>,
        measured: Result<(String, bool), String>,
    ) -> Target {
        let (measured, met) = measured.unwrap_or_else(|e| (format!("failed: {e}"), false));
        Target {
            what: what.into(),
            target: target.into(),
            measured,
            met,
        }
    }
}

/// The figures of the run with the median wall time (the lower middle of
/// an even count); the first failure when any run failed.
pub fn median(runs: &[Measured]) -> Measured {
    let mut ok: Vec<&Figures> = Vec::new();
    for r in runs {
        ok.push(r.as_ref().map_err(Clone::clone)?);
    }
    ok.sort_by(|a, b| a.wall_s.total_cmp(&b.wall_s));
    ok.get(ok.len().saturating_sub(1) / 2)
        .map(|f| (*f).clone())
        .ok_or_else(|| "no run".to_string())
}

fn fleet(m: &Measurements, name: &str) -> Measured {
    m.fleets
        .iter()
        .find(|(n, _)| *n == name)
        .map_or_else(|| Err("not measured".into()), |(_, runs)| median(runs))
}

fn ratio(a: f64, b: f64) -> f64 {
    a / b.max(1e-9)
}

/// The wall-time exponent from `n1` to `n2` clients.
fn exponent(n1: f64, w1: f64, n2: f64, w2: f64) -> f64 {
    (w2 / w1.max(1e-9)).ln() / (n2 / n1).ln()
}

/// The largest fleet's wall-time limit, s, and the target as text: 30 s,
/// or 1.5 times the bare program carrying the same traffic where that
/// itself takes over 20 s (the network's own floor).
fn wall_limit(m: &Measurements) -> (f64, String) {
    match &m.fleet_baseline {
        Some(Ok(b)) if b.wall_s > FLOOR_S => (
            1.5 * b.wall_s,
            format!(
                "<= 1.5x the bare baseline with its traffic ({:.1} s, over {FLOOR_S:.0} s): {:.1} s",
                b.wall_s,
                1.5 * b.wall_s
            ),
        ),
        _ => (30.0, "<= 30 s".into()),
    }
}

/// Above this, the bare baseline carrying the largest fleet's traffic sets
/// the fleet's wall-time target, s.
const FLOOR_S: f64 = 20.0;

/// The targets the measurements are held to.
pub fn targets(m: &Measurements) -> Vec<Target> {
    let big = fleet(m, "mixed-fleet-10k");
    let (limit, target) = wall_limit(m);
    let mut t = vec![
        Target::of(
            "mixed-fleet-10k wall time",
            target,
            big.clone()
                .map(|f| (format!("{:.1} s", f.wall_s), f.wall_s <= limit)),
        ),
        Target::of(
            "mixed-fleet-10k peak memory",
            "<= 1024 MB",
            big.map(|f| (format!("{:.0} MB", f.peak_mb), f.peak_mb <= 1024.0)),
        ),
    ];
    // Against the baseline at the largest size, keep-alive on both sides
    // where it was measured (like with like).
    let rows = m.sizes.iter().find(|(k, _)| *k).or(m.sizes.first());
    if let Some((keep_alive, rows)) = rows {
        if let Some((n, b, c)) = rows.last() {
            let mode = super::connections_name(*keep_alive);
            let pair = match (b, c) {
                (Ok(b), Ok(c)) => Ok((b.clone(), c.clone())),
                (Err(e), _) | (_, Err(e)) => Err(e.clone()),
            };
            let wall = pair.clone().map(|(b, c)| {
                let r = ratio(c.wall_s, b.wall_s);
                (format!("{r:.2}x"), r <= 1.5)
            });
            let peak = pair.map(|(b, c)| {
                let r = ratio(c.peak_mb, b.peak_mb);
                (format!("{r:.2}x"), r <= 1.5)
            });
            t.push(Target::of(
                format!("wall against the baseline, {n} clients, {mode}"),
                "<= 1.5x",
                wall,
            ));
            t.push(Target::of(
                format!("peak against the baseline, {n} clients, {mode}"),
                "<= 1.5x",
                peak,
            ));
        }
    }
    let k = match (fleet(m, "mixed-fleet-1k"), fleet(m, "mixed-fleet-10k")) {
        (Ok(a), Ok(b)) => {
            let k = exponent(a.work as f64, a.wall_s, b.work as f64, b.wall_s);
            Ok((format!("{k:.2}"), k <= 1.05))
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    t.push(Target::of(
        "mixed-fleet wall-time exponent, 1k to 10k clients",
        "<= 1.05",
        k,
    ));
    t.push(Target::of(
        "mixed-fleet against real time",
        ">= 100x",
        fleet(m, "mixed-fleet").map(|f| (format!("{:.0}x", f.speed()), f.speed() >= 100.0)),
    ));
    if let Some((_, small, large)) = &m.soak {
        let soak = match (small, large) {
            (Ok(s), Ok(l)) => {
                let r = ratio(l.peak_mb, s.peak_mb);
                Ok((
                    format!("{:.0} MB against {:.0} MB ({r:.2}x)", l.peak_mb, s.peak_mb),
                    r <= 1.1,
                ))
            }
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        };
        t.push(Target::of("soak peak, 10x the operations", "<= 1.1x", soak));
    }
    if let Some((one, two)) = &m.jobs {
        let jobs = match (one, two) {
            (Ok(a), Ok(b)) => {
                let r = ratio(a.wall_s, b.wall_s);
                Ok((format!("{r:.2}x"), r >= 1.9))
            }
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        };
        t.push(Target::of("sweep on 2 workers against 1", ">= 1.9x", jobs));
    }
    t
}

/// What a row's ratios are against.
#[derive(Clone, Copy)]
enum Against<'a> {
    /// The row is the base of the rows after it (ratios 1).
    Itself,
    /// Ratios against these figures (none when they failed).
    Base(Option<&'a Figures>),
    /// A row with nothing to compare with.
    Nothing,
}

/// One row of a measured side: wall, simulated, speed, peak, and the
/// ratios.
fn row(out: &mut String, label: &str, f: &Measured, against: Against<'_>) {
    match f {
        Ok(f) => {
            let (wr, mr) = match against {
                Against::Itself => ("1".into(), "1".into()),
                Against::Base(Some(b)) => (
                    format!("{:.2}", ratio(f.wall_s, b.wall_s)),
                    format!("{:.2}", ratio(f.peak_mb, b.peak_mb)),
                ),
                Against::Base(None) | Against::Nothing => ("–".into(), "–".into()),
            };
            let _ = writeln!(
                out,
                "| {label} | {} | {:.2} | {:.2} | {:.3} | {:.1} | {:.1} | {:.1} | {:.0} | {wr} | {mr} |",
                f.work,
                f.wall_s,
                f.cpu_s,
                f.cpu_per_1000(),
                f.sim_s,
                f.speed(),
                f.sim_per_cpu(),
                f.peak_mb
            );
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "| {label} | failed: {} | | | | | | | | | |",
                e.replace('|', "/")
            );
        }
    }
}

const HEAD: &str = "| run | work | wall s | CPU s | CPU s / 1,000 work | simulated s | sim s / wall s | sim s / CPU s | peak MB | wall ratio | memory ratio |\n|---|---|---|---|---|---|---|---|---|---|---|\n";

fn describe(t: Traffic) -> String {
    format!(
        "{} client hosts, {} calls per client of {} SSE events {} ms apart, {} ms think time, no faults",
        t.hosts, t.calls, t.chunks, t.chunk_interval_ms, t.think_ms
    )
}

fn calls(n: u32) -> String {
    format!("{n} call{}", if n == 1 { "" } else { "s" })
}

/// The Markdown the command prints.
pub fn table(m: &Measurements) -> String {
    let mut out = format!(
        "## Sizes against the bare turmoil + hyper baseline\n\n{}. Work: exchanges (baseline) or operations judged (mcp-chaos); ratios against the baseline of the same size and connections.\n\n{HEAD}",
        describe(m.base)
    );
    for (keep_alive, rows) in &m.sizes {
        let mode = super::connections_name(*keep_alive);
        for (n, b, c) in rows {
            row(
                &mut out,
                &format!("{n} clients, {mode}, baseline"),
                b,
                Against::Itself,
            );
            row(
                &mut out,
                &format!("{n} clients, {mode}, mcp-chaos"),
                c,
                Against::Base(b.as_ref().ok()),
            );
        }
        if let [(n1, Ok(b1), Ok(c1)), .., (n2, Ok(b2), Ok(c2))] = rows.as_slice() {
            let (n1, n2) = (f64::from(*n1), f64::from(*n2));
            let _ = writeln!(
                out,
                "| wall-time exponent, {mode} | baseline {:.2}, mcp-chaos {:.2} | | | | | | | | | |",
                exponent(n1, b1.wall_s, n2, b2.wall_s),
                exponent(n1, c1.wall_s, n2, c2.wall_s)
            );
        }
    }
    let _ = write!(
        out,
        "\n## Mixed fleets\n\nsims/mixed-fleet.toml (264 clients) and sims/scale/mixed-fleet-1k.toml, -3k.toml, -10k.toml (its groups scaled, 50 calls each): guarded, seed 0, faults on; the median of each fleet's runs by wall time. Work: operations judged. The bare baseline carries the largest fleet's clients, hosts, calls, events and pauses without faults: mixed-fleet-10k's ratios are against it.\n\n{HEAD}"
    );
    if let Some(b) = &m.fleet_baseline {
        row(
            &mut out,
            "bare baseline carrying mixed-fleet-10k's traffic, keep-alive, no faults",
            b,
            Against::Itself,
        );
    }
    for (name, runs) in &m.fleets {
        let against = match &m.fleet_baseline {
            Some(b) if *name == "mixed-fleet-10k" => Against::Base(b.as_ref().ok()),
            _ => Against::Nothing,
        };
        row(
            &mut out,
            &format!("{name} (median of {})", runs.len()),
            &median(runs),
            against,
        );
    }
    if let Some((t, small, large)) = &m.soak {
        let _ = write!(
            out,
            "\n## Soak\n\n{} clients, {}; {} each, then ten times as many (ten times the simulated time). Memory ratio: the large run against the small.\n\n{HEAD}",
            t.clients,
            t.connections(),
            calls(t.calls)
        );
        row(
            &mut out,
            &format!("{} each", calls(t.calls)),
            small,
            Against::Itself,
        );
        row(
            &mut out,
            &format!("{} each", calls(t.calls * 10)),
            large,
            Against::Base(small.as_ref().ok()),
        );
    }
    if let Some((one, two)) = &m.jobs {
        let _ = write!(
            out,
            "\n## Sweep workers\n\nsims/mixed-fleet.toml, guarded, seeds 0..{}, on one worker and on two. Simulated: the sum over the runs.\n\n{HEAD}",
            super::JOBS_SEEDS
        );
        row(&mut out, "--jobs 1", one, Against::Itself);
        row(&mut out, "--jobs 2", two, Against::Base(one.as_ref().ok()));
    }
    out.push_str(&exponents(m));
    out.push_str("\n## Targets\n\n| what | target | measured | met |\n|---|---|---|---|\n");
    for t in targets(m) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            t.what,
            t.target,
            t.measured.replace('|', "/"),
            if t.met { "yes" } else { "**no**" }
        );
    }
    out
}

/// Every step between two measured sizes, and the first to the last: the
/// exponent of wall time and of CPU time against the work (1 is linear).
fn steps(sizes: &[(String, Figures)]) -> Vec<(&str, &str, f64, f64)> {
    let mut pairs: Vec<(usize, usize)> = (1..sizes.len()).map(|i| (i - 1, i)).collect();
    if sizes.len() > 2 {
        pairs.push((0, sizes.len() - 1));
    }
    pairs
        .into_iter()
        .map(|(i, j)| {
            let (a, b) = (&sizes[i].1, &sizes[j].1);
            let (wa, wb) = (a.work as f64, b.work as f64);
            (
                sizes[i].0.as_str(),
                sizes[j].0.as_str(),
                exponent(wa, a.wall_s, wb, b.wall_s),
                exponent(wa, a.cpu_s, wb, b.cpu_s),
            )
        })
        .collect()
}

/// The growth section: how wall and CPU time grow with the work, step by
/// step, for the bare baseline, mcp-chaos and the fleets (measured sizes
/// only).
fn exponents(m: &Measurements) -> String {
    let mut out = String::from(
        "\n## Growth\n\nThe exponent k of time against work between two sizes (time grows as work^k; 1 is linear), from wall time and from CPU time (CPU time does not count waiting for a loaded machine's core).\n\n| what | from | to | wall k | CPU k |\n|---|---|---|---|---|\n",
    );
    let head = out.len();
    for (keep_alive, rows) in &m.sizes {
        let mode = super::connections_name(*keep_alive);
        let sized = |f: &Measured, n: &u32| Some((format!("{n} clients"), f.clone().ok()?));
        let base: Vec<_> = rows.iter().filter_map(|(n, b, _)| sized(b, n)).collect();
        let chaos: Vec<_> = rows.iter().filter_map(|(n, _, c)| sized(c, n)).collect();
        for (side, sizes) in [("baseline", base), ("mcp-chaos", chaos)] {
            for (from, to, kw, kc) in steps(&sizes) {
                let _ = writeln!(
                    out,
                    "| {side}, {mode} | {from} | {to} | {kw:.2} | {kc:.2} |"
                );
            }
        }
    }
    let fleets: Vec<(String, Figures)> = m
        .fleets
        .iter()
        .filter(|(name, _)| *name != "mixed-fleet")
        .filter_map(|(name, runs)| Some((name.to_string(), median(runs).ok()?)))
        .collect();
    for (from, to, kw, kc) in steps(&fleets) {
        let _ = writeln!(out, "| fleet | {from} | {to} | {kw:.2} | {kc:.2} |");
    }
    if out.len() == head {
        String::new()
    } else {
        out
    }
}

/// Writes the table to `p` with the machine it ran on, keeping the notes
/// an earlier file holds below the marker.
pub fn write_perf(p: &Path, table: &str) -> anyhow::Result<()> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let notes = std::fs::read_to_string(p)
        .ok()
        .and_then(|old| notes_of(&old).map(str::to_string));
    let notes = notes.unwrap_or_else(|| NOTES_MARKER.to_string());
    write(
        p,
        &format!(
            "# Scale: mcp-chaos against a bare turmoil + hyper program\n\n\
             Machine: {cpu}, {} cores visible (each run on one, but the sweep on two workers). Written by \
             `mcp-chaos scale`; one run, wall-clock figures on a shared machine (CPU seconds, per 1,000 operations or exchanges, and simulated seconds per CPU second compare across loads: a waiting process spends no CPU).\n\n{table}\n{notes}\n",
            crate::sweep::cores()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(side: &str, wall_s: f64, peak_mb: f64, work: u64) -> Measured {
        Ok(Figures {
            side: side.into(),
            wall_s,
            sim_s: 60.0,
            peak_mb,
            work,
            cpu_s: wall_s,
        })
    }

    /// Measurements with the given figures: the 10k fleet's wall and peak,
    /// mcp-chaos's wall and peak against a 20 s, 700 MB baseline, the 1k fleet's wall, the
    /// 264-client fleet's wall, the soak's large peak against 500 MB and
    /// the sweep's one-worker wall against 10 s on two.
    fn measured(
        big: (f64, f64),
        chaos: (f64, f64),
        k1: f64,
        small: f64,
        soak: f64,
        one: f64,
    ) -> Measurements {
        let t = Traffic {
            clients: 0,
            hosts: 4,
            calls: 20,
            chunks: 4,
            chunk_interval_ms: 20,
            think_ms: 3000,
            keep_alive: true,
        };
        Measurements {
            base: t,
            sizes: vec![(
                true,
                vec![(
                    10_000,
                    figures("baseline", 20.0, 700.0, 1),
                    figures("mcp-chaos", chaos.0, chaos.1, 1),
                )],
            )],
            fleets: vec![
                (
                    "mixed-fleet",
                    vec![figures("mixed-fleet", small, 100.0, 13_200)],
                ),
                (
                    "mixed-fleet-1k",
                    vec![figures("mixed-fleet-1k", k1, 100.0, 50_000)],
                ),
                (
                    "mixed-fleet-10k",
                    vec![figures("mixed-fleet-10k", big.0, big.1, 500_000)],
                ),
            ],
            fleet_baseline: None,
            soak: Some((
                t,
                figures("mcp-chaos", 10.0, 500.0, 1),
                figures("mcp-chaos", 100.0, soak, 1),
            )),
            jobs: Some((
                figures("jobs-1", one, 100.0, 1),
                figures("jobs-2", 10.0, 100.0, 1),
            )),
        }
    }

    #[test]
    fn targets_say_which_are_met() {
        let met = targets(&measured(
            (29.0, 1000.0),
            (29.0, 1000.0),
            2.8,
            0.5,
            540.0,
            19.5,
        ));
        assert_eq!(met.len(), 8);
        assert!(met.iter().all(|t| t.met), "all met");
        // 1k fleet 2 s to 10k 31 s: exponent 1.19.
        let missed = targets(&measured(
            (31.0, 1100.0),
            (31.0, 1100.0),
            2.0,
            1.0,
            560.0,
            18.0,
        ));
        assert_eq!(missed.len(), 8);
        for t in &missed {
            assert!(!t.met, "{} {} met with {}", t.what, t.target, t.measured);
        }
    }

    #[test]
    fn a_bare_baseline_over_20_s_sets_the_fleets_wall_target() {
        let wall = |m: &Measurements| {
            let t = targets(m);
            let w = t.iter().find(|t| t.what == "mixed-fleet-10k wall time");
            w.map(|w| (w.target.clone(), w.met)).expect("the wall row")
        };
        // 40 s against the bare program's 28 s: 1.43x, met; 30 s is not
        // the limit any more.
        let mut m = measured((40.0, 1000.0), (29.0, 1000.0), 2.8, 0.5, 540.0, 19.5);
        m.fleet_baseline = Some(figures("baseline", 28.0, 700.0, 520_000));
        let (target, met) = wall(&m);
        assert!(
            target.contains("1.5x the bare baseline") && target.contains("42.0 s"),
            "{target}"
        );
        assert!(met, "40 s within 1.5 x 28 s");
        // Over 1.5 times it: missed.
        m.fleet_baseline = Some(figures("baseline", 26.0, 700.0, 520_000));
        assert!(!wall(&m).1, "40 s over 1.5 x 26 s = 39 s");
        // A bare program under 20 s leaves the target at 30 s.
        m.fleet_baseline = Some(figures("baseline", 19.0, 700.0, 520_000));
        assert_eq!(wall(&m), ("<= 30 s".to_string(), false));
        let text = table(&m);
        assert!(
            text.contains("| bare baseline carrying mixed-fleet-10k's traffic, keep-alive, no faults | 520000 |"),
            "{text}"
        );
        // The fleet's ratio is against it: 40 / 19.
        assert!(text.contains("| 2.11 | "), "{text}");
    }

    #[test]
    fn a_failed_measurement_is_a_row_and_a_missed_target() {
        let mut m = measured((29.0, 1000.0), (29.0, 1000.0), 2.8, 0.5, 540.0, 19.5);
        m.fleets[2].1 = vec![Err("above the limit".into())];
        let t = targets(&m);
        let big: Vec<&Target> = t.iter().filter(|t| t.what.contains("10k")).collect();
        assert_eq!(big.len(), 3, "wall, peak and exponent");
        assert!(big
            .iter()
            .all(|t| !t.met && t.measured.contains("above the limit")));
        let text = table(&m);
        assert!(
            text.contains("| mixed-fleet-10k (median of 1) | failed: above the limit |"),
            "{text}"
        );
    }

    #[test]
    fn growth_gives_every_step_and_the_whole_span_from_wall_and_cpu() {
        let mut m = measured((40.0, 1000.0), (29.0, 1000.0), 2.0, 0.5, 540.0, 19.5);
        // A 3k fleet between: 1k 2 s -> 3k 8 s -> 10k 40 s (work 50k,
        // 150k, 500k), CPU time equal to wall in `figures`.
        m.fleets.insert(
            2,
            (
                "mixed-fleet-3k",
                vec![figures("mixed-fleet-3k", 8.0, 100.0, 150_000)],
            ),
        );
        let text = exponents(&m);
        let k = |w1: f64, t1: f64, w2: f64, t2: f64| format!("{:.2}", exponent(w1, t1, w2, t2));
        let one_three = k(50e3, 2.0, 150e3, 8.0);
        let three_ten = k(150e3, 8.0, 500e3, 40.0);
        let whole = k(50e3, 2.0, 500e3, 40.0);
        assert_eq!((one_three.as_str(), whole.as_str()), ("1.26", "1.30"));
        for (from, to, e) in [
            ("mixed-fleet-1k", "mixed-fleet-3k", &one_three),
            ("mixed-fleet-3k", "mixed-fleet-10k", &three_ten),
            ("mixed-fleet-1k", "mixed-fleet-10k", &whole),
        ] {
            let line = format!("| fleet | {from} | {to} | {e} | {e} |");
            assert!(text.contains(&line), "{line} in\n{text}");
        }
        // One size per side: no step of the sizes; the 264-client fleet
        // is not a step.
        assert!(!text.contains("baseline, keep-alive"), "{text}");
        assert!(!text.contains("| fleet | mixed-fleet |"), "{text}");
        assert!(table(&m).contains("## Growth"));
    }

    #[test]
    fn the_median_is_the_middle_run_by_wall_time() {
        let runs = [
            figures("a", 3.0, 1.0, 1),
            figures("b", 1.0, 1.0, 1),
            figures("c", 2.0, 1.0, 1),
        ];
        assert_eq!(median(&runs).map(|f| f.side), Ok("c".to_string()));
        let two = [figures("a", 3.0, 1.0, 1), figures("b", 1.0, 1.0, 1)];
        assert_eq!(median(&two).map(|f| f.side), Ok("b".to_string()));
    }
}

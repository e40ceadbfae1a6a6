//! Swarm testing (after TigerBeetle's VOPR): with `--swarm` (`--set
//! swarm=on`), each seed draws the scenario's fault mix — which generator
//! kinds are on, and at what rate — from its own child seed (`swarm`),
//! within `[faults.swarm]`, before the plan is drawn. Rare combinations
//! (no drops but many restarts, partitions and latency together) then
//! occur in some seeds instead of never.

use super::FaultSpec;
use crate::base::seed;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `[faults.swarm]`: the ranges each seed draws its fault mix from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Swarm {
    /// The generator kinds that may be on (`drop`, `partition`, `restart`,
    /// `latency`; default: all four). Each is on with probability `p_on`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<String>>,
    /// The chance a kind is on in a seed (default 0.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_on: Option<f64>,
    /// `[min, max]` of `drop_rate` (default: `[0, 2 × faults.drop_rate]`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::range::swarm_drop_rate"
    )]
    pub drop_rate: Option<[f64; 2]>,
    /// `[min, max]` of `partitions` (default: `[0, 2 × faults.partitions]`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::range::swarm_partitions"
    )]
    pub partitions: Option<[u32; 2]>,
    /// `[min, max]` of `restarts` (default: `[0, 2 × faults.restarts]`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::range::swarm_restarts"
    )]
    pub restarts: Option<[u32; 2]>,
    /// `[min, max]` of `latency_spikes` (default: `[0, 2 × faults.latency_spikes]`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::range::swarm_latency_spikes"
    )]
    pub latency_spikes: Option<[u32; 2]>,
}

/// The generator kinds swarm turns on and off.
pub const KINDS: [&str; 4] = ["drop", "partition", "restart", "latency"];

impl Swarm {
    /// Its bounds checked: known kinds, `p_on` and drop rates in 0..=1,
    /// each range `[min, max]` with min <= max.
    pub fn validate(&self) -> Result<(), String> {
        for k in self.kinds.iter().flatten() {
            if !KINDS.contains(&k.as_str()) {
                return Err(format!(
                    "faults.swarm.kinds: unknown kind {k:?}: use {}",
                    KINDS.join(", ")
                ));
            }
        }
        if let Some(p) = self.p_on {
            if !(0.0..=1.0).contains(&p) {
                return Err("faults.swarm.p_on must be within 0..=1".into());
            }
        }
        if let Some([lo, hi]) = self.drop_rate {
            if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) || lo > hi {
                return Err(
                    "faults.swarm.drop_rate must be [min, max] within 0..=1, min <= max".into(),
                );
            }
        }
        for (key, r) in [
            ("partitions", self.partitions),
            ("restarts", self.restarts),
            ("latency_spikes", self.latency_spikes),
        ] {
            if let Some([lo, hi]) = r {
                if lo > hi {
                    return Err(format!(
                        "faults.swarm.{key} = [{lo}, {hi}] must be [min, max] with min <= max"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl FaultSpec {
    /// The most timed faults swarm may draw (partitions, restarts and
    /// latency spikes: each range's max, `2 x` the `[faults]` count when
    /// not written, 0 for a kind `kinds` leaves out); `None` when swarm can
    /// be neither on nor configured.
    pub fn swarm_most(&self) -> Option<u64> {
        if self.swarm.is_none() && !self.swarm_on {
            return None;
        }
        let sw = self.swarm.clone().unwrap_or_default();
        let allowed = |k: &str| sw.kinds.as_ref().is_none_or(|ks| ks.iter().any(|x| x == k));
        let most = |k: &str, r: Option<[u32; 2]>, base: u32| {
            let [_, hi] = r.unwrap_or([0, base.saturating_mul(2)]);
            if allowed(k) {
                u64::from(hi)
            } else {
                0
            }
        };
        Some(
            most("partition", sw.partitions, self.partitions)
                + most("restart", sw.restarts, self.restarts)
                + most("latency", sw.latency_spikes, self.latency_spikes),
        )
    }
}

/// `spec`'s generators as seed `root_seed` draws them under swarm: each
/// kind on with `p_on`, its rate uniform in its range; off, 0. The
/// explicit faults stay.
pub fn draw(spec: &FaultSpec, root_seed: u64) -> FaultSpec {
    let sw = spec.swarm.clone().unwrap_or_default();
    let mut rng = ChaCha8Rng::seed_from_u64(seed::child(root_seed, "swarm"));
    let p = sw.p_on.unwrap_or(0.5);
    let allowed = |k: &str| sw.kinds.as_ref().is_none_or(|ks| ks.iter().any(|x| x == k));
    // Every kind draws its switch and its rate, on or off, so that one
    // kind's range never shifts another's draws.
    let on = |k: &str, rng: &mut ChaCha8Rng| rng.random_bool(p) && allowed(k);
    let count = |r: Option<[u32; 2]>, base: u32, rng: &mut ChaCha8Rng| {
        let [lo, hi] = r.unwrap_or([0, base.saturating_mul(2)]);
        rng.random_range(lo..=hi.max(lo))
    };
    let mut out = spec.clone();
    let drop_on = on("drop", &mut rng);
    let [lo, hi] = sw
        .drop_rate
        .unwrap_or([0.0, (spec.drop_rate * 2.0).min(1.0)]);
    let rate = lo + (hi - lo) * rng.random::<f64>();
    out.drop_rate = if drop_on { rate } else { 0.0 };
    let partition_on = on("partition", &mut rng);
    let n = count(sw.partitions, spec.partitions, &mut rng);
    out.partitions = if partition_on { n } else { 0 };
    let restart_on = on("restart", &mut rng);
    let n = count(sw.restarts, spec.restarts, &mut rng);
    out.restarts = if restart_on { n } else { 0 };
    let latency_on = on("latency", &mut rng);
    let n = count(sw.latency_spikes, spec.latency_spikes, &mut rng);
    out.latency_spikes = if latency_on { n } else { 0 };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FaultSpec {
        FaultSpec {
            drop_rate: 0.2,
            partitions: 2,
            restarts: 1,
            latency_spikes: 1,
            swarm: Some(Swarm::default()),
            ..FaultSpec::default()
        }
    }

    #[test]
    fn each_seed_draws_its_own_mix_within_the_ranges() {
        let s = spec();
        let mixes: Vec<FaultSpec> = (0..200).map(|seed| draw(&s, seed)).collect();
        assert_eq!(mixes[7], draw(&s, 7), "a function of the seed");
        for m in &mixes {
            assert!((0.0..=0.4).contains(&m.drop_rate), "{}", m.drop_rate);
            assert!(m.partitions <= 4 && m.restarts <= 2 && m.latency_spikes <= 2);
        }
        // Each kind is off in some seeds and on in others, and some seeds
        // have none at all: the mixes are not one mix.
        let off = |f: &dyn Fn(&FaultSpec) -> bool| mixes.iter().filter(|m| f(m)).count();
        for (name, n) in [
            ("drop", off(&|m| m.drop_rate == 0.0)),
            ("partition", off(&|m| m.partitions == 0)),
            ("restart", off(&|m| m.restarts == 0)),
        ] {
            assert!(n > 40 && n < 190, "{name} off in {n} of 200");
        }
    }

    #[test]
    fn a_kind_left_out_is_never_on_and_ranges_hold() {
        let mut s = spec();
        s.swarm = Some(Swarm {
            kinds: Some(vec!["restart".into()]),
            restarts: Some([3, 5]),
            p_on: Some(1.0),
            ..Swarm::default()
        });
        for seed in 0..50 {
            let m = draw(&s, seed);
            assert_eq!((m.drop_rate, m.partitions, m.latency_spikes), (0.0, 0, 0));
            assert!((3..=5).contains(&m.restarts), "{}", m.restarts);
        }
        let bad = Swarm {
            kinds: Some(vec!["meteor".into()]),
            ..Swarm::default()
        };
        assert!(bad.validate().unwrap_err().contains("meteor"));
    }
}

//! `[lo, hi]` ranges as a scenario writes them: exactly two values. Serde
//! reads a fixed-size array by taking its first two values and ignoring the
//! rest, so `[1, 2, 3]` would load as `[1, 2]`; these read the whole array
//! and refuse any other length, naming the key.

use serde::{Deserialize, Deserializer};

/// Exactly two values of `key`, or one line naming it.
fn two<'de, D, T>(d: D, key: &str) -> Result<[T; 2], D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Copy,
{
    let v: Vec<T> = Vec::deserialize(d)?;
    match v[..] {
        [lo, hi] => Ok([lo, hi]),
        _ => Err(serde::de::Error::custom(format!(
            "{key} has {} values: a range is [lo, hi], two values, e.g. [1, 4]",
            v.len()
        ))),
    }
}

macro_rules! ranges {
    ($($name:ident: $t:ty = $key:literal;)*) => {$(
        #[doc = concat!("`", $key, "`: `[lo, hi]`.")]
        pub fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[$t; 2]>, D::Error> {
            two(d, $key).map(Some)
        }
    )*};
}

ranges! {
    swarm_drop_rate: f64 = "faults.swarm.drop_rate";
    swarm_partitions: u32 = "faults.swarm.partitions";
    swarm_restarts: u32 = "faults.swarm.restarts";
    swarm_latency_spikes: u32 = "faults.swarm.latency_spikes";
    partition_ms: u64 = "faults.partition_ms";
    latency_spike_ms: u64 = "faults.latency_spike_ms";
}

/// `network.latency_ms`: `[lo, hi]`.
pub fn network_latency_ms<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; 2], D::Error> {
    two(d, "network.latency_ms")
}

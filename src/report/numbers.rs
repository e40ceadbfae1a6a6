//! How the report writes numbers: counts with thousands separators, rates
//! per 1,000 operations, and counts by key most first. One place, so a
//! table, a sentence and a chart say the same figure the same way.

use std::collections::BTreeMap;

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` per 1,000 of `of`; 0 when `of` is 0.
pub fn per_1000(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 * 1000.0 / of as f64
    }
}

/// A rate for a sentence: `19.1`, `0.05`, `0`.
pub fn rate_text(r: f64) -> String {
    if r == 0.0 {
        "0".into()
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else if r >= 0.1 {
        format!("{r:.2}")
    } else {
        format!("{r:.3}")
    }
}

/// `n` and its noun, the noun plural unless `n` is 1: `1 seed`,
/// `1,200 seeds` (`noun` is the singular; its plural adds `s`).
pub fn counted(n: u64, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", thousands(n))
}

/// Expectations that held in every one of `runs` runs, as a phrase.
pub fn held_in_all(runs: u64) -> String {
    match runs {
        1 => "hold in the 1 run".into(),
        n => format!("hold in all {} runs", thousands(n)),
    }
}

/// A map's entries, largest count first, ties by key.
pub fn most_first(map: &BTreeMap<String, u64>) -> Vec<(&String, &u64)> {
    let mut v: Vec<(&String, &u64)> = map.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(per_1000(3, 0), 0.0);
        assert_eq!(per_1000(191, 10_000), 19.1);
        assert_eq!(rate_text(0.0), "0");
        assert_eq!(rate_text(19.14), "19.1");
        assert_eq!(rate_text(0.5), "0.50");
        assert_eq!(rate_text(0.01234), "0.012");
        assert_eq!(counted(1, "configuration"), "1 configuration");
        assert_eq!(counted(0, "seed"), "0 seeds");
        assert_eq!(counted(1200, "seed"), "1,200 seeds");
        assert_eq!(held_in_all(1), "hold in the 1 run");
        assert_eq!(held_in_all(6), "hold in all 6 runs");
        let m: BTreeMap<String, u64> = [("b".into(), 2), ("a".into(), 2), ("c".into(), 5)].into();
        let order: Vec<&str> = most_first(&m).iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(order, ["c", "a", "b"]);
    }
}

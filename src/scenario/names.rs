//! Scenario names: names become file names (`target/repro/NAME-…`,
//! `sims/regressions/NAME.toml`), so they keep to a small alphabet, and
//! names built from others are fitted to it.

/// Longest scenario name.
pub const MAX_NAME_LEN: usize = 64;

/// A scenario name is 1 to [`MAX_NAME_LEN`] of `A-Z a-z 0-9 . _ -`, and not
/// `.` or `..`: names become file names (`target/repro/NAME-…`,
/// `sims/regressions/NAME.toml`), so one can never name another directory.
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(allowed)
        && name != "."
        && name != ".."
    {
        return Ok(());
    }
    // A hostile name is shown short: the message stays one readable line.
    let shown: String = name
        .chars()
        .take(24)
        .collect::<String>()
        .escape_debug()
        .to_string();
    let more = name.chars().count().saturating_sub(24);
    let shown = if more > 0 {
        format!("\"{shown}\"... ({} characters)", name.chars().count())
    } else {
        format!("\"{shown}\"")
    };
    Err(format!(
        "name {shown}: a scenario name is 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ - \
         (not . or ..): use e.g. the file's stem"
    ))
}

/// `name` made a valid scenario name: characters outside the rule become
/// `-`, and a name too long keeps its start and ends in a hash of the
/// whole, so two long names that differ only at the end stay distinct.
/// For names built from others (`NAME-seed3-unguarded-shrunk`).
pub fn fit_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if check_name(&clean).is_ok() {
        return clean;
    }
    let hash = format!("{:08x}", crate::base::seed::fnv1a(name.as_bytes()) as u32);
    let keep = MAX_NAME_LEN - hash.len() - 1;
    format!("{}-{hash}", &clean[..clean.len().min(keep)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_are_fitted_to_the_name_rule() {
        let long = format!("{}-seed18446744073709551615-rmcp-es-shrunk", "n".repeat(64));
        let a = fit_name(&long);
        let b = fit_name(&long.replace("rmcp-es", "guarded"));
        assert!(check_name(&a).is_ok() && check_name(&b).is_ok(), "{a} {b}");
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert_ne!(a, b, "names differing past the cut stay distinct");
        assert_eq!(
            fit_name("half-open-seed3-guarded"),
            "half-open-seed3-guarded"
        );
        assert_eq!(fit_name("a/b c"), "a-b-c");
    }
}

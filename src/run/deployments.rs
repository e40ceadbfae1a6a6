//! `compare --deployments`: the deployment axis. One argument lists
//! override sets of `[deployment]` keys, `;` between sets and `,` between
//! a set's `KEY=VALUE` pairs (`store=local;store=shared,on_dead_upstream=repin`);
//! each set is applied on top of every scenario's own `[deployment]` (and
//! after `--set`), and names the runs it makes by its label, the pairs as
//! given (`store=shared,on_dead_upstream=repin`), or [`AS_WRITTEN`] for
//! `as-written`, the scenarios' own deployment. Imports only `scenario`.

use crate::scenario::{schema, DeploymentSpec};

/// The label of the set that overrides nothing: the scenario's own
/// `[deployment]`.
pub const AS_WRITTEN: &str = "as written";

/// One deployment of the axis: its label and its overrides, each
/// `deployment.KEY` with its value, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploymentSet {
    /// `KEY=VALUE,…` as given (trimmed), or [`AS_WRITTEN`].
    pub label: String,
    /// `("deployment.KEY", "VALUE")`, in order.
    pub sets: Vec<(String, String)>,
}

const FIX: &str = "write sets of [deployment] keys, ';' between sets and ',' between a set's \
                   KEY=VALUE pairs, e.g. --deployments 'store=local;store=shared,on_dead_upstream=repin' \
                   (as-written: each scenario's own [deployment])";

/// Parses `--deployments`: every key a `[deployment]` key (a
/// `deployment.` prefix is allowed), every value of its type, no key
/// twice in a set, at least one set; a set given twice runs once. An
/// error is one line naming the input and the fix.
pub fn parse(s: &str) -> Result<Vec<DeploymentSet>, String> {
    let mut out: Vec<DeploymentSet> = Vec::new();
    for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let set = parse_set(part).map_err(|e| format!("--deployments {s:?}: set {part:?}: {e}"))?;
        if !out.iter().any(|d| d.sets == set.sets) {
            out.push(set);
        }
    }
    if out.is_empty() {
        return Err(format!("--deployments {s:?} names no deployment: {FIX}"));
    }
    Ok(out)
}

/// One set: `as-written`, or `KEY=VALUE` pairs.
fn parse_set(part: &str) -> Result<DeploymentSet, String> {
    if part == "as-written" || part == AS_WRITTEN {
        return Ok(DeploymentSet {
            label: AS_WRITTEN.to_string(),
            sets: Vec::new(),
        });
    }
    let mut sets: Vec<(String, String)> = Vec::new();
    let mut label = Vec::new();
    for pair in part.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not KEY=VALUE: {FIX}"));
        };
        let (k, v) = (k.trim(), v.trim());
        let field = k.strip_prefix("deployment.").unwrap_or(k);
        if field.is_empty() || v.is_empty() {
            return Err(format!("{pair:?} is not KEY=VALUE: {FIX}"));
        }
        schema::set_deployment(&DeploymentSpec::default(), field, v)?;
        let key = format!("deployment.{field}");
        if sets.iter().any(|(x, _)| *x == key) {
            return Err(format!(
                "{field} is set twice: give each key once per set (';' starts the next set)"
            ));
        }
        sets.push((key, v.to_string()));
        label.push(format!("{field}={v}"));
    }
    if sets.is_empty() {
        return Err(format!("no KEY=VALUE in it: {FIX}"));
    }
    Ok(DeploymentSet {
        label: label.join(","),
        sets,
    })
}

/// Refuses an axis that sets a key `--set` sets too (one of them would
/// silently win): one line naming both.
pub fn check_against_sets(axis: &[DeploymentSet], sets: &[(String, String)]) -> Result<(), String> {
    for d in axis {
        for (k, _) in &d.sets {
            if let Some((_, v)) = sets.iter().find(|(x, _)| x == k) {
                return Err(format!(
                    "--deployments set {:?} sets {k}, which --set {k}={v} sets in every run \
                     too: give {k} in one of them",
                    d.label
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_labels_and_repeats() {
        let v = parse("store=local; store=shared , on_dead_upstream=repin;as-written;store=local")
            .unwrap();
        let labels: Vec<&str> = v.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "store=local",
                "store=shared,on_dead_upstream=repin",
                AS_WRITTEN
            ]
        );
        assert_eq!(
            v[1].sets,
            [
                ("deployment.store".to_string(), "shared".to_string()),
                (
                    "deployment.on_dead_upstream".to_string(),
                    "repin".to_string()
                )
            ]
        );
        assert!(v[2].sets.is_empty());
        let prefixed = parse("deployment.replicas=3,balancer=sticky").unwrap();
        assert_eq!(prefixed[0].label, "replicas=3,balancer=sticky");
        assert_eq!(prefixed[0].sets[0].0, "deployment.replicas");
    }

    #[test]
    fn bad_input_is_one_line_naming_it() {
        for (bad, says) in [
            ("", "names no deployment"),
            (" ; ", "names no deployment"),
            ("store", "is not KEY=VALUE"),
            ("store=", "is not KEY=VALUE"),
            ("=shared", "is not KEY=VALUE"),
            ("stor=shared", "did you mean deployment.store?"),
            ("server.store=shared", "no deployment setting"),
            ("store=sharde", "sharde"),
            ("replicas=three", "whole number"),
            ("store=local,store=shared", "set twice"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "{bad:?}: {e}");
            assert!(e.starts_with("--deployments"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_key_set_twice_by_set_and_the_axis_is_refused() {
        let axis = parse("store=shared").unwrap();
        let e = check_against_sets(
            &axis,
            &[("deployment.store".to_string(), "local".to_string())],
        )
        .unwrap_err();
        assert!(e.contains("deployment.store"), "{e}");
        let other = [("deployment.balancer".to_string(), "sticky".to_string())];
        assert!(check_against_sets(&axis, &other).is_ok());
    }
}

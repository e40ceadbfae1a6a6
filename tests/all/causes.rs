//! The cause catalogue: `sims/causes/<cause>.toml` is the minimal scenario
//! of each cause in the oracle's precedence list, and `docs/causes.md`
//! documents each. Each scenario, under the server its expectations name,
//! fails with exactly that cause and no other.

use mcp_chaos::oracle::causes::PRECEDENCE;
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::Variant;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sims/causes")
}

#[test]
fn every_cause_has_a_minimal_scenario_that_shows_it_alone() {
    for cause in PRECEDENCE {
        let name = cause.as_str();
        let path = dir().join(format!("{name}.toml"));
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let metric = format!("failures_by_cause.{name}");
        let mut shown = 0;
        for v in Variant::BOTH {
            let (r, repro) = crate::run_expecting(&format!("sims/causes/{name}.toml"), &s, v);
            let expects = s.expect.of(v.as_str());
            if expects.min.contains_key(&metric) {
                let causes: Vec<&String> = r.metrics.failures_by_cause.keys().collect();
                assert_eq!(
                    causes,
                    vec![name],
                    "{name} under {}: the minimal scenario shows its cause alone\nreproduce: {repro}",
                    r.server
                );
                shown += 1;
            }
        }
        assert!(shown > 0, "{name}.toml expects its cause under some server");
    }
}

#[test]
fn the_catalogue_documents_every_cause() {
    let doc =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/causes.md"))
            .expect("docs/causes.md");
    let files = std::fs::read_dir(dir()).unwrap().count();
    assert_eq!(files, PRECEDENCE.len(), "one scenario per cause, no more");
    for (i, cause) in PRECEDENCE.iter().enumerate() {
        let heading = format!("## {}. `{}`", i + 1, cause.as_str());
        assert!(
            doc.contains(&heading),
            "docs/causes.md lacks {heading:?} (in precedence order)"
        );
        assert!(
            doc.contains(&format!("sims/causes/{}.toml", cause.as_str())),
            "docs/causes.md names the minimal scenario of {}",
            cause.as_str()
        );
    }
}

//! JUnit XML for CI systems.

use super::xml;
use crate::sweep::Summary;
use std::fmt::Write;

/// JUnit XML: one test case per scenario × server, passing when its
/// expectations hold in every seed; a `<failure>` lists each seed whose
/// expectations broke, what broke, and the command that reproduces it.
pub fn junit(s: &Summary, repro: &dyn Fn(&crate::run::RunReport) -> String) -> String {
    let failures = s.aggregates.iter().filter(|a| a.failed_runs > 0).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcp-chaos\" tests=\"{}\" failures=\"{failures}\">\n<testsuite name=\"mcp-chaos\" tests=\"{}\" failures=\"{failures}\">\n",
        s.aggregates.len(),
        s.aggregates.len()
    );
    for a in &s.aggregates {
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\"",
            xml(&a.scenario),
            xml(&if a.deployment.is_empty() {
                a.server.clone()
            } else {
                format!("{} · {}", a.server, a.deployment)
            })
        );
        if a.failed_runs == 0 {
            out.push_str("/>\n");
            continue;
        }
        let mut text = String::new();
        for r in s.runs.iter().filter(|r| {
            r.scenario == a.scenario
                && r.server == a.server
                && r.deployment == a.deployment
                && r.failed()
        }) {
            let _ = writeln!(
                text,
                "seed {}: expectations break ({}): {}\nreproduce: {}",
                r.seed,
                r.verdict,
                r.failed_expectations.join("; "),
                repro(r)
            );
        }
        let _ = write!(
            out,
            ">\n    <failure message=\"expectations break in {} of {} seeds\">{}</failure>\n  </testcase>\n",
            a.failed_runs,
            a.runs,
            xml(&text)
        );
    }
    out.push_str("</testsuite>\n</testsuites>\n");
    out
}

//! The commands a report prints for a run: the one that reproduces it
//! (its scenario file as the provenance records it) and, for a failing
//! operation, the one that shrinks the run to that operation's cause.

use crate::hosts::sut::Arm;
use crate::oracle::OpVerdict;
use crate::run::{self, RunReport};
use crate::sweep::Summary;

/// Run `r`'s scenario file as the summary's provenance records it (else
/// `sims/NAME.toml`).
pub(crate) fn scenario_path(s: &Summary, r: &RunReport) -> String {
    s.provenance
        .scenarios
        .get(&r.scenario)
        .map_or_else(|| format!("sims/{}.toml", r.scenario), |i| i.file.clone())
}

/// For failing operation `op` of run `r`: the command that reproduces the
/// run (with its trace), and the one that shrinks it to a small scenario
/// in which an operation still fails with `op`'s cause, written under
/// `target/shrunk/` (not `sims/regressions/`, which the test suite runs).
/// Both carry the scenario, seed, arm, client profile and every `--set`.
pub fn commands(s: &Summary, r: &RunReport, op: &OpVerdict) -> (String, String) {
    let cause = op.cause.as_deref().unwrap_or("unknown");
    let out = crate::scenario::fit_name(&format!(
        "{}-seed{}-{}-{cause}",
        r.scenario, r.seed, r.server
    ));
    let shrink = format!(
        "cargo run --release -- shrink --scenario {} --seed {} --server {}{} --until-cause {cause} --out target/shrunk/{out}.toml",
        scenario_path(s, r),
        r.seed,
        r.server,
        r.options().flags()
    );
    (repro(s, r), shrink)
}

/// The command that reproduces run `r`: its scenario file from the
/// provenance (else `sims/NAME.toml`), its arm, profile and overrides.
pub fn repro(s: &Summary, r: &RunReport) -> String {
    let path = scenario_path(s, r);
    let opts = r.options();
    match r.server.parse::<Arm>() {
        Ok(arm) => run::repro_command(&path, r.seed, arm, &opts),
        Err(_) => format!(
            "cargo run --release -- repro --scenario {path} --seed {} --server {}{}",
            r.seed,
            r.server,
            opts.flags()
        ),
    }
}

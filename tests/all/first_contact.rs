//! First contact: what a new user's first mistakes get. A bad `--set` is
//! one line naming the fix in every command that takes it; `--scenario`
//! takes a name or a path in every command; a fault the run ended before
//! is named with both times; every help text that speaks of arms names
//! all of them.

use super::cli::{code, refused, run, scratch};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::sweep::Summary;
use std::process::Output;

const SCENARIO: &str = "sims/seed-000-retry-by-post.toml";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The commands that take `--scenario` and `--set`, each run as small as it
/// goes (one seed, one arm), with `scenario` as its `--scenario`.
fn commands(scenario: &str, out: &str) -> Vec<Vec<String>> {
    let shrunk = format!("{out}/shrunk.toml");
    let summary = format!("{out}/sweep.json");
    let trace = format!("{out}/trace.jsonl");
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["run", "--scenario", scenario, "--server", "guarded"]),
        v(&[
            "repro",
            "--scenario",
            scenario,
            "--seed",
            "0",
            "--server",
            "guarded",
            "--trace",
            &trace,
        ]),
        v(&[
            "shrink",
            "--scenario",
            scenario,
            "--seed",
            "0",
            "--server",
            "unguarded",
            "--out",
            &shrunk,
        ]),
        v(&[
            "sweep",
            "--scenario",
            scenario,
            "--seeds",
            "1",
            "--servers",
            "guarded",
            "--out",
            &summary,
        ]),
        v(&[
            "compare",
            "--scenario",
            scenario,
            "--seeds",
            "1",
            "--servers",
            "guarded",
            "--out",
            out,
        ]),
    ]
}

fn with(mut args: Vec<String>, extra: &[&str]) -> Vec<String> {
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_strings(args: &[String]) -> Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&a)
}

/// A misspelt key, a bare key, a value of the wrong type: each is refused
/// when the command line is read, in one line that names the input and
/// the fix, exit 3, before anything runs (no output directory, no repro
/// line, no "simulation failed").
#[test]
fn a_bad_set_is_one_line_naming_the_fix_in_every_command() {
    let dir = scratch("first-contact-set");
    let out = dir.join("out");
    let cases = [
        (
            "server.store_capasity=3",
            "mcp-chaos: invalid value 'server.store_capasity=3' for '--set <server.KEY=VALUE>': \
             no server setting \"store_capasity\": did you mean server.store_capacity? \
             (sims/README.md lists every [server] key)",
        ),
        (
            "store_capacity=3",
            "mcp-chaos: invalid value 'store_capacity=3' for '--set <server.KEY=VALUE>': server \
             settings are named with their table: --set server.store_capacity=3",
        ),
        (
            "server.store_capacity=lots",
            "mcp-chaos: invalid value 'server.store_capacity=lots' for '--set \
             <server.KEY=VALUE>': invalid type: string \"lots\", expected usize: store_capacity \
             takes a whole number, e.g. server.store_capacity=1024 (the default)",
        ),
        (
            "client.conections=keep-alive",
            "mcp-chaos: invalid value 'client.conections=keep-alive' for '--set \
             <server.KEY=VALUE>': no client setting \"conections\": did you mean \
             client.connections? --set takes client.connections or client.pool_idle_ms or client.reconnect or client.field (other \
             [[clients]] keys are edited in the scenario file)",
        ),
    ];
    for args in commands(SCENARIO, out.to_str().unwrap()) {
        for (set, line) in cases {
            let o = run_strings(&with(args.clone(), &["--set", set]));
            refused(&o, &[], &format!("{args:?} --set {set}"));
            assert_eq!(stderr(&o).trim(), line, "{args:?} --set {set}");
        }
    }
    assert!(!out.exists(), "nothing ran");
}

/// `--scenario NAME` and `--scenario PATH` run the same file in every
/// command; a name that is not there lists the names and says a path is
/// accepted, a path that is not there says a name is.
#[test]
fn scenario_takes_a_name_or_a_path_in_every_command() {
    let dir = scratch("first-contact-scenario");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    // run: the same report, name or path.
    let by_path = run(&[
        "run",
        "--scenario",
        SCENARIO,
        "--server",
        "guarded",
        "--format",
        "json",
    ]);
    let by_name = run(&[
        "run",
        "--scenario",
        "seed-000-retry-by-post",
        "--server",
        "guarded",
        "--format",
        "json",
    ]);
    assert_eq!(code(&by_path), 0, "{}", stderr(&by_path));
    assert_eq!(code(&by_name), 0, "{}", stderr(&by_name));
    let report = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_object_mut().unwrap().remove("meta");
        v
    };
    assert_eq!(report(&by_name), report(&by_path));
    // sweep: the same runs.
    let runs = |value: &str, file: &str| {
        let o = run(&[
            "sweep",
            "--scenario",
            value,
            "--seeds",
            "1",
            "--servers",
            "guarded",
            "--out",
            file,
        ]);
        assert_eq!(code(&o), 0, "{value}: {}", stderr(&o));
        let s: Summary = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        s.runs
    };
    let a = runs(SCENARIO, &format!("{out}-a.json"));
    let b = runs("seed-000-retry-by-post", &format!("{out}-b.json"));
    assert_eq!(
        a.iter().map(|r| &r.trace_sha256).collect::<Vec<_>>(),
        b.iter().map(|r| &r.trace_sha256).collect::<Vec<_>>()
    );
    // compare: a path selects that file, as its name does.
    for value in [SCENARIO, "seed-000-retry-by-post"] {
        let o = run(&[
            "compare",
            "--scenario",
            value,
            "--seeds",
            "1",
            "--servers",
            "guarded",
            "--out",
            out,
        ]);
        assert_eq!(code(&o), 0, "{value}: {}", stderr(&o));
        let s: Summary =
            serde_json::from_str(&std::fs::read_to_string(format!("{out}/summary.json")).unwrap())
                .unwrap();
        assert_eq!(s.runs.len(), 1, "{value}");
        assert_eq!(s.runs[0].scenario, "seed-000-retry-by-post");
    }
    // Unknown either way: one line, exit 3, in every command.
    for args in commands("half-opn", out) {
        let o = run_strings(&args);
        refused(
            &o,
            &[
                "--scenario half-opn: no scenario of that name; did you mean half-open? names in sims: eviction, ",
                "; --scenario also takes a file's path (e.g. sims/eviction.toml)",
            ],
            &format!("{args:?}"),
        );
    }
    for args in commands("sims/nope.toml", out) {
        let o = run_strings(&args);
        refused(
            &o,
            &["--scenario sims/nope.toml: no such file; --scenario also takes a scenario's name (names in sims: eviction, "],
            &format!("{args:?}"),
        );
    }
}

/// A partition planned after every client finished: `run` names it with
/// the run's end and the fix, and the hazard warning of `sweep` and
/// `compare` says the same instead of "add faults or seeds".
#[test]
fn a_fault_past_the_workload_says_so_with_the_times() {
    let dir = scratch("first-contact-late-fault");
    let base = std::fs::read_to_string(SCENARIO).unwrap();
    // The file's drop is faults.explicit[0]; the partition, written
    // before [network], is faults.explicit[1].
    let text = base
        .replace("hazards = [\"drop\"]", "hazards = [\"drop\", \"partition\"]")
        .replace(
            "[network]\n",
            "[[faults.explicit]]\nkind = \"partition\"\nhost = 0\nat_ms = 1500\nduration_ms = 300\n\n[network]\n",
        );
    let file = dir.join("late.toml");
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();
    let args = [
        "run",
        "--scenario",
        path,
        "--server",
        "guarded",
        "--format",
        "json",
    ];
    let o = run(&args);
    // A plan that tests less than it says is a usage error: exit 3, one
    // line naming the fault and the fix.
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let end = report["sim_ms"].as_u64().unwrap();
    assert!(end < 1500, "the workload ends before the fault: {end}");
    let said = format!(
        "faults.explicit[1] (partition of host 0 at 1500 ms) was never applied: the run ended at \
         {end} ms, before it; move it earlier or lengthen the workload"
    );
    assert_eq!(
        stderr(&o).trim(),
        format!("mcp-chaos: {said} (--allow-late-faults runs it anyway)")
    );
    let allowed = run(&[&args[..], &["--allow-late-faults"]].concat());
    assert_eq!(code(&allowed), 0, "{}", stderr(&allowed));
    assert_eq!(
        stderr(&allowed).trim(),
        format!("mcp-chaos: warning: {said}")
    );
    let text_out = run(&["run", "--scenario", path, "--server", "guarded"]);
    assert!(
        String::from_utf8_lossy(&text_out.stdout).contains(&format!("  not applied: {said}\n")),
        "{}",
        String::from_utf8_lossy(&text_out.stdout)
    );
    let summary = dir.join("sweep.json");
    let o = run(&[
        "sweep",
        "--scenario",
        path,
        "--seeds",
        "1",
        "--servers",
        "guarded",
        "--out",
        summary.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = format!("warning: scenario seed-000-retry-by-post declares hazard partition, which no seed exercised: {said}");
    assert!(
        stderr(&o).lines().any(|l| l == line),
        "{line:?} not in {}",
        stderr(&o)
    );
    assert!(
        !stderr(&o).contains("add faults or seeds"),
        "{}",
        stderr(&o)
    );
}

/// Every help text that speaks of server arms names every arm, and none
/// says "both servers" or leaves the placeholder unfilled.
#[test]
fn every_help_that_mentions_arms_names_all_of_them() {
    let cmd = mcp_chaos::cli::command();
    let mut names: Vec<Vec<&str>> = vec![vec![]];
    names.extend(cmd.get_subcommands().map(|c| vec![c.get_name()]));
    assert!(names.len() >= 14, "{names:?}");
    let mut mention = 0;
    for n in names {
        for flag in ["--help", "-h"] {
            let mut args = n.clone();
            args.push(flag);
            let o = run(&args);
            assert_eq!(code(&o), 0, "{args:?}");
            let help = String::from_utf8_lossy(&o.stdout);
            assert!(
                !help.contains("{arms}") && !help.contains("both servers"),
                "{args:?}: {help}"
            );
            let speaks = help
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "arm" || w == "arms");
            if speaks {
                mention += 1;
                for a in Arm::NAMES {
                    assert!(
                        help.contains(a),
                        "{args:?} speaks of arms but not of {a}: {help}"
                    );
                }
            }
        }
    }
    assert!(mention >= 12, "{mention} help texts name the arms");
}

/// sims/README.md opens with a complete scenario: it loads, and runs as its
/// text says (the unguarded arm fails one operation, `retry_without_key`;
/// the guarded arm none; both exit 0, the drop applied).
#[test]
fn the_first_scenario_of_sims_readme_runs_as_it_says() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/README.md"),
    )
    .unwrap();
    let start = readme.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let end = start + readme[start..].find("```").expect("its end");
    let dir = super::cli::scratch("first-scenario");
    let file = dir.join("first.toml");
    std::fs::write(&file, &readme[start..end]).unwrap();
    for (arm, failed) in [("unguarded", 1), ("guarded", 0)] {
        let o = run(&[
            "run",
            "--scenario",
            file.to_str().unwrap(),
            "--server",
            arm,
            "--format",
            "json",
        ]);
        assert_eq!(code(&o), 0, "{arm}: {}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["metrics"]["ops_failed"], failed, "{arm}");
        assert_eq!(r["faults"]["applied"]["drop"], 1, "{arm}: the drop fired");
    }
    let text = run(&[
        "run",
        "--scenario",
        file.to_str().unwrap(),
        "--server",
        "unguarded",
    ]);
    let said =
        "operations: 7 ok, 0 degraded, 1 failed of 8 (retry_without_key 1); its expectations hold";
    assert!(
        String::from_utf8_lossy(&text.stdout).starts_with(said),
        "the README quotes the first line: {}",
        String::from_utf8_lossy(&text.stdout)
    );
}

/// The README's count of the slow tests the test command leaves out is
/// the number of ignore attributes on the crate's tests.
#[test]
fn the_readme_counts_the_slow_tests_it_leaves_out() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    fn count(dir: &std::path::Path) -> usize {
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                n += count(&p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let attr = format!("#[{}", "ignore");
                n += text
                    .lines()
                    .filter(|l| l.trim_start().starts_with(&attr))
                    .count();
            }
        }
        n
    }
    let ignored = count(&root.join("tests")) + count(&root.join("src"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let said: usize = readme
        .split("leaves out ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the README says how many slow tests it leaves out, in digits");
    assert_eq!(
        said, ignored,
        "README: leaves out {said} slow tests; the crate ignores {ignored}"
    );
}

/// The README's headline table is the committed results' own: what
/// `report::headline` makes of results/summary.json, line for line (a
/// change that moves the results moves the README with them).
#[test]
fn the_readme_headline_is_the_committed_results() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("results/summary.json")).unwrap();
    let summary: mcp_chaos::sweep::Summary = serde_json::from_str(&text).unwrap();
    let table = mcp_chaos::report::headline(&summary);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() > 10, "a header, a rule and a row per scenario");
    for row in rows {
        assert!(
            readme.lines().any(|l| l == row),
            "README's headline lacks, or has an old copy of:\n{row}\n(regenerate: copy the table `compare --out results` prints)"
        );
    }
}

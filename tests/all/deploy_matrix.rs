//! `compare --deployments`: one comparison measures several deployments
//! side by side on the same seeds; each is an aggregate of its own with
//! its label, the shared store's round trips are counted, and the report
//! gains its Deployments section.

use super::cli::{code, run, scratch};
use mcp_chaos::sweep::Summary;
use std::path::PathBuf;

fn sims_dir(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    // 2 replicas behind round robin, a few drops; every run passes.
    let small = super::deploy::fleet_toml(
        "deploy-small",
        "[deployment]\nreplicas = 2\nbalancer = \"round-robin\"\n",
    );
    std::fs::write(sims.join("small.toml"), small).unwrap();
    (sims, dir.join("out"))
}

/// `compare` over `sims` for one seed into `out`, with `extra` options.
fn compare(sims: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "compare",
        "--sims",
        sims.to_str().unwrap(),
        "--seeds",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn two_deployments_are_two_aggregates_with_their_labels_and_round_trips() {
    let (sims, out) = sims_dir("deploy-matrix");
    let o = compare(
        &sims,
        &out,
        &[
            "--servers",
            "unguarded,guarded",
            "--deployments",
            "store=local;store=shared,on_dead_upstream=repin",
        ],
    );
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let s: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(s.runs.len(), 4, "2 arms x 2 deployments x 1 seed");
    // Neither set is `as-written`: the runs are measured, not judged
    // against expectations written for the scenario's own deployment.
    assert!(s
        .runs
        .iter()
        .all(|r| r.deployment_overridden && r.failed_expectations.is_empty()));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("not checked: deployment overridden: 4 of 4 runs"));
    assert_eq!(s.aggregates.len(), 4);
    assert_eq!(
        s.provenance.deployments,
        ["store=local", "store=shared,on_dead_upstream=repin"]
    );
    for a in &s.aggregates {
        let t = a.topology.as_ref().expect("a deployment has its topology");
        assert_eq!((t.replicas, t.balancer.as_str()), (2, "round-robin"));
        match a.deployment.as_str() {
            "store=local" => {
                assert_eq!(t.store, "local");
                assert_eq!(t.on_dead_upstream, "wait");
                assert_eq!(a.store_round_trips, 0, "{} on local stores", a.server);
            }
            "store=shared,on_dead_upstream=repin" => {
                assert_eq!(t.store, "shared");
                assert_eq!(t.on_dead_upstream, "repin");
                assert!(a.store_round_trips > 0, "{} on a shared store", a.server);
            }
            other => panic!("unexpected deployment label {other:?}"),
        }
    }
    // The runs carry the axis' overrides, so each reproduces as it ran.
    let shared = s
        .runs
        .iter()
        .find(|r| r.deployment.starts_with("store=shared"))
        .unwrap();
    assert_eq!(
        shared.overrides,
        [
            "deployment.store=shared",
            "deployment.on_dead_upstream=repin"
        ]
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section = report
        .split("## Deployments\n")
        .nth(1)
        .expect("a Deployments section")
        .split("\n## ")
        .next()
        .unwrap();
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| round-robin |"))
        .collect();
    assert_eq!(rows.len(), 2, "{section}");
    assert!(
        rows[0]
            .starts_with("| round-robin | local | wait | store=local | scenario | deploy-small |"),
        "{}",
        rows[0]
    );
    assert!(
        rows[0].contains("<br>0 store round trips per 1,000 ops |"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].starts_with(
            "| round-robin | shared | repin | store=shared, on_dead_upstream=repin | scenario | deploy-small |"
        ),
        "{}",
        rows[1]
    );
    assert!(!rows[1].contains("<br>0 store round trips"), "{}", rows[1]);
    // The provenance says the axis, its command quoted as a shell needs.
    assert!(
        report.contains("--deployments 'store=local;store=shared,on_dead_upstream=repin'")
            && report.contains("- deployments: store=local; store=shared,on_dead_upstream=repin\n"),
        "{report}"
    );
    // The mechanism matrix names each deployment's row too.
    assert!(
        report.contains("| deploy-small · store=local | scenario |")
            && report.contains("| deploy-small · store=shared,on_dead_upstream=repin | scenario |"),
        "{report}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<details id=\"deployments\"><summary>Deployments</summary>")
            && html.contains("href=\"#deployments\""),
        "the HTML page has the section and its link"
    );
}

#[test]
fn without_the_axis_nothing_is_labelled_and_a_local_store_writes_no_round_trips() {
    let (sims, out) = sims_dir("deploy-matrix-none");
    let o = compare(&sims, &out, &["--servers", "guarded"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    for absent in [
        "\"deployment\":",
        "\"store_round_trips\"",
        "\"deployments\"",
    ] {
        assert!(!text.contains(absent), "{absent} is not written: {text}");
    }
    assert!(text.contains("\"topology\""), "a deployment's topology is");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("## Deployments") && report.contains("| deploy-small | scenario |"),
        "replicas behind a balancer show the section, the matrix row unlabelled: {report}"
    );
}

#[test]
fn a_bad_deployments_value_is_one_line_and_exit_3() {
    let deploy = format!("{}/sims/deploy", env!("CARGO_MANIFEST_DIR"));
    for (args, says) in [
        (
            vec!["--sims", deploy.as_str(), "--deployments", "store=local"],
            "from --deployments set \"store=local\": drop that set",
        ),
        (
            vec!["--deployments", "stor=shared"],
            "did you mean deployment.store?",
        ),
        (vec!["--deployments", "store=sharde"], "sharde"),
        (vec!["--deployments", ";"], "names no deployment"),
        (
            vec![
                "--deployments",
                "store=shared",
                "--set",
                "deployment.store=local",
            ],
            "give deployment.store in one of them",
        ),
    ] {
        let mut all = vec!["compare", "--seeds", "1", "--out", "/nonexistent/never"];
        all.extend(args.iter().copied());
        let o = run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 3, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

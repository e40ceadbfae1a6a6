//! Scenario files the command line cannot run: duplicate names, unknown
//! metrics, malformed TOML, a path that is not there, bad `--jobs` and
//! `--timeout`, and files that name a path outside their directory, nest
//! too deep or ask for what cannot run: each gets exit 3 and one line
//! naming the file, where, and the fix.

use super::cli::{code, refused, run, scratch, seed_case, stderr};
use std::path::Path;

#[test]
fn scenario_problems_exit_3_naming_them() {
    let dir = scratch("scenario-problems");
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    let text = seed_case("");
    std::fs::write(sims.join("a.toml"), &text).unwrap();
    std::fs::write(sims.join("b.toml"), &text).unwrap();
    for args in [
        vec!["compare", "--sims", sims.to_str().unwrap(), "--seeds", "1"],
        vec!["validate", sims.to_str().unwrap()],
        vec!["list", sims.to_str().unwrap()],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 3, "{args:?}");
        let e = stderr(&o);
        assert!(
            e.contains("a.toml") && e.contains("b.toml"),
            "{args:?}: {e}"
        );
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    let bad = dir.join("metric.toml");
    std::fs::write(&bad, seed_case("[expect.guarded.max]\nbogus_metric = 0\n")).unwrap();
    for args in [
        vec!["validate", bad.to_str().unwrap()],
        vec![
            "run",
            "--scenario",
            bad.to_str().unwrap(),
            "--server",
            "guarded",
        ],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 3);
        let e = stderr(&o);
        assert!(
            e.contains("bogus_metric") && e.contains("duplicate_side_effects"),
            "{e}"
        );
    }
    let malformed = dir.join("malformed.toml");
    std::fs::write(
        &malformed,
        "name = \"x\"\nduration_ms = 10\n[[clients]]\nbehaviour = \"resume\"\ncount = \"two\"\n",
    )
    .unwrap();
    let o = run(&["validate", malformed.to_str().unwrap()]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("line 5, column 9"), "{}", stderr(&o));
    let o = run(&[
        "run",
        "--scenario",
        "sims/no-such.toml",
        "--server",
        "guarded",
    ]);
    assert_eq!(code(&o), 3);
    let e = stderr(&o);
    assert!(e.contains("no-such.toml"), "{e}");
    // A path that is not there: said once, with the names --scenario
    // also takes.
    assert!(
        e.matches("no such file").count() == 1 && e.contains("names in sims: eviction"),
        "the cause once: {e}"
    );
    let o = run(&["list", "sims"]);
    assert_eq!(code(&o), 0);
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("half-open") && listed.contains("sims/half-open.toml"));
    for args in [
        ["compare", "--jobs", "0"],
        ["sweep", "--jobs", "0"],
        ["compare", "--timeout", "0"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 3);
        let e = stderr(&o);
        assert!(e.contains(args[1]), "{e}");
        assert_eq!(e.trim().lines().count(), 1, "one line: {e}");
    }
}

/// Scenario files that named a path outside their directory, nested
/// deeper than the parser's stack allows, or asked for what cannot run:
/// each is one line naming the file, where, and the fix.
#[test]
fn extreme_scenarios_exit_3_naming_the_file_and_the_rule() {
    let dir = scratch("extreme-scenarios");
    let body = "duration_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\ncount = 2\n";
    let named = |n: &str| format!("name = \"{n}\"\n{body}");
    let deep = format!(
        "{}[{}]\nx = 1\n",
        named("deep"),
        vec!["a"; 10_000].join(".")
    );
    let long = "n".repeat(100_000);
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "dup",
            format!(
                "{}[server]\nstore_capacity = 4\n[server]\nmax_chunks = 9\n",
                named("dup")
            ),
            &[
                "line 8, column 1",
                "duplicate key `server`",
                "write each table once",
            ],
        ),
        (
            "deep",
            deep,
            &["line 6, column 2", "recursion limit", "at most 80 levels"],
        ),
        (
            "empty",
            named(""),
            &["name \"\"", "1 to 64 characters of A-Z a-z 0-9 . _ -"],
        ),
        ("long", named(&long), &["(100000 characters)", "1 to 64"]),
        (
            "escape",
            named("../../../escape-by-name"),
            &["../../../escape-by-name", "1 to 64"],
        ),
        ("dot", named("."), &["name \".\"", "not . or .."]),
        ("dotdot", named(".."), &["name \"..\"", "not . or .."]),
        ("space", named("a b"), &["name \"a b\"", "1 to 64"]),
        (
            "hosts",
            format!("{}[network]\nclient_hosts = 3\n", named("hosts")),
            &["network.client_hosts = 3", "2 clients", "at most 2"],
        ),
        (
            "deadline",
            format!("{}[server]\nwrite_deadline_ms = 0\n", named("deadline")),
            &["server.write_deadline_ms", "at least 1"],
        ),
    ];
    for (file, text, needles) in cases {
        let p = dir.join(format!("{file}.toml"));
        std::fs::write(&p, text).unwrap();
        let path = p.to_str().unwrap();
        for args in [
            vec!["validate", path],
            vec!["run", "--scenario", path, "--server", "guarded"],
        ] {
            let o = run(&args);
            refused(&o, needles, &format!("{file} {args:?}"));
            refused(&o, &[path], file);
            assert!(o.stderr.len() < 400, "{file}: a short line");
        }
    }
    // `repro` of the escaping name writes no trace anywhere.
    let escaped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../escape-by-name-0-guarded.jsonl");
    let before = std::fs::metadata(&escaped).and_then(|m| m.modified()).ok();
    let esc = dir.join("escape.toml");
    let o = run(&[
        "repro",
        "--scenario",
        esc.to_str().unwrap(),
        "--seed",
        "0",
        "--server",
        "guarded",
    ]);
    refused(&o, &["1 to 64"], "repro escape");
    assert_eq!(
        std::fs::metadata(&escaped).and_then(|m| m.modified()).ok(),
        before
    );
    // The bounds are inclusive: 64 characters of every allowed kind load.
    let ok = dir.join("ok.toml");
    let name = format!("Az09._-{}", "x".repeat(57));
    std::fs::write(
        &ok,
        format!("{}[network]\nclient_hosts = 2\n", named(&name)),
    )
    .unwrap();
    let o = run(&["validate", ok.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    // A zero write deadline through --set, in every command that takes it.
    let sc = "sims/seed-000-retry-by-post.toml";
    let set = ["--set", "server.write_deadline_ms=0"];
    let sims = dir.join("sims");
    std::fs::create_dir_all(&sims).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(sc),
        sims.join("a.toml"),
    )
    .unwrap();
    let out = dir.join("out");
    for args in [
        vec!["run", "--scenario", sc, "--server", "guarded"],
        vec![
            "repro",
            "--scenario",
            sc,
            "--server",
            "guarded",
            "--seed",
            "0",
        ],
        vec![
            "sweep",
            "--scenario",
            sc,
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        vec![
            "compare",
            "--sims",
            sims.to_str().unwrap(),
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let mut a = args.clone();
        a.extend(set);
        refused(
            &run(&a),
            &["server.write_deadline_ms", "at least 1"],
            &format!("{a:?}"),
        );
    }
    assert!(!out.exists(), "nothing ran");
}

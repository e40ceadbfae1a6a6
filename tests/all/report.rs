//! Reports that conclude: what to deploy first, charts that say what they show,
//! timelines with axes and lanes, provenance, `explain`, and the same
//! bytes from the same summary.

use super::cli::{bin, scratch};
use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::report;
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::sweep::Summary;
use sha2::{Digest, Sha256};
use std::path::Path;

const RETRY: &str = "sims/seed-000-retry-by-post.toml";
const RESUME: &str = "sims/seed-000-resume-then-post.toml";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files(paths: &[&str]) -> Vec<(String, Scenario)> {
    paths
        .iter()
        .map(|p| (p.to_string(), Scenario::load(&root().join(p)).unwrap()))
        .collect()
}

/// The runs of `files` × `arms` × seeds 0..2, summarized, with provenance.
fn summary(files: &[(String, Scenario)], arms: &[Arm]) -> Summary {
    let mut runs = Vec::new();
    for (_, sc) in files {
        for &arm in arms {
            for seed in 0..2 {
                runs.push(run::run_arm(sc, seed, arm, &Options::default()).unwrap().0);
            }
        }
    }
    let mut s = Summary::from_runs(runs);
    let abs: Vec<(String, Scenario)> = files
        .iter()
        .map(|(p, sc)| (root().join(p).display().to_string(), sc.clone()))
        .collect();
    s.provenance = report::provenance(
        vec!["mcp-chaos".into(), "compare".into()],
        (0, 2),
        arms.iter().map(|a| a.as_str().to_string()).collect(),
        vec![run::AS_WRITTEN.to_string()],
        &abs,
    );
    s
}

fn two_arms() -> Vec<Arm> {
    vec!["unguarded".parse().unwrap(), "guarded".parse().unwrap()]
}

#[test]
fn the_report_opens_with_what_to_deploy() {
    let s = summary(&files(&[RETRY, RESUME]), &two_arms());
    let md = report::markdown(&s, &[]);
    let at = |h: &str| md.find(h).unwrap_or_else(|| panic!("no {h} in\n{md}"));
    // The first section is the recommendation, then one line per scenario.
    let first = md.find("\n## ").unwrap() + 1;
    assert_eq!(first, at("## What to deploy"));
    assert!(at("## What to deploy") < at("## Per scenario"));
    assert!(at("## Per scenario") < at("## Headline"));
    assert!(at("## Headline") < at("## Glossary"));
    assert!(at("## Glossary") < at("## Mechanism matrix"));
    // The configuration with the fewest failed operations per operation,
    // computed here from the aggregates.
    let rate = |arm: &str| {
        let (f, o) = s
            .aggregates
            .iter()
            .filter(|a| a.server == arm)
            .fold((0, 0), |(f, o), a| {
                (f + a.metrics.ops_failed, o + a.metrics.operations)
            });
        f as f64 / o as f64
    };
    let (best, other) = if rate("guarded") <= rate("unguarded") {
        ("guarded", "unguarded")
    } else {
        ("unguarded", "guarded")
    };
    assert!(
        rate(other) > 0.0,
        "the seeds' cases fail some operations unguarded"
    );
    let deploy = &md[at("## What to deploy")..at("## Per scenario")];
    assert!(
        deploy.contains(&format!(
            "**Deploy `{best}` with the scenarios' own clients.**"
        )),
        "{deploy}"
    );
    let removed = (1.0 - rate("guarded") / rate("unguarded")) * 100.0;
    assert!(
        deploy.contains(&format!("it removes {removed:.0}% of failed operations")),
        "{deploy}"
    );
    // Ranked: both configurations, the best first, the baseline marked.
    let ranked: Vec<&str> = deploy
        .lines()
        .filter(|l| l.starts_with("| 1 |") || l.starts_with("| 2 |"))
        .collect();
    assert_eq!(ranked.len(), 2, "{deploy}");
    assert!(ranked[0].contains(&format!("`{best}`")), "{}", ranked[0]);
    assert!(deploy.contains("`unguarded` (baseline)"), "{deploy}");
    // One line per scenario, saying whether its expectations hold.
    let per = &md[at("## Per scenario")..at("## Headline")];
    for (_, sc) in files(&[RETRY, RESUME]) {
        let line = per
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", sc.name)))
            .unwrap_or_else(|| panic!("no line for {} in\n{per}", sc.name));
        let broken = s
            .aggregates
            .iter()
            .any(|a| a.scenario == sc.name && a.failed_runs > 0);
        assert_eq!(line.contains("**break**"), broken, "{line}");
        assert_eq!(line.contains("hold in all"), !broken, "{line}");
    }
    // One vocabulary: "fails" is said only of operations.
    for l in md.lines().filter(|l| l.contains("fails")) {
        assert!(l.contains("operation"), "{l}");
    }
    // The glossary, the scenarios' descriptions and the provenance too.
    for (_, sc) in files(&[RETRY, RESUME]) {
        assert!(md.contains(sc.description.trim()), "{}", sc.name);
    }
    for cause in ["retry_without_key", "run_ended", "restart_mid_execution"] {
        assert!(md.contains(&format!("- `{cause}`: ")), "glossary: {cause}");
    }
    assert!(md.contains(&format!("- git commit: `{}`", s.provenance.commit)));
    let html = report::html(&s, &[]);
    let deploy_at = html
        .find("<section class=\"deploy\">")
        .expect("a deploy section");
    assert!(deploy_at < html.find("id=\"headline\"").unwrap());
    assert!(html[deploy_at..].starts_with(
        "<section class=\"deploy\"><h2 id=\"what-to-deploy\">What to deploy</h2><h3 id=\"the-answer-by-what-you-control\">"
    ));
    let section_end = deploy_at + html[deploy_at..].find("</section>").unwrap();
    assert!(html[deploy_at..section_end].contains(&format!(
        "<p class=\"answer\"><b>Deploy <code>{best}</code>"
    )));
}

#[test]
fn no_failed_operations_is_said_not_drawn() {
    let mut s = summary(&files(&[RETRY]), &two_arms());
    for a in &mut s.aggregates {
        a.metrics.ops_failed = 0;
    }
    let svg = report::bars_svg(&s, run::AS_WRITTEN);
    assert!(svg.contains("No failed operations"), "{svg}");
    assert!(!svg.contains("class=\"bar\""), "{svg}");
    // With failures, bars on a labelled axis of rates (linear: one bar
    // above 0), colours as the legend.
    s.aggregates[0].metrics.ops_failed = 7;
    let svg = report::bars_svg(&s, run::AS_WRITTEN);
    assert!(!svg.contains("No failed operations"));
    assert_eq!(svg.matches("class=\"bar\"").count(), 2, "{svg}");
    assert!(svg.contains("linear axis") && svg.contains(">failed per 1,000 operations<"));
    for a in &s.aggregates {
        let bar_fill = svg
            .split("class=\"bar\"")
            .skip(1)
            .find(|b| b.contains(&format!(" · {}: ", a.server)))
            .and_then(|b| b.split("fill=\"").nth(1))
            .map(|f| f[..7].to_string())
            .unwrap();
        let label = svg
            .find(&format!("class=\"legend\">{}</text>", a.server))
            .expect("a legend entry per arm");
        let swatch = &svg[label.saturating_sub(220)..label];
        assert!(
            swatch.contains(&format!("fill=\"{bar_fill}\"")),
            "legend swatch of {} has its bar's colour {bar_fill}: {swatch}",
            a.server
        );
    }
}

#[test]
fn one_latency_cdf_panel_per_scenario() {
    let s = summary(&files(&[RETRY, RESUME]), &two_arms());
    let panels = report::cdf_panels(&s, run::AS_WRITTEN);
    assert_eq!(panels.len(), 2);
    for (panel, name) in panels
        .iter()
        .zip(["seed-000-resume-then-post", "seed-000-retry-by-post"])
    {
        assert!(panel.contains(&format!(">{name}</text>")), "{panel}");
        assert!(panel.contains("migration latency (ms, log scale)"));
        assert!(panel.contains("share of migrations done"));
    }
    let html = report::html(&s, &[]);
    assert_eq!(html.matches("class=\"cdf-panel\"").count(), 2);
}

#[test]
fn a_timeline_has_a_time_axis_and_a_lane_per_chosen_client() {
    let sc = Scenario::load(&root().join("sims/flaky-mobile.toml")).unwrap();
    let arm: Arm = "unguarded".parse().unwrap();
    let (r, h) = run::run_arm(&sc, 0, arm, &Options::default()).unwrap();
    let t = report::Timeline::of("flaky".into(), &h, &r.operations, sc.network.client_hosts);
    assert!(!t.lanes.is_empty() && t.lanes.len() <= report::Timeline::MAX_LANES);
    let failing: std::collections::BTreeSet<u32> = r
        .operations
        .iter()
        .filter(|o| o.cause.is_some())
        .map(|o| o.client)
        .collect();
    if failing.len() <= report::Timeline::MAX_LANES {
        for c in &failing {
            assert!(t.lanes.iter().any(|l| l.client == *c), "client {c} failed");
        }
    }
    let svg = report::timeline_svg(&t);
    assert!(svg.matches("class=\"tick\"").count() >= 3, "ticks");
    assert!(svg.contains("simulated time (s)"));
    for l in &t.lanes {
        assert!(
            svg.contains(&format!(">client {} (host {})</text>", l.client, l.host)),
            "lane of client {}",
            l.client
        );
    }
    let ops: usize = t.lanes.iter().map(|l| l.ops.len()).sum();
    assert_eq!(svg.matches("class=\"op\"").count(), ops);
    let failed_bars = t
        .lanes
        .iter()
        .flat_map(|l| &l.ops)
        .filter(|o| o.outcome == "failed")
        .count();
    assert_eq!(failed_bars > 0, r.metrics.ops_failed > 0);
}

#[test]
fn provenance_names_the_command_commit_and_each_file_hash() {
    let fs = files(&[RETRY, RESUME]);
    let abs: Vec<(String, Scenario)> = fs
        .iter()
        .map(|(p, sc)| (root().join(p).display().to_string(), sc.clone()))
        .collect();
    let p = report::provenance(
        vec!["mcp-chaos".into(), "compare".into()],
        (3, 9),
        vec!["guarded".into()],
        vec!["scenario".into()],
        &abs,
    );
    assert_eq!(p.command, ["mcp-chaos", "compare"]);
    assert_eq!(p.seeds, "3..9");
    assert!(!p.commit.is_empty());
    assert_eq!(p.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(p.scenarios.len(), 2);
    for (path, sc) in &abs {
        let info = &p.scenarios[&sc.name];
        assert_eq!(info.sha256.len(), 64);
        assert!(info.sha256.chars().all(|c| c.is_ascii_hexdigit()));
        let want: String = Sha256::digest(std::fs::read(path).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(info.sha256, want, "{path}");
        assert_eq!(info.description, sc.description.trim());
    }
}

#[test]
fn writing_the_reports_twice_gives_the_same_bytes() {
    let fs = files(&[RETRY]);
    let s = summary(&fs, &two_arms());
    let dir = scratch("report-twice");
    let ts = |workers| mcp_chaos::compare::timelines(&s, &fs, workers).unwrap();
    let write = |out: &std::path::Path, ts: Vec<report::Timeline>| {
        report::write_reports(out, &s, &ts, &report::Beside::under(out)).unwrap()
    };
    let a = write(&dir.join("a"), ts(1));
    let b = write(&dir.join("b"), ts(2));
    assert_eq!(a.len(), 2);
    for (x, y) in a.iter().zip(&b) {
        let (x, y) = (std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
        assert!(!x.is_empty());
        assert!(x == y, "same summary, same bytes");
    }
    let html = std::fs::read_to_string(&a[1]).unwrap();
    let picked = report::pick_timeline_runs(&s).len();
    assert_eq!(html.matches("class=\"timeline\"").count(), picked);
}

#[test]
fn explain_tells_one_operations_story_or_names_the_bad_input() {
    let dir = scratch("explain");
    let trace = dir.join("t.jsonl");
    let o = bin()
        .args([
            "repro",
            "--scenario",
            RETRY,
            "--seed",
            "0",
            "--server",
            "unguarded",
            "--trace",
        ])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(trace.exists(), "{}", String::from_utf8_lossy(&o.stderr));
    let sc = Scenario::load(&root().join(RETRY)).unwrap();
    let (r, _) = run::run_arm(&sc, 0, "unguarded".parse().unwrap(), &Options::default()).unwrap();

    let o = bin()
        .args(["explain", "--op", "c0-op0", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.starts_with("operation c0-op0 (client 0)"), "{out}");
    assert!(out.contains("client  op_started"), "{out}");
    assert!(out.contains("ledger  execution"), "{out}");
    assert!(out.contains("server  request_received"), "{out}");
    match r.operations.iter().find(|v| v.tag == "c0-op0") {
        Some(v) => match &v.cause {
            Some(c) => assert!(out.contains(&format!("primary cause {c}")), "{out}"),
            None => assert!(out.contains("oracle: degraded"), "{out}"),
        },
        None => assert!(out.contains("oracle: ok"), "{out}"),
    }

    let o = bin()
        .args(["explain", "--op", "c99-op7", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("c99-op7") && err.contains("c0-op0"),
        "names the tag and a known one: {err}"
    );

    let o = bin()
        .args([
            "explain",
            "--op",
            "c0-op0",
            "--trace",
            "no/such/trace.jsonl",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no/such/trace.jsonl"), "{err}");
}

/// The committed report is what `compare` writes on a fresh clone: its
/// glossary names every cause the oracle can give (a cause added without
/// regenerating results/ would leave `compare`'s checkout dirty).
#[test]
fn the_committed_report_glossary_names_every_cause_and_fault_kind() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["results/report.md", "results/report.html"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let causes = mcp_chaos::oracle::causes::PRECEDENCE
            .iter()
            .map(|c| c.as_str());
        let kinds = mcp_chaos::history::FaultKind::ALL.map(|k| k.name());
        for name in causes.chain(kinds) {
            assert!(
                text.contains(&format!("`{name}`")) || text.contains(&format!("<code>{name}</code>")),
                "{file} has no glossary line for {name}: run `cargo run --release -- compare` and commit results/"
            );
        }
    }
}

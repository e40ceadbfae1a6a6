//! Charts a reader can trust, checked on the SVG they are: rates with
//! not-applicable cells hatched (never a bar, never "0 failed"), labels
//! whose estimated boxes never overlap and lie inside the picture,
//! coinciding CDF curves told apart, timelines whose bars never sit on
//! one another, each pairing the recommended configuration's run with the
//! worst run on the same seed.

use mcp_chaos::hosts::sut::Arm;
use mcp_chaos::report::{self, recommend::recommend};
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::sweep::Summary;
use std::path::Path;

const RETRY: &str = "sims/seed-000-retry-by-post.toml";
const RESUME: &str = "sims/seed-000-resume-then-post.toml";

fn files(paths: &[&str]) -> Vec<(String, Scenario)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    paths
        .iter()
        .map(|p| (p.to_string(), Scenario::load(&root.join(p)).unwrap()))
        .collect()
}

/// Seeds 0..2 of `files` × `arms`, summarized.
fn summary(files: &[(String, Scenario)], arms: &[&str]) -> Summary {
    let mut runs = Vec::new();
    for (_, sc) in files {
        for arm in arms {
            let arm: Arm = arm.parse().unwrap();
            for seed in 0..2 {
                runs.push(run::run_arm(sc, seed, arm, &Options::default()).unwrap().0);
            }
        }
    }
    Summary::from_runs(runs)
}

/// The summary with every aggregate and run of `from` copied as arm `to`
/// (more arms than the simulator runs here, for the layout's sake).
fn with_copied_arm(mut s: Summary, from: &str, to: &str) -> Summary {
    let aggs: Vec<_> = s
        .aggregates
        .iter()
        .filter(|a| a.server == from)
        .cloned()
        .collect();
    for mut a in aggs {
        a.server = to.into();
        s.aggregates.push(a);
    }
    let runs: Vec<_> = s
        .runs
        .iter()
        .filter(|r| r.server == from)
        .cloned()
        .collect();
    for mut r in runs {
        r.server = to.into();
        s.runs.push(r);
    }
    // A summary keeps its scenarios together, as `Summary::from_runs` does.
    s.aggregates
        .sort_by(|a, b| (&a.scenario, &a.server).cmp(&(&b.scenario, &b.server)));
    s.runs
        .sort_by(|a, b| (&a.scenario, &a.server, a.seed).cmp(&(&b.scenario, &b.server, b.seed)));
    s
}

/// `14400` as `14,400`.
fn sep(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..].split('"').next()?.to_string())
}

fn num(tag: &str, name: &str) -> Option<f64> {
    attr(tag, name).map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} in {tag}")))
}

/// One `<text>`: its opening tag and content (unescaped).
struct Text {
    tag: String,
    content: String,
}

fn texts(svg: &str) -> Vec<Text> {
    svg.split("<text")
        .skip(1)
        .map(|rest| {
            let (tag, after) = rest.split_once('>').unwrap();
            let content = after.split("</text>").next().unwrap();
            Text {
                tag: format!(" {tag}"),
                content: content
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&amp;", "&"),
            }
        })
        .collect()
}

/// A text's corners estimated from its position, font size (11 unless
/// given), anchor and length: 0.62 em per character, 0.8 em above the
/// baseline and 0.2 below, turned about (x, y) by its `rotate(A x y)`.
fn text_corners(t: &Text) -> [(f64, f64); 4] {
    let x = num(&t.tag, "x").unwrap_or(0.0);
    let y = num(&t.tag, "y").unwrap_or(0.0);
    let size = num(&t.tag, "font-size").unwrap_or(11.0);
    let w = t.content.chars().count() as f64 * 0.62 * size;
    let shift = match attr(&t.tag, "text-anchor").as_deref() {
        Some("middle") => w / 2.0,
        Some("end") => w,
        _ => 0.0,
    };
    let angle = attr(&t.tag, "transform").map_or(0.0, |tr| {
        let args = tr
            .strip_prefix("rotate(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_else(|| panic!("a transform the estimate does not know: {tr}"));
        let v: Vec<f64> = args.split(' ').map(|n| n.parse().unwrap()).collect();
        assert_eq!((v[1], v[2]), (x, y), "turned about its own anchor: {tr}");
        v[0]
    });
    let (sin, cos) = angle.to_radians().sin_cos();
    let (x0, x1) = (x - shift, x - shift + w);
    let (y0, y1) = (y - 0.8 * size, y + 0.2 * size);
    [(x0, y0), (x1, y0), (x1, y1), (x0, y1)].map(|(px, py)| {
        (
            x + (px - x) * cos - (py - y) * sin,
            y + (px - x) * sin + (py - y) * cos,
        )
    })
}

#[test]
fn the_text_outline_estimate_sees_slanted_neighbours() {
    let slanted = |x: f64| {
        Text {
        tag: format!(
            " x=\"{x}\" y=\"100\" transform=\"rotate(-40 {x} 100)\" font-size=\"10\" text-anchor=\"end\""
        ),
        content: "deploy-balancer-restart · as written".into(),
    }
    };
    assert!(texts_overlap(&slanted(100.0), &slanted(105.0)));
    assert!(!texts_overlap(&slanted(100.0), &slanted(148.0)));
    // Their boxes overlap although the texts do not: the test needs the
    // outlines.
    let (a, b) = (text_box(&slanted(100.0)), text_box(&slanted(148.0)));
    assert!(overlap(a, b));
    let flat = Text {
        tag: " x=\"0\" y=\"10\"".into(),
        content: "abc".into(),
    };
    assert_eq!(
        text_box(&flat),
        (0.0, 10.0 - 8.8, 3.0 * 0.62 * 11.0, 10.0 + 2.2)
    );
}

/// The box (x0, y0, x1, y1) around a text's corners.
fn text_box(t: &Text) -> (f64, f64, f64, f64) {
    let c = text_corners(t);
    let xs = c.map(|p| p.0);
    let ys = c.map(|p| p.1);
    let lo = |v: [f64; 4]| v.into_iter().fold(f64::MAX, f64::min);
    let hi = |v: [f64; 4]| v.into_iter().fold(f64::MIN, f64::max);
    (lo(xs), lo(ys), hi(xs), hi(ys))
}

/// Two texts' outlines overlap: no edge direction of either separates
/// them (the separating axis test for convex outlines).
fn texts_overlap(a: &Text, b: &Text) -> bool {
    const EPS: f64 = 1e-6;
    let (pa, pb) = (text_corners(a), text_corners(b));
    let project = |p: &[(f64, f64); 4], n: (f64, f64)| {
        let d = p.map(|q| q.0 * n.0 + q.1 * n.1);
        (
            d.into_iter().fold(f64::MAX, f64::min),
            d.into_iter().fold(f64::MIN, f64::max),
        )
    };
    [pa, pb].iter().all(|poly| {
        (0..4).all(|i| {
            let (p, q) = (poly[i], poly[(i + 1) % 4]);
            let n = (q.1 - p.1, p.0 - q.0);
            let (a0, a1) = project(&pa, n);
            let (b0, b1) = project(&pb, n);
            let len = (n.0 * n.0 + n.1 * n.1).sqrt().max(EPS);
            a0 < b1 - EPS * len && b0 < a1 - EPS * len
        })
    })
}

fn overlap(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    const EPS: f64 = 1e-6;
    a.0 < b.2 - EPS && b.0 < a.2 - EPS && a.1 < b.3 - EPS && b.1 < a.3 - EPS
}

fn view_box(svg: &str) -> (f64, f64) {
    let vb = attr(svg, "viewBox").expect("a viewBox");
    let v: Vec<f64> = vb.split(' ').map(|x| x.parse().unwrap()).collect();
    assert_eq!((v[0], v[1]), (0.0, 0.0));
    (v[2], v[3])
}

/// No two texts' boxes overlap, and every one lies inside the viewBox.
fn assert_labels_apart_and_inside(svg: &str) {
    let (w, h) = view_box(svg);
    let ts = texts(svg);
    assert!(!ts.is_empty());
    for (i, a) in ts.iter().enumerate() {
        let ba = text_box(a);
        assert!(
            ba.0 >= 0.0 && ba.1 >= 0.0 && ba.2 <= w && ba.3 <= h,
            "\"{}\" {ba:?} leaves the viewBox {w}x{h}",
            a.content
        );
        for b in &ts[i + 1..] {
            assert!(
                !texts_overlap(a, b),
                "\"{}\" {ba:?} overlaps \"{}\" {:?}",
                a.content,
                b.content,
                text_box(b)
            );
        }
    }
}

/// `<rect class="…">` elements' opening tags and tooltips.
fn rects<'a>(svg: &'a str, class: &str) -> Vec<(&'a str, &'a str)> {
    svg.split(&format!("<rect class=\"{class}\""))
        .skip(1)
        .map(|r| {
            let (tag, rest) = r.split_once('>').unwrap();
            let tip = rest
                .strip_prefix("<title>")
                .and_then(|t| t.split("</title>").next())
                .unwrap_or("");
            (tag, tip)
        })
        .collect()
}

#[test]
fn bars_are_rates_with_na_hatched_and_labels_apart() {
    let mut s = summary(
        &files(&[RETRY, RESUME]),
        &["unguarded", "keys", "guarded", "cancel"],
    );
    s = with_copied_arm(s, "unguarded", "rmcp");
    s = with_copied_arm(s, "guarded", "rmcp-es");
    // Six equal values side by side (the "3,6003,600" of the issue), and
    // one cell whose clients could not run against its arm.
    for a in s
        .aggregates
        .iter_mut()
        .filter(|a| a.scenario == "seed-000-resume-then-post")
    {
        a.metrics.operations = 14_400;
        a.metrics.ops_failed = 3_600;
    }
    let na = s
        .aggregates
        .iter_mut()
        .find(|a| a.scenario == "seed-000-retry-by-post" && a.server == "rmcp-es")
        .unwrap();
    na.metrics = Default::default();
    na.not_applicable_clients = 4;
    let svg = report::bars_svg(&s, run::AS_WRITTEN);
    // 3,600 of 14,400 beside the smaller rates: every bar readable on a
    // linear axis only if the smallest is at least 2 % of the tallest.
    let rates: Vec<f64> = s
        .aggregates
        .iter()
        .filter(|a| a.metrics.ops_failed > 0)
        .map(|a| a.metrics.ops_failed as f64 / a.metrics.operations as f64)
        .collect();
    let (lo, hi) = rates
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), r| (l.min(*r), h.max(*r)));
    let axis = if lo >= hi * 0.02 {
        "linear axis"
    } else {
        "log axis"
    };
    assert!(svg.contains(axis), "{axis}: {lo} .. {hi}");
    assert!(svg.contains(">failed per 1,000 operations<"));
    assert_labels_apart_and_inside(&svg);

    let bars = rects(&svg, "bar");
    let cells = rects(&svg, "na");
    assert_eq!(bars.len() + cells.len(), s.aggregates.len());
    assert_eq!(cells.len(), 1, "{svg}");
    let (tag, tip) = cells[0];
    assert!(
        tip.starts_with("seed-000-retry-by-post · rmcp-es: not applicable"),
        "{tip}"
    );
    assert_eq!(attr(tag, "fill").as_deref(), Some("url(#na-hatch)"));
    assert!(svg.contains("<pattern id=\"na-hatch\""));
    assert_eq!(texts(&svg).iter().filter(|t| t.content == "n/a").count(), 1);
    for a in &s.aggregates {
        let who = format!("{} · {}: ", a.scenario, a.server);
        let mine: Vec<_> = bars
            .iter()
            .filter(|(_, tip)| tip.starts_with(&who))
            .collect();
        if a.not_applicable() {
            assert!(mine.is_empty(), "an n/a cell drawn as a bar: {mine:?}");
            assert!(!svg.contains(&format!("{who}0 failed")));
            continue;
        }
        assert_eq!(mine.len(), 1, "{who}");
        let (tag, tip) = mine[0];
        let rate = a.metrics.ops_failed as f64 * 1000.0 / a.metrics.operations as f64;
        let want = format!(
            "{} failed of {} operations",
            sep(a.metrics.ops_failed),
            sep(a.metrics.operations)
        );
        assert!(tip.contains(&want), "{tip}");
        let height = num(tag, "height").unwrap();
        assert_eq!(height > 0.0, rate > 0.0, "{tip}: height {height}");
    }
    // A higher rate stands taller.
    let h = |who: &str| {
        let (tag, _) = bars.iter().find(|(_, t)| t.starts_with(who)).unwrap();
        num(tag, "height").unwrap()
    };
    let (resume, retry) = (
        "seed-000-resume-then-post · unguarded: ",
        "seed-000-retry-by-post · unguarded: ",
    );
    assert!(h(retry) > h(resume), "1,000 per 1,000 above 250 per 1,000");
    // The legend stands right of every bar.
    let right = bars
        .iter()
        .chain(&cells)
        .map(|(t, _)| num(t, "x").unwrap() + num(t, "width").unwrap())
        .fold(0.0, f64::max);
    let legend: Vec<Text> = texts(&svg)
        .into_iter()
        .filter(|t| t.tag.contains("class=\"legend\""))
        .collect();
    assert_eq!(legend.len(), 7, "six arms and n/a");
    for t in &legend {
        assert!(
            text_box(t).0 > right,
            "legend \"{}\" inside the plot",
            t.content
        );
    }
}

/// The polylines of a CDF panel: (points, dash pattern, arm).
fn curves(svg: &str) -> Vec<(String, String, String)> {
    svg.split("<polyline")
        .skip(1)
        .map(|p| {
            let (tag, rest) = p.split_once('>').unwrap();
            let tag = format!(" {tag}");
            let arm = rest
                .strip_prefix("<title>")
                .and_then(|t| t.split(':').next())
                .unwrap()
                .to_string();
            (
                attr(&tag, "points").unwrap(),
                attr(&tag, "stroke-dasharray").unwrap_or_default(),
                arm,
            )
        })
        .collect()
}

#[test]
fn coinciding_cdf_curves_stay_apart_and_nothing_is_clipped() {
    let mut s = summary(
        &files(&[RETRY]),
        &["unguarded", "keys", "guarded", "cancel"],
    );
    s = with_copied_arm(s, "unguarded", "rmcp");
    s = with_copied_arm(s, "keys", "rmcp-es");
    // Every arm the same latencies, reaching 100 ms (the right-most tick),
    // but guarded's.
    for r in &mut s.runs {
        r.migration_latency_hist_us = if r.server == "guarded" {
            vec![(900, 1), (2_500, 3)]
        } else {
            vec![(1_200, 2), (30_000, 1), (100_000, 1)]
        };
    }
    let svg = report::cdf_panel_svg(&s, "seed-000-retry-by-post", run::AS_WRITTEN);
    assert_labels_apart_and_inside(&svg);
    let ticks: Vec<Text> = texts(&svg)
        .into_iter()
        .filter(|t| t.tag.contains("class=\"tick\""))
        .collect();
    assert!(
        ticks.iter().any(|t| t.content == "100 ms"),
        "the 100 ms tick"
    );
    let cs = curves(&svg);
    assert_eq!(cs.len(), 6);
    let legend: Vec<String> = texts(&svg)
        .into_iter()
        .filter(|t| t.tag.contains("class=\"legend\""))
        .map(|t| t.content)
        .collect();
    let mut identical = 0;
    for (i, a) in cs.iter().enumerate() {
        for b in &cs[i + 1..] {
            if a.0 == b.0 {
                identical += 1;
                assert_ne!(a.1, b.1, "{} and {} coincide in one dash pattern", a.2, b.2);
            }
        }
        let entry = legend
            .iter()
            .find(|e| e.starts_with(&format!("{}: ", a.2)))
            .unwrap_or_else(|| panic!("no legend entry for {}", a.2));
        let first_same = cs.iter().find(|c| c.0 == a.0).unwrap();
        if first_same.2 != a.2 {
            assert!(
                entry.contains(&format!("identical to {}", first_same.2)),
                "{entry}"
            );
        } else {
            assert!(!entry.contains("identical"), "{entry}");
        }
    }
    assert_eq!(identical, 10, "five arms' curves coincide pairwise");
    // The legend stands below every curve.
    let lowest = cs
        .iter()
        .flat_map(|c| {
            c.0.split(' ')
                .map(|p| p.split(',').nth(1).unwrap().parse::<f64>().unwrap())
                .collect::<Vec<_>>()
        })
        .fold(0.0, f64::max);
    for t in texts(&svg)
        .iter()
        .filter(|t| t.tag.contains("class=\"legend\""))
    {
        assert!(
            text_box(t).1 > lowest,
            "legend \"{}\" over the curves",
            t.content
        );
    }
}

/// Every `class="op"` bar: (client, x0, y0, x1, y1).
fn op_bars(svg: &str) -> Vec<(String, (f64, f64, f64, f64))> {
    rects(svg, "op")
        .into_iter()
        .map(|(tag, _)| {
            let tag = format!(" {tag}");
            let (x, y) = (num(&tag, "x").unwrap(), num(&tag, "y").unwrap());
            let (w, h) = (num(&tag, "width").unwrap(), num(&tag, "height").unwrap());
            (attr(&tag, "data-client").unwrap(), (x, y, x + w, y + h))
        })
        .collect()
}

fn assert_no_bar_on_another(svg: &str) {
    let bars = op_bars(svg);
    for (i, a) in bars.iter().enumerate() {
        for b in &bars[i + 1..] {
            assert!(
                !overlap(a.1, b.1),
                "client {} {:?} on client {} {:?}",
                a.0,
                a.1,
                b.0,
                b.1
            );
        }
    }
}

#[test]
fn overlapping_operations_of_one_client_take_rows_of_their_own() {
    let op = |tag: &str, start_us, end_us| report::OpBar {
        tag: tag.into(),
        start_us,
        end_us,
        outcome: "ok",
        why: String::new(),
    };
    let t = report::Timeline {
        title: "hand-built".into(),
        end_us: 1_000_000,
        clients: 2,
        lanes: vec![
            report::Lane {
                client: 0,
                host: 0,
                ops: vec![
                    op("a", 0, 400_000),
                    op("b", 100_000, 300_000),
                    op("c", 200_000, 200_000),
                    op("d", 400_000, 900_000),
                    op("e", 400_000, 400_000),
                ],
                marks: vec![],
            },
            report::Lane {
                client: 1,
                host: 1,
                ops: vec![op("f", 0, 1_000_000)],
                marks: vec![],
            },
        ],
        ..Default::default()
    };
    let svg = report::timeline_svg(&t);
    let bars = op_bars(&svg);
    assert_eq!(bars.len(), 6);
    assert_no_bar_on_another(&svg);
    // Client 0 needs three rows (a, b and c overlap), so its bars take
    // three distinct heights; client 1's one bar is full height.
    let mut ys: Vec<f64> = bars.iter().filter(|b| b.0 == "0").map(|b| b.1 .1).collect();
    ys.sort_by(f64::total_cmp);
    ys.dedup();
    assert_eq!(ys.len(), 3, "{ys:?}");
    let tall = |c: &str| {
        bars.iter()
            .find(|b| b.0 == c)
            .map(|b| b.1 .3 - b.1 .1)
            .unwrap()
    };
    assert!(tall("1") > tall("0"));
}

#[test]
fn each_timeline_pairs_the_recommended_run_with_the_worst_on_its_seed() {
    let fs = files(&[RETRY, RESUME]);
    let s = summary(&fs, &["unguarded", "guarded"]);
    let rec = recommend(&s).expect("a recommendation");
    assert_eq!(
        rec.server, "guarded",
        "no failed operations in either scenario"
    );
    let groups = report::pick_timeline_groups(&s);
    let worst = report::pick_timeline_runs(&s);
    assert_eq!(groups.len(), worst.len());
    assert!(!groups.is_empty());
    for (g, w) in groups.iter().zip(&worst) {
        assert!(std::ptr::eq(g.last().unwrap().0, *w), "the worst run last");
        assert_ne!(w.server, rec.server);
        assert_eq!(g.len(), 2, "{g:?}");
        let r = g[0].0;
        assert_eq!(
            (r.server.as_str(), r.clients.as_str()),
            (rec.server.as_str(), rec.clients.as_str())
        );
        assert_eq!((r.scenario.as_str(), r.seed), (w.scenario.as_str(), w.seed));
    }
    let ts = mcp_chaos::compare::timelines(&s, &fs, 1).unwrap();
    assert_eq!(ts.len(), 2 * groups.len());
    let html = report::html(&s, &ts);
    let svgs: Vec<&str> = html
        .split("<svg")
        .filter(|x| x.contains("class=\"timeline\""))
        .collect();
    assert_eq!(svgs.len(), groups.len(), "one picture per group");
    for (pair, svg) in ts.chunks(2).zip(&svgs) {
        assert_eq!(pair[0].group, pair[1].group);
        assert_eq!(pair[0].role, "recommended configuration");
        assert_eq!(pair[1].role, "worst run");
        let w = worst
            .iter()
            .find(|w| pair[1].group == format!("{} · seed {}", w.scenario, w.seed))
            .unwrap();
        assert!(
            pair[1].title.contains(&format!(" · {} · ", w.server)),
            "{}",
            pair[1].title
        );
        assert!(
            pair[0].title.contains(&format!(" · {} · ", rec.server)),
            "{}",
            pair[0].title
        );
        for t in pair {
            assert!(
                svg.contains(&report_xml(&format!("{}: {}", t.role, t.title))),
                "{}",
                t.title
            );
        }
        // The same lanes in both, on one time axis.
        let lanes = |t: &report::Timeline| t.lanes.iter().map(|l| l.client).collect::<Vec<_>>();
        assert_eq!(lanes(&pair[0]), lanes(&pair[1]));
        assert_no_bar_on_another(&format!("<svg{svg}"));
    }
}

fn report_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn no_table_cell_holds_raw_json() {
    let s = summary(&files(&[RETRY]), &["unguarded", "guarded"]);
    let md = report::markdown(&s, &[]);
    let every = &md[md.find("## Every metric").unwrap()..];
    assert!(!every.contains("{\""), "{every}");
    let faults = every.lines().find(|l| l.starts_with("| faults |")).unwrap();
    assert!(
        faults.contains("planned: ") && faults.contains("; applied: "),
        "{faults}"
    );
}

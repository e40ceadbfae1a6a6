//! `report.html`: one self-contained page (no scripts, no external files).

use super::conclude;
use super::plots::{bars_svg, cdf_panels, timeline_group_svg, Timeline};
use super::recommend::{self, Beside};
use super::{details, matrix, warnings, xml};
use crate::sweep::Summary;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;max-width:1800px;margin:2em auto;padding:0 1em;line-height:1.4}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}td{overflow-wrap:break-word}td code,table.wide td,table.metrics td{overflow-wrap:anywhere}section.deploy td code{overflow-wrap:normal;white-space:nowrap}details{margin:.6em 0}summary{font-size:1.25em;font-weight:bold;cursor:pointer}#timelines~details summary{font-size:1.1em}th{background:#f4f4f4}table.metrics td{text-align:right}table.metrics td:first-child{text-align:left}table.matrix{font-size:13px}table.matrix td{min-width:6em}td.ok,td.pass{background:#e5f5e0}td.degraded{background:#fff7bc}td.bad,td.fails{background:#fde0dd}td.na{background:#eee;color:#555}p.warn{background:#fff7bc;padding:4px}code{background:#f4f4f4;padding:0 3px;font-size:90%}div.panels{display:flex;flex-wrap:wrap;gap:8px}nav a{margin-right:1em}section.deploy{border-left:6px solid #2b8cbe;background:#f3f8fb;padding:2px 1em;margin:1em 0}p.answer{font-size:1.25em}svg{max-width:100%;height:auto}";

/// A page of its own for a Markdown report (`eras.html` beside
/// `eras.md`): the same style as `report.html`, no scripts.
pub fn page(title: &str, markdown: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>{}</body></html>\n",
        xml(title),
        md_html(markdown)
    )
}

/// `report.html` with nothing beside it (see [`html_beside`]).
pub fn html(s: &Summary, timelines: &[Timeline]) -> String {
    html_beside(s, timelines, &Beside::default())
}

/// `report.html`, read in one sitting: the answer first (the table by
/// what the user controls, the configuration to deploy among those run,
/// what remains under it and the failing operations worth a look there),
/// then the charts (failed operations per scenario, per-scenario
/// migration-latency CDFs, one timeline per affected scenario); the long
/// tables (every configuration ranked, per scenario, the headline, broken
/// expectations, the mechanism matrix, deployments, every metric) and the
/// reference (glossary, scenarios, provenance) follow collapsed.
pub fn html_beside(s: &Summary, timelines: &[Timeline], beside: &Beside) -> String {
    let mut out = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-chaos comparison</title><style>{STYLE}</style></head><body><h1>mcp-chaos comparison</h1>");
    let deployments = super::deployments::html(s);
    let nav_deployments = if deployments.is_empty() {
        ""
    } else {
        "<a href=\"#deployments\">Deployments</a>"
    };
    let _ = write!(out, "<nav><a href=\"#what-to-deploy\">What to deploy</a><a href=\"#failing-operations-worth-a-look\">Worth a look</a><a href=\"#charts\">Charts</a><a href=\"#timelines\">Timelines</a><a href=\"#every-configuration-ranked\">Ranked</a><a href=\"#per-scenario\">Per scenario</a><a href=\"#headline\">Headline</a><a href=\"#runs-whose-expectations-broke\">Broken expectations</a><a href=\"#mechanism-matrix\">Matrix</a>{nav_deployments}<a href=\"#every-metric-per-scenario\">Every metric</a><a href=\"#glossary\">Glossary</a><a href=\"#scenarios\">Scenarios</a><a href=\"#provenance\">Provenance</a></nav>");
    // Events first, when the comparison read any: what to deploy for them.
    out.push_str(&md_html(&super::events::markdown(s, beside)));
    let md = recommend::markdown(s, beside);
    let (answer, ranked) = md
        .split_once("### Every configuration, ranked")
        .map_or((md.as_str(), ""), |(a, r)| (a, r));
    // The recommendation among the configurations run: set it apart.
    let _ = write!(
        out,
        "<section class=\"deploy\">{}</section>",
        md_html(answer).replacen("<p><b>Deploy", "<p class=\"answer\"><b>Deploy", 1)
    );
    out.push_str(&md_html(&super::field::markdown(s)));
    out.push_str(&md_html(&super::repro::worth_a_look_markdown(s)));
    for w in warnings(s) {
        let _ = write!(out, "<p class=\"warn\">Warning: {}</p>", xml(&w));
    }
    charts(&mut out, s, timelines);
    if !ranked.is_empty() {
        collapsed(
            &mut out,
            "every-configuration-ranked",
            "Every configuration, ranked",
            &md_html(ranked),
        );
    }
    let sections = [
        (conclude::per_scenario_markdown(s), "Per scenario"),
        (super::headline_markdown(s), "Headline"),
        (
            conclude::failing_markdown(s),
            "Runs whose expectations broke",
        ),
    ];
    for (md, title) in &sections {
        collapsed_md(&mut out, md, title);
    }
    // The headline's cells hold cause names too long for a narrow column.
    if let Some(at) = out.rfind("<details id=\"headline\">") {
        let tail = out.split_off(at);
        out.push_str(&tail.replacen("<table>", "<table class=\"wide\">", 1));
    }
    let m = matrix::html(s);
    if !m.is_empty() {
        collapsed(
            &mut out,
            "mechanism-matrix",
            "Mechanism matrix",
            &strip_h2(&m),
        );
    }
    if !deployments.is_empty() {
        collapsed(
            &mut out,
            "deployments",
            "Deployments",
            &strip_h2(&deployments),
        );
    }
    let metrics = md_html(&details(s)).replace("<table>", "<table class=\"metrics\">");
    collapsed(
        &mut out,
        "every-metric-per-scenario",
        "Every metric, per scenario",
        &strip_h2(&metrics),
    );
    for (md, title) in [
        (conclude::glossary(), "Glossary"),
        (conclude::scenarios_markdown(s), "Scenarios"),
        (conclude::provenance_markdown(s), "Provenance"),
    ] {
        collapsed_md(&mut out, &md, title);
    }
    out.push_str("</body></html>\n");
    out
}

/// The charts and the timelines.
fn charts(out: &mut String, s: &Summary, timelines: &[Timeline]) {
    let profiles = matrix::profiles(s);
    out.push_str("<h2 id=\"charts\">Charts</h2>");
    const CDF_LEAD: &str = "<p>One panel per scenario, one curve per arm: the share of migrations (operations interrupted by a fault that still got their result) completed within a latency, from the interrupting fault to the handled result, on one time axis for every panel. The legend gives each arm's p90 and sample count.</p>";
    // With several client profiles, one section per profile, the first open.
    for (i, p) in profiles.iter().enumerate() {
        let several = profiles.len() > 1;
        if several {
            let _ = write!(
                out,
                "<details{}><summary>clients {}</summary>",
                if i == 0 { " open" } else { "" },
                xml(p)
            );
        }
        out.push_str("<h3>Failed operations per scenario</h3>");
        out.push_str(&bars_svg(s, p));
        let _ = write!(out, "<h3>Migration latency, per scenario</h3>{CDF_LEAD}");
        out.push_str("<div class=\"panels\">");
        for panel in cdf_panels(s, p) {
            out.push_str(&panel);
        }
        out.push_str("</div>");
        if several {
            out.push_str("</details>");
        }
    }
    out.push_str("<h2 id=\"timelines\">Timelines</h2>");
    if timelines.is_empty() {
        out.push_str("<p>No run had a failed or degraded operation: no timeline drawn.</p>");
    } else {
        out.push_str("<p>Per affected scenario, the run with the most failed operations across arms and seeds (ties: arm order, then lowest seed) and, above it on the same time axis, the recommended configuration's run on the same seed: the same workload and faults, what the configuration to deploy does with them. Each is run again for its history. Hover a bar for the operation's tag, times and cause. The first scenario is open; open the others by their titles.</p>");
    }
    // The first group open, the others one line each until opened.
    let groups = timelines.chunk_by(|a, b| !a.group.is_empty() && a.group == b.group);
    for (i, g) in groups.enumerate() {
        let first = &g[0];
        let title = if first.group.is_empty() {
            &first.title
        } else {
            &first.group
        };
        let _ = write!(
            out,
            "<details{}><summary>{}</summary>",
            if i == 0 { " open" } else { "" },
            xml(title)
        );
        for t in g {
            let _ = write!(
                out,
                "<p>{}reproduce: <code>{}</code></p>",
                if t.role.is_empty() {
                    String::new()
                } else {
                    format!("{} ({}): ", xml(&t.role), xml(&t.title))
                },
                xml(&t.repro)
            );
        }
        out.push_str(&timeline_group_svg(g));
        out.push_str("</details>");
    }
}

/// `body` behind a closed `<details>` whose summary is `title`, with `id`
/// for the page's links.
fn collapsed(out: &mut String, id: &str, title: &str, body: &str) {
    let _ = write!(
        out,
        "<details id=\"{id}\"><summary>{}</summary>{body}</details>",
        xml(title)
    );
}

/// A Markdown section (its `## ` heading the summary) behind a closed
/// `<details>`; nothing when it is empty.
fn collapsed_md(out: &mut String, md: &str, title: &str) {
    if md.trim().is_empty() {
        return;
    }
    let body = md
        .trim_start()
        .strip_prefix("## ")
        .and_then(|rest| rest.split_once('\n'))
        .map_or(md, |(_, rest)| rest);
    let id = heading_id(title);
    collapsed(out, &id, title, &md_html(body));
}

/// An HTML section without its first `<h2>`: its `<details>` names it.
fn strip_h2(html: &str) -> String {
    match (html.find("<h2"), html.find("</h2>")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &html[..a], &html[b + 5..]),
        _ => html.to_string(),
    }
}

/// A heading's id: its words, lower case, joined by `-`.
fn heading_id(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// Inline Markdown as HTML: escaped, with `code`, **bold** and `<br>`.
fn inline(text: &str) -> String {
    let esc = xml(text).replace("&lt;br&gt;", "<br>");
    let mut out = String::new();
    let (mut code, mut bold) = (false, false);
    let mut chars = esc.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                out.push_str(if code { "</code>" } else { "<code>" });
                code = !code;
            }
            '*' if !code && chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str(if bold { "</b>" } else { "<b>" });
                bold = !bold;
            }
            '\\' if chars.peek() == Some(&'|') => {}
            c => out.push(c),
        }
    }
    if code {
        out.push_str("</code>");
    }
    if bold {
        out.push_str("</b>");
    }
    out
}

/// A table row's cells (`\|` is a literal bar).
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = vec![String::new()];
    let mut prev = ' ';
    for c in inner.chars() {
        if c == '|' && prev != '\\' {
            out.push(String::new());
        } else {
            out.last_mut().expect("non-empty").push(c);
        }
        prev = c;
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The Markdown this module writes (headings, paragraphs, lists, tables)
/// as HTML. Headings get ids from their text.
pub(super) fn md_html(md: &str) -> String {
    let mut out = String::new();
    let (mut table, mut list) = (false, false);
    let close = |out: &mut String, table: &mut bool, list: &mut bool| {
        if *table {
            out.push_str("</table>");
            *table = false;
        }
        if *list {
            out.push_str("</ul>");
            *list = false;
        }
    };
    for line in md.lines() {
        // A table's separator row, however it is spaced (`|---|`, `| --- |`).
        if line.starts_with('|') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')) {
            continue;
        }
        if line.starts_with('|') {
            if list {
                out.push_str("</ul>");
                list = false;
            }
            let tag = if table { "td" } else { "th" };
            if !table {
                out.push_str("<table>");
                table = true;
            }
            out.push_str("<tr>");
            for c in cells(line) {
                let _ = write!(out, "<{tag}>{}</{tag}>", inline(&c));
            }
            out.push_str("</tr>");
            continue;
        }
        if let Some(item) = line.strip_prefix("- ") {
            if table {
                out.push_str("</table>");
                table = false;
            }
            if !list {
                out.push_str("<ul>");
                list = true;
            }
            let _ = write!(out, "<li>{}</li>", inline(item));
            continue;
        }
        close(&mut out, &mut table, &mut list);
        if line.is_empty() {
            continue;
        }
        let heading = [("### ", "h3"), ("## ", "h2"), ("# ", "h1")]
            .iter()
            .find_map(|(p, h)| line.strip_prefix(p).map(|t| (t, *h)));
        match heading {
            Some((text, h)) => {
                let id = heading_id(text);
                let _ = write!(out, "<{h} id=\"{id}\">{}</{h}>", inline(text));
            }
            None => {
                let _ = write!(out, "<p>{}</p>", inline(line));
            }
        }
    }
    close(&mut out, &mut table, &mut list);
    out
}

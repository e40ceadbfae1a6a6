//! `report.html`: one self-contained page (no scripts, no external files).

use super::conclude;
use super::plots::{bars_svg, cdf_panels, timeline_group_svg, Timeline};
use super::recommend::{self, Beside};
use super::{details, matrix, warnings, xml};
use crate::sweep::Summary;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;max-width:1800px;margin:2em auto;padding:0 1em;line-height:1.4}table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}table.metrics td{text-align:right;white-space:nowrap}table.metrics td:first-child{text-align:left}table.matrix{font-size:13px}table.matrix td{min-width:10em}td.ok,td.pass{background:#e5f5e0}td.degraded{background:#fff7bc}td.bad,td.fails{background:#fde0dd}td.na{background:#eee;color:#555}p.warn{background:#fff7bc;padding:4px}code{background:#f4f4f4;padding:0 3px;font-size:90%}div.panels{display:flex;flex-wrap:wrap;gap:8px}nav a{margin-right:1em}section.deploy{border-left:6px solid #2b8cbe;background:#f3f8fb;padding:2px 1em;margin:1em 0}p.answer{font-size:1.25em}svg{max-width:100%;height:auto}";

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

/// `report.html`: the recommendation first (what to deploy, what remains,
/// every configuration ranked), one line per scenario, the headline,
/// glossary, scenarios and provenance, the charts (failed operations per
/// scenario, per-scenario migration-latency CDFs, one timeline per
/// affected scenario), every run whose expectations broke, the mechanism
/// matrix and every metric.
pub fn html_beside(s: &Summary, timelines: &[Timeline], beside: &Beside) -> String {
    let mut out = format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-chaos comparison</title><style>{STYLE}</style></head><body><h1>mcp-chaos comparison</h1>");
    let nav_deployments = if super::deployments::markdown(s).is_empty() {
        ""
    } else {
        "<a href=\"#deployments\">Deployments</a>"
    };
    let _ = write!(out, "<nav><a href=\"#what-to-deploy\">What to deploy</a><a href=\"#per-scenario\">Per scenario</a><a href=\"#headline\">Headline</a><a href=\"#glossary\">Glossary</a><a href=\"#scenarios\">Scenarios</a><a href=\"#provenance\">Provenance</a><a href=\"#charts\">Charts</a><a href=\"#timelines\">Timelines</a><a href=\"#failing-operations-worth-a-look\">Worth a look</a><a href=\"#runs-whose-expectations-broke\">Broken expectations</a><a href=\"#mechanism-matrix\">Matrix</a>{nav_deployments}<a href=\"#every-metric-per-scenario\">Every metric</a></nav>");
    let deploy = md_html(&recommend::markdown(s, beside));
    // The recommendation's first paragraph is the answer: set it apart.
    let _ = write!(
        out,
        "<section class=\"deploy\">{}</section>",
        deploy.replacen("<p>", "<p class=\"answer\">", 1)
    );
    out.push_str(&md_html(&conclude::per_scenario_markdown(s)));
    for w in warnings(s) {
        let _ = write!(out, "<p class=\"warn\">Warning: {}</p>", xml(&w));
    }
    out.push_str(&md_html(&super::headline_markdown(s)));
    out.push_str(&md_html(&conclude::glossary()));
    out.push_str(&md_html(&conclude::scenarios_markdown(s)));
    out.push_str(&md_html(&conclude::provenance_markdown(s)));
    let profiles = matrix::profiles(s);
    out.push_str("<h2 id=\"charts\">Charts</h2><h3>Failed operations per scenario</h3>");
    for p in &profiles {
        out.push_str(&bars_svg(s, p));
    }
    out.push_str("<h3>Migration latency, per scenario</h3><p>One panel per scenario, one curve per arm: the share of migrations (operations interrupted by a fault that still got their result) completed within a latency, from the interrupting fault to the handled result. The legend gives each arm's p90 and sample count.</p>");
    for p in &profiles {
        if profiles.len() > 1 {
            let _ = write!(out, "<h4>clients {}</h4>", xml(p));
        }
        out.push_str("<div class=\"panels\">");
        for panel in cdf_panels(s, p) {
            out.push_str(&panel);
        }
        out.push_str("</div>");
    }
    out.push_str("<h2 id=\"timelines\">Timelines</h2>");
    if timelines.is_empty() {
        out.push_str("<p>No run had a failed or degraded operation: no timeline drawn.</p>");
    } else {
        out.push_str("<p>Per affected scenario, the run with the most failed operations across arms and seeds (ties: arm order, then lowest seed) and, above it on the same time axis, the recommended configuration's run on the same seed: the same workload and faults, what the configuration to deploy does with them. Each is run again for its history. Hover a bar for the operation's tag, times and cause.</p>");
    }
    for g in timelines.chunk_by(|a, b| !a.group.is_empty() && a.group == b.group) {
        let first = &g[0];
        let _ = write!(
            out,
            "<h3>{}</h3>",
            xml(if first.group.is_empty() {
                &first.title
            } else {
                &first.group
            })
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
    }
    out.push_str(&md_html(&super::repro::worth_a_look_markdown(s)));
    out.push_str(&md_html(&conclude::failing_markdown(s)));
    out.push_str(&matrix::html(s).replacen("<h2>", "<h2 id=\"mechanism-matrix\">", 1));
    let deployments = super::deployments::html(s);
    out.push_str(&deployments);
    out.push_str(&md_html(&details(s)).replace("<table>", "<table class=\"metrics\">"));
    out.push_str("</body></html>\n");
    out
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
                let id: String = text
                    .to_lowercase()
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect::<String>()
                    .split('-')
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("-");
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

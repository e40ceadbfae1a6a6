//! `report.html`.

use super::plots::{bars_svg, cdf_svg, timeline_svg, Timeline};
use super::{details, matrix, warnings, xml};
use crate::sweep::Summary;
use std::fmt::Write;

/// `report.html`: one self-contained page (no scripts, no external files)
/// with the Markdown report's tables and the three plots.
pub fn html(s: &Summary, timeline: Option<&Timeline>) -> String {
    let mut out = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-chaos comparison</title><style>body{font-family:sans-serif;max-width:1800px;margin:2em auto}table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}th:first-child,td:first-child{text-align:left}table.matrix th{text-align:left}table.matrix{font-size:13px}table.matrix td{text-align:left;vertical-align:top;white-space:normal;min-width:10em}td.ok{background:#e5f5e0}td.degraded{background:#fff7bc}td.bad{background:#fde0dd}td.na{background:#eee;color:#555}p.warn{background:#fff7bc;padding:4px}</style></head><body><h1>mcp-chaos comparison</h1>");
    for w in warnings(s) {
        let _ = write!(out, "<p class=\"warn\">Warning: {}</p>", xml(&w));
    }
    out.push_str(&matrix::html(s));
    let profiles = matrix::profiles(s);
    out.push_str("<h2>Failed operations per scenario</h2>");
    for p in &profiles {
        out.push_str(&bars_svg(s, p));
    }
    out.push_str("<h2>Migration latency</h2>");
    for p in &profiles {
        out.push_str(&cdf_svg(s, p));
    }
    if let Some(t) = timeline {
        let _ = write!(out, "<h2>Timeline of one run</h2>{}", timeline_svg(t));
    }
    // The Markdown tables, as HTML tables.
    let mut open = false;
    for line in details(s).lines() {
        if let Some(h) = line.strip_prefix("### ") {
            let _ = write!(out, "<h3>{}</h3>", xml(h));
        } else if let Some(h) = line.strip_prefix("## ") {
            let _ = write!(out, "<h2>{}</h2>", xml(h));
        } else if line.starts_with("|---") {
            continue;
        } else if let Some(row) = line.strip_prefix('|') {
            let cells: Vec<&str> = row
                .trim_end_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let tag = if cells.first() == Some(&"metric") {
                "th"
            } else {
                "td"
            };
            if tag == "th" {
                out.push_str("<table>");
                open = true;
            }
            out.push_str("<tr>");
            for c in cells {
                let _ = write!(out, "<{tag}>{}</{tag}>", xml(c));
            }
            out.push_str("</tr>");
        } else if line.is_empty() && open {
            out.push_str("</table>");
            open = false;
        } else if !line.starts_with('#') {
            let _ = write!(out, "<p>{}</p>", xml(line));
        }
    }
    out.push_str("</body></html>\n");
    out
}

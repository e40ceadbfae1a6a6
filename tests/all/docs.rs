//! The documentation holds together: every relative link in the pages a
//! reader follows resolves to a file of the checkout, results/README.md
//! names exactly the entries of results/, and the README and
//! ARCHITECTURE.md stay short enough to read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The pages whose links are checked: the README, ARCHITECTURE.md,
/// CONTRIBUTING.md, results/README.md and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    pages.push(root.join("results/README.md"));
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A line with its inline code spans taken out (a link written inside
/// one is an example, not a link; a code span inside a link's text goes
/// with it, which leaves the link's target whole).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// The relative targets of the Markdown links `[text](target)` in `text`,
/// outside fenced code blocks: not `http(s)://` or `mailto:`, nor a pure
/// `#anchor`. A target keeps its `#anchor`.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line = without_code_spans(line);
        for (i, _) in line.match_indices("](") {
            let rest = &line[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            // `(path "title")`: the target ends at the first space.
            let target = rest[..end].split(' ').next().unwrap_or_default();
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|s| target.starts_with(s));
            if !target.is_empty() && !external && !target.starts_with('#') {
                out.push(target.to_string());
            }
        }
    }
    out
}

/// The links of `page` (whose text is `text`) that resolve to nothing: a
/// target is taken without its `#anchor`, relative to the page's folder.
fn broken_links(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().unwrap();
    relative_links(text)
        .into_iter()
        .filter(|t| {
            let path = t.split('#').next().unwrap_or_default();
            !dir.join(path).exists()
        })
        .collect()
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = root();
    let (mut checked, mut broken) = (0, Vec::new());
    for page in pages() {
        let text = read(&page);
        checked += relative_links(&text).len();
        let shown = page.strip_prefix(&root).unwrap().display().to_string();
        broken.extend(
            broken_links(&page, &text)
                .into_iter()
                .map(|t| format!("{shown}: ({t})")),
        );
    }
    assert!(checked > 100, "{checked} links found: the extraction broke");
    assert!(
        broken.is_empty(),
        "{} links lead nowhere:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_broken_link_and_only_links() {
    let page = root().join("docs/guide.md");
    let text = "[rules](rules.md#rule-m-migration) and [gone](nowhere.md#x), \
                [web](https://example.com/a.md), [here](#top), `[code](code.md)`\n\
                [`results/`](../results/README.md)\n\
                ```md\n[fenced](fenced.md)\n```\n";
    assert_eq!(
        relative_links(text),
        [
            "rules.md#rule-m-migration",
            "nowhere.md#x",
            "../results/README.md"
        ]
    );
    assert_eq!(broken_links(&page, text), ["nowhere.md#x"]);
}

/// The names a top-level list item of results/README.md opens with: the
/// entries it is about, each a code span or a link (`` [`name`](target) ``,
/// `[name](target)`, `` `name` ``), joined by `,` or `and`; a trailing
/// `/` (a directory) is dropped.
fn item_names(item: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = item;
    loop {
        let (name, after) = if let Some(r) = rest.strip_prefix('[') {
            let Some(close) = r.find("](") else { break };
            let Some(end) = r[close..].find(')') else {
                break;
            };
            (r[..close].trim_matches('`'), &r[close + end + 1..])
        } else if let Some(r) = rest.strip_prefix('`') {
            let Some(end) = r.find('`') else { break };
            (&r[..end], &r[end + 1..])
        } else {
            break;
        };
        names.push(name.trim_end_matches('/').to_string());
        let mut next = after.trim_start();
        let mut joined = false;
        if let Some(r) = next.strip_prefix(',') {
            (next, joined) = (r.trim_start(), true);
        }
        if let Some(r) = next.strip_prefix("and ") {
            (next, joined) = (r.trim_start(), true);
        }
        if !joined {
            break;
        }
        rest = next;
    }
    names
}

/// The top-level list items of a page, each with its continuation lines
/// (indented, up to a blank line) joined into one.
fn list_items(text: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if let Some(item) = line.strip_prefix("- ") {
            items.push(item.to_string());
            open = true;
        } else if open && line.starts_with("  ") && !line.trim().is_empty() {
            let last = items.last_mut().unwrap();
            last.push(' ');
            last.push_str(line.trim());
        } else {
            open = false;
        }
    }
    items
}

/// The names results/README.md's top-level list items open with.
fn named_in(text: &str) -> BTreeSet<String> {
    list_items(text)
        .iter()
        .flat_map(|i| item_names(i))
        .collect()
}

#[test]
fn results_readme_names_exactly_the_entries_of_results() {
    let root = root();
    // A name .gitignore ignores wherever it is (compare-meta.json) may
    // sit in results/ after a regeneration without being committed.
    let ignored: BTreeSet<String> = read(&root.join(".gitignore"))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.contains('/'))
        .map(String::from)
        .collect();
    let entries: BTreeSet<String> = std::fs::read_dir(root.join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "README.md" && !ignored.contains(n))
        .collect();
    let named = named_in(&read(&root.join("results/README.md")));
    let unnamed: Vec<_> = entries.difference(&named).collect();
    let absent: Vec<_> = named.difference(&entries).collect();
    assert!(
        unnamed.is_empty(),
        "results/README.md does not name {unnamed:?}: add a list item that opens with it"
    );
    assert!(
        absent.is_empty(),
        "results/README.md names {absent:?}, which results/ does not hold"
    );
}

#[test]
fn a_results_item_names_the_entries_it_opens_with() {
    let text = "- [`report.md`](report.md), [`report.html`](report.html) and\n  \
                [`summary.json`](summary.json) are the main comparison:\n\
                - [`zero/`](zero/report.md) is the zero, with `keys` clients\n\
                - `perf.md` and [eras](eras/eras.md) too\n\
                not an item: `sims/`\n";
    let named: Vec<String> = named_in(text).into_iter().collect();
    assert_eq!(
        named,
        [
            "eras",
            "perf.md",
            "report.html",
            "report.md",
            "summary.json",
            "zero"
        ]
    );
}

/// Lines as `wc -l` counts them.
fn line_count(path: &Path) -> usize {
    read(path).matches('\n').count()
}

#[test]
fn the_readme_and_the_architecture_stay_short() {
    let root = root();
    for (page, most) in [("README.md", 200), ("ARCHITECTURE.md", 250)] {
        let n = line_count(&root.join(page));
        assert!(
            n <= most,
            "{page} has {n} lines, at most {most}: move the detail to docs/"
        );
    }
    for page in pages().iter().filter(|p| p.starts_with(root.join("docs"))) {
        let n = line_count(page);
        assert!(
            n <= 800,
            "{} has {n} lines, at most 800: split it",
            page.display()
        );
    }
}

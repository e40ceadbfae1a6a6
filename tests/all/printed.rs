//! Every command a committed page prints runs: each `mcp-chaos …` or
//! `cargo run --release -- …` in `results/**/*.md` and `*.html` parses
//! with the command line's own parser, and the files it reads (its
//! `--scenario`s, `--sims`, the summary `calibrate` reads) exist in the
//! checkout. A template (a placeholder such as `FILE`, `PORT` or `[…]`)
//! is not a command and is counted apart.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.md` and `.html` under `dir`, sorted.
fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            pages(&p, out);
        } else if p.extension().is_some_and(|e| e == "md" || e == "html") {
            out.push(p);
        }
    }
}

fn unescape(html: &str) -> String {
    html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// Words of a shell line (single and double quotes group), cut into
/// commands at unquoted `;`.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let (mut cmds, mut words, mut word) = (Vec::new(), Vec::new(), String::new());
    let (mut quote, mut in_word) = (None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, ' ' | '\t') => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, ';') => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                cmds.push(std::mem::take(&mut words));
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    cmds.push(words);
    cmds.into_iter().filter(|w| !w.is_empty()).collect()
}

/// The commands a page's text prints: from each `mcp-chaos ` or `cargo
/// run --release -- ` to the end of its code span or line, as argv
/// (`mcp-chaos` first).
fn printed(text: &str, subcommands: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // A shell line continued with a backslash is one line.
    let joined = text.replace("\\\n", " ");
    for line in joined.lines() {
        for (i, _) in line.match_indices("mcp-chaos ") {
            let rest = &line[i..];
            let end = rest.find(['`', '<']).unwrap_or(rest.len());
            for words in shell_commands(&rest[..end]) {
                let argv: Vec<String> = match words.first().map(String::as_str) {
                    Some("mcp-chaos") => words,
                    _ => continue,
                };
                if argv.get(1).is_some_and(|s| subcommands.contains(s)) {
                    out.push(argv);
                }
            }
        }
        for (i, _) in line.match_indices("cargo run --release -- ") {
            let rest = &line[i + "cargo run --release -- ".len()..];
            let end = rest.find(['`', '<']).unwrap_or(rest.len());
            for (n, words) in shell_commands(&rest[..end]).into_iter().enumerate() {
                let argv: Vec<String> = if n == 0 {
                    std::iter::once("mcp-chaos".to_string())
                        .chain(words)
                        .collect()
                } else if words.first().is_some_and(|w| w == "mcp-chaos") {
                    words
                } else {
                    continue;
                };
                if argv.get(1).is_some_and(|s| subcommands.contains(s)) {
                    out.push(argv);
                }
            }
        }
    }
    // `A; mcp-chaos B` is found from A and again from B.
    out.dedup();
    out
}

/// A template, not a command: a placeholder in capitals (`FILE`,
/// `sims/explore/NAME.toml`, `PORT`), a bracketed option, or a bare
/// `mcp-chaos SUBCOMMAND` that names a command in prose.
fn template(argv: &[String]) -> bool {
    let placeholder = |w: &str| {
        w.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|seg| seg.len() >= 3 && seg.chars().all(|c| c.is_ascii_uppercase()))
    };
    argv.len() <= 2
        || argv
            .iter()
            .any(|w| w.contains('[') || w.contains("...") || w.contains('…') || placeholder(w))
}

/// The files `argv` reads that do not exist.
fn missing(argv: &[String]) -> Vec<String> {
    let mut gone = Vec::new();
    let sims = argv
        .windows(2)
        .find(|w| w[0] == "--sims")
        .map_or_else(|| root().join("sims"), |w| root().join(&w[1]));
    for w in argv.windows(2) {
        match w[0].as_str() {
            "--scenario" => {
                let found = mcp_chaos::run::locate::scenario(&w[1], &sims)
                    .is_ok_and(|p| root().join(p).exists());
                if !found {
                    gone.push(w[1].clone());
                }
            }
            "--sims" if !root().join(&w[1]).is_dir() => gone.push(w[1].clone()),
            _ => {}
        }
    }
    if argv[1] == "calibrate" {
        if let Some(input) = argv[2..].first().filter(|a| !a.starts_with("--")) {
            if !root().join(input).exists() {
                gone.push(input.clone());
            }
        }
    }
    gone
}

/// The committed pages, the command line's parser and its subcommands'
/// names.
fn committed_pages() -> (Vec<PathBuf>, clap::Command, Vec<String>) {
    let mut files = Vec::new();
    pages(&root().join("results"), &mut files);
    let cli = mcp_chaos::cli::command();
    let subcommands = cli
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    (files, cli, subcommands)
}

#[test]
fn every_command_a_committed_page_prints_parses_and_finds_its_files() {
    let (files, cli, subcommands) = committed_pages();
    let (mut checked, mut templates, mut bad) = (0, 0, Vec::new());
    // Relative paths in the pages are the checkout's, and tests run from
    // its root.
    for page in &files {
        let raw = std::fs::read_to_string(page).unwrap();
        let text = if page.extension().is_some_and(|e| e == "html") {
            unescape(&raw)
        } else {
            raw
        };
        for argv in printed(&text, &subcommands) {
            if template(&argv) {
                templates += 1;
                continue;
            }
            checked += 1;
            let shown = argv.join(" ");
            if let Err(e) = cli.clone().try_get_matches_from(&argv) {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                bad.push(format!("{}: `{shown}`: {first}", page.display()));
                continue;
            }
            let gone = missing(&argv);
            if !gone.is_empty() {
                bad.push(format!(
                    "{}: `{shown}`: no such file: {}",
                    page.display(),
                    gone.join(", ")
                ));
            }
        }
    }
    assert!(
        checked > 1000,
        "the pages print thousands of commands; found {checked} (and {templates} templates)"
    );
    bad.dedup();
    assert!(
        bad.is_empty(),
        "{} of {checked} printed commands do not run:\n{}",
        bad.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_extraction_finds_commands_and_tells_templates_apart() {
    let subs = vec!["run".to_string(), "serve".into(), "probe".into()];
    let text = "`mcp-chaos run --scenario sims/half-open.toml --seed 0 --server guarded` and \
                `cargo run --release -- run --scenario half-open --server keys`; \
                mcp-chaos serve --server rmcp ; mcp-chaos probe --url http://127.0.0.1:PORT/mcp \
                and mcp-chaos is a tool";
    let found = printed(text, &subs);
    assert_eq!(found.len(), 4, "{found:?}");
    assert_eq!(found[1][..3], ["mcp-chaos", "serve", "--server"]);
    assert_eq!(
        found[3][..4],
        ["mcp-chaos", "run", "--scenario", "half-open"]
    );
    assert!(!template(&found[0]) && !template(&found[3]));
    assert!(template(&found[2]), "PORT is a placeholder");
    assert_eq!(
        shell_commands("a 'b;c' d; e"),
        [vec!["a", "b;c", "d"], vec!["e"]]
    );
    assert_eq!(missing(&found[0]), Vec::<String>::new());
    let nowhere: Vec<String> = ["mcp-chaos", "run", "--scenario", "sims/nope.toml"]
        .map(String::from)
        .to_vec();
    assert_eq!(missing(&nowhere), ["sims/nope.toml"]);
}

/// A sample of the printed `run` and `repro` commands, run: none is a
/// usage or I/O error (exit 3), and none writes into the checkout.
#[test]
#[ignore = "runs a sample of the printed commands and asks git for the status; CI runs it"]
fn a_sample_of_the_printed_commands_runs_and_writes_nothing_into_the_checkout() {
    let (files, _, subcommands) = committed_pages();
    let mut runs: Vec<Vec<String>> = Vec::new();
    for page in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(page).unwrap();
        for argv in printed(&text, &subcommands) {
            if !template(&argv)
                && matches!(argv[1].as_str(), "run" | "repro")
                && !runs.contains(&argv)
            {
                runs.push(argv);
            }
        }
    }
    assert!(runs.len() > 100, "{} run and repro commands", runs.len());
    let status = || {
        let o = std::process::Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=all"])
            .current_dir(root())
            .output()
            .expect("git runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let before = status();
    let step = runs.len() / 8;
    for argv in runs.iter().step_by(step.max(1)).take(8) {
        let o = super::cli::run(&argv[1..].iter().map(String::as_str).collect::<Vec<_>>());
        assert_ne!(
            super::cli::code(&o),
            3,
            "`{}`: {}",
            argv.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(
        status(),
        before,
        "the printed commands wrote into the checkout"
    );
}

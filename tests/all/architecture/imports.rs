//! Reads `src/` as a graph of files: every `crate::`, `super::` and
//! `self::` path outside comments, string literals and `#[cfg(test)]`
//! items is an edge from its file to the file that defines what it names,
//! `pub use` re-exports followed to their source.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One file of `src/`: its path, its module path and its text with
/// comments, literals and test-only items blanked (lines kept, for line
/// numbers).
pub(super) struct File {
    pub rel: String,
    pub module: Vec<String>,
    pub code: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Rust files under `dir`, in path order, leaving out installed packages
/// (`node_modules`) and build output (`target`).
pub(super) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !p.ends_with("node_modules") && !p.ends_with("target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path a file defines: `a/mod.rs` and `a.rs` are `a`.
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// `text` with comments and the insides of string and char literals
/// replaced by spaces, newlines kept.
fn blank_comments_and_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if !ident_byte(b, i.wrapping_sub(1))
                && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                let end = text[start..]
                    .find(&close)
                    .map_or(b.len(), |n| start + n + close.len());
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i, (j + 1).min(b.len()));
                i = j + 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    text[i + 2..].find('\'').map(|n| i + 2 + n + 1)
                } else {
                    let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 2 + ch)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}

fn ident_byte(b: &[u8], i: usize) -> bool {
    b.get(i)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The end of the item that starts at `from` (after its attributes): its
/// `;` or its closing brace.
fn item_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    // Further attributes.
    loop {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if b.get(j) == Some(&b'#') {
            let mut depth = 0;
            while j < b.len() {
                match b[j] {
                    b'[' => depth += 1,
                    b']' => {
                        depth -= 1;
                        if depth == 0 {
                            j += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        } else {
            break;
        }
    }
    let mut depth = 0usize;
    while j < b.len() {
        match b[j] {
            b';' if depth == 0 => return j + 1,
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && b[j] == b'}' {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// `code` without its `#[cfg(test)]` items; the names of the test-only
/// modules it declares in files of their own (`mod tests;`).
fn blank_test_items(code: &str) -> (String, Vec<String>) {
    let mut out = code.as_bytes().to_vec();
    let mut test_mods = Vec::new();
    let mut at = 0;
    while let Some(n) = code[at..].find("#[cfg(test)]") {
        let start = at + n;
        let end = item_end(code.as_bytes(), start + "#[cfg(test)]".len());
        let item = &code[start + "#[cfg(test)]".len()..end];
        let words: Vec<&str> = item.split_whitespace().collect();
        if let Some(i) = words.iter().position(|w| *w == "mod") {
            if let Some(name) = words.get(i + 1).filter(|w| w.ends_with(';')) {
                test_mods.push(name.trim_end_matches(';').to_string());
            }
        }
        for c in &mut out[start..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        at = end;
    }
    (String::from_utf8(out).unwrap(), test_mods)
}

pub(super) fn load() -> Vec<File> {
    let root = src();
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    let mut files = Vec::new();
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for p in &paths {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(p).unwrap();
        let (code, tests) = blank_test_items(&blank_comments_and_literals(&text));
        let module = module_of(&rel);
        for t in tests {
            let mut m = module.clone();
            m.push(t);
            test_only.insert(m);
        }
        files.push(File { rel, module, code });
    }
    files.retain(|f| !test_only.iter().any(|t| f.module.starts_with(t)));
    files
}

/// One path a file names: where, and its segments made absolute.
struct Use {
    line: usize,
    path: Vec<String>,
}

/// The identifier at `i` and where it ends.
fn ident_at(b: &[u8], i: usize) -> Option<(String, usize)> {
    let mut j = i;
    while ident_byte(b, j) {
        j += 1;
    }
    (j > i).then(|| (String::from_utf8_lossy(&b[i..j]).into_owned(), j))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads the path tree at `i` (after a `::`): `a::b`, `a::{b, c::d}`, `*`;
/// pushes each full path (prefix + its segments).
fn read_tree(b: &[u8], i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let i = skip_ws(b, i);
    if b.get(i) == Some(&b'{') {
        let mut j = i + 1;
        loop {
            j = skip_ws(b, j);
            match b.get(j) {
                Some(b'}') | None => return j + 1,
                Some(b',') => j += 1,
                _ => {
                    let next = read_tree(b, j, prefix, out);
                    if next <= j {
                        return j + 1;
                    }
                    j = next;
                }
            }
        }
    }
    if b.get(i) == Some(&b'*') {
        out.push(prefix.to_vec());
        return i + 1;
    }
    let Some((name, mut j)) = ident_at(b, i) else {
        out.push(prefix.to_vec());
        return i;
    };
    let mut path = prefix.to_vec();
    path.push(name);
    if b.get(j) == Some(&b':') && b.get(j + 1) == Some(&b':') {
        j += 2;
        return read_tree(b, j, &path, out);
    }
    // `x as y`: the alias names nothing new.
    let k = skip_ws(b, j);
    if b[k..].starts_with(b"as ") {
        j = ident_at(b, skip_ws(b, k + 3)).map_or(k + 3, |(_, e)| e);
    }
    out.push(path);
    j
}

/// The inline modules of a file (`mod name { .. }`, not test-only): their
/// byte ranges and names, for `super::` inside them.
fn inline_mods(code: &str) -> Vec<(usize, usize, String)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(n) = code[at..].find("mod ") {
        let i = at + n;
        at = i + 4;
        if ident_byte(b, i.wrapping_sub(1)) {
            continue;
        }
        let Some((name, e)) = ident_at(b, skip_ws(b, i + 4)) else {
            continue;
        };
        if b.get(skip_ws(b, e)) == Some(&b'{') {
            found.push((i, item_end(b, i), name));
        }
    }
    found
}

/// Every path the file's code names from `crate`, `super` or `self`,
/// made absolute.
fn uses(f: &File) -> Vec<Use> {
    let b = f.code.as_bytes();
    let inline = inline_mods(&f.code);
    let mut found = Vec::new();
    for (start_word, _) in f.code.match_indices("::") {
        // The word before `::`.
        let mut s = start_word;
        while s > 0 && ident_byte(b, s - 1) {
            s -= 1;
        }
        let word = &f.code[s..start_word];
        if !matches!(word, "crate" | "super" | "self") {
            continue;
        }
        // Only the first segment of a path: not `a::super::`.
        if s >= 2 && &f.code[s - 2..s] == "::" {
            continue;
        }
        let mut base: Vec<String> = f.module.clone();
        if let Some((_, _, name)) = inline.iter().find(|(a, z, _)| (*a..*z).contains(&s)) {
            base.push(name.clone());
        }
        let mut i = start_word + 2;
        let mut abs = match word {
            "crate" => Vec::new(),
            "self" => base.clone(),
            _ => {
                base.pop();
                base
            }
        };
        // `super::super::`.
        while f.code[i..].starts_with("super::") {
            abs.pop();
            i += "super::".len();
        }
        let mut trees = Vec::new();
        read_tree(b, i, &abs, &mut trees);
        let line = f.code[..s].matches('\n').count() + 1;
        for path in trees {
            found.push(Use { line, path });
        }
    }
    found
}

/// The file that defines the path: the longest prefix that is a file's
/// module, then through that file's re-exports (`pub use`) to their source.
fn resolve(
    path: &[String],
    modules: &BTreeMap<Vec<String>, usize>,
    reexports: &BTreeMap<(usize, String), Vec<String>>,
    depth: usize,
) -> Option<usize> {
    let (len, &file) = (0..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n]).map(|f| (n, f)))?;
    if depth < 8 {
        if let Some(name) = path.get(len) {
            if let Some(src) = reexports.get(&(file, name.clone())) {
                let mut through = src.clone();
                through.extend(path[len + 1..].iter().cloned());
                return resolve(&through, modules, reexports, depth + 1).or(Some(file));
            }
        }
    }
    Some(file)
}

/// `pub use` items: (file, the name it exports) -> the path it names.
fn reexports(files: &[File]) -> BTreeMap<(usize, String), Vec<String>> {
    let mut map = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        for (at, _) in f.code.match_indices("use ") {
            let before = f.code[..at].trim_end();
            if !(before.ends_with("pub") || before.ends_with(')')) {
                continue;
            }
            let line_start = f.code[..at].rfind('\n').map_or(0, |n| n + 1);
            if !f.code[line_start..at].trim_start().starts_with("pub") {
                continue;
            }
            let end = f.code[at..].find(';').map_or(f.code.len(), |n| at + n);
            let stmt = &f.code[at..end];
            for u in uses(&File {
                rel: f.rel.clone(),
                module: f.module.clone(),
                code: stmt.to_string(),
            }) {
                let alias = stmt
                    .split(&format!(
                        "{} as ",
                        u.path.last().cloned().unwrap_or_default()
                    ))
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_alphanumeric() && c != '_').next())
                    .map(str::to_string);
                if let Some(name) = alias.or_else(|| u.path.last().cloned()) {
                    map.insert((i, name), u.path);
                }
            }
        }
    }
    map
}

/// Edges between files: (from, to) -> the first line that makes it.
pub(super) fn graph(files: &[File]) -> BTreeMap<(usize, usize), usize> {
    let modules: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.module.clone(), i))
        .collect();
    let re = reexports(files);
    let mut edges = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        for u in uses(f) {
            let Some(to) = resolve(&u.path, &modules, &re, 0) else {
                continue;
            };
            // The crate root only declares modules and re-exports.
            if to != i && !files[to].module.is_empty() {
                edges.entry((i, to)).or_insert(u.line);
            }
        }
    }
    edges
}

/// Strongly connected components of more than one file (Tarjan).
pub(super) fn circles(n: usize, edges: &BTreeMap<(usize, usize), usize>) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for &(a, b) in edges.keys() {
        adj[a].push(b);
    }
    struct T<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for k in 0..t.adj[v].len() {
            let w = t.adj[v][k];
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort_unstable();
                t.out.push(c);
            }
        }
    }
    let mut t = T {
        adj: &adj,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out.sort();
    t.out
}

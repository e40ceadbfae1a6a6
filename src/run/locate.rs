//! What a `--scenario` value points at, the same in every command: a value
//! with a `/` or ending `.toml` that exists is a file; anything else is a
//! scenario's name, looked up in the command's scenario directory (`sims/`
//! unless the command takes `--sims DIR`) by file stem or by the `name` a
//! file writes. A value that is neither says which names there are and
//! that the other form is accepted.

use std::path::{Path, PathBuf};

/// Whether `value` is written as a path (`sims/x.toml`, `x.toml`).
fn looks_like_path(value: &str) -> bool {
    value.contains('/') || value.contains(std::path::MAIN_SEPARATOR) || value.ends_with(".toml")
}

/// The scenario file `value` names, in `dir` when it is a name.
pub fn scenario(value: &str, dir: &Path) -> Result<PathBuf, String> {
    let as_path = Path::new(value);
    if looks_like_path(value) && as_path.exists() {
        return Ok(as_path.to_path_buf());
    }
    let files = toml_files(dir);
    // `half-open.toml` typed from another directory still names a
    // scenario of `dir`; a value with a directory in it is a path only.
    let is_name = !value.contains('/') && !value.contains(std::path::MAIN_SEPARATOR);
    let name = value.strip_suffix(".toml").unwrap_or(value);
    if is_name {
        if let Some(p) = files
            .iter()
            .find(|p| p.file_stem().and_then(|s| s.to_str()) == Some(name))
        {
            return Ok(p.clone());
        }
    }
    let named: Vec<(PathBuf, String)> = files
        .iter()
        .filter_map(|p| crate::check::load(p).ok().map(|s| (p.clone(), s.name)))
        .collect();
    if is_name {
        if let Some((p, _)) = named.iter().find(|(_, n)| n == name) {
            return Ok(p.clone());
        }
    }
    let known: Vec<&str> = named.iter().map(|(_, n)| n.as_str()).collect();
    let stem = Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(name);
    let near = crate::scenario::schema::nearest(stem, known.iter().copied())
        .map_or(String::new(), |n| format!("did you mean {n}? "));
    let listed = if known.is_empty() {
        format!("{} holds no scenarios", dir.display())
    } else {
        format!("names in {}: {}", dir.display(), known.join(", "))
    };
    Err(if is_name {
        format!(
            "--scenario {value}: no scenario of that name; {near}{listed}; --scenario also takes \
             a file's path (e.g. {}/{}.toml)",
            dir.display(),
            known.first().copied().unwrap_or("NAME")
        )
    } else {
        format!(
            "--scenario {value}: no such file; {near}--scenario also takes a scenario's name \
             ({listed})"
        )
    })
}

/// The `*.toml` files of `dir` (not its subdirectories), sorted; none
/// when it cannot be read.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sims() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sims")
    }

    #[test]
    fn a_name_a_stem_and_a_path_find_the_same_file() {
        let dir = sims();
        let file = dir.join("half-open.toml");
        assert_eq!(scenario("half-open", &dir).unwrap(), file);
        assert_eq!(scenario("half-open.toml", &dir).unwrap(), file);
        let path = file.display().to_string();
        assert_eq!(scenario(&path, &dir).unwrap(), file);
    }

    #[test]
    fn an_unknown_value_lists_the_names_and_the_other_form() {
        let dir = sims();
        let e = scenario("half-opn", &dir).unwrap_err();
        assert!(e.contains("did you mean half-open?"), "{e}");
        assert!(e.contains("eviction, flaky-mobile"), "{e}");
        assert!(e.contains("also takes a file's path"), "{e}");
        let e = scenario("sims/nope.toml", &dir).unwrap_err();
        assert!(
            e.starts_with("--scenario sims/nope.toml: no such file"),
            "{e}"
        );
        assert!(e.contains("also takes a scenario's name"), "{e}");
        assert!(!e.contains('\n'));
    }
}

//! The scenarios a command loads: one file, a directory's files (two
//! files naming one scenario refused), the options a run applies checked
//! against them; and the `list` and `validate` commands over them.

use crate::base::console::outln;
use crate::run::{self, Options};
use crate::scenario::Scenario;
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};

/// One scenario file, loaded and checked.
pub fn load(path: &Path) -> anyhow::Result<Scenario> {
    Ok(crate::check::load(path)?)
}

/// Every scenario of a directory, loaded, as (file, scenario); two files
/// with one name are refused (a name identifies a scenario's runs in
/// summaries, reports and JUnit).
pub fn load_dir(dir: &Path) -> anyhow::Result<Vec<(String, Scenario)>> {
    let mut files = Vec::new();
    for p in scenario_files(dir)? {
        files.push((p.display().to_string(), load(&p)?));
    }
    refuse_shared_names(&files)?;
    Ok(files)
}

/// Refuses two files naming one scenario.
pub fn refuse_shared_names(files: &[(String, Scenario)]) -> anyhow::Result<()> {
    let mut seen: std::collections::BTreeMap<&str, &str> = Default::default();
    for (path, s) in files {
        if let Some(first) = seen.insert(&s.name, path) {
            bail!(
                "{first} and {path} both name their scenario {:?}: names identify runs in \
                 summaries and reports, rename one",
                s.name
            );
        }
    }
    Ok(())
}

/// `list DIR`: one line per scenario.
pub fn list(dir: &Path) -> anyhow::Result<u8> {
    let files = load_dir(dir)?;
    let rows: Vec<[String; 5]> = files
        .iter()
        .map(|(path, s)| {
            [
                s.name.clone(),
                path.clone(),
                s.client_count().to_string(),
                faults_summary(s),
                s.description.lines().next().unwrap_or("").to_string(),
            ]
        })
        .collect();
    let head = ["name", "file", "clients", "faults", "description"];
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 4 {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        l.trim_end().to_string()
    };
    outln!("{}", line(head));
    for r in &rows {
        outln!("{}", line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    Ok(0)
}

/// A scenario's faults in a few words: generators and explicit faults by kind.
fn faults_summary(s: &Scenario) -> String {
    let f = &s.faults;
    let mut parts = Vec::new();
    if f.drop_rate > 0.0 {
        parts.push(format!("drop_rate {}", f.drop_rate));
    }
    for (n, what) in [
        (f.partitions, "partitions"),
        (f.restarts, "restarts"),
        (f.latency_spikes, "latency spikes"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let mut explicit: std::collections::BTreeMap<&str, u32> = Default::default();
    for x in &f.explicit {
        *explicit.entry(crate::fault::kind_name(x)).or_insert(0) += 1;
    }
    for (k, n) in explicit {
        parts.push(format!("explicit {k} x{n}"));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// `validate FILES|DIR`: load each (schema, bounds, metric names), refuse
/// shared names.
pub fn validate(paths: &[PathBuf]) -> anyhow::Result<u8> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            for f in scenario_files(p)? {
                files.push((f.display().to_string(), load(&f)?));
            }
        } else {
            files.push((p.display().to_string(), load(p)?));
        }
    }
    refuse_shared_names(&files)?;
    for (path, s) in &files {
        let pin = s.regression.as_ref().map_or(String::new(), |r| {
            format!(
                " (regression: {} on {}: {})",
                r.kind.as_str(),
                r.server,
                r.metrics.join(", ")
            )
        });
        outln!("ok {path}: {}{pin}", s.name);
    }
    let n = files.len();
    outln!("{n} scenario{} valid", if n == 1 { "" } else { "s" });
    Ok(0)
}

/// The scenario files of a directory (not its subdirectories), by name.
pub fn scenario_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).with_context(|| {
        format!(
            "cannot read scenario directory {}: pass --sims DIR",
            dir.display()
        )
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!(
            "no scenarios (*.toml) in {}: add one or pass --sims DIR",
            dir.display()
        );
    }
    Ok(files)
}

/// The scenario at `path` as `opts` make it, or why they do not apply.
pub fn check_options(path: &str, scenario: &Scenario, opts: &Options) -> anyhow::Result<()> {
    let flags = opts.flags();
    let with = if flags.is_empty() { "" } else { " with" };
    run::effective(scenario, opts)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("scenario {path}{with}{flags}: {e}"))
}

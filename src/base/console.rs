//! Output for the commands: standard output that ends quietly on a closed
//! pipe, standard error that never panics, and files written with a
//! one-line error naming the path. It stands below every command's body,
//! so a body prints without importing the command line above it.

/// Writes to standard output; a closed pipe (`| head`) ends the program
/// quietly with 141 (as a shell reports SIGPIPE), never a panic.
macro_rules! outln {
    () => { $crate::base::console::say("\n") };
    ($($t:tt)*) => { $crate::base::console::say(&format!("{}\n", format_args!($($t)*))) };
}

/// `print!` through [`say`].
macro_rules! out {
    ($($t:tt)*) => { $crate::base::console::say(&format!($($t)*)) };
}

/// Writes to standard error, ignoring a closed one (`eprintln!` would panic).
macro_rules! errln {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}

pub(crate) use {errln, out, outln};

use anyhow::Context;
use std::path::Path;

/// Writes `text` to standard output; exits quietly (141) when the reader
/// has gone, with a one-line message (3) on any other write error.
pub fn say(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        errln!("mcp-chaos: cannot write to standard output: {e}");
        std::process::exit(3);
    }
}

/// Writes `text` to `path`, creating its directory; an error names the
/// path and what to check.
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}: check the --out path", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write {}: check the path and permissions",
            path.display()
        )
    })
}

/// The line after which a written file's hand-written notes begin
/// (`results/calibration.md`, `results/perf.md`): everything from it on is
/// kept when the file is written again.
pub const NOTES_MARKER: &str = "<!-- notes: kept when this file is regenerated -->";

/// The notes of an earlier file: everything from [`NOTES_MARKER`] on.
pub fn notes_of(text: &str) -> Option<&str> {
    text.find(NOTES_MARKER).map(|i| &text[i..])
}

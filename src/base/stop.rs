//! A stop signal for one run: whoever bounds a run's wall time (the sweep
//! under `--timeout`) hands a flag to the thread that runs it, and the
//! world's step loop ends the run once the flag is set. The flag is read,
//! never written, by the run: a run that finishes before it is set is the
//! same run, trace for trace.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with `flag` as its stop signal.
pub fn with<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    let before = FLAG.with(|s| s.borrow_mut().replace(flag));
    let out = f();
    FLAG.with(|s| *s.borrow_mut() = before);
    out
}

/// Whether this thread's run has been asked to stop (never, without a
/// flag).
pub fn requested() -> bool {
    FLAG.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_seen_only_inside_its_run_and_only_once_set() {
        let flag = Arc::new(AtomicBool::new(false));
        assert!(!requested(), "no flag: never stopped");
        with(flag.clone(), || {
            assert!(!requested());
            flag.store(true, Ordering::SeqCst);
            assert!(requested());
        });
        assert!(!requested(), "the flag goes with its run");
    }
}

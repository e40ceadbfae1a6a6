//! The pool: jobs (scenario x seed x arm x options) on a few threads, one
//! single-threaded deterministic simulation each; `--fail-fast` stops
//! scheduling, `--timeout` stops the run it times out. What a report
//! draws from a run's history comes through the same pool.

use crate::history::History;
use crate::hosts::sut::Arm;
use crate::run::{self, Options, RunReport};
use crate::scenario::Scenario;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One unit of work.
#[derive(Clone, Debug)]
pub struct Job {
    /// The scenario file, for repro commands.
    pub path: std::sync::Arc<str>,
    /// The scenario, shared by every job of its file (a sweep queues
    /// seeds x arms x profiles jobs before the first runs).
    pub scenario: std::sync::Arc<Scenario>,
    /// Root seed.
    pub seed: u64,
    /// Server.
    pub variant: Arm,
    /// Client profile and overrides.
    pub opts: Options,
}

/// Called as each job finishes: (done, total, job, its outcome).
pub type Progress<'a> = dyn Fn(usize, usize, &Job, &Result<RunReport, String>) + Sync + 'a;

/// How a batch of runs is scheduled beyond its workers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Control {
    /// Stop scheduling new runs once one run fails (runs already going
    /// finish).
    pub fail_fast: bool,
    /// Longest wall-clock time one run may take; a run past it is reported
    /// as failed with verdict [`TIMEOUT`] (its simulation told to stop, its
    /// thread joined). Runs that finish are unaffected: each is still one
    /// deterministic single-threaded simulation.
    pub timeout: Option<std::time::Duration>,
}

/// The verdict of a run that exceeded `--timeout`.
pub const TIMEOUT: &str = "timeout";

/// Runs one job, on its own thread when a timeout bounds it. A run past
/// its timeout is told to stop ([`crate::base::stop`]) and its thread joined, so
/// no simulation outlives the verdict that says it timed out.
fn run_job(job: &Job, timeout: Option<std::time::Duration>) -> Result<RunReport, String> {
    let repro = || run::repro_command(&job.path, job.seed, job.variant, &job.opts);
    let Some(limit) = timeout else {
        return run::run_arm_streaming(&job.scenario, job.seed, job.variant, &job.opts)
            .map_err(|e| format!("{e}\nreproduce with: {}", repro()));
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = job.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let r = crate::base::stop::with(flag, || {
            run::run_arm_streaming(&owned.scenario, owned.seed, owned.variant, &owned.opts)
        })
        .map_err(|e| e.to_string());
        // The receiver is gone when the run timed out: nothing to tell.
        let _ = tx.send(r);
    });
    match rx.recv_timeout(limit) {
        Ok(r) => {
            let _ = thread.join();
            r.map_err(|e| format!("{e}\nreproduce with: {}", repro()))
        }
        Err(_) => {
            stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
            Ok(timed_out(job, limit))
        }
    }
}

/// The report of a run abandoned after `limit`: no metrics, verdict
/// [`TIMEOUT`], its failed expectation says so.
fn timed_out(job: &Job, limit: std::time::Duration) -> RunReport {
    RunReport {
        failed_expectations: vec![format!(
            "the run took longer than --timeout {} s of wall-clock time",
            limit.as_secs_f64()
        )],
        verdict: TIMEOUT.to_string(),
        meta: run::Meta {
            wall_ms: limit.as_secs_f64() * 1e3,
        },
        ..RunReport::of(&job.scenario, job.seed, job.variant.as_str(), &job.opts)
    }
}

/// The machine's cores: the pool's size when `--jobs` is not given.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `jobs` on `workers` threads (each simulation single-threaded and
/// deterministic); `progress(done, total, report)` is called as each
/// finishes. Results come back in job order; `None` for a job that
/// `control.fail_fast` kept from starting.
pub fn run_all(
    jobs: &[Job],
    workers: usize,
    control: Control,
    progress: &Progress<'_>,
) -> Vec<Option<Result<RunReport, String>>> {
    let one = |_: usize, job: &Job| run_job(job, control.timeout);
    let failed = |r: &Result<RunReport, String>| r.as_ref().map_or(true, RunReport::failed);
    pool(
        jobs,
        workers,
        control.fail_fast.then_some(&failed),
        &one,
        &|n, total, job, r| progress(n, total, job, r),
    )
}

/// Runs `jobs` on `workers` threads like [`run_all`], and hands each
/// finished run (its index in `jobs`, its report and history) to `keep` on
/// the thread that ran it (a history is single-threaded); returns what
/// `keep` made, in job order. What a report draws from a run's history
/// (its timeline) comes through here: the same pool, the same runs.
pub fn run_kept<T: Send>(
    jobs: &[Job],
    workers: usize,
    keep: &(dyn Fn(usize, &RunReport, &History) -> T + Sync),
) -> Vec<Result<T, String>> {
    let one = |i: usize, job: &Job| {
        run::run_arm(&job.scenario, job.seed, job.variant, &job.opts)
            .map(|(report, history)| keep(i, &report, &history))
            .map_err(|e| e.to_string())
    };
    pool(jobs, workers, None, &one, &|_, _, _, _| {})
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect()
}

/// `one(item)` for every item of `items` on up to `workers` threads (the
/// pool under the sweeps, for work that is not a [`Job`]: `explore`'s
/// placements); the results in item order.
pub fn map_all<J: Sync, T: Send>(
    items: &[J],
    workers: usize,
    one: &(dyn Fn(&J) -> Result<T, String> + Sync),
) -> Vec<Result<T, String>> {
    pool(items, workers, None, &|_, j| one(j), &|_, _, _, _| {})
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect()
}

/// Whether a finished job's result stops the batch (`--fail-fast`).
type Failed<'a, T> = dyn Fn(&Result<T, String>) -> bool + Sync + 'a;

/// Called as each job finishes: (done, total, job, its result).
type Done<'a, J, T> = dyn Fn(usize, usize, &J, &Result<T, String>) + Sync + 'a;

/// The pool under [`run_all`], [`run_kept`] and [`map_all`]: `one(index, job)` for
/// each job on up to `workers` threads, `progress` as each finishes; once
/// a result `stop_after` calls failed, no new job starts (`None`).
fn pool<J: Sync, T: Send>(
    jobs: &[J],
    workers: usize,
    stop_after: Option<&Failed<'_, T>>,
    one: &(dyn Fn(usize, &J) -> Result<T, String> + Sync),
    progress: &Done<'_, J, T>,
) -> Vec<Option<Result<T, String>>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<T, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        // No more threads than jobs: a worker without a job only costs a stack.
        for _ in 0..workers.clamp(1, jobs.len().max(1)) {
            s.spawn(|| loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                let r = one(i, job);
                if stop_after.is_some_and(|failed| failed(&r)) {
                    stop.store(true, Ordering::SeqCst);
                }
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                progress(n, jobs.len(), job, &r);
                results.lock().expect("no worker panics while holding it")[i] = Some(r);
            });
        }
    });
    results.into_inner().expect("workers are done")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A run past its `--timeout` is stopped, not abandoned: `run_job`
    /// joins the run's thread before it reports the timeout, so it returns
    /// soon after the limit only if the simulation ended there. The run
    /// (10,000 clients, about a minute of wall time and 2 GB when it runs
    /// to the end) would hold it far longer.
    #[test]
    fn a_timed_out_run_stops_on_its_thread() {
        let traffic = crate::scale::Traffic {
            clients: 10_000,
            hosts: 4,
            calls: 20,
            chunks: 4,
            chunk_interval_ms: 20,
            think_ms: 3000,
            keep_alive: false,
        };
        let scenario = crate::scale::scenario(traffic).expect("a valid scenario");
        let job = Job {
            path: "scale-10000".into(),
            scenario: std::sync::Arc::new(scenario),
            seed: 0,
            variant: Arm::BuiltIn(crate::server::Variant::Guarded),
            opts: Options::default(),
        };
        let limit = Duration::from_millis(300);
        let started = Instant::now();
        let r = run_job(&job, Some(limit)).expect("a timed-out run is a report");
        let took = started.elapsed();
        assert_eq!(r.verdict, TIMEOUT);
        assert!(
            took < Duration::from_secs(15),
            "the run's thread went on for {took:?} after a {limit:?} timeout"
        );
    }
}

//! rmcp's own tasks (the 2026-07-28 tasks extension, rmcp 3.11's
//! `TaskManager`) under the `rmcp` arm: its task lifecycle, cooperative
//! cancel, wire types and error codes, with what keeps a run reproducible
//! in the simulator, as the session ids are kept:
//! - task ids: rmcp draws UUID v4s with no hook; the wire sees ids drawn
//!   from the incarnation's seed (`task-r<N>-…` on a replica of a
//!   deployment, so a balancer routes a task's requests by `Mcp-Name`),
//!   mapped to rmcp's both ways;
//! - the TTL: rmcp times it on the wall clock; here rmcp keeps every task
//!   (`ttl_ms: None`) and the arm ends one `task_ttl_ms` after its creation
//!   on the simulated clock: its execution stops, and the task is unknown;
//! - `createdAt` and `lastUpdatedAt`: rmcp writes the wall clock's; the
//!   wire sees the simulated time's.
//!
//! Under `serve` the ids, TTL and times are rmcp's own.

use crate::base::seed;
use crate::protocol::y2026 as wire;
use crate::server::SessionIds;
use rmcp::model::{DetailedTask, ErrorData, Task};
use rmcp::task_manager::{TaskContext, TaskFuture, TaskManager, TaskOptions};
use std::collections::BTreeMap;
use std::sync::Mutex;
use tokio::time::{Duration, Instant};

/// The simulated clock's epoch on the wire (the built-in server's).
const SIM_EPOCH_S: u64 = 1_785_196_800;

/// One incarnation's tasks: rmcp's manager and the wire's view of it.
pub(super) struct Tasks {
    manager: TaskManager,
    source: SessionIds,
    seed: u64,
    replica: Option<u32>,
    ttl: Duration,
    poll_ms: u64,
    /// The simulated time at `since`, µs.
    base_us: u64,
    since: Instant,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    issued: u64,
    /// Wire id → rmcp's id and times.
    by_wire: BTreeMap<String, Entry>,
}

struct Entry {
    inner: String,
    created: Instant,
}

/// What rmcp answers an unknown task, in the built-in server's words.
fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown task {id:?}: it expired, or was never issued"),
        None,
    )
}

impl Tasks {
    /// The tasks of an incarnation whose simulated time is `now_us`.
    pub fn new(
        source: SessionIds,
        (seed, replica): (u64, Option<u32>),
        (ttl_ms, poll_ms): (u64, u64),
        now_us: u64,
    ) -> Tasks {
        Tasks {
            manager: TaskManager::new(),
            source,
            seed,
            replica,
            ttl: Duration::from_millis(ttl_ms),
            poll_ms,
            base_us: now_us,
            since: Instant::now(),
            table: Mutex::new(Table::default()),
        }
    }

    fn simulated(&self) -> bool {
        self.source == SessionIds::Seeded
    }

    /// When a task created at `created` ends (simulator only).
    fn expiry(&self, created: Instant) -> Instant {
        created + self.ttl
    }

    /// The simulated time of `at` on the wire.
    fn at(&self, at: Instant) -> String {
        let us = self.base_us + at.saturating_duration_since(self.since).as_micros() as u64;
        wire::rfc3339(SIM_EPOCH_S, us)
    }

    /// Runs `body` as a task, told when it must stop (simulator: its
    /// expiry; under `serve` rmcp's TTL ends it); the task as a
    /// `CreateTaskResult` shows it.
    pub fn create(&self, body: impl FnOnce(TaskContext, Option<Instant>) -> TaskFuture) -> Task {
        let created = Instant::now();
        let options = TaskOptions::new().with_poll_interval_ms(self.poll_ms);
        if !self.simulated() {
            let ttl = self.ttl.as_millis() as u64;
            return self
                .manager
                .spawn(options.with_ttl_ms(ttl), |ctx| body(ctx, None));
        }
        let expiry = self.expiry(created);
        let mut task = self
            .manager
            .spawn(options.with_ttl_ms(None), |ctx| body(ctx, Some(expiry)));
        let mut t = self.table.lock().expect("not poisoned");
        t.issued += 1;
        let unique = format!(
            "{:016x}",
            seed::child(self.seed, &format!("task/{}", t.issued))
        );
        let id = match self.replica {
            Some(r) => crate::store::task_id(r, &unique),
            None => format!("task-{unique}"),
        };
        t.by_wire.insert(
            id.clone(),
            Entry {
                inner: std::mem::replace(&mut task.task_id, id),
                created,
            },
        );
        drop(t);
        self.show(&mut task, created, created);
        task
    }

    /// `tasks/get`: the task as rmcp holds it, shown on the wire.
    pub fn get(&self, id: &str) -> Result<DetailedTask, ErrorData> {
        let Some((inner, created)) = self.inner_of(id)? else {
            return self.manager.get_task(id);
        };
        let mut d = self.manager.get_task(&inner)?;
        d.task.task_id = id.to_string();
        self.show(&mut d.task, created, Instant::now());
        Ok(d)
    }

    /// `tasks/cancel`: asked of rmcp, which tells the running body.
    pub fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        match self.inner_of(id)? {
            Some((inner, _)) => self.manager.cancel_task(&inner),
            None => self.manager.cancel_task(id),
        }
    }

    /// `tasks/update`: the answers, given to rmcp.
    pub fn update(
        &self,
        id: &str,
        answers: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), ErrorData> {
        match self.inner_of(id)? {
            Some((inner, _)) => self.manager.update_task(&inner, answers),
            None => self.manager.update_task(id, answers),
        }
    }

    /// rmcp's id for the wire's `id` and when it was created (simulator),
    /// `None` under `serve` (the ids are rmcp's), or unknown: never
    /// issued, or past its TTL on the simulated clock.
    fn inner_of(&self, id: &str) -> Result<Option<(String, Instant)>, ErrorData> {
        if !self.simulated() {
            return Ok(None);
        }
        let mut t = self.table.lock().expect("not poisoned");
        let Some(e) = t.by_wire.get(id) else {
            return Err(unknown(id));
        };
        if Instant::now() >= self.expiry(e.created) {
            let inner = e.inner.clone();
            t.by_wire.remove(id);
            drop(t);
            // Its body has stopped at the expiry or is stopping; a cancel
            // tells it too. Unknown from now on.
            let _ = self.manager.cancel_task(&inner);
            return Err(unknown(id));
        }
        Ok(Some((e.inner.clone(), e.created)))
    }

    /// The simulated clock's times and the TTL on a task rmcp holds.
    fn show(&self, task: &mut Task, created: Instant, now: Instant) {
        task.ttl_ms = Some(self.ttl.as_millis() as u64);
        task.created_at = self.at(created);
        task.last_updated_at = self.at(now);
    }
}

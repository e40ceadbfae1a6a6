//! The task table of the 2026-07-28 tasks extension
//! (`io.modelcontextprotocol/tasks`): every task a server created, kept
//! beside the ledger so that it outlives a restart (a task is durably
//! created before its `CreateTaskResult` goes out). Plain data: what each
//! task is (its status, result or error, the input it waits for), when it
//! expires, and which key created it. The server's `tasks` module speaks
//! the wire and runs the executions; an incarnation's runs die with it,
//! and the next one fails the tasks they left working ([`TaskTable::interrupt`]).

use super::Scoped;
use crate::base::bounded::Budget;
use crate::protocol::Json;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// What a task costs beyond its strings: the task itself, its places in
/// the table's maps (by id, by key, by expiry, by principal) and the
/// budget's bookkeeping. Measured: 10,000 finished tasks under `serve`
/// hold about this much each besides their result.
pub const TASK_OVERHEAD: usize = 640;

/// The task table's bounds (`serve`; the simulator keeps none). Running
/// tasks (working or waiting for input) are counted, per principal first
/// and in all; finished ones are charged to a byte budget, per principal
/// first and in all, and the oldest finished task of the principal
/// holding the most goes first once the total is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskBounds {
    /// Most tasks one principal may have running (429 past it).
    pub running_per_principal: usize,
    /// Most tasks running in all (429 past it).
    pub running: usize,
    /// Most bytes one principal's finished tasks hold.
    pub finished_bytes_per_principal: usize,
    /// Most bytes every finished task holds together.
    pub finished_bytes: usize,
}

/// Why a task could not be created: the bound it met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Full(pub String);

/// A task's status, as `tasks/get` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's answers (`tasks/update`).
    InputRequired,
    /// Ended with its result (a tool error is a completed task too).
    Completed,
    /// Ended with a JSON-RPC error and no result.
    Failed,
    /// Ended by `tasks/cancel` before its result.
    Cancelled,
}

impl TaskStatus {
    /// The wire's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Completed, failed or cancelled: nothing changes it any more.
    pub fn terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// One task.
#[derive(Clone, Debug)]
pub struct Task {
    /// Its id (server-generated).
    pub id: Rc<str>,
    /// The bearer token that created it, if any: only it reads, answers
    /// or cancels the task.
    pub owner: Option<Rc<str>>,
    /// Who it is counted and charged to: its token, else the peer
    /// address (or connection) that created it; without a token, the only
    /// one that reads, answers or cancels it.
    pub principal: Option<Rc<str>>,
    /// Bytes it was last counted at (the table's own counter).
    pub charged: usize,
    /// The `Idempotency-Key` that created it, scoped to its principal.
    pub key: Option<Scoped>,
    /// The replica that holds it, in a deployment.
    pub replica: Option<u32>,
    /// Where it stands.
    pub status: TaskStatus,
    /// A completed task's `CallToolResult`.
    pub result: Option<Json>,
    /// A failed task's JSON-RPC error object.
    pub error: Option<Value>,
    /// An input-required task's pending requests (key → request).
    pub input_requests: BTreeMap<String, Value>,
    /// The answers `tasks/update` brought, by key, for its execution.
    pub answers: BTreeMap<String, Value>,
    /// Why it stands where it does, for a person.
    pub status_message: Option<String>,
    /// When it was created and last changed, µs on the server's clock.
    pub created_us: u64,
    /// When it last changed, µs.
    pub updated_us: u64,
    /// How long it is kept after its creation, ms.
    pub ttl_ms: u64,
    /// How often its client should poll, ms.
    pub poll_ms: u64,
    /// On replicas sharing the table: until when (µs) the replica running
    /// its execution holds it. The runner renews it while it lives; once
    /// it lapses, the execution is gone with its replica.
    pub runner_until_us: Option<u64>,
}

impl Task {
    /// A task just created (`working`) at `created_us`, kept `ttl_ms`,
    /// polled every `poll_ms`.
    pub fn working(id: Rc<str>, created_us: u64, ttl_ms: u64, poll_ms: u64) -> Task {
        Task {
            id,
            owner: None,
            principal: None,
            charged: 0,
            key: None,
            replica: None,
            status: TaskStatus::Working,
            result: None,
            error: None,
            input_requests: BTreeMap::new(),
            answers: BTreeMap::new(),
            status_message: None,
            created_us,
            updated_us: created_us,
            ttl_ms,
            poll_ms,
            runner_until_us: None,
        }
    }

    /// When it is forgotten, µs.
    pub fn expires_us(&self) -> u64 {
        self.created_us
            .saturating_add(self.ttl_ms.saturating_mul(1000))
    }

    /// What it holds in strings and JSON, plus [`TASK_OVERHEAD`].
    pub fn bytes(&self) -> usize {
        let json = |v: &Value| v.to_string().len();
        let map =
            |m: &BTreeMap<String, Value>| m.iter().map(|(k, v)| k.len() + json(v)).sum::<usize>();
        TASK_OVERHEAD
            + self.id.len()
            + self.owner.as_ref().map_or(0, |o| o.len())
            + self.principal.as_ref().map_or(0, |o| o.len())
            + self.key.as_ref().map_or(0, |k| k.0.len() + k.1.len())
            + self.result.as_ref().map_or(0, |r| r.text().len())
            + self.error.as_ref().map_or(0, json)
            + map(&self.input_requests)
            + map(&self.answers)
            + self.status_message.as_ref().map_or(0, String::len)
    }

    /// Whether a request with bearer `token`, acting as `principal`, may
    /// see it: the token that created it; a task created without one, a
    /// request without one from the same principal (peer address).
    pub fn visible_to(&self, token: Option<&Rc<str>>, principal: &str) -> bool {
        match &self.owner {
            Some(o) => token == Some(o),
            None => token.is_none() && self.principal.as_deref().is_none_or(|p| p == principal),
        }
    }
}

fn in_scope(t: &Task, scope: Option<u32>) -> bool {
    scope.is_none_or(|r| t.replica == Some(r))
}

/// Every task, by id, with the keys that created them and their expiry.
#[derive(Default)]
pub struct TaskTable {
    tasks: BTreeMap<Rc<str>, Task>,
    /// The task each key created.
    by_key: BTreeMap<Scoped, Rc<str>>,
    /// (expiry µs, id), soonest first.
    expiries: BTreeSet<(u64, Rc<str>)>,
    /// Its bounds, when it has any.
    bounds: Option<TaskBounds>,
    /// Principal → its running tasks' ids.
    running: BTreeMap<Rc<str>, BTreeSet<Rc<str>>>,
    /// How many tasks run, every principal together.
    running_count: usize,
    /// Finished tasks by id, charged to their principal (bounded only).
    finished: Option<Budget<Rc<str>, Rc<str>>>,
    /// Bytes every task holds ([`Task::bytes`] when last counted).
    bytes: usize,
}

impl TaskTable {
    /// Bounds the table from now on (`serve`).
    pub fn bound(&mut self, b: TaskBounds) {
        self.bounds = Some(b);
        self.finished = Some(Budget::new(
            b.finished_bytes,
            b.finished_bytes_per_principal,
        ));
    }

    /// Whether `principal` may create a task now: not when it, or every
    /// principal together, has as many running as the bounds allow.
    pub fn admit(&self, principal: &Rc<str>) -> Result<(), Full> {
        let Some(b) = self.bounds else {
            return Ok(());
        };
        let mine = self.running.get(principal).map_or(0, BTreeSet::len);
        if mine >= b.running_per_principal {
            return Err(Full(format!(
                "this principal already has {mine} tasks running (at most {} per bearer token, or per address without one): poll them to their end or cancel some, then create more",
                b.running_per_principal
            )));
        }
        if self.running_count >= b.running {
            return Err(Full(format!(
                "the server already runs {} tasks (its bound): try again shortly",
                b.running
            )));
        }
        Ok(())
    }

    /// Adds `task` (durable from now on).
    pub fn insert(&mut self, mut task: Task) {
        if let Some(k) = &task.key {
            self.by_key.insert(k.clone(), task.id.clone());
        }
        self.expiries.insert((task.expires_us(), task.id.clone()));
        task.charged = task.bytes();
        self.bytes += task.charged;
        let id = task.id.clone();
        let terminal = task.status.terminal();
        if let (false, Some(p)) = (terminal, &task.principal) {
            self.running
                .entry(p.clone())
                .or_default()
                .insert(id.clone());
            self.running_count += 1;
        }
        self.tasks.insert(id.clone(), task);
        if terminal {
            self.settle(&id);
        }
    }

    /// `id` just reached a terminal status: it no longer counts as
    /// running, and its bytes are charged to the finished budget, which
    /// may forget older finished tasks (this one only if it alone
    /// exceeds its principal's share).
    pub fn settle(&mut self, id: &str) {
        let Some(t) = self.tasks.get_mut(id) else {
            return;
        };
        if !t.status.terminal() {
            return;
        }
        t.answers.clear();
        t.input_requests.clear();
        let bytes = t.bytes();
        self.bytes = self.bytes + bytes - t.charged;
        t.charged = bytes;
        let (id, principal) = (t.id.clone(), t.principal.clone());
        let Some(p) = principal else { return };
        if let Some(ids) = self.running.get_mut(&p) {
            if ids.remove(&id) {
                self.running_count -= 1;
            }
            if ids.is_empty() {
                self.running.remove(&p);
            }
        }
        let evicted = match self.finished.as_mut() {
            Some(budget) => budget.charge(id, p, bytes),
            None => Vec::new(),
        };
        for gone in evicted {
            self.remove(&gone);
        }
    }

    /// Forgets `id` entirely.
    fn remove(&mut self, id: &str) {
        let Some(t) = self.tasks.remove(id) else {
            return;
        };
        self.expiries.remove(&(t.expires_us(), t.id.clone()));
        if let Some(k) = &t.key {
            if self.by_key.get(k) == Some(&t.id) {
                self.by_key.remove(k);
            }
        }
        if let Some(p) = &t.principal {
            if let Some(ids) = self.running.get_mut(p) {
                if ids.remove(&t.id) {
                    self.running_count -= 1;
                }
                if ids.is_empty() {
                    self.running.remove(p);
                }
            }
        }
        if let Some(b) = self.finished.as_mut() {
            b.release(&t.id);
        }
        self.bytes -= t.charged;
    }

    /// Forgets every task whose time to live ran out by `now_us`.
    pub fn expire(&mut self, now_us: u64) {
        while let Some((at, id)) = self.expiries.first().cloned() {
            if at > now_us {
                break;
            }
            self.remove(&id);
        }
    }

    /// Bytes its tasks hold, as last counted ([`Task::bytes`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many tasks run (working or waiting for input).
    pub fn running(&self) -> usize {
        self.running_count
    }

    /// The task `id` as seen at `now_us` from `scope`: one replica's
    /// tasks (a replica with a store of its own), or every task (`None`:
    /// the one server, or replicas that share a store). One that expired
    /// is gone.
    pub fn get_mut(&mut self, id: &str, scope: Option<u32>, now_us: u64) -> Option<&mut Task> {
        self.expire(now_us);
        self.tasks.get_mut(id).filter(|t| in_scope(t, scope))
    }

    /// The live task `key` created, seen from `scope`.
    pub fn by_key(&mut self, key: &Scoped, scope: Option<u32>, now_us: u64) -> Option<&Task> {
        self.expire(now_us);
        let id = self.by_key.get(key)?;
        self.tasks.get(id).filter(|t| in_scope(t, scope))
    }

    /// The key `key` no longer names a task (its task was cancelled
    /// before any effect, so a retry under it starts a new one).
    pub fn forget_key(&mut self, key: &Scoped) {
        self.by_key.remove(key);
    }

    /// A new incarnation of `replica` starts at `now_us`: the runs of the
    /// one before died with it, so its tasks still working or waiting for
    /// input fail. Returns their ids.
    pub fn interrupt(&mut self, replica: Option<u32>, now_us: u64) -> Vec<Rc<str>> {
        let mut out = Vec::new();
        for t in self.tasks.values_mut() {
            if t.replica == replica && !t.status.terminal() {
                lose(
                    t,
                    now_us,
                    "the server restarted while this task ran: its execution was lost",
                    "interrupted by a server restart",
                );
                out.push(t.id.clone());
            }
        }
        for id in &out {
            self.settle(id);
        }
        out
    }

    /// The replica running `id` holds it until `until_us` (a renewal).
    pub fn renew(&mut self, id: &str, until_us: u64) {
        if let Some(t) = self.tasks.get_mut(id) {
            t.runner_until_us = Some(until_us);
        }
    }

    /// Fails `id` when it is still running and its runner's lease lapsed
    /// by `now_us`: that replica is gone, and the execution with it.
    /// Whether it did.
    pub fn lapse(&mut self, id: &str, now_us: u64) -> bool {
        let Some(t) = self.tasks.get_mut(id) else {
            return false;
        };
        let lapsed = !t.status.terminal() && t.runner_until_us.is_some_and(|u| u <= now_us);
        if lapsed {
            lose(
                t,
                now_us,
                "the replica running this task stopped renewing its lease: its execution was lost",
                "its replica is gone",
            );
            self.settle(id);
        }
        lapsed
    }

    /// How many tasks it holds.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

/// `t`'s execution died with the server running it: the task fails.
fn lose(t: &mut Task, now_us: u64, message: &str, why: &str) {
    t.status = TaskStatus::Failed;
    t.error = Some(serde_json::json!({
        "code": crate::protocol::jsonrpc::INTERNAL_ERROR,
        "message": message,
    }));
    t.input_requests.clear();
    t.status_message = Some(why.into());
    t.updated_us = now_us;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, key: Option<&str>, created_us: u64, ttl_ms: u64) -> Task {
        Task {
            key: key.map(|k| (Rc::from("p"), k.to_string())),
            ..Task::working(id.into(), created_us, ttl_ms, 100)
        }
    }

    fn owned(id: &str, p: &str, created_us: u64) -> Task {
        Task {
            principal: Some(p.into()),
            ..Task::working(id.into(), created_us, 1_000, 100)
        }
    }

    fn finish(t: &mut TaskTable, id: &str, result: &str) {
        let task = t.get_mut(id, None, 0).unwrap();
        task.status = TaskStatus::Completed;
        task.result = Some(Json::from_value(&serde_json::json!(result)));
        t.settle(id);
    }

    #[test]
    fn running_tasks_are_counted_per_principal_and_finished_ones_budgeted_fairly() {
        let big = "r".repeat(500);
        // Every task here holds the same: one principal letter, two-letter ids.
        let done = Task {
            status: TaskStatus::Completed,
            result: Some(Json::from_value(&serde_json::json!(big))),
            ..owned("a1", "a", 0)
        }
        .bytes();
        let mut t = TaskTable::default();
        t.bound(TaskBounds {
            running_per_principal: 2,
            running: 3,
            finished_bytes_per_principal: 3 * done,
            finished_bytes: 4 * done - 1,
        });
        let (a, b): (Rc<str>, Rc<str>) = ("a".into(), "b".into());
        t.insert(owned("a1", "a", 0));
        t.insert(owned("a2", "a", 0));
        let full = t.admit(&a).unwrap_err();
        assert!(full.0.contains("2 tasks running"), "{full:?}");
        assert!(t.admit(&b).is_ok(), "another principal is not refused");
        t.insert(owned("b1", "b", 0));
        assert!(t.admit(&b).unwrap_err().0.contains("3 tasks"), "the total");
        finish(&mut t, "a1", &big);
        assert_eq!(t.running(), 2);
        assert!(t.admit(&a).is_ok(), "a finished task runs no more");
        // a's finished tasks fill its share: its own oldest goes first.
        finish(&mut t, "a2", &big);
        for id in ["a3", "a4"] {
            t.insert(owned(id, "a", 0));
            finish(&mut t, id, &big);
        }
        assert!(t.get_mut("a1", None, 0).is_none(), "a's own share: a1 went");
        assert!(t.get_mut("a2", None, 0).is_some());
        // b's finish reaches the total: the largest (a) loses its oldest.
        finish(&mut t, "b1", &big);
        assert!(t.get_mut("a2", None, 0).is_none(), "past the total");
        assert!(t.get_mut("b1", None, 0).is_some(), "b keeps its own");
        assert_eq!(t.bytes(), 3 * done, "two of a's, one of b's");
        t.expire(1_000_000);
        assert_eq!((t.len(), t.running(), t.bytes()), (0, 0, 0), "all expired");
        assert!(t.admit(&a).is_ok());
    }

    #[test]
    fn a_running_task_fails_once_its_runners_lease_lapses() {
        let mut t = TaskTable::default();
        t.insert(task("a", None, 0, 1_000_000));
        t.insert(task("b", None, 0, 1_000_000));
        assert!(!t.lapse("a", 5_000), "no lease: one server, nothing lapses");
        t.renew("a", 3_000);
        assert!(!t.lapse("a", 2_999), "the lease holds");
        assert_eq!(
            t.get_mut("a", None, 2_999).unwrap().status,
            TaskStatus::Working
        );
        assert!(t.lapse("a", 3_000), "lapsed at its end");
        let a = t.get_mut("a", None, 3_000).unwrap();
        assert_eq!(a.status, TaskStatus::Failed);
        assert!(a.error.is_some(), "the failure says why");
        assert!(!t.lapse("a", 9_000), "a terminal task stays as it is");
        t.get_mut("b", None, 0).unwrap().status = TaskStatus::Completed;
        t.renew("b", 1);
        assert!(!t.lapse("b", 9_000), "a completed task keeps its result");
    }

    #[test]
    fn a_task_is_kept_for_its_ttl_and_then_forgotten_with_its_key() {
        let mut t = TaskTable::default();
        t.insert(task("a", Some("k"), 1_000, 2));
        t.insert(task("b", None, 1_000, 10));
        let k = (Rc::from("p"), "k".to_string());
        assert!(t.get_mut("a", None, 2_999).is_some(), "within its ttl");
        assert_eq!(t.by_key(&k, None, 2_999).map(|x| &*x.id), Some("a"));
        assert!(
            t.get_mut("a", None, 3_000).is_none(),
            "expired at created + ttl"
        );
        assert!(t.by_key(&k, None, 3_000).is_none(), "its key goes with it");
        assert!(t.get_mut("b", None, 3_000).is_some(), "another task stays");
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_restart_fails_the_tasks_of_its_replica_only_and_spares_finished_ones() {
        let mut t = TaskTable::default();
        t.insert(task("a", None, 0, 1_000));
        let mut done = task("b", None, 0, 1_000);
        done.status = TaskStatus::Completed;
        t.insert(done);
        let mut other = task("c", None, 0, 1_000);
        other.replica = Some(1);
        t.insert(other);
        assert_eq!(t.interrupt(None, 5), vec![Rc::from("a")]);
        let a = t.get_mut("a", None, 5).unwrap();
        assert_eq!(a.status, TaskStatus::Failed);
        assert!(a.error.is_some());
        assert_eq!(
            t.get_mut("b", None, 5).unwrap().status,
            TaskStatus::Completed
        );
        assert!(
            t.get_mut("c", Some(0), 5).is_none(),
            "another replica's task is not visible"
        );
        assert!(
            t.get_mut("c", None, 5).is_some(),
            "a shared store sees every task"
        );
        assert_eq!(
            t.get_mut("c", Some(1), 5).unwrap().status,
            TaskStatus::Working
        );
    }
}

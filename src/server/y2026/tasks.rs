//! The tasks extension (`io.modelcontextprotocol/tasks`) on the 2026-07-28
//! wire. A `tools/call` whose client declares the extension, to a tool
//! that supports tasks, creates a task instead of answering on its stream:
//! the task is written to the table beside the ledger (durable) before its
//! `CreateTaskResult` goes out, and its execution runs detached from any
//! connection, so a broken stream cancels nothing. The client polls
//! `tasks/get` at `pollIntervalMs`, answers an input-required task with
//! `tasks/update`, and may ask `tasks/cancel`, which is acknowledged, not
//! promised: guarded lets a keyed execution whose effect is taken run to
//! its result; the others stop it at its next step. A task and its result
//! are kept `task_ttl_ms` after its creation; a restart fails the tasks
//! its incarnation was running (their executions died with it).
//!
//! What a task's execution does is its tool's: `ledger_append` here
//! ([`run_append`]), the conformance fixtures in
//! `task_fixtures.rs`; both drive it through a [`TaskCtx`].

use crate::history::Record;
use crate::ledger::tasks::{Task, TaskStatus};
use crate::ledger::{Commit, Principal, Scoped};
use crate::protocol::jsonrpc::{self, ErrorObject, Message, RequestId};
use crate::protocol::mcp::{self, LedgerAppendArgs};
use crate::protocol::y2026 as wire;
use crate::protocol::Json;
use crate::server::http::principal::Origin;
use crate::server::http::respond::{error_with, json_response};
use crate::server::session::reply::Reply;
use crate::server::{Effects, Shared};
use http::{HeaderMap, StatusCode};
use serde_json::{json, Map, Value};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// The simulator's tasks are dated from the revision's own date
/// (2026-07-28T00:00:00Z, seconds since 1970): same seed, same bytes.
const SIM_EPOCH_S: u64 = 1_785_196_800;

/// A task's execution as this incarnation runs it: the flag `tasks/cancel`
/// sets, and the wake-up it and `tasks/update` send.
#[derive(Default)]
pub(crate) struct TaskRun {
    cancel: Cell<bool>,
    wake: Notify,
}

/// Who creates a task: its owner (bearer token) and the key it came under.
#[derive(Clone)]
pub(in crate::server) struct Creator {
    pub owner: Option<Rc<str>>,
    /// Who the task is counted against: the token, else the peer address
    /// (the connection when the listener does not know it), which alone
    /// then reads, answers or cancels it.
    pub principal: Rc<str>,
    pub key: Option<Scoped>,
    /// The request that creates it.
    pub rpc_id: RequestId,
}

impl Creator {
    /// The creator of a task asked for by request `rpc_id` with bearer
    /// `owner`, from `from`.
    pub fn new(owner: Option<Rc<str>>, from: Origin, rpc_id: RequestId) -> Creator {
        let principal = match (&owner, from.peer) {
            (Some(t), _) => t.clone(),
            (None, Some(ip)) => format!("peer:{ip}").into(),
            (None, None) => format!("conn:{}", from.conn).into(),
        };
        Creator {
            owner,
            principal,
            key: None,
            rpc_id,
        }
    }
}

/// Why `who` may not create a task now (the table's bounds, `serve`
/// only): 429 with `Retry-After` and a JSON-RPC error naming the bound.
pub(in crate::server) fn refusal(shared: &Shared, who: &Creator) -> Option<Reply> {
    let full = shared.ledger.tasks().admit(&who.principal).err()?;
    Some(Reply::new(crate::server::session::holds::too_many(
        Some(who.rpc_id.clone()),
        &full.0,
        Duration::from_secs(1),
    )))
}

/// The now of the task table: µs on the server's clock (times on the
/// wire are written by [`view`]).
fn now(shared: &Shared) -> u64 {
    shared.history.now_us()
}

/// A task id: as unguessable as a session id, and header-safe; a replica
/// of a deployment names itself in it (`task-r<N>-…`), so that a balancer
/// routes the task's requests by `Mcp-Name` to the replica running it.
fn new_id(shared: &Shared) -> Rc<str> {
    match shared.ledger.replica() {
        Some(r) => crate::store::task_id(r, &shared.new_session_id()).into(),
        None => format!("task-{}", shared.new_session_id()).into(),
    }
}

/// Which tasks this server sees: its own, or every task when the replicas
/// share a store (the task table lives in it).
fn scope(shared: &Shared) -> Option<u32> {
    match shared.store {
        Some(_) => None,
        None => shared.ledger.replica(),
    }
}

/// Creates a task (written to the table before anything answers) and
/// starts `body` on it. Returns the task as created.
pub(in crate::server) fn spawn<F, Fut>(shared: &Rc<Shared>, who: Creator, body: F) -> Task
where
    F: FnOnce(TaskCtx) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let us = now(shared);
    let task = Task {
        owner: who.owner,
        principal: Some(who.principal),
        key: who.key,
        replica: shared.ledger.replica(),
        ..Task::working(
            new_id(shared),
            us,
            shared.cfg.task_ttl_ms,
            shared.cfg.task_poll_ms,
        )
    };
    shared.ledger.tasks().insert(task.clone());
    shared.history.record(Record::TaskChanged {
        task: task.id.clone(),
        rpc_id: Some(who.rpc_id),
        status: TaskStatus::Working.as_str(),
    });
    let run = Rc::new(TaskRun::default());
    shared
        .state
        .borrow_mut()
        .task_runs
        .insert(task.id.clone(), run.clone());
    holds_lease(shared, &task.id, &run);
    let ctx = TaskCtx {
        shared: shared.clone(),
        id: task.id.clone(),
        run,
        expires: tokio::time::Instant::now() + Duration::from_millis(task.ttl_ms),
    };
    let fut = body(ctx);
    tokio::task::spawn_local(fut);
    task
}

/// On replicas sharing the task table: this replica holds the task's
/// execution under a lease (the store's key lease), renewed while the
/// run lives here. A replica that dies, hangs or leaves stops renewing,
/// and whoever reads the task next fails it ([`read`]): nobody waits on
/// an execution nobody runs.
fn holds_lease(shared: &Shared, id: &Rc<str>, run: &Rc<TaskRun>) {
    let Some(on) = &shared.store else { return };
    let lease_us = on.key_lease_ms * 1000;
    let until = now(shared) + lease_us;
    shared.ledger.tasks().renew(id, until);
    let (ledger, history) = (shared.ledger.clone(), shared.history.clone());
    let (id, run) = (id.clone(), Rc::downgrade(run));
    tokio::task::spawn_local(async move {
        let every = Duration::from_micros((lease_us / 3).max(1));
        loop {
            tokio::time::sleep(every).await;
            if run.upgrade().is_none() {
                return;
            }
            ledger.tasks().renew(&id, history.now_us() + lease_us);
        }
    });
}

/// The task `id` as this server reads it now, a task whose runner's
/// lease lapsed failed first (and so recorded).
fn read<'t>(
    shared: &Shared,
    table: &'t mut crate::ledger::tasks::TaskTable,
    id: &str,
    us: u64,
) -> Option<&'t mut Task> {
    if table.lapse(id, us) {
        shared.history.record(Record::TaskChanged {
            task: id.into(),
            rpc_id: None,
            status: TaskStatus::Failed.as_str(),
        });
    }
    table.get_mut(id, scope(shared), us)
}

/// What a task's execution holds: its id, the run `tasks/cancel` and
/// `tasks/update` reach, and when its task expires (the execution stops
/// there as at a cancel: nobody can read what it would finish).
pub(in crate::server) struct TaskCtx {
    shared: Rc<Shared>,
    id: Rc<str>,
    run: Rc<TaskRun>,
    expires: tokio::time::Instant,
}

impl TaskCtx {
    /// Whether `tasks/cancel` asked it to stop, or its task expired.
    pub fn cancel_asked(&self) -> bool {
        self.run.cancel.get() || tokio::time::Instant::now() >= self.expires
    }

    /// Waits `d`; `false` when a cancel (or the task's expiry) came first
    /// (or had come).
    pub async fn sleep(&self, d: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + d;
        loop {
            let woken = self.run.wake.notified();
            if self.cancel_asked() {
                return false;
            }
            tokio::select! {
                biased;
                _ = woken => {}
                _ = tokio::time::sleep_until(deadline.min(self.expires)) => return !self.cancel_asked(),
            }
        }
    }

    /// Asks the client for input: the task waits in `input_required` with
    /// `requests` until `tasks/update` has answered every one (the answers,
    /// by key), or a cancel comes (`None`).
    pub async fn ask(&self, requests: BTreeMap<String, Value>) -> Option<BTreeMap<String, Value>> {
        self.change(TaskStatus::InputRequired, |t| {
            t.input_requests = requests;
            t.answers.clear();
        });
        loop {
            let woken = self.run.wake.notified();
            if self.cancel_asked() {
                return None;
            }
            let answered = self
                .task(|t| (t.status == TaskStatus::Working).then(|| t.answers.clone()))
                .flatten();
            if let Some(a) = answered {
                return Some(a);
            }
            tokio::select! {
                biased;
                _ = woken => {}
                _ = tokio::time::sleep_until(self.expires) => {}
            }
        }
    }

    /// Ends it with `result` (a `CallToolResult`).
    pub fn complete(&self, result: &Json) {
        let result = wire::complete(result);
        self.change(TaskStatus::Completed, |t| t.result = Some(result));
    }

    /// Ends it failed, with a JSON-RPC error and no result.
    pub fn fail(&self, code: i64, message: &str) {
        let e = json!({"code": code, "message": message});
        self.change(TaskStatus::Failed, |t| t.error = Some(e));
    }

    /// Ends it cancelled (it stopped at a cancel).
    pub fn stopped(&self) {
        self.change(TaskStatus::Cancelled, |t| {
            t.status_message = Some("cancelled at the client's request".into());
        });
    }

    /// Reads the task (`None`: expired, or gone).
    fn task<R>(&self, f: impl FnOnce(&Task) -> R) -> Option<R> {
        let us = now(&self.shared);
        let mut table = self.shared.ledger.tasks();
        table
            .get_mut(&self.id, scope(&self.shared), us)
            .map(|t| f(t))
    }

    /// Moves the task to `status` (a terminal status sticks: an execution
    /// ending after its task was failed by a restart changes nothing).
    fn change(&self, status: TaskStatus, f: impl FnOnce(&mut Task)) {
        let us = now(&self.shared);
        {
            let mut table = self.shared.ledger.tasks();
            let Some(t) = table.get_mut(&self.id, scope(&self.shared), us) else {
                return;
            };
            if t.status.terminal() {
                return;
            }
            t.status = status;
            t.updated_us = us;
            if status != TaskStatus::InputRequired {
                t.input_requests.clear();
            }
            f(t);
            if status == TaskStatus::Cancelled {
                if let Some(k) = &t.key {
                    let k = k.clone();
                    table.forget_key(&k);
                }
            }
            table.settle(&self.id);
        }
        self.shared.history.record(Record::TaskChanged {
            task: self.id.clone(),
            rpc_id: None,
            status: status.as_str(),
        });
        if status.terminal() {
            self.shared.state.borrow_mut().task_runs.remove(&self.id);
        }
    }
}

impl Drop for TaskCtx {
    /// An execution that ends without a terminal status (its server is
    /// going away) leaves the task to the next incarnation's
    /// [`crate::ledger::tasks::TaskTable::interrupt`].
    fn drop(&mut self) {
        if let Ok(mut st) = self.shared.state.try_borrow_mut() {
            st.task_runs.remove(&self.id);
        }
    }
}

/// A new incarnation: the tasks the one before was running failed.
pub(in crate::server) fn on_start(shared: &Shared) {
    let us = now(shared);
    let failed = shared.ledger.tasks().interrupt(shared.ledger.replica(), us);
    for id in failed {
        shared.history.record(Record::TaskChanged {
            task: id,
            rpc_id: None,
            status: TaskStatus::Failed.as_str(),
        });
    }
}

/// A task as the wire shows it: `CreateTaskResult` (`created`: no result,
/// error or input requests, whatever the status) or `tasks/get`'s
/// detailed task.
pub(in crate::server) fn view(shared: &Shared, t: &Task, created: bool) -> Json {
    let at = |us: u64| match shared.exposure.session_ids {
        crate::server::http::exposure::SessionIds::Seeded => wire::rfc3339(SIM_EPOCH_S, us),
        // A served task's times: the wall clock now, less how long ago.
        crate::server::http::exposure::SessionIds::Os => {
            let since = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_micros() as u64;
            let ago = shared.history.now_us().saturating_sub(us);
            let then = since.saturating_sub(ago);
            wire::rfc3339(then / 1_000_000, then % 1_000_000)
        }
    };
    let mut m = Map::new();
    m.insert(
        "resultType".into(),
        json!(if created { "task" } else { "complete" }),
    );
    m.insert("taskId".into(), json!(&*t.id));
    m.insert("status".into(), json!(t.status.as_str()));
    m.insert("createdAt".into(), json!(at(t.created_us)));
    m.insert("lastUpdatedAt".into(), json!(at(t.updated_us)));
    m.insert("ttlMs".into(), json!(t.ttl_ms));
    m.insert("pollIntervalMs".into(), json!(t.poll_ms));
    if let Some(s) = &t.status_message {
        m.insert("statusMessage".into(), json!(s));
    }
    if !created {
        match t.status {
            TaskStatus::Completed => {
                if let Some(r) = &t.result {
                    m.insert("result".into(), r.to_value());
                }
            }
            TaskStatus::Failed => {
                if let Some(e) = &t.error {
                    m.insert("error".into(), e.clone());
                }
            }
            TaskStatus::InputRequired => {
                let reqs: Map<String, Value> = t.input_requests.clone().into_iter().collect();
                m.insert("inputRequests".into(), Value::Object(reqs));
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
    }
    Json::from_value(&Value::Object(m))
}

/// A task's creation as the answer to `id`.
pub(in crate::server) fn created_reply(shared: &Shared, id: &RequestId, t: &Task) -> Reply {
    Reply::new(json_response(
        StatusCode::OK,
        &Message::Result {
            id: id.clone(),
            result: view(shared, t, true),
        },
    ))
}

/// The live task `key` created (not failed or cancelled: a retry under
/// it then starts another), as a re-sent creation's answer.
pub(in crate::server) fn by_key(shared: &Shared, key: &Scoped) -> Option<Task> {
    let us = now(shared);
    let mut table = shared.ledger.tasks();
    let t = table.by_key(key, scope(shared), us)?;
    matches!(
        t.status,
        TaskStatus::Working | TaskStatus::InputRequired | TaskStatus::Completed
    )
    .then(|| t.clone())
}

/// `tasks/get`, `tasks/update` or `tasks/cancel` (checked already for
/// their headers): refused without the extension (-32021, before the task
/// is looked up), an unknown, expired or another owner's task is -32602.
pub(in crate::server) fn request(
    shared: &Shared,
    h: &HeaderMap,
    from: Origin,
    id: &RequestId,
    method: &str,
    params: Option<&Json>,
) -> Reply {
    let refuse = |status, e: ErrorObject| Reply::new(error_with(status, Some(id.clone()), e));
    if !wire::declares_tasks(params) {
        return refuse(StatusCode::BAD_REQUEST, wire::tasks_not_declared(method));
    }
    let Some(task_id) = params
        .and_then(|p| p.get("taskId"))
        .and_then(|t| t.as_str().map(|s| s.into_owned()))
    else {
        return refuse(
            StatusCode::OK,
            ErrorObject::new(
                jsonrpc::INVALID_PARAMS,
                format!("{method} needs params.taskId"),
                None,
            ),
        );
    };
    let asker = Creator::new(crate::server::http::principal::bearer(h), from, id.clone());
    let token = asker.owner.as_ref();
    let us = now(shared);
    let mut table = shared.ledger.tasks();
    let Some(t) =
        read(shared, &mut table, &task_id, us).filter(|t| t.visible_to(token, &asker.principal))
    else {
        return refuse(
            StatusCode::OK,
            ErrorObject::new(
                jsonrpc::INVALID_PARAMS,
                format!("unknown task {task_id:?}: never created here, or expired (tasks are kept {} ms after their creation)", shared.cfg.task_ttl_ms),
                None,
            ),
        );
    };
    let ack = || {
        Reply::new(json_response(
            StatusCode::OK,
            &Message::Result {
                id: id.clone(),
                result: Json::from_value(&json!({"resultType": "complete"})),
            },
        ))
    };
    let run = shared.state.borrow().task_runs.get(&t.id).cloned();
    match method {
        wire::TASKS_UPDATE => {
            let answers = params
                .and_then(|p| p.get("inputResponses"))
                .and_then(|r| serde_json::from_str::<Value>(r.text()).ok());
            if let Some(Value::Object(answers)) = answers {
                for (k, v) in answers {
                    // Answers to keys it is not waiting for are ignored.
                    if t.input_requests.remove(&k).is_some() {
                        t.answers.insert(k, v);
                    }
                }
            }
            if t.status == TaskStatus::InputRequired && t.input_requests.is_empty() {
                t.status = TaskStatus::Working;
                t.updated_us = us;
            }
            if let Some(run) = run {
                run.wake.notify_waiters();
            }
            ack()
        }
        wire::TASKS_CANCEL => {
            if !t.status.terminal() {
                match run {
                    Some(run) => {
                        run.cancel.set(true);
                        run.wake.notify_waiters();
                    }
                    // Nothing runs it here: it stops now.
                    None => {
                        t.status = TaskStatus::Cancelled;
                        t.updated_us = us;
                        let tid = t.id.clone();
                        table.settle(&tid);
                    }
                }
            }
            ack()
        }
        _ => {
            let v = view(shared, t, false);
            Reply::new(json_response(
                StatusCode::OK,
                &Message::Result {
                    id: id.clone(),
                    result: v,
                },
            ))
        }
    }
}

/// `ledger_append` as a task: its effect at its start (`immediate`) or
/// with its commit (`transactional`), one step per chunk interval, only
/// its result chunk emitted (a task has no stream for progress), the
/// result kept in the task and under its key. A cancel stops it at its
/// next step, except on guarded when the call is keyed and its effect is
/// taken: it runs on to its result (the ack was only an ack).
pub(in crate::server) async fn run_append(
    ctx: TaskCtx,
    a: LedgerAppendArgs,
    who: Principal,
    key: Option<String>,
    execution: u32,
) {
    let shared = ctx.shared.clone();
    let transactional = shared.cfg.effects == Effects::Transactional;
    let keeps_on = shared.guarded() && key.is_some() && !transactional;
    let interval = Duration::from_millis(a.chunk_interval_ms);
    for _ in 1..=a.chunks {
        let stop = match &shared.pacing {
            crate::server::Pacing::Timer => !ctx.sleep(interval).await,
            gate => {
                crate::server::calls::tools::pace(gate, interval).await;
                ctx.cancel_asked()
            }
        };
        if stop && !keeps_on {
            if let Some(k) = &key {
                shared.state.borrow_mut().dedup.abandon(&who, k);
                crate::server::replica::stored::key_dropped(&shared, &who, k);
            }
            return ctx.stopped();
        }
    }
    let chunk = mcp::ChunkRef {
        tag: a.tag.as_str().into(),
        execution,
        index: a.chunks,
    };
    let result = if transactional {
        match shared
            .ledger
            .commit(&a.tag, execution, &who, key.as_deref(), |n| {
                crate::server::calls::tools::append_result(&a.tag, n, &chunk)
            }) {
            Commit::Committed(r) => {
                shared.ledger.chunk(&a.tag, execution, a.chunks, a.chunks);
                r
            }
            // Its key committed first: the stored result.
            Commit::Refused(stored) => stored,
        }
    } else {
        shared.ledger.chunk(&a.tag, execution, a.chunks, a.chunks);
        let n = shared.ledger.executions_for(&a.tag, &who);
        crate::server::calls::tools::append_result(&a.tag, n, &chunk)
    };
    if let Some(k) = &key {
        crate::server::replica::stored::key_done(&shared, &who, k, &result);
        shared
            .state
            .borrow_mut()
            .dedup
            .complete(&who, k, result.clone());
    }
    ctx.complete(&result);
}

//! The two ledger tools as an rmcp `ServerHandler`: `ledger_append` and
//! `ledger_read`, with the built-in server's arguments, progress payloads
//! and results, so that clients and the oracle cannot tell the tools apart.
//!
//! rmcp runs handlers on `tokio::spawn` and wants `Send` futures, while the
//! ledger lives on the server host's `LocalSet` (it is `Rc`): the tools
//! reach it through a [`Bridge`], a channel to one local task that owns it.

use crate::ledger::{ChunkRef, Ledger, Principal};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::{self, LedgerAppendArgs, LedgerReadArgs};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    ErrorData, GetTaskParams, GetTaskResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The session a request named on the wire (the id clients see), put into
/// the request's extensions by the session-id layer: a tool's principal
/// when the request carries no bearer token.
#[derive(Clone, Debug)]
pub(super) struct WireSession(pub String);

/// One ledger operation asked for by a tool.
enum Call {
    Execute {
        tag: String,
        principal: String,
        rpc_id: Value,
        reply: oneshot::Sender<u32>,
    },
    Chunk {
        tag: String,
        n: u32,
        index: u32,
        total: u32,
    },
    /// The caller's effects of a tag.
    Executions {
        tag: String,
        principal: String,
        reply: oneshot::Sender<u32>,
    },
    /// A session ended: the ledger forgets its own effects (a bounded
    /// ledger only: the simulator's keeps everything).
    Forget { principal: String },
    /// The principal's effects per tag, and how many of each tag's
    /// executions emitted their result.
    Snapshot {
        principal: String,
        reply: oneshot::Sender<(BTreeMap<String, u32>, BTreeMap<String, u32>)>,
    },
}

/// The tools' way to the ledger: `Send`, cloned into every session.
#[derive(Clone)]
pub(super) struct Bridge(mpsc::UnboundedSender<Call>);

impl Bridge {
    /// A bridge and the local task that serves it (run it with
    /// `spawn_local` on the server host).
    pub fn new(ledger: Ledger) -> (Bridge, impl std::future::Future<Output = ()>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Call>();
        let serve = async move {
            while let Some(call) = rx.recv().await {
                match call {
                    Call::Execute {
                        tag,
                        principal,
                        rpc_id,
                        reply,
                    } => {
                        let who: Principal = principal.into();
                        let id: RequestId =
                            serde_json::from_value(rpc_id).unwrap_or(RequestId::Num(0));
                        let _ = reply.send(ledger.execute(&tag, &who, None, &id, false));
                    }
                    Call::Chunk {
                        tag,
                        n,
                        index,
                        total,
                    } => ledger.chunk(&tag, n, index, total),
                    Call::Executions {
                        tag,
                        principal,
                        reply,
                    } => {
                        let _ = reply.send(ledger.executions_for(&tag, &principal));
                    }
                    Call::Forget { principal } => {
                        if ledger.bounded() {
                            ledger.forget_principal(&principal);
                        }
                    }
                    Call::Snapshot { principal, reply } => {
                        let all = ledger.snapshot_for(&principal);
                        let finished = all
                            .keys()
                            .map(|t| (t.clone(), ledger.finished(t)))
                            .collect();
                        let _ = reply.send((all, finished));
                    }
                }
            }
        };
        (Bridge(tx), serve)
    }

    /// Tells the ledger that the session the wire knows as `wire` ended.
    pub fn session_ended(&self, wire: &str) {
        // The ledger task outlives every session of its incarnation.
        let _ = self.0.send(Call::Forget {
            principal: wire.to_string(),
        });
    }

    async fn ask<T>(&self, call: impl FnOnce(oneshot::Sender<T>) -> Call) -> Result<T, ErrorData> {
        let (tx, rx) = oneshot::channel();
        let gone = || ErrorData::internal_error("the ledger is gone", None);
        self.0.send(call(tx)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

/// The handler rmcp creates once per session (on the 2026-07-28 wire,
/// once per request).
#[derive(Clone)]
pub(super) struct LedgerTools {
    pub bridge: Bridge,
    /// Most chunks one call may ask for (the built-in server's bound).
    pub max_chunks: u32,
    /// The incarnation's tasks (the tasks extension), shared by every
    /// handler rmcp creates.
    pub tasks: Arc<super::tasks::Tasks>,
}

impl ServerHandler for LedgerTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&request.task_id).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(mcp::tools_list_result())
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let bad = |e: String| ErrorData::invalid_params(e, None);
        match request.name.as_ref() {
            mcp::LEDGER_APPEND => {
                let a: LedgerAppendArgs = serde_json::from_value(args)
                    .map_err(|e| bad(format!("ledger_append arguments: {e}")))?;
                if a.chunks == 0 || a.chunks > self.max_chunks {
                    return Err(bad(format!(
                        "chunks must be 1..={}, got {}",
                        self.max_chunks, a.chunks
                    )));
                }
                // A client that declared the tasks extension gets a task,
                // as a server built on rmcp's `TaskManager` answers it.
                if context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks())
                {
                    return self
                        .append_as_task(a, &context)
                        .await
                        .map(CallToolResponse::Task);
                }
                self.append(a, &context).await.map(Into::into)
            }
            mcp::LEDGER_READ => {
                let r: LedgerReadArgs = serde_json::from_value(args)
                    .map_err(|e| bad(format!("ledger_read arguments: {e}")))?;
                let who = principal(&context);
                let (all, finished) = self
                    .bridge
                    .ask(|reply| Call::Snapshot {
                        principal: who,
                        reply,
                    })
                    .await?;
                let done = |t: &str| finished.get(t).copied().unwrap_or(0);
                Ok(text(mcp::read_text(all, done, &r)).into())
            }
            other => Err(bad(format!(
                "unknown tool {other:?}: use ledger_append or ledger_read"
            ))),
        }
    }
}

impl LedgerTools {
    /// One execution: recorded when it starts, then `chunks − 1` progress
    /// notifications `chunk_interval_ms` apart, each recorded in the ledger,
    /// then the result (the last chunk). A cancelled request stops early.
    async fn append(
        &self,
        a: LedgerAppendArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let n = self.execution(&a.tag, principal(ctx), ctx).await?;
        let token = ctx.meta.get_progress_token();
        let interval = Duration::from_millis(a.chunk_interval_ms);
        for index in 1..=a.chunks {
            if !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            if ctx.ct.is_cancelled() {
                return Err(ErrorData::internal_error("cancelled", None));
            }
            let _ = self.bridge.0.send(Call::Chunk {
                tag: a.tag.clone(),
                n,
                index,
                total: a.chunks,
            });
            // Made where it is used: it is not `Send`, so it may not live
            // across an `.await`.
            let chunk = || ChunkRef {
                tag: a.tag.as_str().into(),
                execution: n,
                index,
            };
            if index == a.chunks {
                let executions = self
                    .bridge
                    .ask(|reply| Call::Executions {
                        tag: a.tag.clone(),
                        principal: principal(ctx),
                        reply,
                    })
                    .await?;
                return Ok(text(mcp::append_text(&a.tag, executions, &chunk())));
            }
            if let Some(t) = &token {
                let p = ProgressNotificationParam::new(t.clone(), index as f64)
                    .with_total(a.chunks as f64)
                    .with_message(chunk().encode());
                let _ = ctx.peer.notify_progress(p).await;
            }
        }
        unreachable!("the last chunk returns")
    }
}

impl LedgerTools {
    /// A new execution of `tag` for `who` in the ledger, under the
    /// request's id: its number.
    async fn execution(
        &self,
        tag: &str,
        who: String,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<u32, ErrorData> {
        let rpc_id = serde_json::to_value(&ctx.id).unwrap_or(Value::Null);
        self.bridge
            .ask(|reply| Call::Execute {
                tag: tag.to_string(),
                principal: who,
                rpc_id,
                reply,
            })
            .await
    }

    /// `ledger_append` as a task: its execution recorded before the task
    /// exists (an answer lost after it leaves an effect nobody knows the
    /// task of), then run by rmcp's `TaskManager`, detached from the
    /// request.
    async fn append_as_task(
        &self,
        a: LedgerAppendArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CreateTaskResult, ErrorData> {
        let who = principal(ctx);
        let n = self.execution(&a.tag, who.clone(), ctx).await?;
        let bridge = self.bridge.clone();
        let task = self.tasks.create(move |tc, expiry| {
            Box::pin(run_task(TaskRun {
                bridge,
                a,
                n,
                who,
                tc,
                expiry,
            }))
        });
        Ok(CreateTaskResult::new(task))
    }
}

/// One task's execution and what it needs.
struct TaskRun {
    bridge: Bridge,
    a: LedgerAppendArgs,
    n: u32,
    who: String,
    tc: TaskContext,
    expiry: Option<tokio::time::Instant>,
}

/// A task's execution: one step per chunk interval, only its result
/// chunk emitted (a task has no stream for progress); a `tasks/cancel`
/// stops it at its next step, as does its expiry.
async fn run_task(r: TaskRun) -> Result<CallToolResult, TaskExit> {
    let TaskRun {
        bridge,
        a,
        n,
        who,
        tc,
        expiry,
    } = r;
    let interval = Duration::from_millis(a.chunk_interval_ms);
    let expired = async {
        match expiry {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(expired);
    for _ in 1..=a.chunks {
        tokio::select! {
            biased;
            () = tc.cancelled() => return Err(TaskExit::Cancelled),
            () = &mut expired => {
                return Err(ErrorData::internal_error("the task expired", None).into())
            }
            () = tokio::time::sleep(interval) => {}
        }
    }
    let _ = bridge.0.send(Call::Chunk {
        tag: a.tag.clone(),
        n,
        index: a.chunks,
        total: a.chunks,
    });
    let executions = bridge
        .ask(|reply| Call::Executions {
            tag: a.tag.clone(),
            principal: who,
            reply,
        })
        .await?;
    let chunk = ChunkRef {
        tag: a.tag.as_str().into(),
        execution: n,
        index: a.chunks,
    };
    Ok(text(mcp::append_text(&a.tag, executions, &chunk)))
}

/// A tool result with one text content, as the built-in tools answer.
fn text(s: String) -> CallToolResult {
    CallToolResult::success(vec![rmcp::model::ContentBlock::text(s)])
}

/// Who a call runs for: the bearer token when the request carried one,
/// else the session as the client knows it.
fn principal(ctx: &RequestContext<RoleServer>) -> String {
    let parts = ctx.extensions.get::<http::request::Parts>();
    let bearer = parts
        .and_then(|p| p.headers.get(http::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string());
    bearer
        .or_else(|| {
            parts
                .and_then(|p| p.extensions.get::<WireSession>())
                .map(|s| s.0.clone())
        })
        .unwrap_or_default()
}

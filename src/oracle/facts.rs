//! The facts the oracle judges by, per operation, per client and per
//! run, as [`super::ops`] reads them from the black box: what went wrong
//! with an operation ([`Failure`]), each of its executions, its handled
//! result, the run's faults. Plain data with the questions the causes
//! ask of it.

use crate::history::Outcome;
use crate::protocol::mcp::ChunkRef;
use crate::protocol::RequestId;
use std::rc::Rc;

/// What can go wrong with one operation (it may have several).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// More than one execution committed its effect.
    Duplicated,
    /// A counted event of the handled execution never reached the client,
    /// and nothing announced it.
    SilentLoss,
    /// Its result was handled after that of a later operation of the same
    /// client (one sent after this result was produced).
    OutOfOrder,
    /// The handled result was produced by no execution of this operation.
    WrongResult,
    /// No result was handled (given up, or unresolved at the end).
    Lost,
}

/// A set of failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failures(u8);

impl Failures {
    fn bit(f: Failure) -> u8 {
        1 << f as u8
    }
    /// Adds one.
    pub fn insert(&mut self, f: Failure) {
        self.0 |= Self::bit(f);
    }
    /// Whether it holds `f`.
    pub fn contains(self, f: Failure) -> bool {
        self.0 & Self::bit(f) != 0
    }
    /// Whether it is empty (the operation did not fail).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// What put operations at risk, whatever the server then did.
pub const HAZARDS: &[&str] = &[
    "drop",
    "partition",
    "latency",
    "restart",
    "eviction",
    "switch",
    "stale_connection",
];

/// One execution of an operation, as the ledger and the client saw it.
#[derive(Clone, Debug)]
pub struct Exec {
    /// The request that ran it.
    pub rpc_id: RequestId,
    /// When it started, µs.
    pub start_us: u64,
    /// It took its effect: at its start (`effects = immediate`), or by a
    /// commit at its end. One that committed nothing (killed, cancelled,
    /// refused) is owed to nobody.
    pub committed: bool,
    /// When it took its effect, µs.
    pub committed_us: Option<u64>,
    /// Chunks it emitted.
    pub emitted: u32,
    /// Index of its result chunk, once emitted.
    pub result_index: Option<u32>,
    /// When its result was emitted, µs.
    pub result_us: Option<u64>,
    /// Trace position of its result's emission.
    pub result_seq: Option<u64>,
    /// Which chunks the client received (bit i-1 for index i).
    pub received: Vec<bool>,
    /// Which chunks it emitted (bit i-1 for index i): all up to its latest
    /// on a stream, only the result for a task (which has no stream for
    /// progress).
    pub emitted_at: Vec<bool>,
    /// Trace position of each chunk's emission (index i at i-1; 0: not
    /// emitted).
    pub emitted_seq: Vec<u64>,
    /// A chunk was received while an earlier one of the same execution
    /// never was: the server skipped events (its store lost them).
    pub hole: bool,
    /// The replica that ran it (the ledger's record), in a deployment.
    pub replica: Option<u32>,
}

impl Exec {
    pub(super) fn received_count(&self) -> u32 {
        self.received.iter().filter(|r| **r).count() as u32
    }
}

/// A request of the operation its client left, giving the operation up
/// while the request might still run, as the client recorded it.
#[derive(Clone, Debug)]
pub struct Left {
    /// The request.
    pub rpc_id: RequestId,
    /// When the client left it, µs.
    pub at_us: u64,
    /// A `notifications/cancelled` went out for it.
    pub cancelled: bool,
    /// When the server accepted (202) that cancellation, µs.
    pub accepted_us: Option<u64>,
}

/// The handled result.
#[derive(Clone, Debug)]
pub struct Handled {
    /// Trace position.
    pub seq: u64,
    /// Time, µs.
    pub t_us: u64,
    /// The chunk its payload named.
    pub chunk: Option<ChunkRef>,
    /// Served from the key table, marked as such.
    pub replayed: bool,
    /// Event ids named by the gaps its client received on the stream the
    /// result arrived on, before the result (the rule: `Builder::gap_budget`).
    pub gap_named: u64,
}

/// Everything the oracle knows about one operation.
#[derive(Clone, Debug, Default)]
pub struct OpFacts {
    /// The client it belongs to.
    pub client: u32,
    /// Its tag.
    pub tag: Rc<str>,
    /// When the client began it, µs.
    pub start_us: u64,
    /// When its outcome was recorded, µs.
    pub end_us: Option<u64>,
    /// Trace position of its first POST.
    pub first_sent_seq: Option<u64>,
    /// How it ended for the client.
    pub outcome: Option<Outcome>,
    /// The handled result.
    pub handled: Option<Handled>,
    /// The fault that first interrupted it, µs.
    pub interrupted_us: Option<u64>,
    /// Its executions, in order (execution n at n−1).
    pub execs: Vec<Exec>,
    /// POSTs of it sent.
    pub calls_sent: u32,
    /// A re-sent POST carried no `Idempotency-Key`.
    pub keyless_retry: bool,
    /// A re-sent POST carried a key other than the earlier attempts'.
    pub key_changed: bool,
    /// Its client reconnected a broken resume of it without
    /// `Last-Event-ID` (the resumed stream had brought no id yet).
    pub cursor_dropped: bool,
    /// When each keyed re-issue of the call went out (every call attempt
    /// after the first that carried an `Idempotency-Key`), µs.
    pub keyed_reissues_us: Vec<u64>,
    /// Requests of it whose response the client never saw begin.
    pub unseen_rpcs: Vec<RequestId>,
    /// One of those ran (the ledger has an execution for it).
    pub unseen_attempt_ran: bool,
    /// Requests of it that went out on a reused connection and got no
    /// response head there (`None`: a resume, which runs nothing), with
    /// when each went out and when it failed, µs.
    pub stale_rpcs: Vec<(Option<RequestId>, u64, u64)>,
    /// One of those met a connection dead before the request: no
    /// partition began and no latency spike was on at its client's host
    /// while it waited (those hit the exchange itself, on any connection).
    pub stale: bool,
    /// One such request never ran (no execution for it): the dead
    /// connection swallowed it whole.
    pub stale_unrun: bool,
    /// The client got a 410 for it.
    pub refused_410: bool,
    /// The client resumed a stream for it.
    pub resumed: bool,
    /// When it sent each of those resumes, µs.
    pub resumes_us: Vec<u64>,
    /// The `Last-Event-ID` of each, in the same order.
    pub resume_cursors: Vec<Option<Rc<str>>>,
    /// When each request of it (a POST, a resume) went out, µs.
    pub requests_us: Vec<u64>,
    /// The streams (session, stream) its events reached the client on.
    pub streams: Vec<(u32, u64)>,
    /// A resume of it went out after the client had received, on a stream
    /// its events rode, an event emitted after one of its results that
    /// never arrived: the cursor had moved past the result (live events
    /// written between a replay's), so no resume could bring it.
    pub cursor_past_result: bool,
    /// One of its client's 404s fell in it while the shared store's reads
    /// lagged (the session not visible yet on the replica that looked).
    pub refused_lagging: bool,
    /// When a planned drop hit it, µs.
    pub dropped_us: Option<u64>,
    /// An execution's result was emitted before that drop.
    pub result_before_drop: bool,
    /// Its client switched transport and was refused (404) during it.
    pub reinit_after_switch: bool,
    /// Its client was refused (404: session not found) during it.
    pub refused_404: bool,
    /// The server paused a stream of its client during it (`retry:`), and
    /// no resume of it went out after.
    pub retry_ignored: bool,
    /// Its client ended the run refused a session: its last initialize
    /// was answered 503, and none succeeded after.
    pub session_refused: bool,
    /// One of those refusals came after the replica its client's calls
    /// last ran on went down.
    pub home_died: bool,
    /// One of those refusals came after the balancer lost the pin of the
    /// session it was using.
    pub affinity_lost: bool,
    /// Its client gave it up.
    pub gave_up: bool,
    /// The request its client left when it gave it up, if it might still
    /// run then.
    pub left: Vec<Left>,
    /// The status its last refused call was answered with (not 200/202),
    /// unless the call was sent again after it: what the client gave it
    /// up at, when it gave it up there.
    pub last_status: Option<u16>,
    /// One of its calls carried an `Idempotency-Key`.
    pub keyed: bool,
    /// The requests whose answers named its task (tasks extension):
    /// `CreateTaskResult`s it got.
    pub tasks_created_by: Vec<RequestId>,
    /// An execution ran for a request whose `CreateTaskResult` never
    /// reached the client (it ran as a task nobody knew of).
    pub task_create_unseen: bool,
    /// A `tasks/cancel` of its task was acknowledged (and the call
    /// re-issued).
    pub task_cancel_acked: bool,
    /// A poll was told its task is unknown: its result expired first.
    pub task_gone: bool,
    /// The requests of it answered with an input-required result.
    pub input_asked_by: Vec<RequestId>,
    /// Its failures (empty: ok or degraded).
    pub failures: Failures,
    /// Hazards it met (bit i for `HAZARDS[i]`).
    pub hazards: u8,
    /// Counted events of the handled execution missing, unannounced.
    pub silent: u64,
    /// Counted events of the handled execution missing, announced.
    pub announced: u64,
    /// Emitted events of any of its executions never received (handled
    /// operations only).
    pub orphaned: u64,
    /// Handled while an event of its first execution never arrived.
    pub truncated: bool,
    /// Later operations whose result was handled before this one's.
    pub order_pairs: u64,
}

impl OpFacts {
    pub(super) fn new(client: u32, tag: Rc<str>, start_us: u64) -> OpFacts {
        OpFacts {
            client,
            tag,
            start_us,
            ..OpFacts::default()
        }
    }

    /// An execution that was running when its client left its request
    /// and took its effect after, where the client `cancelled` it or
    /// not: the work a cancellation would have stopped. With `cancelled`,
    /// only one that took its effect after the server accepted the
    /// cancellation (the server dropped it).
    pub fn ran_after_leaving(&self, cancelled: bool) -> bool {
        self.left
            .iter()
            .filter(|l| l.cancelled == cancelled)
            .any(|l| {
                let since = if cancelled {
                    l.accepted_us
                } else {
                    Some(l.at_us)
                };
                since.is_some_and(|since| {
                    self.execs.iter().any(|x| {
                        x.rpc_id == l.rpc_id
                            && x.start_us < since
                            && x.committed_us.is_some_and(|c| c > since)
                    })
                })
            })
    }

    /// Black-box evidence that its owed events left the server's store: a
    /// 410 for it, or a hole in an execution's received chunks.
    pub fn evicted(&self) -> bool {
        self.refused_410 || self.execs.iter().any(|x| x.hole)
    }

    /// Whether a resume of it went out after the shared store lost what it
    /// held (within its lifetime), or while the store's reads lagged: the
    /// replica serving it could lack its cursor.
    pub fn resumed_cold(&self, run: &RunFacts) -> bool {
        self.resumes_us.iter().any(|&t| {
            run.lagged_at(t)
                || run
                    .store_lost_us
                    .iter()
                    .any(|&l| self.start_us <= l && l <= t)
        })
    }

    /// Whether a server restart fell within its lifetime (begun to
    /// outcome, or to the end of the run).
    pub fn restarted_during(&self, restarts_us: &[u64]) -> bool {
        restarts_us
            .iter()
            .any(|&r| self.start_us <= r && self.end_us.is_none_or(|e| r <= e))
    }

    /// Whether the replica holding it went down while it was open (begun
    /// to outcome, or to the end of the run): one that ran one of its
    /// executions, or the one its client's calls last ran on, when the
    /// client was refused (404) after it went down.
    pub fn owner_died(&self, crashes_us: &[(u32, u64)]) -> bool {
        self.home_died
            || crashes_us.iter().any(|&(r, c)| {
                self.start_us <= c
                    && self.end_us.is_none_or(|e| c <= e)
                    && self
                        .execs
                        .iter()
                        .any(|x| x.replica == Some(r) && x.start_us <= c)
            })
    }

    /// An execution that took its effect and then asked for input: its
    /// request was answered with a question.
    /// A keyed re-issue went out while an execution of the operation ran,
    /// and that execution went on to produce its result: the re-issue met
    /// the work it asked for, in flight, and that result is what it
    /// should have carried (the operation was lost all the same).
    pub fn met_running_execution(&self) -> bool {
        self.keyed_reissues_us.iter().any(|&t| {
            self.execs
                .iter()
                .any(|x| x.start_us <= t && x.result_us.is_some_and(|r| r > t))
        })
    }

    pub fn asked_after_effect(&self) -> bool {
        self.execs
            .iter()
            .any(|x| x.committed && self.input_asked_by.contains(&x.rpc_id))
    }

    /// Executions that committed an effect.
    pub fn effects(&self) -> u64 {
        self.execs.iter().filter(|x| x.committed).count() as u64
    }

    /// Whether, in the heal phase (faults off), its client went round a
    /// reconnect loop for it: at least [`LOOP_RESUMES`] resumes with one
    /// cursor (one stream, no progress), or requests of it as frequent in
    /// the heal's last third as in its first (at least two: nothing made
    /// them back off).
    pub fn looped(&self, run: &RunFacts) -> bool {
        let Some(heal) = run.heal_us else {
            return false;
        };
        let end = run.end_us.max(heal);
        let mut cursors: Vec<&Rc<str>> = self
            .resumes_us
            .iter()
            .zip(&self.resume_cursors)
            .filter(|(&t, _)| t >= heal)
            .filter_map(|(_, c)| c.as_ref())
            .collect();
        cursors.sort_unstable();
        let same = cursors
            .chunk_by(|a, b| a == b)
            .map(<[_]>::len)
            .max()
            .unwrap_or(0);
        if same >= LOOP_RESUMES {
            return true;
        }
        let third = (end - heal) / 3;
        let count = |from: u64, to: u64| {
            self.requests_us
                .iter()
                .filter(|&&t| from <= t && t < to)
                .count()
        };
        let (first, last) = (count(heal, heal + third), count(end - third, end + 1));
        third > 0 && last >= 2 && last >= first
    }

    /// Degraded: not failed, but it missed announced events.
    pub fn degraded(&self) -> bool {
        self.failures.is_empty() && self.announced > 0
    }

    /// The handled execution, when the result named one of this
    /// operation's executions by its result chunk.
    pub(super) fn handled_exec(&self) -> Option<usize> {
        let c = self.handled.as_ref()?.chunk.as_ref()?;
        let i = (c.execution as usize).checked_sub(1)?;
        let x = self.execs.get(i)?;
        (c.tag == self.tag && x.committed && x.result_index == Some(c.index)).then_some(i)
    }
}

/// Resumes with one cursor in the heal phase that make a reconnect loop.
pub const LOOP_RESUMES: usize = 5;

/// Run-wide facts the causes and hazards read.
#[derive(Clone, Debug, Default)]
pub struct RunFacts {
    /// When the heal phase began, µs (`None`: the run never reached it).
    pub heal_us: Option<u64>,
    /// The last record's time: the run's end, µs.
    pub end_us: u64,
    /// Server restarts, µs.
    pub restarts_us: Vec<u64>,
    /// Every client finished before the run ended.
    pub clients_finished: bool,
    /// (host, from µs, to µs) of each partition.
    pub partitions: Vec<(u32, u64, u64)>,
    /// (host, from µs, to µs) of each latency spike.
    pub spikes: Vec<(u32, u64, u64)>,
    /// The run is a deployment: replicas behind a balancer.
    pub deployed: bool,
    /// (replica, µs) of each replica going down: a crash, or the exit at
    /// the end of a drain.
    pub crashes_us: Vec<(u32, u64)>,
    /// Balancer restarts, µs.
    pub balancer_restarts_us: Vec<u64>,
    /// (µs, session) of each sticky pin that expired under a request.
    pub pins_expired: Vec<(u64, u32)>,
    /// The replicas share a store.
    pub shared_store: bool,
    /// Restarts of the shared store that kept nothing, µs.
    pub store_lost_us: Vec<u64>,
    /// (from µs, to µs) of each span in which the store's reads lagged.
    pub store_lagged: Vec<(u64, u64)>,
}

impl RunFacts {
    /// Whether the shared store's reads lagged at `t_us`.
    pub fn lagged_at(&self, t_us: u64) -> bool {
        self.store_lagged
            .iter()
            .any(|&(from, to)| from <= t_us && t_us <= to)
    }
}

/// Per-client facts beyond operations.
#[derive(Clone, Debug, Default)]
pub struct ClientFacts {
    /// Initializations sent.
    pub inits: u64,
    /// When it switched transport, µs.
    pub switched_us: Option<u64>,
    /// 404s it got, µs.
    pub refused_404_us: Vec<u64>,
    /// When the server paused one of its streams (`retry:` then a close),
    /// µs.
    pub paused_us: Vec<u64>,
    /// Its last initialize was answered 503 (no new session to be had),
    /// and no session came after it.
    pub session_refused: bool,
    /// Migration latency samples, µs: transport switches (switch to the
    /// next handled result) and replica moves (the start of the call that
    /// first ran on the new replica to the next handled result).
    pub switch_latency_us: Vec<u64>,
    /// Operations of it that never produced a record (not even an outcome).
    pub never_begun: u64,
    /// When its first operation begun after the switch began, µs.
    pub first_after_switch: Option<u64>,
    /// The replicas its executions ran on, as (from µs, replica), each
    /// entry a change of replica (the ledger's records, in a deployment).
    pub homes: Vec<(u64, u32)>,
    /// A replica move not yet matched with a handled result: when the
    /// call that moved began, µs.
    pub pending_move: Option<u64>,
    /// The sessions it was given, as (µs, session), in a deployment.
    pub sessions: Vec<(u64, u32)>,
}

impl ClientFacts {
    /// The session it was using at `t_us`, with when it got it.
    pub fn session_at(&self, t_us: u64) -> Option<(u64, u32)> {
        let n = self.sessions.partition_point(|&(from, _)| from <= t_us);
        n.checked_sub(1).map(|i| self.sessions[i])
    }

    /// The replica its calls last ran on at `t_us`.
    pub fn home_at(&self, t_us: u64) -> Option<u32> {
        let n = self.homes.partition_point(|&(from, _)| from <= t_us);
        n.checked_sub(1).map(|i| self.homes[i].1)
    }
}

/// The black-box judgement of a run's operations.
pub struct Ops {
    /// Every operation, in the order clients began them.
    pub ops: Vec<OpFacts>,
    /// Per client.
    pub clients: Vec<ClientFacts>,
    /// Run-wide facts.
    pub run: RunFacts,
}

//! When and whether a client tries again: a call re-POSTed after a
//! backoff (an attempt), or after the wait a server's `Retry-After` named
//! (not one), re-issued, re-initialized; giving up when no session can
//! be had, and cancelling a call given up. The reactions
//! (`reactions.rs`) decide which; these carry it out on the client's
//! timers.

use super::actor::{Client, SlotKind, Timer};
use super::http::Outgoing;
use super::ops::OpState;
use crate::history::{ClientRecord, Outcome, Transport};
use crate::protocol::jsonrpc::Message;
use crate::protocol::mcp;
use crate::scenario::Field;
use std::time::Duration;

impl Client {
    /// Re-POSTs `op` after `wait` (a new request id, same tag), forgetting
    /// the stream that broke: how the re-POSTing behaviours answer one.
    pub(super) fn repost_after(&mut self, op: usize, wait: Duration) {
        self.ops[op].stream = None;
        if self.count_attempt(op) {
            self.schedule(wait, Timer::Post(op));
        }
    }

    pub(super) fn retry_post(&mut self, op: usize) {
        if self.ops[op].state == OpState::Active && self.count_attempt(op) {
            let wait = self.backoff(self.ops[op].attempts);
            self.schedule(wait, Timer::Post(op));
        }
    }

    /// The server refused `op` with `Retry-After`: the same POST again
    /// after exactly `wait`, not counted as an attempt (bounded: past
    /// 4 × `max_attempts` such waits it counts, as any retry).
    pub(super) fn come_back(&mut self, op: usize, wait: Duration) {
        if self.ops[op].state != OpState::Active {
            return;
        }
        if self.ops[op].waits_told >= self.beyond_attempts() {
            return self.retry_post(op);
        }
        self.ops[op].waits_told += 1;
        self.schedule(wait, Timer::Post(op));
    }

    /// Re-issues an operation (same tag and key) after a 410 or a failed resume.
    pub(super) fn reissue(&mut self, op: usize) {
        self.ops[op].stream = None;
        self.retry_post(op);
    }

    pub(super) fn retry_init(&mut self) {
        if self.inits_exhausted() {
            return self.give_up();
        }
        let wait = self.backoff(self.init_attempts);
        self.schedule(wait, Timer::Init);
    }

    /// The bound on `initialize` attempts (over the run) is reached.
    pub(super) fn inits_exhausted(&self) -> bool {
        self.init_attempts >= self.beyond_attempts()
    }

    /// The bound on tries that are not a call's attempts (initializes over
    /// the run, waits a server asked for per call): 4 × `max_attempts`.
    fn beyond_attempts(&self) -> u32 {
        self.g().max_attempts.saturating_mul(4)
    }

    /// No session can be had: every unresolved operation is abandoned (on
    /// the record), and the workload ends.
    pub(super) fn give_up(&mut self) {
        for op in 0..self.calls() {
            if self
                .ops
                .get(op)
                .is_none_or(|o| matches!(o.state, OpState::Active | OpState::Pending))
            {
                self.activate(op);
                self.finish(op, Outcome::Abandoned);
            }
        }
        self.next_op = self.calls();
    }

    /// Starts over on the current transport, whatever the session state.
    pub(super) fn reinit_now(&mut self) {
        if self.session.is_none() {
            let wait = self.backoff(self.init_attempts);
            self.schedule(wait, Timer::Init);
        } else {
            self.reinit();
        }
    }

    /// The client gives `op` up while its latest request may still run
    /// (no result, no refusal answered it): on the 2025-11-25 wire it says
    /// so, `notifications/cancelled` naming the request on the session it
    /// went out on, as the SDKs' clients do when a request times out or is
    /// aborted; a field client's `cancel-never-sent` sends nothing. Both
    /// on the record (`Left`). A re-send is not a leave: it retries the
    /// same work (a cancellation there would stop the execution a key or
    /// Rule M joins). The 2026-07-28 wire's cancellation is the close of
    /// the request's stream, which giving it up makes.
    pub(super) fn leave(&mut self, op: usize) {
        let Some(on) = self.ops[op].in_doubt_on.take() else {
            return;
        };
        let Some(rpc) = self.ops[op].rpc.clone() else {
            return;
        };
        // A request of a session the client no longer holds died with it.
        if self.modern() || self.session.as_ref() != Some(&on) {
            return;
        }
        let send = !self.g().shows(Field::CancelNeverSent);
        let tag = self.ops.tag(op);
        self.record(ClientRecord::Left {
            client: self.spec.index,
            tag,
            rpc_id: rpc.clone(),
            cancelled: send,
        });
        if !send {
            return;
        }
        let msg = Message::Notification {
            method: mcp::CANCELLED.into(),
            params: Some(mcp::cancelled_params(&rpc, "the client stopped waiting")),
        };
        let out = if self.transport == Transport::Legacy {
            let Some(out) = self.legacy_out(&msg) else {
                return;
            };
            out
        } else {
            self.with_session(Outgoing::post(Some(&on), &msg))
        };
        self.spawn(SlotKind::Cancel { op, rpc }, out, true);
    }
}

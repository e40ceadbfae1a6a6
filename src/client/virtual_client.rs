//! A virtual MCP client: a workload of tool calls with think time, and a
//! behaviour for dropped streams. It is an actor: every HTTP
//! exchange runs as a reader task that forwards what it sees over a
//! channel, and one loop decides what to do next, so there is exactly one
//! place where the client's state changes.
//!
//! The client honors the server: a 409 with a hint makes it resume that
//! stream; a 404 makes it re-initialize and re-issue what is unresolved; a
//! 410 makes it re-issue the operation. While a resume is in progress it
//! holds results arriving on other streams until `replay-end` (or the
//! resume stream ends, breaks, or the hold times out).
//!
//! This module is the client's public face; its decisions are the
//! sans-IO [`super::core`], the actor around them lives in
//! [`super::actor`] and the modules next to it.

use super::actor::{Client, Timer};
use super::behaviour;
use super::reader;
use super::reader::Input;
use super::send::{call_request, init_request};
use crate::fault::At;
use crate::history::{History, Transport};
use crate::protocol::jsonrpc::RequestId;
use crate::scenario::ClientGroup;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::mpsc;

pub use super::core::ClientSpec;
pub use super::reader::{Connector, TcpConnector};

/// Runs one virtual client to completion (every operation done or
/// abandoned). Must run inside a `LocalSet`.
pub async fn run<C: Connector>(spec: ClientSpec, connector: C, history: History, tap: Tap) {
    let (tx, rx) = mpsc::unbounded_channel();
    *tap.tx.borrow_mut() = Some(tx.clone());
    let mut c = Client::new(spec, reader::spawner(connector), history, tx);
    c.planned.drop_rules.borrow_mut().tap = tap.clone();
    c.io.tap = tap;
    c.schedule(Duration::ZERO, Timer::Init);
    c.run(rx).await;
}

/// The world's hook on one client, for faults placed at protocol
/// boundaries: it tells the world which boundaries of its calls only the
/// client sees (a response head, the k-th event, the result: no record
/// names the first, and the client counts events as its drops do) into a
/// list shared by every client, and lets the world drop a call's
/// connection at a boundary only the world sees. Inert by default.
#[derive(Clone, Default)]
pub struct Tap {
    reports: Option<Reports>,
    tx: Rc<RefCell<Option<mpsc::UnboundedSender<Input>>>>,
}

/// Boundaries the clients saw, in the order they saw them: the call's
/// tag, the boundary, and for an event its count (every event of the call
/// that names it, the result included, as a planned drop counts them).
pub type Reports = Rc<RefCell<Vec<(Rc<str>, At, u32)>>>;

impl Tap {
    /// A tap that adds what its client sees to `reports`.
    pub fn watching(reports: &Reports) -> Tap {
        Tap {
            reports: Some(reports.clone()),
            tx: Rc::default(),
        }
    }

    /// Tells the client to drop the connection of call `tag`'s request now.
    pub fn drop_call(&self, tag: &str) {
        if let Some(tx) = &*self.tx.borrow() {
            let _ = tx.send(Input::Kill { tag: tag.into() });
        }
    }

    /// Whether it reports anywhere.
    pub(super) fn watches(&self) -> bool {
        self.reports.is_some()
    }

    /// Call `tag` reached boundary `at` (with its event count).
    pub(super) fn report(&self, tag: &Rc<str>, at: At, n: u32) {
        if let Some(r) = &self.reports {
            r.borrow_mut().push((tag.clone(), at, n));
        }
    }
}

/// The largest request body (bytes) client `index` of group `g` can send:
/// its `initialize` on either transport and its last call, with counters at
/// their widest. A server whose `max_body_bytes` is below it refuses the
/// client's requests with 413.
pub fn largest_request_body(g: &ClientGroup, index: u32) -> usize {
    let widest = u32::MAX;
    let mut sizes = vec![
        init_request(
            behaviour::of(g.behaviour),
            Transport::Streamable,
            index,
            widest,
        )
        .encode()
        .len(),
        init_request(behaviour::of(g.behaviour), Transport::Legacy, index, widest)
            .encode()
            .len(),
    ];
    let tag = crate::history::op_tag(index, g.calls.saturating_sub(1));
    let rpc = RequestId::Str(format!("{tag}#{widest}"));
    sizes.push(call_request(&tag, &rpc, g, g.asks_input).encode().len());
    sizes.into_iter().max().unwrap_or(0)
}

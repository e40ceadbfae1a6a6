//! A replica's side of the store: requests over a small pool of
//! connections, each with a deadline, and the write-behind queue that
//! carries events, key completions and deletions to the store in order.

use super::{Answer, Op};
use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

/// A byte stream to the store.
pub trait StoreIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> StoreIo for T {}

/// Opens a connection to the store (the simulator: turmoil's TCP).
pub type Connect = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = io::Result<Box<dyn StoreIo>>>>>>;

/// The store did not answer in time, or could not be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreDown;

struct Conn {
    lines: tokio::io::Lines<BufReader<ReadHalf<Box<dyn StoreIo>>>>,
    w: WriteHalf<Box<dyn StoreIo>>,
}

/// Idle connections kept for the next request.
const POOL: usize = 4;

/// How long a replica waits between attempts to write its queued writes.
const RETRY: Duration = Duration::from_millis(100);

struct Inner {
    connect: Connect,
    /// How long one request may take before the store counts as down.
    timeout: Duration,
    idle: RefCell<Vec<Conn>>,
    /// The write-behind queue, once its task runs.
    writes: RefCell<Option<mpsc::UnboundedSender<Op>>>,
}

/// A replica's handle on the store. Cheap to clone; clones share the
/// pool and the write-behind queue. Lives inside one replica incarnation:
/// its task ends with the host.
#[derive(Clone)]
pub struct StoreClient(Rc<Inner>);

impl StoreClient {
    /// A client connecting with `connect`, a request failing after
    /// `timeout`.
    pub fn new(connect: Connect, timeout: Duration) -> Self {
        StoreClient(Rc::new(Inner {
            connect,
            timeout,
            idle: RefCell::new(Vec::new()),
            writes: RefCell::new(None),
        }))
    }

    /// One request and its answer (a tail waits its `wait_ms` on top of
    /// the deadline). A connection that failed is dropped, never reused.
    pub async fn call(&self, op: &Op) -> Result<Answer, StoreDown> {
        let mut deadline = self.0.timeout;
        if let Op::Tail { wait_ms, .. } = op {
            deadline += Duration::from_millis(*wait_ms);
        }
        let mut line = serde_json::to_string(op).expect("ops serialize");
        line.push('\n');
        let attempt = async {
            let pooled = self.0.idle.borrow_mut().pop();
            let mut c = match pooled {
                Some(c) => c,
                None => {
                    let io = (self.0.connect)().await.map_err(|_| StoreDown)?;
                    let (r, w) = tokio::io::split(io);
                    Conn {
                        lines: BufReader::new(r).lines(),
                        w,
                    }
                }
            };
            c.w.write_all(line.as_bytes())
                .await
                .map_err(|_| StoreDown)?;
            c.w.flush().await.map_err(|_| StoreDown)?;
            let got = c.lines.next_line().await.map_err(|_| StoreDown)?;
            let answer = got
                .and_then(|l| serde_json::from_str::<Answer>(&l).ok())
                .ok_or(StoreDown)?;
            let mut idle = self.0.idle.borrow_mut();
            if idle.len() < POOL {
                idle.push(c);
            }
            Ok(answer)
        };
        tokio::time::timeout(deadline, attempt)
            .await
            .unwrap_or(Err(StoreDown))
    }

    /// Queues a write to go to the store after every write queued before
    /// it (retried until the store takes it). Must be called inside a
    /// `LocalSet`: the first call starts the queue's task.
    pub fn write_behind(&self, op: Op) {
        let mut writes = self.0.writes.borrow_mut();
        let tx = writes.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::task::spawn_local(drain(self.clone(), rx));
            tx
        });
        // The task ends only with the host, and the queue with it.
        let _ = tx.send(op);
    }
}

/// The write-behind task: whatever is queued goes as one batch, in order;
/// a batch the store did not take goes again until it does (the store
/// applies a batch sent twice once), and what queued meanwhile follows.
async fn drain(store: StoreClient, mut rx: mpsc::UnboundedReceiver<Op>) {
    while let Some(first) = rx.recv().await {
        let mut ops = vec![first];
        while let Ok(op) = rx.try_recv() {
            ops.push(op);
        }
        let batch = Op::Batch { ops };
        while store.call(&batch).await.is_err() {
            tokio::time::sleep(RETRY).await;
        }
    }
}

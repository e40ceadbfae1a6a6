//! The event store of the `rmcp-es` arm: an rmcp [`EventStore`] in memory,
//! as a server author would write one for the SDK. Event ids are one
//! counter over every stream of the incarnation (decimal, so globally
//! unique and deterministic: rmcp's own stream names are random UUIDs, and
//! this store never lets them reach the wire). Replay is strictly after
//! the named event, on that event's stream, and stays open for the
//! stream's later events until its response (a store backed by a log that
//! follows the stream, which the trait allows): a client that resumes an
//! unfinished request gets its tail and its result.
//!
//! Each stream keeps its newest `capacity` events; an id that is unknown,
//! malformed or evicted is an error, which rmcp answers with an empty 200.

use futures_util::Stream;
use rmcp::model::JsonRpcMessage;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::{EventId, EventStore, EventStream};
use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// The store of one server incarnation.
pub(super) struct SimStore {
    inner: Mutex<Inner>,
    capacity: usize,
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// Stream name (rmcp's) → its log.
    streams: BTreeMap<String, Log>,
    /// Event id → the stream it belongs to, for every event still kept.
    index: BTreeMap<u64, String>,
}

#[derive(Default)]
struct Log {
    events: VecDeque<(u64, ServerSseMessage)>,
    /// Its response went out: nothing follows.
    done: bool,
    /// Resumed readers waiting for the stream's next events.
    followers: Vec<mpsc::UnboundedSender<ServerSseMessage>>,
}

impl SimStore {
    pub fn new(capacity: usize) -> SimStore {
        SimStore {
            inner: Mutex::default(),
            capacity: capacity.max(1),
        }
    }
}

type Error = rmcp::transport::streamable_http_server::session::EventStoreError;

#[async_trait::async_trait]
impl EventStore for SimStore {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, Error> {
        let mut inner = self.inner.lock().expect("the store is never poisoned");
        inner.next += 1;
        let id = inner.next;
        let mut event = event.clone();
        event.event_id = Some(id.to_string());
        let ends = matches!(
            event.message.as_deref(),
            Some(JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
        );
        let Inner { streams, index, .. } = &mut *inner;
        let log = streams.entry(stream_id.to_string()).or_default();
        log.followers.retain(|f| f.send(event.clone()).is_ok());
        if ends {
            log.done = true;
            log.followers.clear();
        }
        log.events.push_back((id, event));
        index.insert(id, stream_id.to_string());
        while log.events.len() > self.capacity {
            if let Some((old, _)) = log.events.pop_front() {
                index.remove(&old);
            }
        }
        Ok(id.to_string())
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, Error> {
        let after: u64 = last_event_id
            .parse()
            .map_err(|_| format!("malformed event id {last_event_id:?}"))?;
        let mut inner = self.inner.lock().expect("the store is never poisoned");
        let stream = inner
            .index
            .get(&after)
            .cloned()
            .ok_or_else(|| format!("unknown or evicted event id {after}"))?;
        let log = inner
            .streams
            .get_mut(&stream)
            .expect("indexed streams exist");
        let (tx, rx) = mpsc::unbounded_channel();
        for (id, e) in &log.events {
            if *id > after {
                let _ = tx.send(e.clone());
            }
        }
        if !log.done {
            log.followers.push(tx);
        }
        Ok(Box::pin(Follow(rx)))
    }
}

/// A replay: what was stored, then what the stream produces next.
struct Follow(mpsc::UnboundedReceiver<ServerSseMessage>);

impl Stream for Follow {
    type Item = ServerSseMessage;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// The store as rmcp takes it.
pub(super) fn shared(capacity: usize) -> Arc<dyn EventStore> {
    Arc::new(SimStore::new(capacity))
}

//! The event store of the `rmcp-es` arm: an rmcp [`EventStore`] in memory,
//! as a server author would write one for the SDK. Event ids are one
//! counter over every stream of the incarnation (decimal, so globally
//! unique and deterministic: rmcp's own stream names are random UUIDs, and
//! this store never lets them reach the wire). Replay is strictly after
//! the named event, on that event's stream, and ends with what is stored,
//! as rmcp's published in-memory example store does: rmcp serves a resume
//! from the store alone, so a client that resumes an unfinished request
//! gets the tail stored so far, then the end of the response, and must
//! resume again for what the request produces later.
//!
//! Each session has its own handle ([`Registry::for_session`], given to
//! that session's rmcp manager by `sessions.rs`): it replays only the
//! session's own streams (another session's event id is unknown to it), and
//! the session's logs go when it closes ([`Registry::close`]). rmcp's
//! trait names streams, never sessions, so a store shared by every session
//! could do neither.
//!
//! Each stream keeps its newest `capacity` events; an id that is unknown,
//! malformed or evicted is an error, which rmcp answers with an empty 200.
//! Under `serve` all logs together hold at most `Exposure::store_bytes`
//! (the oldest event of any stream evicted first).

use rmcp::model::JsonRpcMessage;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::{EventId, EventStore, EventStream};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

/// A session as the store numbers them (0: requests without one, rmcp's
/// stateless path).
type Owner = u64;

/// Every session's logs in one incarnation.
pub(super) struct Registry {
    inner: Mutex<Inner>,
    capacity: usize,
    /// Most bytes all logs hold together (`serve`); `None`: no bound.
    max_bytes: Option<usize>,
}

#[derive(Default)]
struct Inner {
    next_event: u64,
    next_owner: Owner,
    /// Session → stream name (rmcp's) → its log.
    owners: BTreeMap<Owner, BTreeMap<String, Log>>,
    /// Event id → where it is kept, for every event still kept: in id
    /// order, so the first is the oldest.
    index: BTreeMap<u64, (Owner, String)>,
    /// Bytes the kept events weigh (counted only when bounded).
    bytes: usize,
}

#[derive(Default)]
struct Log {
    /// (id, event, its weight in bytes).
    events: VecDeque<(u64, ServerSseMessage, usize)>,
    /// Its response went out: nothing follows.
    done: bool,
}

impl Registry {
    /// An empty registry: `capacity` events per stream, `max_bytes` over all.
    pub fn new(capacity: usize, max_bytes: Option<usize>) -> Arc<Registry> {
        Arc::new(Registry {
            inner: Mutex::default(),
            capacity: capacity.max(1),
            max_bytes,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("the store is never poisoned")
    }

    /// A handle for a new session's manager.
    pub fn for_session(self: &Arc<Self>) -> Handle {
        let mut inner = self.lock();
        inner.next_owner += 1;
        Handle {
            registry: self.clone(),
            owner: inner.next_owner,
        }
    }

    /// The handle of requests without a session (rmcp's stateless path).
    pub fn sessionless(self: &Arc<Self>) -> Handle {
        Handle {
            registry: self.clone(),
            owner: 0,
        }
    }

    /// A session ended: its logs go.
    pub fn close(&self, handle: &Handle) {
        let mut inner = self.lock();
        let Inner {
            owners,
            index,
            bytes,
            ..
        } = &mut *inner;
        for log in owners
            .remove(&handle.owner)
            .into_iter()
            .flat_map(|o| o.into_values())
        {
            for (id, _, weight) in log.events {
                index.remove(&id);
                *bytes -= weight;
            }
        }
    }

    /// Events kept, over every stream (tests).
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().index.len()
    }

    /// Bytes the kept events weigh (tests).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn store(&self, owner: Owner, stream_id: &str, event: &ServerSseMessage) -> u64 {
        let mut inner = self.lock();
        inner.next_event += 1;
        let id = inner.next_event;
        let mut event = event.clone();
        event.event_id = Some(id.to_string());
        let ends = matches!(
            event.message.as_deref(),
            Some(JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
        );
        // Weighed only when bounded: serializing every event costs.
        let weight = self.max_bytes.map_or(0, |_| {
            event
                .message
                .as_deref()
                .and_then(|m| serde_json::to_string(m).ok())
                .map_or(0, |s| s.len())
                + stream_id.len()
        });
        let Inner {
            owners,
            index,
            bytes,
            ..
        } = &mut *inner;
        let log = owners
            .entry(owner)
            .or_default()
            .entry(stream_id.to_string())
            .or_default();
        if ends {
            log.done = true;
        }
        log.events.push_back((id, event, weight));
        index.insert(id, (owner, stream_id.to_string()));
        *bytes += weight;
        while log.events.len() > self.capacity {
            if let Some((old, _, w)) = log.events.pop_front() {
                index.remove(&old);
                *bytes -= w;
            }
        }
        if let Some(max) = self.max_bytes {
            inner.shed(max);
        }
        id
    }

    fn replay(&self, owner: Owner, last_event_id: &str) -> Result<EventStream, Error> {
        let after: u64 = last_event_id
            .parse()
            .map_err(|_| format!("malformed event id {last_event_id:?}"))?;
        let inner = self.lock();
        let unknown = || format!("unknown or evicted event id {after}");
        let (o, stream) = inner.index.get(&after).cloned().ok_or_else(unknown)?;
        // Another session's event is none of this one's business.
        if o != owner {
            return Err(unknown().into());
        }
        let log = inner
            .owners
            .get(&o)
            .and_then(|streams| streams.get(&stream))
            .expect("indexed streams exist");
        let tail: Vec<ServerSseMessage> = log
            .events
            .iter()
            .filter(|(id, _, _)| *id > after)
            .map(|(_, e, _)| e.clone())
            .collect();
        Ok(Box::pin(futures_util::stream::iter(tail)))
    }
}

impl Inner {
    /// Evicts the oldest events of any stream until at most `max` bytes
    /// are kept; a log left empty and done goes with its last event.
    fn shed(&mut self, max: usize) {
        while self.bytes > max {
            let Some((_, (owner, stream))) = self.index.pop_first() else {
                break;
            };
            let Some(streams) = self.owners.get_mut(&owner) else {
                continue;
            };
            if let Some(log) = streams.get_mut(&stream) {
                if let Some((_, _, w)) = log.events.pop_front() {
                    self.bytes -= w;
                }
                if log.events.is_empty() && log.done {
                    streams.remove(&stream);
                }
            }
        }
    }
}

type Error = rmcp::transport::streamable_http_server::session::EventStoreError;

/// One session's view of the registry: what rmcp's manager of that session
/// takes as its event store.
#[derive(Clone)]
pub(super) struct Handle {
    registry: Arc<Registry>,
    owner: Owner,
}

#[async_trait::async_trait]
impl EventStore for Handle {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, Error> {
        Ok(self
            .registry
            .store(self.owner, stream_id, event)
            .to_string())
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, Error> {
        self.registry.replay(self.owner, last_event_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage};

    fn event(text: &str) -> ServerSseMessage {
        let m: ServerJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": text}
        }))
        .expect("a notification");
        assert!(matches!(m, JsonRpcMessage::Notification(_)));
        ServerSseMessage::from_message(m)
    }

    #[tokio::test]
    async fn a_session_replays_its_own_events_and_its_logs_go_when_it_closes() {
        let reg = Registry::new(8, None);
        let (a, b) = (reg.for_session(), reg.for_session());
        let a1 = a.store_event("s", &event("x")).await.unwrap();
        a.store_event("s", &event("y")).await.unwrap();
        let b1 = b.store_event("t", &event("z")).await.unwrap();
        assert_eq!((a1.as_str(), b1.as_str()), ("1", "3"), "one counter");
        let mut r = a.replay_events_after(&a1).await.unwrap();
        assert_eq!(r.next().await.unwrap().event_id.as_deref(), Some("2"));
        assert!(
            a.replay_events_after(&b1).await.is_err(),
            "another session's event is unknown here"
        );
        reg.close(&a);
        assert_eq!(reg.kept(), 1, "only b's event is left");
        assert!(b.replay_events_after(&b1).await.is_ok());
    }

    #[tokio::test]
    async fn a_replay_of_an_unfinished_stream_ends_with_what_is_stored() {
        let reg = Registry::new(8, None);
        let a = reg.for_session();
        let first = a.store_event("s", &event("x")).await.unwrap();
        a.store_event("s", &event("y")).await.unwrap();
        let mut r = a.replay_events_after(&first).await.unwrap();
        a.store_event("s", &event("z")).await.unwrap();
        assert_eq!(r.next().await.unwrap().event_id.as_deref(), Some("2"));
        assert!(
            r.next().await.is_none(),
            "the replay ends with the tail stored when it was asked for: later events need another resume"
        );
        let mut again = a.replay_events_after("2").await.unwrap();
        assert_eq!(again.next().await.unwrap().event_id.as_deref(), Some("3"));
    }

    #[tokio::test]
    async fn bounded_in_bytes_the_oldest_event_of_any_stream_goes_first() {
        let probe = Registry::new(8, Some(usize::MAX));
        probe
            .for_session()
            .store_event("s", &event("x"))
            .await
            .unwrap();
        let one = probe.bytes();
        assert!(one > 0, "weighed when bounded");
        let reg = Registry::new(8, Some(2 * one));
        let (a, b) = (reg.for_session(), reg.for_session());
        let a1 = a.store_event("s", &event("x")).await.unwrap();
        let b1 = b.store_event("s", &event("x")).await.unwrap();
        b.store_event("s", &event("x")).await.unwrap();
        assert_eq!(reg.kept(), 2);
        assert!(a.replay_events_after(&a1).await.is_err(), "evicted");
        assert!(b.replay_events_after(&b1).await.is_ok());
        assert_eq!(reg.bytes(), 2 * one);
    }
}

//! rmcp's session manager as the rmcp arms run it: one rmcp
//! `LocalSessionManager` per session, behind a [`SessionManager`] that
//! routes each call to its session's. rmcp's own behaviour is unchanged
//! (the same manager, worker and cache per session); what this adds is a
//! place that knows which session things belong to:
//! - `rmcp-es`: each session's manager gets its own handle on the event
//!   store ([`store::Registry`]), so a session replays only its own events
//!   and its logs go when it closes (rmcp's `EventStore` names streams,
//!   never sessions);
//! - when rmcp closes a session (DELETE, its worker ending, idle past
//!   rmcp's `keep_alive`), `on_close` runs: the wire-id layer forgets the
//!   session's ids and, under `serve`, the ledger the session's effects.

use super::store::{self, Registry};
use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    EventId, LocalSessionHandle, LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
    SessionConfig, SessionError, StreamableHttpMessageReceiver,
};
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use rmcp::transport::WorkerTransport;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// What runs when rmcp closes a session (given rmcp's id for it).
pub(super) type OnClose = Box<dyn Fn(&str) + Send + Sync>;

/// Every live session's own rmcp manager.
pub(super) struct Sessions {
    live: Mutex<BTreeMap<SessionId, Live>>,
    config: SessionConfig,
    /// The event store (`rmcp-es`), one handle per session.
    store: Option<Arc<Registry>>,
    on_close: OnClose,
}

struct Live {
    manager: Arc<LocalSessionManager>,
    store: Option<store::Handle>,
}

impl Sessions {
    /// Sessions configured by `config`, with an event store of `store`
    /// when given.
    pub fn new(config: SessionConfig, store: Option<Arc<Registry>>, on_close: OnClose) -> Self {
        Sessions {
            live: Mutex::default(),
            config,
            store,
            on_close,
        }
    }

    /// The session's manager, or rmcp's own error for an unknown session.
    fn of(&self, id: &SessionId) -> Result<Arc<LocalSessionManager>, LocalSessionManagerError> {
        let live = self.live.lock().expect("never poisoned");
        live.get(id)
            .map(|l| l.manager.clone())
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }

    /// The session's handle in its manager: what the stream calls use
    /// (rmcp's manager answers them through it too; called through the
    /// manager, the stream would borrow it).
    async fn handle(&self, id: &SessionId) -> Result<LocalSessionHandle, LocalSessionManagerError> {
        let manager = self.of(id)?;
        let handle = manager.sessions.read().await.get(id).cloned();
        handle.ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let mut manager = LocalSessionManager::default();
        manager.session_config = self.config.clone();
        let store = self.store.as_ref().map(Registry::for_session);
        if let Some(h) = &store {
            manager = manager.with_event_store(Arc::new(h.clone()));
        }
        let (id, transport) = manager.create_session().await?;
        let live = Live {
            manager: Arc::new(manager),
            store,
        };
        self.live
            .lock()
            .expect("never poisoned")
            .insert(id.clone(), live);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.of(id)?.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.live.lock().expect("never poisoned").contains_key(id))
    }

    /// DELETE, or the session's worker ended (rmcp calls this then too):
    /// everything kept for the session goes.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let live = self.live.lock().expect("never poisoned").remove(id);
        let Some(live) = live else {
            return Ok(());
        };
        if let (Some(reg), Some(h)) = (&self.store, &live.store) {
            reg.close(h);
        }
        (self.on_close)(id);
        live.manager.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // As rmcp's manager does it.
        let handle = self.handle(id).await?;
        let receiver = handle.establish_request_wise_channel().await?;
        handle
            .push_message(message, receiver.http_request_id)
            .await?;
        Ok(Receive(receiver))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.of(id)?.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let receiver = self.handle(id).await?.establish_common_channel().await?;
        Ok(Receive(receiver))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // As rmcp's manager does it: from the store when there is one
        // (this session's handle on it), else from the session's cache.
        let store = self
            .live
            .lock()
            .expect("never poisoned")
            .get(id)
            .map(|l| l.store.clone())
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        if let Some(h) = store {
            let replay = h
                .replay_events_after(&last_event_id)
                .await
                .map_err(SessionError::EventStore)?;
            return Ok(replay.left_stream());
        }
        let handle = self.handle(id).await?;
        let receiver = handle.resume(last_event_id.parse::<EventId>()?).await?;
        Ok(Receive(receiver).right_stream())
    }

    /// rmcp asks whether a store exists (priming events, `Allow`) and uses
    /// this one for requests without a session (its stateless path).
    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        let store = self.store.as_ref()?;
        Some(Arc::new(store.sessionless()))
    }
}

/// A session channel's receiving end as a stream.
struct Receive(StreamableHttpMessageReceiver);

impl Stream for Receive {
    type Item = ServerSseMessage;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.inner.poll_recv(cx)
    }
}

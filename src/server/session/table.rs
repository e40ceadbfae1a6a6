//! The server's sessions by id: found by hashing the id, walked in the
//! id's order.
//!
//! Every request, every event written and every tool step looks its
//! session up, so a lookup must cost the same at 10 sessions as at 10,000:
//! an ordered map compares the id at each level of its tree, and each
//! comparison reads another session's id from wherever it was allocated
//! (at 10,000 sessions, a cache miss each). The few walks over every
//! session (idle expiry, the clock resource's notifications, publishing to
//! the shared store) go in the ids' order, as they did when the table was
//! an ordered map, so every trace is the same.

use super::Session;
use crate::history::SessionId;
use rustc_hash::FxHashMap;
use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::hash::Hash;

/// Sessions by id, with the ids' order kept beside them for walks.
#[derive(Default)]
pub(crate) struct SessionTable {
    by_id: FxHashMap<SessionId, Session>,
    order: BTreeSet<SessionId>,
}

impl SessionTable {
    pub fn get<Q>(&self, id: &Q) -> Option<&Session>
    where
        SessionId: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.by_id.get(id)
    }

    pub fn get_mut<Q>(&mut self, id: &Q) -> Option<&mut Session>
    where
        SessionId: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.by_id.get_mut(id)
    }

    pub fn get_key_value<Q>(&self, id: &Q) -> Option<(&SessionId, &Session)>
    where
        SessionId: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.by_id.get_key_value(id)
    }

    pub fn contains_key<Q>(&self, id: &Q) -> bool
    where
        SessionId: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.by_id.contains_key(id)
    }

    /// Adds `s` under `id`, giving back the session it replaces.
    pub fn insert(&mut self, id: SessionId, s: Session) -> Option<Session> {
        self.order.insert(id.clone());
        self.by_id.insert(id, s)
    }

    pub fn remove<Q>(&mut self, id: &Q) -> Option<Session>
    where
        SessionId: Borrow<Q>,
        Q: Hash + Eq + Ord + ?Sized,
    {
        let s = self.by_id.remove(id)?;
        self.order.remove(id);
        Some(s)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Every session with its id, in the ids' order.
    pub fn iter(&self) -> impl Iterator<Item = (&SessionId, &Session)> {
        self.order
            .iter()
            .filter_map(|id| self.by_id.get_key_value(id))
    }

    /// Every session, in the ids' order.
    pub fn values(&self) -> impl Iterator<Item = &Session> {
        self.iter().map(|(_, s)| s)
    }

    /// Calls `f` on every session, in the ids' order.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Session)) {
        for id in &self.order {
            if let Some(s) = self.by_id.get_mut(id) {
                f(s);
            }
        }
    }
}

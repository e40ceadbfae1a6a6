//! The dedup table (guarded only): `Idempotency-Key` → the execution it
//! named. Server-wide, bounded (oldest key evicted first), lost on restart.

use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

/// Where a key's execution stands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum KeyState {
    /// Executing now.
    InFlight,
    /// Completed with this JSON-RPC result.
    Done(Value),
}

/// What the table says about a key presented with some arguments.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Lookup {
    /// Never seen (or forgotten).
    Unknown,
    /// Seen with other arguments: 422.
    OtherArguments,
    /// Seen with these arguments.
    Known(KeyState),
}

struct Entry {
    /// Tool name and arguments, as first presented.
    call: Value,
    state: KeyState,
}

pub(crate) struct DedupTable {
    entries: BTreeMap<String, Entry>,
    order: VecDeque<String>,
    capacity: usize,
}

impl DedupTable {
    pub fn new(capacity: usize) -> Self {
        DedupTable {
            entries: BTreeMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn lookup(&self, key: &str, call: &Value) -> Lookup {
        match self.entries.get(key) {
            None => Lookup::Unknown,
            Some(e) if &e.call != call => Lookup::OtherArguments,
            Some(e) => Lookup::Known(e.state.clone()),
        }
    }

    /// Starts an execution under `key`.
    pub fn begin(&mut self, key: &str, call: Value) {
        if self.entries.contains_key(key) {
            return;
        }
        while self.entries.len() >= self.capacity {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.entries.remove(&old);
        }
        self.order.push_back(key.to_string());
        self.entries.insert(
            key.to_string(),
            Entry {
                call,
                state: KeyState::InFlight,
            },
        );
    }

    /// Completes the execution under `key` (no-op if forgotten meanwhile).
    pub fn complete(&mut self, key: &str, result: Value) {
        if let Some(e) = self.entries.get_mut(key) {
            e.state = KeyState::Done(result);
        }
    }

    /// Forgets a key whose execution ended without a result (cancelled),
    /// so a retry runs it.
    pub fn abandon(&mut self, key: &str) {
        if self.entries.remove(key).is_some() {
            self.order.retain(|k| k != key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_move_through_their_states_and_evict_oldest_first() {
        let mut t = DedupTable::new(2);
        let call = json!({"tag": "a"});
        assert_eq!(t.lookup("k1", &call), Lookup::Unknown);
        t.begin("k1", call.clone());
        assert_eq!(t.lookup("k1", &call), Lookup::Known(KeyState::InFlight));
        assert_eq!(t.lookup("k1", &json!({"tag": "b"})), Lookup::OtherArguments);
        t.complete("k1", json!(1));
        assert_eq!(
            t.lookup("k1", &call),
            Lookup::Known(KeyState::Done(json!(1)))
        );
        t.begin("k2", call.clone());
        t.begin("k3", call.clone());
        assert_eq!(
            t.lookup("k1", &call),
            Lookup::Unknown,
            "oldest evicted at capacity"
        );
        assert_eq!(t.lookup("k3", &call), Lookup::Known(KeyState::InFlight));
        t.abandon("k3");
        assert_eq!(t.lookup("k3", &call), Lookup::Unknown);
    }
}

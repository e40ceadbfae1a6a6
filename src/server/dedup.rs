//! The dedup table (every arm that honors keys): `Idempotency-Key` → the
//! execution it named, scoped to the principal that presented it (its bearer
//! token, else its session): another principal's same key is another key.
//! Server-wide, bounded (oldest key evicted first), lost on restart unless
//! `durable_dedup` keeps completed keys beside the ledger (in-flight keys
//! never outlive their incarnation: its executions died with it). Beside it,
//! what both transports share about keys: the principal a request acts
//! for, the two looks, the 422 and 409 refusals, a replayed result.

use crate::base::bounded::Bounded;
use crate::history::{Record, SessionId};
use crate::ledger::{Ledger, Principal, Scoped};
use crate::protocol::jsonrpc::{self, RequestId};
use crate::protocol::{mcp, Json};
use crate::server::http::body::ServerBody;
use crate::server::http::respond::error;
use crate::server::Shared;
use http::{Response, StatusCode};
use serde_json::{json, Value};
use std::rc::Rc;

/// Who a call acts for and the idempotency key it presents (none without
/// one, or on an arm that ignores keys): what the key table is read by.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keyed<'a> {
    /// The principal: the bearer token, else the session.
    pub who: &'a Rc<str>,
    /// The key.
    pub key: Option<&'a str>,
}

impl<'a> Keyed<'a> {
    /// `who`, presenting `key`.
    pub(crate) fn new(who: &'a Rc<str>, key: Option<&'a str>) -> Self {
        Keyed { who, key }
    }
}

/// Where a key's execution stands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum KeyState {
    /// Executing now.
    InFlight,
    /// Completed with this JSON-RPC result.
    Done(Json),
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

impl Entry {
    /// What the entry holds in strings: its key, principal, call and
    /// stored result (the ledger's budget adds the maps' overhead).
    fn bytes(&self, key: &Scoped) -> usize {
        let result = match &self.state {
            KeyState::InFlight => 0,
            KeyState::Done(r) => r.text().len(),
        };
        key.0.len() + key.1.len() + self.call.to_string().len() + result
    }
}

pub(crate) struct DedupTable {
    entries: Bounded<Scoped, Entry>,
    /// Where completed keys are also kept (`durable_dedup`).
    durable: Option<Ledger>,
    /// A byte-bounded ledger (`serve`) whose budget the entries share with
    /// it: each is charged there, and dropped here when it evicts them.
    budget: Option<Ledger>,
}

impl DedupTable {
    pub fn new(capacity: usize) -> Self {
        DedupTable {
            entries: Bounded::new(capacity),
            durable: None,
            budget: None,
        }
    }

    /// The same table with its entries charged to `ledger`'s byte budget
    /// when it has one ([`Ledger::bound_bytes`]).
    pub fn charged_to(self, ledger: &Ledger) -> Self {
        DedupTable {
            budget: ledger.bounded().then(|| ledger.clone()),
            ..self
        }
    }

    /// Charges `key`'s entry as it stands now, then drops what the budget
    /// evicted (this entry among them only when it alone exceeds it).
    fn charge(&mut self, key: &Scoped) {
        let Some(ledger) = &self.budget else {
            return;
        };
        if let Some(e) = self.entries.get(key) {
            ledger.charge_key(key, e.bytes(key));
        }
        self.drop_evicted();
    }

    /// Drops the entries the budget evicted (whoever's charge did it: the
    /// ledger's own growth evicts keys too, dropped at the table's next
    /// use).
    pub fn drop_evicted(&mut self) {
        if let Some(ledger) = &self.budget {
            for k in ledger.take_evicted_keys() {
                self.entries.remove(&k);
            }
        }
    }

    /// Removes `key`'s entry and its charge.
    fn remove(&mut self, key: &Scoped) {
        self.entries.remove(key);
        if let Some(ledger) = &self.budget {
            ledger.release_key(key);
        }
    }

    /// A table whose completed keys are kept in `ledger` too, and looked
    /// up there when this incarnation does not know them.
    pub fn durable(capacity: usize, ledger: Ledger) -> Self {
        DedupTable {
            durable: Some(ledger),
            ..DedupTable::new(capacity)
        }
    }

    fn scoped(who: &Principal, key: &str) -> Scoped {
        (who.clone(), key.to_string())
    }

    pub fn lookup(&self, who: &Principal, key: &str, call: &Value) -> Lookup {
        match self.entries.get(&Self::scoped(who, key)) {
            None => match self.durable.as_ref().and_then(|l| l.durable_key(who, key)) {
                None => Lookup::Unknown,
                Some((c, _)) if &c != call => Lookup::OtherArguments,
                Some((_, result)) => Lookup::Known(KeyState::Done(result)),
            },
            Some(e) if &e.call != call => Lookup::OtherArguments,
            Some(e) => Lookup::Known(e.state.clone()),
        }
    }

    /// Starts an execution under `who`'s `key`.
    pub fn begin(&mut self, who: &Principal, key: &str, call: Value) {
        let key = Self::scoped(who, key);
        if !self.entries.contains_key(&key) {
            let entry = Entry {
                call,
                state: KeyState::InFlight,
            };
            for old in self.entries.insert(key.clone(), entry) {
                self.remove(&old);
            }
            self.charge(&key);
        }
    }

    /// Completes the execution under `who`'s `key` (no-op if forgotten
    /// meanwhile).
    pub fn complete(&mut self, who: &Principal, key: &str, result: Json) {
        let capacity = self.entries.capacity();
        let scoped = Self::scoped(who, key);
        if let Some(e) = self.entries.get_mut(&scoped) {
            if let Some(l) = &self.durable {
                l.keep_key(who, key, e.call.clone(), result.clone(), capacity);
            }
            e.state = KeyState::Done(result);
            self.charge(&scoped);
        }
    }

    /// Takes the shared store's entry for `who`'s `key` (a replica on a
    /// shared store), over whatever this table held for it.
    pub fn adopt(&mut self, who: &Principal, key: &str, call: Value, state: KeyState) {
        let key = Self::scoped(who, key);
        for old in self.entries.insert(key.clone(), Entry { call, state }) {
            self.remove(&old);
        }
        self.charge(&key);
    }

    /// Forgets a key whose execution ended without a result (cancelled),
    /// so a retry runs it.
    pub fn abandon(&mut self, who: &Principal, key: &str) {
        let key = Self::scoped(who, key);
        if let Some(l) = &self.durable {
            l.forget_kept_key(&key);
        }
        self.remove(&key);
    }
}

/// What the key table says about `who`'s `key` presented with `call`.
pub(super) fn key_lookup(shared: &Shared, who: &Rc<str>, key: &str, call: &Value) -> Lookup {
    let dedup = &mut shared.state.borrow_mut().dedup;
    dedup.drop_evicted();
    dedup.lookup(who, key, call)
}

/// 422: the key was used with other arguments.
pub(super) fn key_reused(id: RequestId) -> Response<ServerBody> {
    error(
        StatusCode::UNPROCESSABLE_ENTITY,
        Some(id),
        jsonrpc::KEY_REUSED,
        "Idempotency-Key reused with other arguments: use a new key for a new operation",
    )
}

/// 409 without a resume hint: the key's execution is still running.
pub(super) fn key_in_flight(id: RequestId) -> Response<ServerBody> {
    error(
        StatusCode::CONFLICT,
        Some(id),
        jsonrpc::CONFLICT,
        "an execution under this Idempotency-Key is in flight: wait for its result",
    )
}

/// A completed key's stored result for the retry `id`, marked as a replay:
/// the client knows it missed this execution's progress (an announced
/// loss, not a silent one).
pub(super) fn replayed_result(
    shared: &Shared,
    sid: &SessionId,
    id: &RequestId,
    key: &str,
    result: Json,
) -> Json {
    let mut v = result.to_value();
    let result = match v.as_object_mut() {
        Some(obj) => {
            obj.insert("_meta".into(), json!({ mcp::REPLAYED: true }));
            Json::from(v)
        }
        None => result,
    };
    shared.history.record(Record::DedupReplayed {
        session: sid.clone(),
        rpc_id: id.clone(),
        key: key.to_string(),
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_move_through_their_states_and_evict_oldest_first() {
        let mut t = DedupTable::new(2);
        let p: Principal = "p".into();
        let call = json!({"tag": "a"});
        assert_eq!(t.lookup(&p, "k1", &call), Lookup::Unknown);
        t.begin(&p, "k1", call.clone());
        assert_eq!(t.lookup(&p, "k1", &call), Lookup::Known(KeyState::InFlight));
        assert_eq!(
            t.lookup(&p, "k1", &json!({"tag": "b"})),
            Lookup::OtherArguments
        );
        t.complete(&p, "k1", json!(1).into());
        assert_eq!(
            t.lookup(&p, "k1", &call),
            Lookup::Known(KeyState::Done(json!(1).into()))
        );
        t.begin(&p, "k2", call.clone());
        t.begin(&p, "k3", call.clone());
        assert_eq!(
            t.lookup(&p, "k1", &call),
            Lookup::Unknown,
            "oldest evicted at capacity"
        );
        assert_eq!(t.lookup(&p, "k3", &call), Lookup::Known(KeyState::InFlight));
        t.abandon(&p, "k3");
        assert_eq!(t.lookup(&p, "k3", &call), Lookup::Unknown);
    }

    #[test]
    fn a_key_is_scoped_to_its_principal() {
        let mut t = DedupTable::new(8);
        let (alice, bob): (Principal, Principal) = ("alice".into(), "bob".into());
        let call = json!({"tag": "a"});
        t.begin(&alice, "k", call.clone());
        t.complete(&alice, "k", json!(1).into());
        assert_eq!(
            t.lookup(&alice, "k", &call),
            Lookup::Known(KeyState::Done(json!(1).into()))
        );
        assert_eq!(
            t.lookup(&bob, "k", &call),
            Lookup::Unknown,
            "another principal's same key is another key"
        );
        assert_eq!(
            t.lookup(&bob, "k", &json!({"tag": "b"})),
            Lookup::Unknown,
            "nor does it conflict on arguments"
        );
        t.begin(&bob, "k", json!({"tag": "b"}));
        t.abandon(&bob, "k");
        assert_eq!(
            t.lookup(&alice, "k", &call),
            Lookup::Known(KeyState::Done(json!(1).into())),
            "forgetting bob's key leaves alice's"
        );
    }

    #[test]
    fn served_entries_share_the_ledgers_byte_budget() {
        let h = crate::history::History::new(Rc::new(|| std::time::Duration::ZERO));
        let ledger = Ledger::new(h);
        let big = "x".repeat(1_000);
        let call = json!({ "tag": big });
        let p: Principal = "p".into();
        let one = (p.len() + 2 + call.to_string().len() + crate::ledger::ENTRY_OVERHEAD) * 3;
        ledger.bound_bytes(one, one);
        let mut t = DedupTable::new(100).charged_to(&ledger);
        for k in ["k1", "k2", "k3", "k4"] {
            t.begin(&p, k, call.clone());
        }
        assert!(ledger.held_bytes() <= one);
        assert_eq!(
            t.lookup(&p, "k1", &call),
            Lookup::Unknown,
            "evicted by bytes"
        );
        assert_eq!(t.lookup(&p, "k4", &call), Lookup::Known(KeyState::InFlight));
        // The ledger's own growth evicts keys too; the table drops them at
        // its next use.
        let id = RequestId::Num(1);
        ledger.execute(&big, &p, None, &id, false);
        t.drop_evicted();
        assert_eq!(t.lookup(&p, "k2", &call), Lookup::Unknown);
        assert!(ledger.held_bytes() <= one);
        t.abandon(&p, "k4");
        t.abandon(&p, "k3");
        let left = ledger.held_bytes();
        assert_eq!(
            left,
            1_000 * 2 + 1 + 2 * crate::ledger::ENTRY_OVERHEAD,
            "the call alone"
        );
        // Unbounded (the simulator): not charged, never evicted but by count.
        let mut free = DedupTable::new(100).charged_to(&Ledger::new(crate::history::History::new(
            Rc::new(|| std::time::Duration::ZERO),
        )));
        for k in ["k1", "k2", "k3", "k4"] {
            free.begin(&p, k, call.clone());
        }
        assert_eq!(
            free.lookup(&p, "k1", &call),
            Lookup::Known(KeyState::InFlight)
        );
    }
}

//! How a session ends, below every handler that ends one: deleted or
//! idle past its bound ([`end_session`]), or, for a 2026-07-28 request's
//! context, released once nothing runs in it ([`release`]).

use super::Scope;
use crate::history::{Record, ServerClose, SessionId};
use crate::server::Shared;

/// Ends a session (DELETE, idle expiry): closes its connections, cancels
/// its running tools; exposed, the ledger forgets what ran for it.
pub(in crate::server) fn end_session(shared: &Shared, sid: &SessionId) {
    let Some(sess) = shared.state.borrow_mut().sessions.remove(sid) else {
        return;
    };
    for (s, c) in sess.conns() {
        shared.history.record(Record::ServerClosed {
            session: sid.clone(),
            stream: s,
            conn: c,
            why: ServerClose::SessionDeleted,
        });
        shared.close_conn(c);
    }
    for f in sess.in_flight.values().flatten() {
        f.cancelled.set(true);
    }
    if shared.exposure.ledger_bytes.is_some() {
        shared.ledger.forget_principal(sid);
    }
    shared.history.record(Record::SessionDeleted {
        session: sid.clone(),
    });
}

/// Ends a request's context once nothing runs in it and no connection
/// writes it (a no-op for any other session).
pub(in crate::server) fn release(shared: &Shared, sid: &SessionId) {
    let mut st = shared.state.borrow_mut();
    let done = st.sessions.get(sid).is_some_and(|s| {
        s.scope == Scope::Request && s.in_flight.is_empty() && s.conns().is_empty()
    });
    if done {
        st.sessions.remove(sid);
    }
}

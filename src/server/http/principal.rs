//! Who a request is: its `Authorization: Bearer` token, the principal it
//! acts for (keys are per principal), the peer address it came from. The
//! key table, the holds and session admission all ask; none of them owns
//! the answer.

use crate::history::{ConnId, SessionId};
use http::HeaderMap;
use std::net::IpAddr;
use std::rc::Rc;

/// Who a request acts for (keys per principal): its
/// `Authorization: Bearer` token when it has one, else its session.
pub(in crate::server) fn principal(h: &HeaderMap, sid: &SessionId) -> Rc<str> {
    bearer(h).unwrap_or_else(|| sid.clone())
}

/// The request's `Authorization: Bearer` token, if any.
pub(in crate::server) fn bearer(h: &HeaderMap) -> Option<Rc<str>> {
    h.get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| Rc::from(t.trim()))
}

/// The peer address of the connection a request arrived on, as a request
/// extension (`None` when the listener does not know it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer(pub Option<IpAddr>);

/// Where a request came from: the connection it arrived on and that
/// connection's peer address (`None` when the listener does not know it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin {
    pub conn: ConnId,
    pub peer: Option<IpAddr>,
}

impl Origin {
    /// A request on `conn` whose extensions are `ext` (its peer address).
    pub(in crate::server) fn of(conn: ConnId, ext: &http::Extensions) -> Origin {
        Origin {
            conn,
            peer: peer_of(ext),
        }
    }
}

/// The peer address a request's extensions carry.
pub(in crate::server) fn peer_of(ext: &http::Extensions) -> Option<IpAddr> {
    ext.get::<Peer>().and_then(|p| p.0)
}

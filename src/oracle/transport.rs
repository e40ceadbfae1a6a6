//! The per-client metrics that only the built-in server's records can give,
//! in one pass: Rule T's requests or notifications served under a
//! negotiation made on another transport (`capability_violations`), events
//! replayed from a cursor of another namespace that were not owed, plus
//! owed events such a replay skipped (`foreign_cursor_replays`), and the
//! guard's rejections by reason. The failures these lead to are judged
//! black-box.

use crate::history::{
    ClientRecord, Entry, EventKind, Rec, Record, SessionId, StreamKind, Transport,
};
use std::collections::{BTreeMap, BTreeSet};

/// Which events (by the server's id) clients received, and when first. A
/// legacy client numbers the events of its stream 1, 2, 3…, the server in
/// the session's own namespace; this maps one to the other.
#[derive(Default)]
pub(super) struct Receipts {
    streams: BTreeSet<(SessionId, u32)>,
    ids: BTreeMap<SessionId, Vec<u64>>,
    /// (session, server event id) → trace position of its first receipt.
    first: BTreeMap<(SessionId, u64), u64>,
}

impl Receipts {
    /// Learns from one entry: a server record (legacy numbering) or a
    /// client's receipt.
    pub fn observe(&mut self, e: &Entry) {
        match &e.record {
            Rec::Server(r) => self.observe_server(r),
            Rec::Client(ClientRecord::Received {
                session,
                event,
                transport,
                ..
            }) => {
                if let Some(id) = self.server_id(session, *event, *transport) {
                    self.first.entry((session.clone(), id)).or_insert(e.seq);
                }
            }
            _ => {}
        }
    }

    /// Whether a client received this event (server id).
    pub fn received(&self, ev: &(SessionId, u64)) -> bool {
        self.first.contains_key(ev)
    }

    fn observe_server(&mut self, r: &Record) {
        match r {
            Record::StreamOpened {
                session,
                stream,
                kind: StreamKind::Legacy,
                ..
            } => {
                self.streams.insert((session.clone(), *stream));
            }
            Record::Produced {
                session,
                stream,
                event,
                ..
            } if self.streams.contains(&(session.clone(), *stream)) => {
                self.ids.entry(session.clone()).or_default().push(*event);
            }
            _ => {}
        }
    }

    /// The server's id of an event a client received.
    fn server_id(&self, session: &SessionId, event: u64, transport: Transport) -> Option<u64> {
        match transport {
            Transport::Streamable => Some(event),
            Transport::Legacy => self
                .ids
                .get(session)
                .and_then(|v| v.get((event as usize).wrapping_sub(1)))
                .copied(),
        }
    }
}

/// What the server's records say about one client.
#[derive(Default)]
pub(super) struct ServerSide {
    pub capability_violations: u64,
    pub foreign_cursor_replays: u64,
    /// Events written again from the store on resumes.
    pub replayed_events: u64,
    /// Guard rejections by reason.
    pub rejections: BTreeMap<String, u64>,
}

/// Per client, what the server's records say.
pub(super) fn server_side(entries: &[Entry]) -> BTreeMap<u32, ServerSide> {
    let mut rejections: Vec<(SessionId, &'static str)> = Vec::new();
    let mut client_of_session: BTreeMap<SessionId, u32> = BTreeMap::new();
    let mut receipts = Receipts::default();
    let mut issued: BTreeMap<SessionId, Transport> = BTreeMap::new();
    let mut mapped: BTreeSet<SessionId> = BTreeSet::new();
    let mut notifications: BTreeSet<(SessionId, u64)> = BTreeSet::new();
    let mut served_across: Vec<SessionId> = Vec::new();
    let mut switch_cursor: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    // (session, stream, conn, resume seq, replayed-from)
    let mut foreign: Vec<(SessionId, u32, u64, u64, u64)> = Vec::new();
    let mut replayed: BTreeMap<(SessionId, u64), Vec<u64>> = BTreeMap::new();
    for e in entries {
        receipts.observe(e);
        match &e.record {
            Rec::Client(ClientRecord::Session { client, session }) => {
                client_of_session.insert(session.clone(), *client);
            }
            Rec::Client(ClientRecord::Switched { client, cursor, .. }) => {
                switch_cursor.insert(*client, *cursor);
            }
            Rec::Server(r) => {
                match r {
                    Record::Decision {
                        session, decision, ..
                    } => {
                        if let Some(reason) = decision.reason {
                            rejections.push((session.clone(), reason));
                        }
                    }
                    Record::SessionCreated { session, transport } => {
                        issued.insert(session.clone(), *transport);
                    }
                    Record::MappingApplied { session, .. } => {
                        mapped.insert(session.clone());
                    }
                    Record::Responded {
                        session: Some(session),
                        status,
                        transport,
                        request: true,
                        ..
                    } if (200..300).contains(status)
                        && issued.get(session).is_some_and(|t| t != transport)
                        && !mapped.contains(session) =>
                    {
                        served_across.push(session.clone());
                    }
                    Record::Written {
                        session,
                        event,
                        conn,
                        replay,
                        transport,
                        ..
                    } => {
                        if notifications.contains(&(session.clone(), *event))
                            && issued.get(session).is_some_and(|t| t != transport)
                            && !mapped.contains(session)
                        {
                            served_across.push(session.clone());
                        }
                        if *replay {
                            replayed
                                .entry((session.clone(), *conn))
                                .or_default()
                                .push(*event);
                        }
                    }
                    Record::Resumed {
                        session,
                        stream,
                        conn,
                        from,
                        ..
                    } if issued.get(session) == Some(&Transport::Legacy)
                        && !mapped.contains(session) =>
                    {
                        // A streamable resume of a legacy session, no mapping:
                        // its cursor came from the other namespace.
                        foreign.push((session.clone(), *stream, *conn, e.seq, *from));
                    }
                    Record::Produced {
                        session,
                        event,
                        kind: EventKind::Notification,
                        ..
                    } => {
                        notifications.insert((session.clone(), *event));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let mut out: BTreeMap<u32, ServerSide> = BTreeMap::new();
    for (session, reason) in rejections {
        if let Some(&c) = client_of_session.get(&session) {
            *out.entry(c)
                .or_default()
                .rejections
                .entry(reason.to_string())
                .or_insert(0) += 1;
        }
    }
    for ((session, _), evs) in &replayed {
        if let Some(&c) = client_of_session.get(session) {
            out.entry(c).or_default().replayed_events += evs.len() as u64;
        }
    }
    for session in served_across {
        if let Some(&c) = client_of_session.get(&session) {
            out.entry(c).or_default().capability_violations += 1;
        }
    }
    for (session, stream, conn, at, from) in foreign {
        let Some(&c) = client_of_session.get(&session) else {
            continue;
        };
        let mut n = 0;
        // Replayed although the client already had it: not owed.
        for ev in replayed.get(&(session.clone(), conn)).into_iter().flatten() {
            if receipts
                .first
                .get(&(session.clone(), *ev))
                .is_some_and(|&r| r < at)
            {
                n += 1;
            }
        }
        // Owed but skipped: after the client's true position, at or before
        // where the foreign cursor started the replay, never received.
        let truth = switch_cursor.get(&c).copied().flatten();
        if let (Some(l), true) = (truth, receipts.streams.contains(&(session.clone(), stream))) {
            let ids = receipts.ids.get(&session).cloned().unwrap_or_default();
            let true_pos = ids.get((l as usize).wrapping_sub(1)).copied().unwrap_or(0);
            n += ids
                .iter()
                .filter(|&&id| {
                    id > true_pos && id <= from && !receipts.received(&(session.clone(), id))
                })
                .count() as u64;
        }
        out.entry(c).or_default().foreign_cursor_replays += n;
    }
    out
}

//! The per-client metrics that only the built-in server's records can give,
//! in one pass: Rule T's requests or notifications served under a
//! negotiation made on another transport (`capability_violations`), events
//! replayed from a cursor of another namespace that were not owed, plus
//! owed events such a replay skipped (`foreign_cursor_replays`), and the
//! guard's rejections by reason. The failures these lead to are judged
//! black-box.

use super::intern::{FxMap, Sessions};
use crate::history::{ClientRecord, Entry, EventKind, Rec, Record, StreamKind, Transport};
use std::collections::BTreeMap;

/// Which events (by the server's id) clients received, and when first. A
/// legacy client numbers the events of its stream 1, 2, 3…, the server in
/// the session's own namespace; this maps one to the other. Sessions are
/// named by their ids in `sessions`, which the caller shares.
#[derive(Default)]
pub(super) struct Receipts {
    /// Which receipts it keeps.
    pub firsts: Firsts,
    /// Session ids as integers.
    pub sessions: Sessions,
    /// Legacy streams, (session, stream).
    streams: rustc_hash::FxHashSet<(u32, u32)>,
    /// Session → the server ids of its legacy streams' events, in order.
    ids: FxMap<u32, Vec<u64>>,
    /// Sessions with a legacy stream.
    legacy: rustc_hash::FxHashSet<u32>,
    /// (session, server event id) → trace position of its first receipt.
    first: FxMap<(u32, u64), u64>,
}

/// Which first receipts [`Receipts`] keeps: every one, those of sessions
/// with a legacy stream only (all that Rule T's foreign-cursor count asks
/// about), or none (the caller tracks the few it needs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Firsts {
    #[default]
    All,
    Legacy,
    None,
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
                let s = self.sessions.id(session);
                let keep = match self.firsts {
                    Firsts::All => true,
                    Firsts::Legacy => self.legacy.contains(&s),
                    Firsts::None => false,
                };
                if keep {
                    if let Some(id) = self.server_id(s, *event, *transport) {
                        self.first.entry((s, id)).or_insert(e.seq);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether a client received this event (session, server id).
    pub fn received(&self, ev: &(u32, u64)) -> bool {
        self.first.contains_key(ev)
    }

    /// When a client first received this event (session, server id).
    fn first(&self, ev: &(u32, u64)) -> Option<u64> {
        self.first.get(ev).copied()
    }

    fn observe_server(&mut self, r: &Record) {
        match r {
            Record::StreamOpened {
                session,
                stream,
                kind: StreamKind::Legacy,
                ..
            } => {
                let s = self.sessions.id(session);
                self.streams.insert((s, *stream));
                self.legacy.insert(s);
            }
            Record::Produced {
                session,
                stream,
                event,
                ..
            } if !self.streams.is_empty() => {
                if let Some(s) = self.sessions.get(session) {
                    if self.streams.contains(&(s, *stream)) {
                        self.ids.entry(s).or_default().push(*event);
                    }
                }
            }
            _ => {}
        }
    }

    /// The (session number, server event id) of an event a client
    /// received, when the session was seen.
    pub fn event_of(&self, session: &str, event: u64, transport: Transport) -> Option<(u32, u64)> {
        let s = self.sessions.get(session)?;
        Some((s, self.server_id(s, event, transport)?))
    }

    /// The server's id of an event a client received.
    fn server_id(&self, session: u32, event: u64, transport: Transport) -> Option<u64> {
        match transport {
            Transport::Streamable => Some(event),
            Transport::Legacy => self
                .ids
                .get(&session)
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
    pub rejections: BTreeMap<&'static str, u64>,
}

/// A session's facts, by its integer id.
#[derive(Clone, Copy, Default)]
struct Facts {
    client: Option<u32>,
    issued: Option<Transport>,
    mapped: bool,
}

/// Per client, what the server's records say.
pub(super) fn server_side(entries: &[Entry]) -> BTreeMap<u32, ServerSide> {
    let mut scan = Scan::new();
    for e in entries {
        scan.observe(e);
    }
    scan.per_client()
}

/// What one pass over the records gathers, by session.
#[derive(Default)]
pub(super) struct Scan {
    receipts: Receipts,
    rejections: Vec<(u32, &'static str)>,
    facts: Vec<Facts>,
    notifications: rustc_hash::FxHashSet<(u32, u64)>,
    served_across: Vec<u32>,
    switch_cursor: BTreeMap<u32, Option<u64>>,
    /// (session, stream, conn, resume seq, replayed-from)
    foreign: Vec<(u32, u32, u64, u64, u64)>,
    replayed: BTreeMap<(u32, u64), Vec<u64>>,
}

impl Scan {
    /// Nothing gathered yet; receipts kept only for legacy sessions (all
    /// that the foreign-cursor count reads).
    pub fn new() -> Scan {
        let mut s = Scan::default();
        s.receipts.firsts = Firsts::Legacy;
        s
    }

    /// Takes the next entry.
    pub fn observe(&mut self, e: &Entry) {
        self.receipts.observe(e);
        let session = match &e.record {
            Rec::Client(ClientRecord::Session { session, .. }) => session,
            Rec::Client(ClientRecord::Switched { client, cursor, .. }) => {
                self.switch_cursor.insert(*client, *cursor);
                return;
            }
            Rec::Server(
                Record::Decision { session, .. }
                | Record::SessionCreated { session, .. }
                | Record::MappingApplied { session, .. }
                | Record::Responded {
                    session: Some(session),
                    ..
                }
                | Record::Resumed { session, .. }
                | Record::Produced {
                    session,
                    kind: EventKind::Notification,
                    ..
                },
            ) => session,
            // Most records: written events, read only when notifications
            // exist or for a replay.
            Rec::Server(Record::Written {
                session, replay, ..
            }) if *replay || !self.notifications.is_empty() => session,
            _ => return,
        };
        let s = self.receipts.sessions.id(session);
        if s as usize >= self.facts.len() {
            self.facts.resize(s as usize + 1, Facts::default());
        }
        let f = &mut self.facts[s as usize];
        let Rec::Server(r) = &e.record else {
            if let Rec::Client(ClientRecord::Session { client, .. }) = &e.record {
                f.client = Some(*client);
            }
            return;
        };
        let across = |f: &Facts, t: &Transport| f.issued.is_some_and(|i| i != *t) && !f.mapped;
        match r {
            Record::Decision { decision, .. } => {
                if let Some(reason) = decision.reason {
                    self.rejections.push((s, reason.as_str()));
                }
            }
            Record::SessionCreated { transport, .. } => f.issued = Some(*transport),
            Record::MappingApplied { .. } => f.mapped = true,
            Record::Responded {
                status,
                transport,
                request: true,
                ..
            } if (200..300).contains(status) && across(f, transport) => self.served_across.push(s),
            Record::Written {
                event,
                conn,
                replay,
                transport,
                ..
            } => {
                if !self.notifications.is_empty()
                    && self.notifications.contains(&(s, *event))
                    && across(f, transport)
                {
                    self.served_across.push(s);
                }
                if *replay {
                    self.replayed.entry((s, *conn)).or_default().push(*event);
                }
            }
            Record::Resumed {
                stream, conn, from, ..
            } if f.issued == Some(Transport::Legacy) && !f.mapped => {
                // A streamable resume of a legacy session, no mapping:
                // its cursor came from the other namespace.
                self.foreign.push((s, *stream, *conn, e.seq, *from));
            }
            Record::Produced {
                event,
                kind: EventKind::Notification,
                ..
            } => {
                self.notifications.insert((s, *event));
            }
            _ => {}
        }
    }

    /// The gathered facts, per client.
    pub fn per_client(self) -> BTreeMap<u32, ServerSide> {
        let client_of = |s: u32| self.facts.get(s as usize).and_then(|f| f.client);
        let mut out: BTreeMap<u32, ServerSide> = BTreeMap::new();
        for (s, reason) in self.rejections {
            if let Some(c) = client_of(s) {
                *out.entry(c)
                    .or_default()
                    .rejections
                    .entry(reason)
                    .or_insert(0) += 1;
            }
        }
        for ((s, _), evs) in &self.replayed {
            if let Some(c) = client_of(*s) {
                out.entry(c).or_default().replayed_events += evs.len() as u64;
            }
        }
        for s in self.served_across {
            if let Some(c) = client_of(s) {
                out.entry(c).or_default().capability_violations += 1;
            }
        }
        for (s, stream, conn, at, from) in self.foreign {
            let Some(c) = client_of(s) else {
                continue;
            };
            let mut n = 0;
            // Replayed although the client already had it: not owed.
            for ev in self.replayed.get(&(s, conn)).into_iter().flatten() {
                if self.receipts.first(&(s, *ev)).is_some_and(|r| r < at) {
                    n += 1;
                }
            }
            // Owed but skipped: after the client's true position, at or before
            // where the foreign cursor started the replay, never received.
            let truth = self.switch_cursor.get(&c).copied().flatten();
            if let (Some(l), true) = (truth, self.receipts.streams.contains(&(s, stream))) {
                let ids = self
                    .receipts
                    .ids
                    .get(&s)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let true_pos = ids.get((l as usize).wrapping_sub(1)).copied().unwrap_or(0);
                n += ids
                    .iter()
                    .filter(|&&id| id > true_pos && id <= from && !self.receipts.received(&(s, id)))
                    .count() as u64;
            }
            out.entry(c).or_default().foreign_cursor_replays += n;
        }
        out
    }
}

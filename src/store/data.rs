//! What the store holds, every write with its time (so a lagging read
//! sees the store as it was), and the connection loop that applies ops.

use super::{Answer, GuardRec, GuardWrite, KeyRec, Op, SessionRec, StoredEvent};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

/// A value's writes, oldest first, each with its time (µs); `None`: deleted.
type Versions<T> = Vec<(u64, Option<T>)>;

fn latest<T>(v: &Versions<T>) -> Option<&T> {
    v.last().and_then(|(_, x)| x.as_ref())
}

fn as_of<T>(v: &Versions<T>, t: u64) -> Option<&T> {
    v.iter()
        .rev()
        .find(|(at, _)| *at <= t)
        .and_then(|(_, x)| x.as_ref())
}

/// One session's events.
#[derive(Default)]
struct Events {
    /// Each stream's events, in id order, with when each was appended.
    streams: BTreeMap<u32, Vec<(u64, StoredEvent)>>,
    /// Each event id's stream and when it was appended.
    index: BTreeMap<u64, (u32, u64)>,
}

/// Everything the store holds. A store that is durable keeps one across
/// its restarts; one that is not starts from an empty one.
#[derive(Default)]
pub struct StoreData {
    sessions: BTreeMap<String, Versions<SessionRec>>,
    events: BTreeMap<String, Events>,
    keys: BTreeMap<(String, String), Versions<KeyRec>>,
    /// The streams whose executions run, with the runner's lease (µs).
    leases: BTreeMap<(String, u32), u64>,
    /// Each session's shared Rule M record.
    guards: BTreeMap<String, GuardRec>,
}

impl StoreData {
    /// Applies `op` at `now` (µs) for a reader `lag` (µs) behind: the
    /// answer, or, for a tail that found nothing new, `None` and when
    /// (µs) the next event after its cursor becomes visible, if one was
    /// appended.
    pub fn apply(&mut self, op: Op, now: u64, lag: u64) -> Result<Answer, Option<u64>> {
        let seen = now.saturating_sub(lag);
        Ok(match op {
            Op::PutSession { sid, rec } => {
                self.sessions.entry(sid).or_default().push((now, Some(rec)));
                Answer::Done
            }
            Op::GetSession { sid } => Answer::Session {
                rec: self
                    .sessions
                    .get(&sid)
                    .and_then(|v| as_of(v, seen))
                    .cloned(),
            },
            Op::DelSession { sid } => {
                if let Some(v) = self.sessions.get_mut(&sid) {
                    v.push((now, None));
                }
                self.events.remove(&sid);
                self.guards.remove(&sid);
                self.leases.retain(|(s, _), _| *s != sid);
                Answer::Done
            }
            Op::Append { sid, events } => {
                let evs = self.events.entry(sid).or_default();
                // A batch sent again (its answer was lost) adds nothing twice.
                for e in events {
                    if evs.index.contains_key(&e.id) {
                        continue;
                    }
                    evs.index.insert(e.id, (e.stream, now));
                    evs.streams.entry(e.stream).or_default().push((now, e));
                }
                Answer::Done
            }
            Op::Tail { sid, cursor, .. } => return self.tail(&sid, cursor, (now, seen), lag),
            Op::KeyLook { scope, key } => Answer::Key {
                rec: self
                    .keys
                    .get(&(scope, key))
                    .and_then(|v| as_of(v, seen))
                    .cloned(),
            },
            Op::KeyBegin {
                scope,
                key,
                call,
                replica,
                lease_ms,
            } => {
                let v = self.keys.entry((scope, key)).or_default();
                match latest(v) {
                    Some(rec) if rec.runner.is_none_or(|(_, until)| until > now) => Answer::Key {
                        rec: Some(rec.clone()),
                    },
                    _ => {
                        let rec = KeyRec {
                            call,
                            result: None,
                            runner: Some((replica, now + lease_ms * 1000)),
                        };
                        v.push((now, Some(rec)));
                        Answer::Began
                    }
                }
            }
            Op::Renew {
                keys,
                streams,
                replica,
                lease_ms,
            } => {
                for s in streams {
                    self.leases.insert(s, now + lease_ms * 1000);
                }
                for k in keys {
                    let Some(v) = self.keys.get_mut(&k) else {
                        continue;
                    };
                    let Some(rec) = latest(v) else { continue };
                    if rec.runner.is_some_and(|(r, _)| r == replica) {
                        let renewed = KeyRec {
                            runner: Some((replica, now + lease_ms * 1000)),
                            ..rec.clone()
                        };
                        v.push((now, Some(renewed)));
                    }
                }
                Answer::Done
            }
            Op::KeyDone { scope, key, result } => {
                let v = self.keys.entry((scope, key)).or_default();
                if let Some(rec) = latest(v).cloned() {
                    let done = KeyRec {
                        result: Some(result),
                        runner: None,
                        ..rec
                    };
                    v.push((now, Some(done)));
                }
                Answer::Done
            }
            Op::KeyDrop { scope, key } => {
                if let Some(v) = self.keys.get_mut(&(scope, key)) {
                    v.push((now, None));
                }
                Answer::Done
            }
            Op::GuardLoad { sid } => self.guard_load(&sid, now),
            Op::GuardPut { sid, write } => self.guard_put(sid, write, now),
            Op::Batch { ops } => {
                for op in ops {
                    if let Ok(Answer::Refused { why }) = self.apply(op, now, lag) {
                        return Ok(Answer::Refused { why });
                    }
                }
                Answer::Done
            }
        })
    }

    /// The shared Rule M record, read from the primary: a
    /// compare-and-set needs the version the primary holds.
    fn guard_load(&self, sid: &str, now: u64) -> Answer {
        Answer::Guard {
            rec: self
                .guards
                .get(sid)
                .map(|r| r.live(now))
                .unwrap_or_default(),
        }
    }

    /// Writes the shared Rule M record if its version is the one expected.
    fn guard_put(&mut self, sid: String, write: GuardWrite, now: u64) -> Answer {
        let rec = self.guards.entry(sid).or_default();
        let written = rec.put(now, write);
        Answer::GuardPut {
            written,
            version: rec.version,
        }
    }

    fn tail(
        &self,
        sid: &str,
        cursor: u64,
        (now, seen): (u64, u64),
        lag: u64,
    ) -> Result<Answer, Option<u64>> {
        let unknown = Answer::Events {
            known: false,
            events: Vec::new(),
            ended: false,
            orphaned: false,
        };
        let Some(evs) = self.events.get(sid) else {
            return Ok(unknown);
        };
        let Some(&(stream, at)) = evs.index.get(&cursor) else {
            return Ok(unknown);
        };
        if at > seen {
            return Ok(unknown);
        }
        let all = &evs.streams[&stream];
        let at_cursor = all.partition_point(|(_, e)| e.id <= cursor);
        let ended_before = all[..at_cursor].iter().any(|(_, e)| e.result);
        let after = &all[at_cursor..];
        let visible = after.partition_point(|(at, _)| *at <= seen);
        let orphaned = !all.iter().any(|(_, e)| e.result)
            && self
                .leases
                .get(&(sid.to_string(), stream))
                .is_some_and(|&until| until <= now);
        if visible == 0 && !ended_before && !orphaned {
            return Err(after.first().map(|(at, _)| at + lag));
        }
        let events: Vec<StoredEvent> = after[..visible].iter().map(|(_, e)| e.clone()).collect();
        let ended = ended_before || events.iter().any(|e| e.result);
        Ok(Answer::Events {
            known: true,
            events,
            ended,
            orphaned: orphaned && visible == after.len(),
        })
    }
}

/// The store host's state: its contents, the clock, the lag a reader sees
/// now, and the news of appends (for tails that wait).
#[derive(Clone)]
pub struct StoreState {
    pub data: Rc<RefCell<StoreData>>,
    /// Simulated time now.
    pub clock: Rc<dyn Fn() -> Duration>,
    /// How far behind the primary reads are now.
    pub lag: Rc<Cell<Duration>>,
    appended: Rc<Notify>,
    /// Requests answered, across every connection (and, when the caller
    /// shares one counter, every incarnation): the deployment's cost in
    /// store round trips. Never recorded in the history.
    answered: Rc<Cell<u64>>,
}

impl StoreState {
    /// A store over `data`, reading `lag` behind.
    pub fn new(
        data: Rc<RefCell<StoreData>>,
        clock: Rc<dyn Fn() -> Duration>,
        lag: Rc<Cell<Duration>>,
    ) -> Self {
        StoreState {
            data,
            clock,
            lag,
            appended: Rc::new(Notify::new()),
            answered: Rc::new(Cell::new(0)),
        }
    }

    /// The same store counting the requests it answers in `answered`.
    pub fn counting(self, answered: Rc<Cell<u64>>) -> Self {
        StoreState { answered, ..self }
    }

    /// Requests answered so far.
    pub fn answered(&self) -> u64 {
        self.answered.get()
    }

    fn now_us(&self) -> u64 {
        (self.clock)().as_micros() as u64
    }

    /// Applies `op`, waiting as a tail asks.
    pub async fn answer(&self, op: Op) -> Answer {
        let wait = match &op {
            Op::Tail { wait_ms, .. } => Duration::from_millis(*wait_ms),
            _ => Duration::ZERO,
        };
        let writes = matches!(op, Op::Append { .. } | Op::Batch { .. });
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Registered before looking, so no append slips between.
            let news = self.appended.notified();
            let lag = self.lag.get().as_micros() as u64;
            let now = self.now_us();
            let got = self.data.borrow_mut().apply(op.clone(), now, lag);
            match got {
                Ok(a) => {
                    if writes {
                        self.appended.notify_waiters();
                    }
                    return a;
                }
                Err(next) => {
                    let mut until = deadline;
                    if let Some(t) = next {
                        let visible = tokio::time::Instant::now()
                            + Duration::from_micros(t.saturating_sub(now));
                        until = until.min(visible);
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Answer::Events {
                            known: true,
                            events: Vec::new(),
                            ended: false,
                            orphaned: false,
                        };
                    }
                    tokio::select! {
                        biased;
                        _ = news => {}
                        _ = tokio::time::sleep_until(until) => {}
                    }
                }
            }
        }
    }
}

/// One connection to the store: a line in, a line out, until it closes.
pub(super) async fn serve_connection<I>(io: I, state: StoreState)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (r, mut w) = tokio::io::split(io);
    let mut lines = BufReader::new(r).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let answer = match serde_json::from_str::<Op>(&line) {
            Ok(op) => state.answer(op).await,
            Err(e) => Answer::Refused {
                why: format!("not a store op: {e}"),
            },
        };
        state.answered.set(state.answered.get() + 1);
        let mut out = serde_json::to_string(&answer).expect("answers serialize");
        out.push('\n');
        if w.write_all(out.as_bytes()).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
}

//! The faults a byte stream shows and turmoil's links do not: a cut after
//! some bytes, fragmented or rate-limited reads, a late close, an
//! abortive close. Each client host's connections go through a
//! [`ToxicIo`] that reads the host's active toxics on every read and
//! write (toxiproxy's toxics, on the client's side of the wire; the
//! server sees their effect as it would through a proxy: the cut's close,
//! the late close).

use crate::client::http::Closer;
use crate::client::Connector;
use crate::fault::{Close, Direction, Fault};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};
use turmoil::net::TcpStream;

/// A cut after some bytes: the truncate fault on, with its plan index
/// (each window counts afresh).
#[derive(Clone, Copy, Debug)]
struct Cut {
    index: u32,
    bytes: u64,
    direction: Direction,
    close: Close,
}

/// What is on for one client host, each with the index of the fault that
/// set it (an end edge clears only its own).
#[derive(Clone, Copy, Debug, Default)]
struct HostToxics {
    cut: Option<Cut>,
    /// (index, largest piece, ms between pieces).
    slice: Option<(u32, u64, u64)>,
    /// (index, bytes per second).
    bandwidth: Option<(u32, u64)>,
    /// (index, ms a close is late).
    slow_close: Option<(u32, u64)>,
}

/// Every client host's toxics, and the connections a slow close keeps
/// open until their time.
#[derive(Debug, Default)]
pub(super) struct Toxics {
    hosts: RefCell<BTreeMap<u32, HostToxics>>,
    lingering: RefCell<Vec<(Instant, TcpStream)>>,
    linger: Notify,
}

/// A toxic the connector applies, with what it needs: the byte-level
/// kinds of [`Fault`].
#[derive(Clone, Copy, Debug)]
pub(super) enum Toxic {
    /// A cut after `bytes` in `direction`, closing with `close`.
    Truncate {
        bytes: u64,
        direction: Direction,
        close: Close,
    },
    /// Reads in pieces of at most `bytes`, `delay_ms` apart.
    Slice { bytes: u64, delay_ms: u64 },
    /// Reads at no more than `bytes_per_s`.
    Bandwidth { bytes_per_s: u64 },
    /// A close reaches the other side `delay_ms` late.
    SlowClose { delay_ms: u64 },
}

impl Toxic {
    /// The toxic `f` is, if it is one the connector applies.
    pub(super) fn of(f: &Fault) -> Option<Toxic> {
        Some(match *f {
            Fault::Truncate {
                bytes,
                direction,
                close,
                ..
            } => Toxic::Truncate {
                bytes,
                direction,
                close,
            },
            Fault::Slice {
                bytes, delay_ms, ..
            } => Toxic::Slice { bytes, delay_ms },
            Fault::Bandwidth { bytes_per_s, .. } => Toxic::Bandwidth { bytes_per_s },
            Fault::SlowClose { delay_ms, .. } => Toxic::SlowClose { delay_ms },
            _ => return None,
        })
    }
}

impl Toxics {
    /// Turns `toxic` (plan index `index`) on or off for client host `host`.
    pub(super) fn set(&self, host: u32, index: u32, toxic: Toxic, start: bool) {
        let mut hosts = self.hosts.borrow_mut();
        let t = hosts.entry(host).or_default();
        fn toggle<T: Copy>(slot: &mut Option<T>, on: Option<T>, mine: impl Fn(&T) -> bool) {
            match on {
                Some(v) => *slot = Some(v),
                None if slot.as_ref().is_some_and(mine) => *slot = None,
                None => {}
            }
        }
        match toxic {
            Toxic::Truncate {
                bytes,
                direction,
                close,
            } => {
                let on = start.then_some(Cut {
                    index,
                    bytes,
                    direction,
                    close,
                });
                toggle(&mut t.cut, on, |c| c.index == index);
            }
            Toxic::Slice { bytes, delay_ms } => toggle(
                &mut t.slice,
                start.then_some((index, bytes, delay_ms)),
                |s| s.0 == index,
            ),
            Toxic::Bandwidth { bytes_per_s } => toggle(
                &mut t.bandwidth,
                start.then_some((index, bytes_per_s)),
                |b| b.0 == index,
            ),
            Toxic::SlowClose { delay_ms } => {
                toggle(&mut t.slow_close, start.then_some((index, delay_ms)), |s| {
                    s.0 == index
                })
            }
        }
    }

    fn on(&self, host: u32) -> HostToxics {
        self.hosts.borrow().get(&host).copied().unwrap_or_default()
    }

    /// Keeps `s` open until `until`, then closes it (a slow close).
    fn linger(&self, until: Instant, s: TcpStream) {
        self.lingering.borrow_mut().push((until, s));
        self.linger.notify_one();
    }

    /// Closes lingering connections as their time comes: one task per
    /// client host whose plan has a slow close.
    pub(super) async fn close_lingering(self: Rc<Self>) {
        loop {
            let next = self.lingering.borrow().iter().map(|(t, _)| *t).min();
            let wait = async {
                match next {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = self.linger.notified() => {}
                _ = wait => {
                    let now = Instant::now();
                    self.lingering.borrow_mut().retain(|(t, _)| *t > now);
                }
            }
        }
    }
}

/// Connects to the front of the world from one client host, through the
/// host's toxics when the plan has any.
#[derive(Clone)]
pub(super) struct ToxicConnector {
    pub(super) front: Rc<str>,
    pub(super) host: u32,
    pub(super) toxics: Option<Rc<Toxics>>,
}

impl Connector for ToxicConnector {
    type Io = ToxicIo;
    async fn connect(&self) -> io::Result<ToxicIo> {
        let s = TcpStream::connect((&*self.front, super::PORT)).await?;
        Ok(self.wrap(s))
    }

    fn closer(io: &ToxicIo) -> Option<Closer> {
        Some(io.reset.clone())
    }
}

impl ToxicConnector {
    /// `s`, a connection of this client host (one it opened, or one its
    /// webhook receiver accepted), through the host's toxics: what the
    /// host writes goes `to_server`.
    pub(super) fn wrap(&self, s: TcpStream) -> ToxicIo {
        ToxicIo {
            inner: Some(s),
            host: self.host,
            toxics: self.toxics.clone(),
            reset: Closer::default(),
            cut: None,
            wait: None,
            counted: None,
            eof_late: false,
        }
    }
}

/// One client connection, through its host's toxics.
pub(super) struct ToxicIo {
    /// `None` once cut.
    inner: Option<TcpStream>,
    host: u32,
    toxics: Option<Rc<Toxics>>,
    /// Set: the close is abortive (a drop planned with RST).
    reset: Closer,
    /// Cut by a truncate: how.
    cut: Option<Close>,
    /// A read waits for this first (a slice's gap, the bandwidth's pace,
    /// a late end).
    wait: Option<Pin<Box<Sleep>>>,
    /// (truncate index, bytes counted under it).
    counted: Option<(u32, u64)>,
    /// The server's close was seen and is being delivered late.
    eof_late: bool,
}

impl ToxicIo {
    /// The cut on in `direction`, and the bytes this connection has
    /// carried under it so far.
    fn under_cut(&self, on: &HostToxics, direction: Direction) -> Option<(Cut, u64)> {
        let cut = on.cut.filter(|c| c.direction == direction)?;
        let used = match self.counted {
            Some((i, n)) if i == cut.index => n,
            _ => 0,
        };
        Some((cut, used))
    }

    /// Bytes the cut still lets through in `direction` (`None`: no cut).
    fn allowance(&self, on: &HostToxics, direction: Direction) -> Option<u64> {
        self.under_cut(on, direction)
            .map(|(cut, used)| cut.bytes.saturating_sub(used))
    }

    fn count(&mut self, on: &HostToxics, direction: Direction, n: usize) {
        if let Some((cut, used)) = self.under_cut(on, direction) {
            self.counted = Some((cut.index, used + n as u64));
        }
    }

    /// Cuts the connection: the peer sees the close (FIN, or RST).
    fn cut(&mut self, close: Close) {
        if let Some(s) = self.inner.take() {
            if close == Close::Rst {
                let _ = s.set_linger(Some(Duration::ZERO));
            }
        }
        self.cut = Some(close);
    }

    fn after_cut(close: Close) -> io::Result<()> {
        match close {
            Close::Fin => Ok(()),
            Close::Rst => Err(io::ErrorKind::ConnectionReset.into()),
        }
    }
}

impl AsyncRead for ToxicIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if let Some(close) = me.cut {
            return Poll::Ready(Self::after_cut(close));
        }
        if let Some(w) = &mut me.wait {
            ready!(w.as_mut().poll(cx));
            me.wait = None;
        }
        let Some(toxics) = me.toxics.clone() else {
            return Pin::new(me.inner.as_mut().expect("not cut")).poll_read(cx, buf);
        };
        let on = toxics.on(me.host);
        let mut limit = buf.remaining() as u64;
        if let Some((_, bytes, _)) = on.slice {
            limit = limit.min(bytes);
        }
        if let Some(left) = me.allowance(&on, Direction::ToClient) {
            if left == 0 {
                let close = on.cut.map_or(Close::Fin, |c| c.close);
                me.cut(close);
                return Poll::Ready(Self::after_cut(close));
            }
            limit = limit.min(left);
        }
        let mut piece = vec![0u8; limit as usize];
        let mut sub = ReadBuf::new(&mut piece);
        let inner = me.inner.as_mut().expect("not cut");
        ready!(Pin::new(inner).poll_read(cx, &mut sub))?;
        let n = sub.filled().len();
        if n == 0 && buf.remaining() > 0 {
            // The server's close: late under a slow close.
            if let (Some((_, ms)), false) = (on.slow_close, me.eof_late) {
                me.eof_late = true;
                let mut w = Box::pin(tokio::time::sleep(Duration::from_millis(ms)));
                if w.as_mut().poll(cx).is_pending() {
                    me.wait = Some(w);
                    return Poll::Pending;
                }
            }
            return Poll::Ready(Ok(()));
        }
        buf.put_slice(sub.filled());
        me.count(&on, Direction::ToClient, n);
        let mut pause = Duration::ZERO;
        if let Some((_, _, ms)) = on.slice {
            pause += Duration::from_millis(ms);
        }
        if let Some((_, rate)) = on.bandwidth {
            pause += Duration::from_micros(n as u64 * 1_000_000 / rate.max(1));
        }
        if !pause.is_zero() {
            me.wait = Some(Box::pin(tokio::time::sleep(pause)));
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ToxicIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if me.cut.is_some() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let Some(toxics) = me.toxics.clone() else {
            return Pin::new(me.inner.as_mut().expect("not cut")).poll_write(cx, buf);
        };
        let on = toxics.on(me.host);
        let mut buf = buf;
        if let Some(left) = me.allowance(&on, Direction::ToServer) {
            if left == 0 {
                me.cut(on.cut.map_or(Close::Fin, |c| c.close));
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            buf = &buf[..buf.len().min(left as usize)];
        }
        let n = ready!(Pin::new(me.inner.as_mut().expect("not cut")).poll_write(cx, buf))?;
        me.count(&on, Direction::ToServer, n);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().inner.as_mut() {
            Some(s) => Pin::new(s).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut().inner.as_mut() {
            Some(s) => Pin::new(s).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}

impl Drop for ToxicIo {
    fn drop(&mut self) {
        let Some(s) = self.inner.take() else { return };
        if self.reset.get() {
            let _ = s.set_linger(Some(Duration::ZERO));
            return;
        }
        if let Some(t) = &self.toxics {
            if let Some((_, ms)) = t.on(self.host).slow_close {
                t.linger(Instant::now() + Duration::from_millis(ms), s);
            }
        }
    }
}

//! The bare program the scale bench measures mcp-chaos against: hyper over
//! turmoil carrying the same connections and SSE events, with no MCP, guard,
//! history or oracle.

use super::Traffic;
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use std::convert::Infallible;
use std::time::{Duration, UNIX_EPOCH};

/// The bare program: hyper over turmoil, the same connections and events.
pub fn run(t: Traffic) -> Result<(f64, u64), String> {
    let mut sim = turmoil::Builder::new()
        .epoch(UNIX_EPOCH + Duration::from_secs(1_800_000_000))
        .rng_seed(0)
        .simulation_duration(Duration::from_secs(3600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .tcp_capacity((t.clients as usize * 3).max(1024))
        .ephemeral_ports(crate::scenario::EPHEMERAL_PORTS)
        .build();
    sim.host("server", move || async move {
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
        loop {
            let (io, _) = listener.accept().await?;
            tokio::task::spawn_local(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    answer(req, t)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .auto_date_header(false)
                    .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
                    .await;
            });
        }
    });
    let done = std::rc::Rc::new(std::cell::Cell::new(0u64));
    for h in 0..t.hosts {
        let n = (t.clients / t.hosts) + u32::from(h < t.clients % t.hosts);
        let done = done.clone();
        sim.client(format!("client{h}"), async move {
            let tasks: Vec<_> = (0..n)
                .map(|_| {
                    let done = done.clone();
                    tokio::task::spawn_local(async move {
                        let mut pooled: Option<Conn> = None;
                        for k in 0..t.calls + 2 {
                            let path = if k < 2 { "/init" } else { "/call" };
                            let reuse = if t.keep_alive { pooled.take() } else { None };
                            if let Ok(conn) = exchange(path, reuse).await {
                                done.set(done.get() + 1);
                                // Per exchange, the connection closes here.
                                if t.keep_alive {
                                    pooled = Some(conn);
                                }
                            }
                            if k >= 2 {
                                tokio::time::sleep(Duration::from_millis(t.think_ms)).await;
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await?;
            }
            Ok(())
        });
    }
    sim.run().map_err(|e| format!("baseline: {e}"))?;
    Ok((sim.elapsed().as_secs_f64(), done.get()))
}

type Body = http_body_util::Either<Full<Bytes>, events::Events>;

async fn answer(
    req: Request<hyper::body::Incoming>,
    t: Traffic,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let _ = req.into_body().collect().await;
    let resp = if path == "/call" {
        Response::builder()
            .header("content-type", "text/event-stream")
            .body(http_body_util::Either::Right(events::Events::new(
                t.chunks,
                t.chunk_interval_ms,
            )))
    } else {
        Response::builder()
            .header("content-type", "application/json")
            .body(http_body_util::Either::Left(Full::new(Bytes::from_static(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
            ))))
    };
    // Every header is a static valid value: the builder cannot fail.
    Ok(resp.unwrap_or_else(|_| Response::new(http_body_util::Either::Left(Full::default()))))
}

/// A client connection: hyper's sender and the task driving it (aborted
/// when the connection is dropped, as a client closing its socket).
pub struct Conn {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One exchange on `reuse` when it is still ready, else on a new
/// connection; the connection comes back after the body ended.
async fn exchange(path: &str, reuse: Option<Conn>) -> Result<Conn, Box<dyn std::error::Error>> {
    let ready = match reuse {
        Some(mut c) => c.sender.ready().await.is_ok().then_some(c),
        None => None,
    };
    let mut conn = match ready {
        Some(c) => c,
        None => {
            let io = turmoil::net::TcpStream::connect(("server", 80)).await?;
            let (sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
            let task = tokio::task::spawn_local(async move {
                let _ = conn.await;
            });
            Conn { sender, task }
        }
    };
    let req = Request::post(path)
        .header("host", "server")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"c0-op0#1\",\"method\":\"tools/call\",\"params\":{}}",
        )))?;
    let resp = conn.sender.send_request(req).await?;
    let _ = resp.into_body().collect().await?;
    Ok(conn)
}

/// The SSE events of one call, produced on a timer.
mod events {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct Events {
        left: u32,
        next: u32,
        interval: Duration,
        sleep: Pin<Box<tokio::time::Sleep>>,
    }

    impl Events {
        pub fn new(chunks: u32, interval_ms: u64) -> Events {
            let interval = Duration::from_millis(interval_ms);
            Events {
                left: chunks,
                next: 1,
                interval,
                sleep: Box::pin(tokio::time::sleep(interval)),
            }
        }
    }

    impl hyper::body::Body for Events {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            if self.left == 0 {
                return Poll::Ready(None);
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let at = tokio::time::Instant::now() + self.interval;
            self.sleep.as_mut().reset(at);
            let n = self.next;
            self.next += 1;
            self.left -= 1;
            let ev = format!(
                "id: {n}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"c0-op0#1\",\"progress\":{n},\"message\":\"ledger:1:{n}:c0-op0\"}}}}\n\n"
            );
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(ev)))))
        }
    }
}

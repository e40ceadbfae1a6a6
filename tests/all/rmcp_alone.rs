//! rmcp alone, with no code of mcp-chaos in the path: its own
//! `StreamableHttpService` and `LocalSessionManager` with a handler that
//! overrides nothing, served over hyper on a loopback socket, as
//! `src/sdk/mod.rs` serves it. What it does with a session whose client
//! sends `DELETE` before it has read the `initialize` response (pipelined
//! on one connection), so the DELETE cannot name the session: the DELETE
//! gets 202 all the same, and the session, its worker and its service
//! tasks stay until rmcp's `keep_alive` (5 minutes by default) ends them.
//! Sessions have no cap, so memory grows with each such client.

use super::serve::{pipelined_init_delete, Conn};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A handler with rmcp's defaults for everything.
struct Bare;

impl rmcp::ServerHandler for Bare {}

/// rmcp's server on its own thread and runtime; stopped when dropped.
struct Alone {
    addr: SocketAddr,
    manager: Arc<LocalSessionManager>,
    rt: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Alone {
    fn start() -> Alone {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let manager = Arc::new(LocalSessionManager::default());
                let service = StreamableHttpService::new(
                    || Ok(Bare),
                    manager.clone(),
                    StreamableHttpServerConfig::default(),
                );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a loopback port");
                let addr = listener.local_addr().expect("bound");
                tx.send((addr, manager, tokio::runtime::Handle::current()))
                    .expect("the test waits");
                let serve = async move {
                    loop {
                        let Ok((io, _)) = listener.accept().await else {
                            continue;
                        };
                        let service = service.clone();
                        tokio::spawn(async move {
                            let svc = hyper::service::service_fn(move |req| {
                                let service = service.clone();
                                async move { Ok::<_, Infallible>(service.handle(req).await) }
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        let (addr, manager, rt) = rx.recv().expect("the server starts");
        Alone {
            addr,
            manager,
            rt,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn connect(&self) -> Conn {
        Conn::new(TcpStream::connect(self.addr).expect("connects"))
    }

    /// Sessions rmcp's manager holds.
    fn sessions(&self) -> usize {
        self.manager.sessions.blocking_read().len()
    }

    /// Tokio tasks alive on the server's runtime.
    fn tasks(&self) -> usize {
        self.rt.metrics().num_alive_tasks()
    }

    /// Waits up to 30 s for the server's tasks to fall to `at_most`; the
    /// count last seen.
    fn tasks_fall_to(&self, at_most: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let n = self.tasks();
            if n <= at_most || Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Alone {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sessions opened by the pipelined clients below.
const PIPELINED: usize = 200;

/// Tokio tasks rmcp keeps per live session: the session's worker, the task
/// that serves the session and waits for it to end, and the service loop.
const TASKS_PER_SESSION: usize = 3;

#[test]
fn rmcp_keeps_a_session_whose_pipelined_delete_could_not_name_it() {
    let s = Alone::start();
    let base = s.tasks();
    let mut ids = Vec::new();
    for _ in 0..PIPELINED {
        let (sid, delete) = pipelined_init_delete(&mut s.connect());
        ids.push(sid);
        // rmcp accepts the DELETE of a session it does not know.
        assert_eq!(delete.status, 202, "{delete:?}");
    }
    assert_eq!(s.sessions(), PIPELINED, "every session outlived its DELETE");
    // The connections are closed; what is left is the sessions'.
    let held = s.tasks_fall_to(base + TASKS_PER_SESSION * PIPELINED);
    eprintln!("rmcp alone: {PIPELINED} sessions kept, {held} tasks alive ({base} before)");
    assert!(
        held >= base + TASKS_PER_SESSION * PIPELINED,
        "{held} tasks alive, {base} before the sessions"
    );
    // The same session still answers.
    let mut c = s.connect();
    let r = c.send(
        "POST",
        &[("mcp-session-id", &ids[0])],
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    assert_eq!(r.status, 200, "{r:?}");
    // A DELETE that names its session ends it, tasks and all: nothing is
    // kept after a session closes.
    for id in &ids {
        let r = c.send("DELETE", &[("mcp-session-id", id)], "");
        assert_eq!(r.status, 202, "{r:?}");
    }
    assert_eq!(s.sessions(), 0);
    drop(c);
    let left = s.tasks_fall_to(base);
    assert!(
        left <= base,
        "{left} tasks alive, {base} before the sessions"
    );
}

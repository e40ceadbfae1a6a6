//! The vendored turmoil's patch (vendor/turmoil/PATCH.md), on a host with
//! four ephemeral ports so that its range wraps at once.

use std::time::Duration;
use tokio::io::AsyncReadExt;
use turmoil::net::{TcpListener, TcpStream};

fn sim() -> turmoil::Sim<'static> {
    turmoil::Builder::new()
        .ephemeral_ports(50_000..=50_003)
        .simulation_duration(Duration::from_secs(120))
        .build()
}

/// A server that accepts and holds every connection open, reading until
/// its peer closes it.
fn holding_server(sim: &mut turmoil::Sim<'_>) {
    sim.host("server", || async {
        let l = TcpListener::bind("0.0.0.0:80").await?;
        loop {
            let (mut s, _) = l.accept().await?;
            tokio::task::spawn_local(async move {
                let mut buf = [0u8; 64];
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
}

/// Connections cut by a partition stay half-open on the server (their FIN
/// was lost). Once the client's four ports wrap, an unpatched turmoil
/// reused one of them and panicked at the server's accept ("already
/// connected"); the patched one skips ports the server still holds.
#[test]
fn a_port_the_server_holds_half_open_is_not_reused() {
    let mut sim = sim();
    holding_server(&mut sim);
    sim.client("client", async {
        // Two connections, then cut off: their closes never arrive.
        let a = TcpStream::connect("server:80").await?;
        let b = TcpStream::connect("server:80").await?;
        turmoil::partition("client", "server");
        drop((a, b));
        tokio::time::sleep(Duration::from_millis(100)).await;
        turmoil::repair("client", "server");
        // Eight more, one at a time: the range wraps twice over the two
        // ports the server still holds.
        for _ in 0..8 {
            let c = TcpStream::connect("server:80").await?;
            drop(c);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    });
    sim.run().expect("no port collision");
}

/// A connect that fails (refused or timed out, its SYN lost in a
/// partition) gives its port back: with four ports, eight failed connects
/// used to exhaust the host ("ports exhausted").
#[test]
fn a_connect_that_times_out_frees_its_port() {
    let mut sim = sim();
    holding_server(&mut sim);
    sim.client("client", async {
        turmoil::partition("client", "server");
        for _ in 0..8 {
            let r =
                tokio::time::timeout(Duration::from_millis(200), TcpStream::connect("server:80"))
                    .await;
            // Timed out, or refused: either way it never connected.
            assert!(
                !matches!(r, Ok(Ok(_))),
                "partitioned: the connect cannot finish"
            );
        }
        turmoil::repair("client", "server");
        let s = TcpStream::connect("server:80").await?;
        drop(s);
        Ok(())
    });
    sim.run().expect("ports are given back");
}

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

/// What the server saw of one connection: bytes read, then how it ended.
type Seen = std::rc::Rc<std::cell::RefCell<Vec<String>>>;

/// A server that reads one connection to its end and writes down how it
/// ended (EOF, or the error's kind).
fn recording_server(sim: &mut turmoil::Sim<'_>, seen: Seen) {
    sim.host("server", move || {
        let seen = seen.clone();
        async move {
            let l = TcpListener::bind("0.0.0.0:80").await?;
            let (mut s, _) = l.accept().await?;
            let mut buf = [0u8; 64];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) => {
                        seen.borrow_mut().push("eof".into());
                        break;
                    }
                    Ok(n) => seen.borrow_mut().push(format!("{n} bytes")),
                    Err(e) => {
                        seen.borrow_mut().push(format!("{:?}", e.kind()));
                        break;
                    }
                }
            }
            std::future::pending::<()>().await;
            Ok(())
        }
    });
}

/// Patch 6: `set_linger(Some(0))` makes a close abortive. The peer's
/// read fails with a reset instead of reading EOF, and bytes it had not read
/// yet are lost with the connection (RFC 9293's RST). Stock turmoil has no
/// `set_linger`, so this does not build there.
#[test]
fn a_zero_linger_close_resets_the_peer() {
    for (linger, want) in [(false, "eof"), (true, "ConnectionReset")] {
        let mut sim = sim();
        let seen = Seen::default();
        recording_server(&mut sim, seen.clone());
        sim.client("client", async move {
            let s = TcpStream::connect("server:80").await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
            if linger {
                s.set_linger(Some(Duration::ZERO))?;
            }
            drop(s);
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(())
        });
        sim.run().unwrap();
        assert_eq!(
            seen.borrow().as_slice(),
            [want.to_string()],
            "linger zero: {linger}"
        );
    }
}

/// Patch 5: a paused host runs nothing and receives nothing. At resume its
/// clock jumps over the pause: a timer due during the pause fires at once,
/// at the resume, and bytes sent to it meanwhile arrive then.
#[test]
fn a_paused_host_catches_up_at_resume() {
    let mut sim = turmoil::Builder::new()
        .tick_duration(Duration::from_millis(1))
        .simulation_duration(Duration::from_secs(10))
        // A seeded network: an unseeded one draws its latencies from the
        // OS, and a slow draw once let the connection form after the pause.
        .rng_seed(0)
        .build();
    let log: Seen = Seen::default();
    let l2 = log.clone();
    sim.host("server", move || {
        let log = l2.clone();
        async move {
            let l = TcpListener::bind("0.0.0.0:80").await?;
            let (mut s, _) = l.accept().await?;
            let at = |log: &Seen, what: &str| {
                let ms = turmoil::sim_elapsed().unwrap().as_millis();
                log.borrow_mut().push(format!("{what}@{ms}"));
            };
            tokio::time::sleep(Duration::from_millis(100)).await;
            at(&log, "timer");
            let mut buf = [0u8; 8];
            let n = s.read(&mut buf).await?;
            at(&log, &format!("read{n}"));
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    sim.client("client", async {
        use tokio::io::AsyncWriteExt;
        let mut s = TcpStream::connect("server:80").await?;
        tokio::time::sleep(Duration::from_millis(150)).await;
        s.write_all(b"hi").await?;
        tokio::time::sleep(Duration::from_millis(600)).await;
        Ok(())
    });
    // Let the connection form, then pause the server from 50 ms to 400 ms.
    while sim.elapsed() < Duration::from_millis(50) {
        sim.step().unwrap();
    }
    sim.pause("server");
    while sim.elapsed() < Duration::from_millis(400) {
        sim.step().unwrap();
    }
    assert!(
        log.borrow().is_empty(),
        "paused: nothing ran {:?}",
        log.borrow()
    );
    sim.resume("server");
    sim.run().unwrap();
    let log = log.borrow();
    let ms = |i: usize| -> u64 { log[i].rsplit('@').next().unwrap().parse().unwrap() };
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(
        log[0].starts_with("timer@") && log[1].starts_with("read2@"),
        "{log:?}"
    );
    assert!(
        (400..=402).contains(&ms(0)),
        "the timer fires at the resume: {log:?}"
    );
    assert!(
        (400..=402).contains(&ms(1)),
        "the bytes arrive at the resume: {log:?}"
    );
}

/// Patch 5: a clock stepped ahead fires its timers early by the step; one
/// held back fires them late, while the simulation's time runs on.
#[test]
fn a_stepped_clock_moves_the_hosts_timers() {
    for (ahead, want) in [(true, 700u128), (false, 1_300)] {
        let mut sim = turmoil::Builder::new()
            .tick_duration(Duration::from_millis(1))
            .simulation_duration(Duration::from_secs(10))
            .rng_seed(0)
            .build();
        let fired: Seen = Seen::default();
        let f2 = fired.clone();
        sim.client("client", async move {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            let ms = turmoil::sim_elapsed().unwrap().as_millis();
            f2.borrow_mut().push(ms.to_string());
            Ok(())
        });
        while sim.elapsed() < Duration::from_millis(100) {
            sim.step().unwrap();
        }
        sim.step_clock("client", Duration::from_millis(300), ahead);
        sim.run().unwrap();
        let at: u128 = fired.borrow()[0].parse().unwrap();
        assert!(
            at.abs_diff(want) <= 2,
            "ahead {ahead}: fired at {at} ms, want {want}"
        );
    }
}

/// Patch 7: a host crashed before its first step, then bounced, starts its
/// software with the simulation's time (no "host instant not set" panic):
/// the time it was down.
#[test]
fn a_host_bounced_before_its_first_step_reads_the_time() {
    let mut sim = turmoil::Builder::new()
        .tick_duration(Duration::from_millis(1))
        .simulation_duration(Duration::from_secs(10))
        .build();
    let starts: Seen = Seen::default();
    let s2 = starts.clone();
    sim.host("server", move || {
        let at = turmoil::sim_elapsed().map(|d| d.as_millis());
        s2.borrow_mut().push(format!("{at:?}"));
        async {
            std::future::pending::<()>().await;
            Ok(())
        }
    });
    sim.crash("server");
    for _ in 0..100 {
        sim.step().unwrap();
    }
    sim.bounce("server");
    let starts = starts.borrow();
    assert_eq!(
        starts.last().map(String::as_str),
        Some("Some(100)"),
        "{starts:?}"
    );
}

/// Stamps `turmoil::sim_elapsed()` into its cell when dropped, as a
/// server's records do when a crash or a restart drops its tasks.
struct StampOnDrop(std::rc::Rc<std::cell::Cell<Option<Duration>>>);

impl Drop for StampOnDrop {
    fn drop(&mut self) {
        self.0.set(turmoil::sim_elapsed());
    }
}

/// Patch 9: a crashed or bounced host's software is dropped at the host's
/// time. An unpatched turmoil read the host's instant against the wall
/// clock there (no runtime is current), so once the run had taken longer
/// in real time than in simulated time (a loaded machine, or here a pause
/// of the driver), what its destructors stamped moved with the wall
/// clock, and so did the trace.
#[test]
fn a_restarted_hosts_destructors_read_the_simulated_time() {
    for crash in [false, true] {
        let stamp = std::rc::Rc::new(std::cell::Cell::new(None));
        let mut sim = turmoil::Builder::new().build();
        let held = stamp.clone();
        sim.host("server", move || {
            let guard = StampOnDrop(held.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok(())
            }
        });
        for _ in 0..5 {
            sim.step().expect("a step");
        }
        let simulated = sim.elapsed();
        // The wall clock overtakes the simulation's 5 ms.
        std::thread::sleep(Duration::from_millis(60));
        if crash {
            sim.crash("server");
        } else {
            sim.bounce("server");
        }
        assert_eq!(stamp.get(), Some(simulated), "crash: {crash}");
    }
}

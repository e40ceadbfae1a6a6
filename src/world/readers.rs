//! The events readers a client host runs beside its clients (the Events
//! extension): poll and push readers, and webhook readers with their
//! receivers' listeners; and how a server host reaches those receivers.

use super::{client_host, toxic};
use crate::base::clock::WallClock;
use crate::base::seed;
use crate::client::y2026::webhook::Power;
use crate::client::{self, ClientSpec};
use crate::fault::{Fault, FaultPlan};
use crate::scenario::{EventsMode, Scenario};
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;
use std::time::Duration;

/// A webhook receiver's listener on a client host, bound at its first
/// accept: its connections go through the host's toxics, as the host's
/// own do (a truncate `to_server` cuts the receiver's answer).
pub(super) struct ReceiverListener(
    pub(super) u16,
    pub(super) toxic::ToxicConnector,
    pub(super) Option<turmoil::net::TcpListener>,
);

impl client::y2026::webhook::Accept for ReceiverListener {
    type Io = toxic::ToxicIo;
    async fn accept(&mut self) -> io::Result<Self::Io> {
        let listener = match &mut self.2 {
            Some(l) => l,
            None => self
                .2
                .insert(turmoil::net::TcpListener::bind(("0.0.0.0", self.0)).await?),
        };
        let (s, _) = listener.accept().await?;
        Ok(self.1.wrap(s))
    }
}

/// The first port of a client host's webhook receivers (one port each).
pub(super) const RECEIVER_PORT: u16 = 9_000;

/// How a server host reaches the webhook receivers: any host of the
/// simulation, over its TCP.
pub(super) fn egress(wall: &WallClock) -> crate::server::Egress {
    crate::server::Egress {
        wall: wall.clone(),
        dial: Rc::new(|host: &str, port: u16| {
            let host = host.to_string();
            Box::pin(async move {
                let s = turmoil::net::TcpStream::connect((host.as_str(), port)).await?;
                Ok(Box::new(s) as Box<dyn crate::server::EgressIo>)
            })
        }),
        remote: true,
    }
}

/// The events readers of `specs`' clients (those whose group reads
/// events): each reads until half the heal phase has passed, then drains
/// until the run's end.
pub(super) fn events_readers(
    scenario: &Scenario,
    specs: &[ClientSpec],
) -> Vec<client::y2026::events::EventsSpec> {
    let ms = Duration::from_millis;
    let heal = scenario.heal.duration_ms;
    use client::y2026::events::ReadMode;
    specs
        .iter()
        .filter_map(|s| {
            Some(client::y2026::events::EventsSpec {
                client: s.index,
                mode: match s.group.events? {
                    EventsMode::Poll => ReadMode::Poll,
                    EventsMode::Push => ReadMode::Push,
                    EventsMode::Webhook => return None,
                },
                stop: ms(scenario.duration_ms + heal / 2),
                end: ms(scenario.duration_ms + heal),
                read_timeout: ms(s.group.read_timeout_ms),
                backoff: ms(s.group.backoff_ms),
            })
        })
        .collect()
}

/// The webhook receivers the plan restarts, by client.
pub(super) type Powers = BTreeMap<u32, Rc<Power>>;

/// A power for each receiver a `receiver_restart` or `refresh_lost` of
/// `plan` names.
pub(super) fn powers(plan: &FaultPlan) -> Powers {
    let restarted = plan.faults.iter().filter_map(|f| match *f.acting() {
        Fault::ReceiverRestart { client, .. } | Fault::RefreshLost { client, .. } => Some(client),
        _ => None,
    });
    restarted.map(|c| (c, Rc::default())).collect()
}

/// The wall clocks a `skew` with `clock = "wall"` steps: the server's
/// (every replica's: the time its signatures carry) and each client
/// host's (the time its receivers check them with).
#[derive(Clone, Debug, Default)]
pub(super) struct Walls {
    pub(super) server: WallClock,
    hosts: BTreeMap<u32, WallClock>,
}

impl Walls {
    /// A clock for each client host.
    pub(super) fn of(client_hosts: u32) -> Walls {
        Walls {
            server: WallClock::default(),
            hosts: (0..client_hosts)
                .map(|h| (h, WallClock::default()))
                .collect(),
        }
    }

    /// Client host `host`'s clock.
    pub(super) fn host(&self, host: u32) -> WallClock {
        self.hosts.get(&host).cloned().unwrap_or_default()
    }
}

/// The webhook readers of `specs`' clients on client host `host`: each
/// with a receiver on a port of its own (its power from `powers`, its
/// wall clock the host's), subscribing until half the heal phase has
/// passed.
pub(super) fn webhook_readers(
    scenario: &Scenario,
    (root_seed, host): (u64, u32),
    specs: &[ClientSpec],
    (powers, walls): (&Powers, &Walls),
) -> Vec<client::y2026::webhook::WebhookSpec> {
    let ms = Duration::from_millis;
    let heal = scenario.heal.duration_ms;
    let hooks = specs
        .iter()
        .filter(|s| s.group.events == Some(EventsMode::Webhook));
    hooks
        .enumerate()
        .map(|(k, s)| {
            let seed = seed::child(root_seed, &format!("webhook/{}", s.index));
            client::y2026::webhook::WebhookSpec {
                client: s.index,
                url: format!(
                    "http://{}:{}/hooks/{}",
                    client_host(host),
                    RECEIVER_PORT + k as u16,
                    s.index
                ),
                receiver: s.group.receiver.clone(),
                key: (0..4)
                    .flat_map(|i| seed::child(seed, &format!("key/{i}")).to_le_bytes())
                    .collect(),
                seed,
                stop: ms(scenario.duration_ms + heal / 2),
                end: ms(scenario.duration_ms + heal),
                read_timeout: ms(s.group.read_timeout_ms),
                backoff: ms(s.group.backoff_ms),
                power: powers.get(&s.index).cloned().unwrap_or_default(),
                wall: walls.host(host),
            }
        })
        .collect()
}

//! The reductions a shrink tries, each candidate checked by re-running the
//! simulation under the same seed: ddmin over the fault list, ddmin over
//! the clients, then each client's workload (calls after and before the
//! ones that matter) and each timed fault's start and length, repeated
//! until nothing more goes or the run budget is spent.
//!
//! A candidate is only ever kept after a run showed it still reproduces,
//! so whatever the budget cuts short, the plan in hand reproduces.

use crate::fault::Fault;
use crate::scenario::{ClientGroup, Scenario};

/// Simulations a shrink may spend when `--max-runs` is not given: enough
/// for a few rounds of every reduction on a scenario of tens of clients
/// (a shrink of sims/eviction.toml to one fault and one client spends
/// under a hundred).
pub const DEFAULT_MAX_RUNS: u64 = 400;

/// The runs a shrink has spent and may spend.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    /// Simulations run so far.
    pub used: u64,
    /// Most simulations allowed.
    pub max: u64,
    /// A candidate was refused because the budget was spent.
    pub exhausted: bool,
}

impl Budget {
    /// Takes one run from the budget; false once it is spent.
    pub fn take(&mut self) -> bool {
        if self.used >= self.max {
            self.exhausted = true;
            return false;
        }
        self.used += 1;
        true
    }
}

/// The scenario as the reductions see it: one client per entry in the
/// world's order (one group each, which runs the same trace as the groups
/// they came from: the world numbers clients and draws their start delays
/// in this order), its explicit faults, and its client hosts.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Plan {
    /// Client `i`'s group, with count 1.
    pub clients: Vec<ClientGroup>,
    /// The explicit faults.
    pub faults: Vec<Fault>,
    /// `network.client_hosts`.
    pub hosts: u32,
}

impl Plan {
    /// The plan of a scenario whose faults are all explicit.
    pub fn of(s: &Scenario) -> Plan {
        let clients = s
            .clients
            .iter()
            .flat_map(|g| {
                let one = ClientGroup {
                    count: 1,
                    ..g.clone()
                };
                std::iter::repeat_n(one, g.count as usize)
            })
            .collect();
        Plan {
            clients,
            faults: s.faults.explicit.clone(),
            hosts: s.network.client_hosts,
        }
    }

    /// `template` with this plan's clients (adjacent equal clients merged
    /// back into one group), faults and hosts.
    pub fn scenario(&self, template: &Scenario) -> Scenario {
        let mut groups: Vec<ClientGroup> = Vec::new();
        for c in &self.clients {
            match groups.last_mut() {
                Some(g)
                    if ClientGroup {
                        count: 1,
                        ..g.clone()
                    } == *c =>
                {
                    g.count += 1
                }
                _ => groups.push(c.clone()),
            }
        }
        let mut out = template.clone();
        out.clients = groups;
        out.faults.explicit = self.faults.clone();
        out.network.client_hosts = self.hosts;
        out
    }

    /// Total calls planned.
    pub fn calls(&self) -> u64 {
        self.clients.iter().map(|c| u64::from(c.calls)).sum()
    }

    /// The plan with only the clients `keep` (old indices, ascending),
    /// renumbered in order. Drops and switches of removed clients go.
    /// When no more clients are left than there were hosts, each survivor
    /// gets a host of its own and every timed fault of its old host is
    /// copied onto it (a fault on a host no survivor was on goes), so a
    /// survivor sees the same partitions and latency as before.
    pub fn keep_clients(&self, keep: &[u32]) -> Plan {
        let new_index = |old: u32| keep.iter().position(|&k| k == old).map(|i| i as u32);
        let n = keep.len() as u32;
        let own_hosts = n <= self.hosts;
        let mut faults = Vec::new();
        for f in &self.faults {
            match f {
                Fault::Drop {
                    client,
                    call,
                    after_event,
                    close,
                } => faults.extend(new_index(*client).map(|client| Fault::Drop {
                    client,
                    call: *call,
                    after_event: *after_event,
                    close: *close,
                })),
                Fault::Switch { client, after_call } => {
                    faults.extend(new_index(*client).map(|client| Fault::Switch {
                        client,
                        after_call: *after_call,
                    }))
                }
                f if own_hosts && f.host().is_some() => {
                    for (i, &old) in keep.iter().enumerate() {
                        if Some(old % self.hosts) == f.host() {
                            faults.push(f.on_host(i as u32));
                        }
                    }
                }
                other => faults.push(other.clone()),
            }
        }
        Plan {
            clients: keep
                .iter()
                .map(|&k| self.clients[k as usize].clone())
                .collect(),
            faults,
            hosts: if own_hosts { n.max(1) } else { self.hosts },
        }
    }

    /// The plan with client `c`'s calls cut to `calls`, after `skip`
    /// leading ones go: its drops and switches keep their place in the
    /// calls that remain (those in removed calls go).
    pub fn cut_calls(&self, c: usize, skip: u32, calls: u32) -> Plan {
        let mut out = self.clone();
        out.clients[c].calls = calls;
        let keep = |call: u32| call >= skip && call - skip < calls;
        out.faults = self
            .faults
            .iter()
            .filter_map(|f| match *f {
                Fault::Drop {
                    client,
                    call,
                    after_event,
                    close,
                } if client as usize == c => keep(call).then(|| Fault::Drop {
                    client,
                    call: call - skip,
                    after_event,
                    close,
                }),
                Fault::Switch { client, after_call } if client as usize == c => keep(after_call)
                    .then(|| Fault::Switch {
                        client,
                        after_call: after_call - skip,
                    }),
                _ => Some(f.clone()),
            })
            .collect();
        out
    }
}

/// ddmin (Zeller and Hildebrandt) over `items`, for which `test` is known
/// to hold: the empty list first when `min_len` is 0, then each of `n`
/// chunks alone, then each chunk's complement, doubling `n` when none
/// holds, down to single items. Returns a list, in the original order, from
/// which no single item can be removed (as far as the tests run show).
pub(super) fn ddmin<T: Clone>(
    items: Vec<T>,
    min_len: usize,
    test: &mut dyn FnMut(&[T]) -> bool,
) -> Vec<T> {
    if min_len == 0 && !items.is_empty() && test(&[]) {
        return Vec::new();
    }
    let mut cur = items;
    let mut n = 2usize;
    while cur.len() >= 2 && cur.len() > min_len {
        let size = cur.len().div_ceil(n);
        let chunks: Vec<Vec<T>> = cur.chunks(size).map(<[T]>::to_vec).collect();
        let mut next = None;
        for c in chunks.iter().filter(|c| c.len() >= min_len.max(1)) {
            if test(c) {
                next = Some((c.clone(), 2));
                break;
            }
        }
        if next.is_none() && chunks.len() > 2 {
            for i in 0..chunks.len() {
                let rest: Vec<T> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, c)| c.iter().cloned())
                    .collect();
                if rest.len() >= min_len && test(&rest) {
                    next = Some((rest, (chunks.len() - 1).max(2)));
                    break;
                }
            }
        }
        match next {
            Some((c, m)) => {
                cur = c;
                n = m;
            }
            None if size == 1 => break,
            None => n = (n * 2).min(cur.len()),
        }
    }
    cur
}

/// The smallest value in `lo..=hi` for which `test` holds, by bisection,
/// given that it holds at `hi` (`test` need not be monotone: only values a
/// run showed to hold are returned).
fn smallest(lo: u64, hi: u64, test: &mut dyn FnMut(u64) -> bool) -> u64 {
    if lo >= hi {
        return hi;
    }
    if test(lo) {
        return lo;
    }
    let (mut fails, mut holds) = (lo, hi);
    while holds - fails > 1 {
        let mid = fails + (holds - fails) / 2;
        if test(mid) {
            holds = mid;
        } else {
            fails = mid;
        }
    }
    holds
}

/// One round of every reduction over `plan` (which `test` holds for);
/// returns the plan left. `test` runs a candidate (false once the budget
/// is spent).
pub(super) fn round(plan: Plan, test: &mut dyn FnMut(&Plan) -> bool) -> Plan {
    // The faults: ddmin over the list.
    let base = plan.clone();
    let faults = ddmin(plan.faults.clone(), 0, &mut |fs: &[Fault]| {
        test(&Plan {
            faults: fs.to_vec(),
            ..base.clone()
        })
    });
    let mut plan = Plan { faults, ..plan };
    // The clients: ddmin over their indices (at least one stays).
    let all: Vec<u32> = (0..plan.clients.len() as u32).collect();
    let base = plan.clone();
    let keep = ddmin(all, 1, &mut |keep: &[u32]| test(&base.keep_clients(keep)));
    if keep.len() < plan.clients.len() {
        plan = plan.keep_clients(&keep);
    }
    // Each client's workload: the calls after the last that matters, then
    // those before the first.
    for c in 0..plan.clients.len() {
        let calls = u64::from(plan.clients[c].calls);
        let base = plan.clone();
        let n = smallest(1, calls, &mut |n| test(&base.cut_calls(c, 0, n as u32)));
        plan = plan.cut_calls(c, 0, n as u32);
        let calls = u64::from(plan.clients[c].calls);
        let base = plan.clone();
        let left = smallest(1, calls, &mut |left| {
            test(&base.cut_calls(c, (calls - left) as u32, left as u32))
        });
        plan = plan.cut_calls(c, (calls - left) as u32, left as u32);
    }
    // Each timed fault: its length, then its start (earlier ends sooner).
    for i in 0..plan.faults.len() {
        let Some((at, len)) = plan.faults[i].timing() else {
            continue;
        };
        let with = |plan: &Plan, at: u64, len: u64| {
            let mut p = plan.clone();
            p.faults[i] = plan.faults[i].retimed(at, len);
            p
        };
        if len > 1 {
            let base = plan.clone();
            let len = smallest(1, len, &mut |l| test(&with(&base, at, l)));
            plan = with(&plan, at, len);
        }
        let len = plan.faults[i].timing().map_or(0, |t| t.1);
        let base = plan.clone();
        let at = smallest(0, at, &mut |a| test(&with(&base, a, len)));
        plan = with(&plan, at, len);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_one_item_and_the_pair_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut runs = 0;
        let one = ddmin(items.clone(), 0, &mut |xs: &[u32]| {
            runs += 1;
            xs.contains(&17)
        });
        assert_eq!(one, [17]);
        assert!(runs < 20, "{runs} tests for one item of 40");
        let pair = ddmin(items, 1, &mut |xs: &[u32]| {
            xs.contains(&3) && xs.contains(&31)
        });
        assert_eq!(pair, [3, 31]);
    }

    #[test]
    fn ddmin_keeps_at_least_min_len_and_the_empty_list_when_nothing_matters() {
        let items: Vec<u32> = (0..9).collect();
        assert_eq!(
            ddmin(items.clone(), 0, &mut |_: &[u32]| true),
            Vec::<u32>::new()
        );
        assert_eq!(ddmin(items, 1, &mut |xs: &[u32]| !xs.is_empty()).len(), 1);
    }

    #[test]
    fn smallest_returns_only_a_value_that_held() {
        assert_eq!(smallest(1, 100, &mut |v| v >= 37), 37);
        // Not monotone: 10 holds, 5..=9 do not; whatever bisection finds held.
        let got = smallest(0, 100, &mut |v| v == 100 || v == 10 || v >= 60);
        assert!(got == 10 || got >= 60, "{got}");
    }

    fn two_groups() -> Scenario {
        let mut s = Scenario::parse(
            "name = \"t\"\nduration_ms = 1000\n[[clients]]\ncount = 3\ncalls = 4\n\
             [[clients]]\ncount = 2\ncalls = 4\nthink_ms = 7\n[network]\nclient_hosts = 3\n",
        )
        .unwrap();
        s.faults.explicit = vec![
            Fault::Drop {
                client: 4,
                call: 2,
                after_event: 1,
                close: crate::fault::Close::Fin,
            },
            Fault::Partition {
                host: 1,
                at_ms: 10,
                duration_ms: 20,
            },
            Fault::Partition {
                host: 2,
                at_ms: 30,
                duration_ms: 20,
            },
        ];
        s
    }

    #[test]
    fn a_plan_splits_and_merges_groups_without_changing_the_scenario() {
        let s = two_groups();
        let p = Plan::of(&s);
        assert_eq!(p.clients.len(), 5);
        assert_eq!(p.scenario(&s), s);
    }

    #[test]
    fn kept_clients_are_renumbered_and_keep_their_host_faults() {
        let p = Plan::of(&two_groups());
        // Clients 1 and 4 were both on host 1: each gets its own host, and
        // the host-1 partition is copied onto both; host 2's goes.
        let k = p.keep_clients(&[1, 4]);
        assert_eq!(k.hosts, 2);
        assert_eq!(k.clients[1].think_ms, 7);
        assert_eq!(
            k.faults,
            [
                Fault::Drop {
                    client: 1,
                    call: 2,
                    after_event: 1,
                    close: crate::fault::Close::Fin,
                },
                Fault::Partition {
                    host: 0,
                    at_ms: 10,
                    duration_ms: 20
                },
                Fault::Partition {
                    host: 1,
                    at_ms: 10,
                    duration_ms: 20
                },
            ]
        );
    }

    #[test]
    fn cutting_calls_moves_a_drop_with_its_call() {
        let p = Plan::of(&two_groups());
        let cut = p.cut_calls(4, 2, 1);
        assert_eq!(cut.clients[4].calls, 1);
        assert!(cut.faults.contains(&Fault::Drop {
            client: 4,
            call: 0,
            after_event: 1,
            close: crate::fault::Close::Fin,
        }));
        // A drop in a skipped call goes (its call is before the first kept).
        assert!(!p
            .cut_calls(4, 3, 1)
            .faults
            .iter()
            .any(|f| matches!(f, Fault::Drop { .. })));
        assert!(!p
            .cut_calls(4, 0, 2)
            .faults
            .iter()
            .any(|f| matches!(f, Fault::Drop { .. })));
    }
}

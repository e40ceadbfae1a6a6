//! An operation's verdict once its records are in: its failures, event
//! counts and hazards (`outcome`), the requests a dead kept-alive
//! connection swallowed (`stale_connection`), and results handled out of
//! order (`order_violations`).

use super::super::facts::{ClientFacts, Failure, OpFacts, RunFacts};

/// Decides one operation's failures and event counts, and its hazards.
pub(super) fn outcome(op: &mut OpFacts, client: &ClientFacts, host: Option<u32>, run: &RunFacts) {
    for x in &mut op.execs {
        let mut gap = false;
        for (i, r) in x.received.iter().enumerate() {
            if !r && x.emitted_at.get(i).copied().unwrap_or(true) {
                gap = true;
            } else if gap && i > 0 {
                x.hole = true;
                break;
            }
        }
    }
    if op.effects() > 1 {
        op.failures.insert(Failure::Duplicated);
    }
    op.unseen_attempt_ran = op
        .unseen_rpcs
        .iter()
        .any(|r| op.execs.iter().any(|x| &x.rpc_id == r));
    // A task op's execution whose creating request never got its
    // `CreateTaskResult` (one answered with a question was no creation).
    op.task_create_unseen = !op.tasks_created_by.is_empty()
        && op.execs.iter().any(|x| {
            x.committed
                && !op.tasks_created_by.contains(&x.rpc_id)
                && !op.input_asked_by.contains(&x.rpc_id)
        });
    stale_connection(op, host, run);
    op.result_before_drop = op
        .dropped_us
        .is_some_and(|d| op.execs.iter().any(|x| x.result_us.is_some_and(|r| r <= d)));
    let end = op.end_us.unwrap_or(u64::MAX);
    op.refused_404 = client
        .refused_404_us
        .iter()
        .any(|&t| t >= op.start_us && t <= end);
    op.session_refused = client.session_refused;
    op.retry_ignored = client
        .paused_us
        .iter()
        .any(|&p| p >= op.start_us && p <= end && !op.resumes_us.iter().any(|&r| r >= p));
    op.refused_lagging = client
        .refused_404_us
        .iter()
        .any(|&t| t >= op.start_us && t <= end && run.lagged_at(t));
    // Refused after the replica its client's calls last ran on went down.
    op.home_died = client.refused_404_us.iter().any(|&t| {
        t >= op.start_us
            && t <= end
            && run
                .crashes_us
                .iter()
                .any(|&(r, c)| c <= t && client.home_at(c) == Some(r))
    });
    // Refused after the pin of the session it was using went away (the
    // balancer restarted, or the pin expired under a request of it).
    op.affinity_lost = client.refused_404_us.iter().any(|&t| {
        t >= op.start_us
            && t <= end
            && client.session_at(t).is_some_and(|(since, s)| {
                run.balancer_restarts_us
                    .iter()
                    .any(|&b| since <= b && b <= t)
                    || run
                        .pins_expired
                        .iter()
                        .any(|&(e, x)| x == s && since <= e && e <= t)
            })
    });
    op.reinit_after_switch = client.switched_us.is_some_and(|s| {
        s <= end
            && client
                .refused_404_us
                .iter()
                .any(|&t| t >= s.max(op.start_us) && t <= end)
    });
    match (&op.handled, op.outcome) {
        (Some(h), _) => {
            let replayed = h.replayed;
            match op.handled_exec() {
                None => op.failures.insert(Failure::WrongResult),
                Some(i) => {
                    let x = &op.execs[i];
                    let missing = u64::from(x.emitted - x.received_count().min(x.emitted));
                    // A key-table replay announces all it missed; gaps
                    // announce up to the ids they named.
                    op.announced = if replayed {
                        missing
                    } else {
                        missing.min(h.gap_named)
                    };
                    op.silent = missing - op.announced;
                    if op.silent > 0 {
                        op.failures.insert(Failure::SilentLoss);
                    }
                }
            }
            // Executions that committed nothing owe nothing.
            let committed = op.execs.iter().filter(|x| x.committed);
            op.truncated = committed
                .clone()
                .next()
                .is_some_and(|x| x.received_count() < x.emitted);
            op.orphaned = committed
                .map(|x| u64::from(x.emitted.saturating_sub(x.received_count())))
                .sum();
        }
        (None, _) => op.failures.insert(Failure::Lost),
    }
    // Hazards.
    let overlaps = |w: &[(u32, u64, u64)]| {
        w.iter()
            .any(|&(h, from, to)| Some(h) == host && from <= end && to >= op.start_us)
    };
    // A switch in flight, or the first operation begun after it.
    let switched = client.switched_us.is_some_and(|s| {
        (s >= op.start_us && s <= end) || client.first_after_switch == Some(op.start_us)
    });
    // In `HAZARDS` order.
    let hz = [
        op.dropped_us.is_some(),
        overlaps(&run.partitions),
        overlaps(&run.spikes),
        op.restarted_during(&run.restarts_us),
        op.evicted(),
        switched,
        op.stale,
    ];
    op.hazards = hz
        .iter()
        .enumerate()
        .fold(0, |acc, (i, &on)| acc | (u8::from(on) << i));
}

/// Whether a request that failed on a reused connection met a dead one:
/// no partition of its client's host began and no latency spike was on
/// while it waited (those hit the exchange itself, on any connection);
/// and whether such a request never ran.
fn stale_connection(op: &mut OpFacts, host: Option<u32>, run: &RunFacts) {
    let here = |&(h, _, _): &(u32, u64, u64)| Some(h) == host;
    for (rpc, from, to) in &op.stale_rpcs {
        let cut = run
            .partitions
            .iter()
            .filter(|w| here(w))
            .any(|&(_, f, _)| f > *from && f <= *to);
        let slow = run
            .spikes
            .iter()
            .filter(|w| here(w))
            .any(|&(_, f, t)| f <= *to && t >= *from);
        if cut || slow {
            continue;
        }
        op.stale = true;
        if rpc
            .as_ref()
            .is_none_or(|r| !op.execs.iter().any(|x| &x.rpc_id == r))
        {
            op.stale_unrun = true;
        }
    }
}

/// Order violations: pairs (A, B) of one client's operations
/// where A's result was produced before B was first sent, yet the client
/// handled B's result first. Counted on A (`order_pairs`), which fails as
/// out of order. Per client: sort by handling order and count, with a
/// Fenwick tree over B's send positions, the earlier-handled B sent after
/// A's result.
pub(super) fn order_violations(ops: &mut [OpFacts], clients: usize) {
    let mut by_client: Vec<Vec<usize>> = vec![Vec::new(); clients];
    for (i, op) in ops.iter().enumerate() {
        if op.handled.is_some() && op.first_sent_seq.is_some() {
            by_client[op.client as usize].push(i);
        }
    }
    for list in by_client {
        if list.len() < 2 {
            continue;
        }
        let mut sends: Vec<u64> = list
            .iter()
            .map(|&i| ops[i].first_sent_seq.expect("filtered"))
            .collect();
        sends.sort_unstable();
        let mut order = list.clone();
        order.sort_by_key(|&i| ops[i].handled.as_ref().expect("filtered").seq);
        let mut tree = vec![0u64; sends.len() + 1];
        for (inserted, &a) in order.iter().enumerate() {
            // A's result: the earliest any execution produced one.
            if let Some(r) = ops[a].execs.iter().filter_map(|x| x.result_seq).min() {
                // Count inserted B with send > r: inserted − #(send <= r).
                let upto = sends.partition_point(|&s| s <= r);
                let mut le = 0;
                let mut k = upto;
                while k > 0 {
                    le += tree[k];
                    k &= k - 1;
                }
                let n = inserted as u64 - le;
                if n > 0 {
                    ops[a].order_pairs = n;
                    ops[a].failures.insert(Failure::OutOfOrder);
                }
            }
            let s = ops[a].first_sent_seq.expect("filtered");
            let mut k = sends.partition_point(|&x| x < s) + 1;
            while k < tree.len() {
                tree[k] += 1;
                k += k & k.wrapping_neg();
            }
        }
    }
}

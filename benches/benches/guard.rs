//! The guard's hot path: `SessionGuard::check` on the views a busy server
//! meets (no drop; one owed stream; 8, 1,000 and 10,000 drained streams
//! falling through to `Allow`). Run: `cargo bench -p mcp-chaos-benches --bench guard`.

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_chaos::guard::{check_transport, Limits, PostFacts, SessionGuard, Transport};
use std::hint::black_box;

const LIMITS: Limits = Limits { queue_capacity: 16 };

fn session(dropped: usize, owed: bool) -> SessionGuard {
    let mut g = SessionGuard::new();
    let mut next = 1;
    for i in 0..dropped.max(1) {
        let s = g.open_stream(next);
        next += 1;
        g.produced(s, next);
        if !(owed && i == dropped - 1) {
            g.written(s, next);
        }
        next += 1;
        if i < dropped {
            g.close_seen(s);
        }
    }
    g
}

fn bench(c: &mut Criterion) {
    let fresh = session(0, false);
    let owed = session(1, true);
    let many = session(8, false);
    let post = PostFacts {
        idempotent: true,
        dedup_honored: false,
    };
    let mut group = c.benchmark_group("guard_check");
    group.bench_function("fresh_no_drop", |b| {
        b.iter(|| black_box(&fresh).check(black_box(post), LIMITS))
    });
    group.bench_function("reject_not_drained", |b| {
        b.iter(|| black_box(&owed).check(black_box(post), LIMITS))
    });
    group.bench_function("allow_after_8_drained", |b| {
        b.iter(|| black_box(&many).check(black_box(post), LIMITS))
    });
    // Flat in the number of dropped streams: the check counts, not scans.
    for n in [1_000, 10_000] {
        let g = session(n, false);
        group.bench_function(format!("allow_after_{n}_drained"), |b| {
            b.iter(|| black_box(&g).check(black_box(post), LIMITS))
        });
    }
    group.bench_function("rule_t_cross_transport", |b| {
        b.iter(|| {
            check_transport(
                black_box(Transport::Legacy),
                black_box(Transport::Streamable),
                black_box(false),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

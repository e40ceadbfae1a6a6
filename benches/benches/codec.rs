//! The wire codecs on the simulation's hot path, one typical progress
//! event at a time: SSE framing and decoding, and JSON-RPC encoding and
//! decoding (today through `serde_json::Value`). Run: `cargo bench -p
//! mcp-chaos-benches --bench codec`.

use criterion::{criterion_group, criterion_main, Criterion};
use mcp_chaos::protocol::jsonrpc::{Message, RequestId};
use mcp_chaos::protocol::mcp::{self, ChunkRef};
use mcp_chaos::protocol::sse::{self, SseDecoder};
use serde_json::json;
use std::hint::black_box;

fn progress() -> Message {
    let chunk = ChunkRef {
        tag: "c12-op3".into(),
        execution: 1,
        index: 2,
    };
    let token = json!("c12-op3#1");
    let (method, params) =
        mcp::progress_notification(Some(&token), &RequestId::Str("c12-op3#1".into()), &chunk, 4);
    Message::Notification {
        method,
        params: Some(params),
    }
}

fn bench(c: &mut Criterion) {
    let msg = progress();
    let data = msg.encode();
    let frame = sse::encode(Some(42), None, &data, None);
    let mut group = c.benchmark_group("codec");
    group.bench_function("jsonrpc_encode_progress", |b| {
        b.iter(|| black_box(&msg).encode())
    });
    group.bench_function("jsonrpc_decode_progress", |b| {
        b.iter(|| Message::decode(black_box(data.as_bytes())).unwrap())
    });
    group.bench_function("sse_encode_event", |b| {
        b.iter(|| sse::encode(Some(42), None, black_box(&data), None))
    });
    group.bench_function("sse_decode_event", |b| {
        let mut out = Vec::with_capacity(1);
        b.iter(|| {
            let mut d = SseDecoder::new();
            out.clear();
            d.feed(black_box(&frame), &mut out).unwrap();
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The `cancel` arm: on a real socket it refuses a resume with 405 and a
//! close it sees cancels the tool (on the legacy stream too); in the
//! simulator every scenario runs under it without an oracle defect.

use crate::loopback::{
    drain, event_id, legacy_get, legacy_post, next, rpc_error, with_server, Harness,
};
use crate::simulate::path;
use mcp_chaos::client::http::Outgoing;
use mcp_chaos::history::{EventKind, Rec, Record};
use mcp_chaos::protocol::jsonrpc::{self, Message};
use mcp_chaos::protocol::mcp;
use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::Scenario;
use mcp_chaos::server::{Delivery, ServerConfig, Variant};
use serde_json::json;

/// Ledger chunks recorded for `tag`.
fn ledger_chunks(h: &Harness, tag: &str) -> usize {
    h.history
        .entries()
        .iter()
        .filter(|e| {
            matches!(&e.record, Rec::Ledger(mcp_chaos::history::LedgerRecord::Chunk { tag: t, .. })
                if t.as_ref() == tag)
        })
        .count()
}

/// The `cancel` arm refuses a resume with 405 and a JSON-RPC error body;
/// a plain GET (the notification stream) stays allowed; its delivery is
/// post-stream whatever the configuration asks.
#[test]
fn cancel_refuses_a_resume_with_405() {
    let cfg = ServerConfig {
        delivery: Delivery::SessionStream,
        ..ServerConfig::default()
    };
    with_server(Variant::Cancel, cfg, |h| async move {
        assert!(h.history.entries().iter().any(|e| matches!(
            e.record,
            Rec::Server(Record::ServerStarted {
                variant: "cancel",
                delivery: Delivery::PostStream,
                replica: None
            })
        )));
        let sid = h.initialize().await;
        let mut standalone = h.send(Outgoing::get(&sid, None)).await;
        assert_eq!(standalone.status, 200, "a plain GET stays allowed");
        assert!(standalone.is_sse());
        next(&mut standalone).await;
        let mut ex = h.call(&sid, "op-c", 4, None).await;
        assert_eq!(ex.status, 200, "the response rides the POST");
        assert!(ex.is_sse());
        let priming = next(&mut ex).await;
        let cursor = event_id(&priming).expect("priming id");
        let resume = h.send(Outgoing::get(&sid, Some(cursor))).await;
        assert_eq!(resume.status, 405);
        assert_eq!(resume.header("allow"), Some("GET, POST, DELETE"));
        let body = resume.json().await.unwrap().unwrap();
        assert_eq!(rpc_error(&body).code, jsonrpc::TRANSPORT_ERROR);
        // The resume took nothing over: the POST's stream goes on.
        h.release(4);
        let events = drain(&mut ex).await;
        assert_eq!(events.len(), 4);
        assert_eq!(h.ledger.executions("op-c"), 1);
    });
}

/// Under `cancel` a close the server sees cancels the request: the tool
/// stops emitting chunks, and the execution it took stays in the ledger
/// (one). Under `unguarded` the same close stops nothing.
#[test]
fn cancel_a_seen_close_cancels_the_tool() {
    for variant in [Variant::Cancel, Variant::Unguarded] {
        with_server(variant, ServerConfig::default(), |h| async move {
            let sid = h.initialize().await;
            let mut ex = h.call(&sid, "op-x", 8, None).await;
            next(&mut ex).await; // priming
            h.release(1);
            next(&mut ex).await; // chunk 1
            drop(ex);
            h.close_seen(1).await;
            h.release(7);
            h.tool_ended(1).await;
            let cancelled = h.history.entries().iter().any(|e| {
                matches!(
                    e.record,
                    Rec::Server(Record::ToolEnded {
                        cancelled: true,
                        ..
                    })
                )
            });
            let recorded = h
                .history
                .entries()
                .iter()
                .any(|e| matches!(e.record, Rec::Server(Record::CancelledOnClose { .. })));
            assert_eq!(h.ledger.executions("op-x"), 1, "{variant:?}");
            if variant == Variant::Cancel {
                assert!(cancelled && recorded, "the seen close cancelled it");
                assert_eq!(ledger_chunks(&h, "op-x"), 1, "no chunk after the close");
                assert_eq!(h.produced_ids(EventKind::Result), Vec::<u64>::new());
            } else {
                assert!(!cancelled && !recorded, "disconnection is not cancellation");
                assert_eq!(ledger_chunks(&h, "op-x"), 8);
            }
        });
    }
}

/// Under `cancel`, a seen close of the legacy stream cancels the session's
/// legacy requests still executing (their answers had no other way).
#[test]
fn cancel_a_seen_legacy_close_cancels_legacy_requests() {
    with_server(Variant::Cancel, ServerConfig::default(), |h| async move {
        let mut stream = h.send(legacy_get()).await;
        let endpoint = next(&mut stream).await;
        let init = Message::Request {
            id: h.id(),
            method: mcp::INITIALIZE.into(),
            params: Some(mcp::initialize_params(
                mcp::LEGACY_VERSION,
                json!({}),
                "legacy",
            )),
        };
        assert_eq!(legacy_post(&h, &endpoint.data, &init).await.status, 202);
        next(&mut stream).await; // the initialize result
        let call = h.call_msg(h.id(), "legacy-x", 4);
        assert_eq!(legacy_post(&h, &endpoint.data, &call).await.status, 202);
        h.release(1);
        next(&mut stream).await; // chunk 1
        drop(stream);
        h.close_seen(1).await;
        h.release(3);
        h.tool_ended(1).await;
        assert_eq!(h.ledger.executions("legacy-x"), 1);
        assert_eq!(ledger_chunks(&h, "legacy-x"), 1);
    });
}

/// The `cancel` arm: every scenario in `sims/` and `sims/causes/` runs
/// under it without an oracle defect (every failed operation has a
/// cause), plain and keys+cursors, a couple of seeds; its trace says the
/// effective delivery is post-stream and no resume is ever served.
#[test]
#[ignore = "slow: `cargo test --release -- --ignored` runs it, as CI does"]
fn every_scenario_runs_under_cancel_without_an_oracle_defect() {
    use mcp_chaos::run::Profile;
    let mut files = mcp_chaos::cli::scenario_files(&path("")).unwrap();
    files.extend(mcp_chaos::cli::scenario_files(&path("causes")).unwrap());
    assert!(files.len() >= 15, "both libraries are there");
    for f in files {
        let s = Scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        for seed in [0, 1] {
            for profile in [Profile::Plain, Profile::KeysCursors] {
                let opts = Options {
                    clients: Some(profile),
                    ..Options::default()
                };
                let repro =
                    run::repro_command(&f.display().to_string(), seed, Variant::Cancel, &opts);
                let (report, history) = run::run(&s, seed, Variant::Cancel, &opts)
                    .unwrap_or_else(|e| panic!("{e}\nreproduce: {repro}"));
                let caused: u64 = report.metrics.failures_by_cause.values().sum();
                assert_eq!(
                    caused,
                    report.metrics.ops_failed + report.metrics.deliveries_failed,
                    "one cause per failed operation\nreproduce: {repro}"
                );
                for e in history.entries().iter() {
                    match &e.record {
                        Rec::Server(Record::ServerStarted { delivery, .. }) => {
                            assert!(
                                *delivery == mcp_chaos::history::Delivery::PostStream,
                                "reproduce: {repro}"
                            )
                        }
                        Rec::Server(Record::Resumed { .. }) => {
                            panic!("cancel served a resume\nreproduce: {repro}")
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

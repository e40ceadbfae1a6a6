//! The field client behaviours (`[[clients]] field`): clients users run
//! that do not honour the server, on purpose. Each has its scenario in
//! `sims/field/`, whose expectations hold on every built-in arm; on some
//! arm it fails where the same clients honouring the server (`--set
//! client.field=[]`) lose nothing, they never lose more, and the remedy
//! the report names removes the failure.

use mcp_chaos::run::{self, Options};
use mcp_chaos::scenario::{Field, Scenario};
use mcp_chaos::server::Variant;
use std::path::PathBuf;

fn load(f: Field) -> (String, Scenario) {
    let label = format!("sims/field/{}.toml", f.as_str());
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(&label);
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{label}: {e}"));
    (label, s)
}

fn failed(s: &Scenario, v: Variant) -> u64 {
    let (r, _) = run::run(s, 0, v, &Options::default()).unwrap();
    r.metrics.ops_failed
}

#[test]
fn each_field_behaviour_fails_where_honouring_clients_lose_nothing() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sims/field");
    let files = std::fs::read_dir(dir).unwrap().count();
    assert_eq!(files, Field::ALL.len(), "one scenario per field behaviour");
    for f in Field::ALL {
        let (label, s) = load(f);
        assert!(
            s.clients.iter().any(|g| g.shows(f)),
            "{label} shows {}",
            f.as_str()
        );
        let mut honouring = s.clone();
        honouring.set("client.field", "[]").unwrap();
        // The arms where the behaviour alone makes the failure, and those
        // where it fails with a cause honouring clients never show.
        let (mut alone, mut own_cause) = (Vec::new(), Vec::new());
        for v in Variant::ALL {
            let (r, _) = crate::run_expecting(&label, &s, v);
            let (h, _) = run::run(&honouring, 0, v, &Options::default()).unwrap();
            let honest = h.metrics.ops_failed;
            assert!(
                honest <= r.metrics.ops_failed,
                "{label} under {}: honouring clients fail {honest}, these {}",
                v.as_str(),
                r.metrics.ops_failed
            );
            if r.metrics.ops_failed > 0 && honest == 0 {
                alone.push(v.as_str());
            }
            let by = &h.metrics.failures_by_cause;
            if r.metrics
                .failures_by_cause
                .keys()
                .any(|c| !by.contains_key(c))
            {
                own_cause.push(v.as_str());
            }
        }
        // A client that never cancels loses no more calls: the call it gave
        // up runs on to its effect, which its own cause names.
        if f == Field::CancelNeverSent {
            assert!(
                !own_cause.is_empty(),
                "{label}: on some arm the call given up runs on, under a cause of its own"
            );
            continue;
        }
        assert!(
            !alone.is_empty(),
            "{label}: on some arm the behaviour fails where honouring clients lose nothing"
        );
    }
}

/// key-per-attempt: keys cannot help (each attempt is a new call by its
/// key); guarded's Rule M answers the re-POST on the session that holds
/// the call's stream, whatever its key.
#[test]
fn a_key_per_attempt_defeats_keys_and_rule_m_holds() {
    let (_, s) = load(Field::KeyPerAttempt);
    let (r, _) = run::run(&s, 0, Variant::Keys, &Options::default()).unwrap();
    assert_eq!(
        r.metrics.failures_by_cause.get("key_changed"),
        Some(&1),
        "{:?}",
        r.metrics.failures_by_cause
    );
    assert_eq!(failed(&s, Variant::Guarded), 0);
}

/// never-reinit-after-404: every arm fails alike (a server that lost the
/// session can only answer 404); sessions that outlive the restart in a
/// durable shared store, or the 2026-07-28 wire, remove it.
#[test]
fn a_stale_session_fails_on_every_arm_until_sessions_outlive_the_restart() {
    let (_, s) = load(Field::NeverReinitAfter404);
    for v in Variant::ALL {
        let (r, _) = run::run(&s, 0, v, &Options::default()).unwrap();
        assert!(
            r.metrics.failures_by_cause.get("stale_session") > Some(&0),
            "{}: {:?}",
            v.as_str(),
            r.metrics.failures_by_cause
        );
    }
    let mut durable = s.clone();
    for (k, v) in [
        ("deployment.replicas", "2"),
        ("deployment.balancer", "round-robin"),
        ("deployment.store", "shared"),
        ("deployment.store_durable", "true"),
    ] {
        durable.set(k, v).unwrap();
    }
    let mut y2026 = s.clone();
    y2026.set("era", "2026-07-28").unwrap();
    for v in Variant::ALL {
        assert_eq!(failed(&durable, v), 0, "{} on a durable store", v.as_str());
        // Guarded on the 2026-07-28 wire refuses these keyless calls by
        // design (`key_required`), whatever their session.
        if v != Variant::Guarded {
            let n = failed(&y2026, v);
            assert_eq!(n, 0, "{} on the 2026-07-28 wire", v.as_str());
        }
    }
}

/// ignore-retry-field: every arm that polls loses the paused stream's
/// result (`retry_ignored`); a server that does not poll never pauses one.
#[test]
fn a_client_that_ignores_retry_loses_a_polled_stream_unless_the_server_does_not_poll() {
    let (_, s) = load(Field::IgnoreRetryField);
    for v in [Variant::Unguarded, Variant::Keys, Variant::Guarded] {
        let (r, _) = run::run(&s, 0, v, &Options::default()).unwrap();
        assert_eq!(
            r.metrics.failures_by_cause.get("retry_ignored"),
            Some(&1),
            "{}: {:?}",
            v.as_str(),
            r.metrics.failures_by_cause
        );
    }
    let mut no_polling = s.clone();
    no_polling.set("server.poll_after", "0").unwrap();
    for v in Variant::ALL {
        assert_eq!(failed(&no_polling, v), 0, "{} without polling", v.as_str());
    }
}

/// no-cursor-on-second-resume: a resumed stream that breaks before any id
/// leaves this client without a cursor on the unguarded arms
/// (`cursor_dropped`); guarded's `replay-end` names the stream's position
/// at once, so the client reconnects with a cursor there, as one that
/// keeps its cursor does everywhere.
#[test]
fn a_cursor_kept_only_by_the_broken_stream_is_lost_unless_the_replay_names_its_position() {
    let (_, s) = load(Field::NoCursorOnSecondResume);
    for v in [Variant::Unguarded, Variant::Keys] {
        let (r, _) = run::run(&s, 0, v, &Options::default()).unwrap();
        assert_eq!(
            r.metrics.failures_by_cause.get("cursor_dropped"),
            Some(&1),
            "{}: {:?}",
            v.as_str(),
            r.metrics.failures_by_cause
        );
    }
    assert_eq!(failed(&s, Variant::Guarded), 0);
    let mut keeping = s.clone();
    keeping.set("client.field", "[]").unwrap();
    for v in [Variant::Unguarded, Variant::Keys, Variant::Guarded] {
        assert_eq!(failed(&keeping, v), 0, "{} keeping its cursor", v.as_str());
    }
}

/// fresh-session-per-call: a session per call, none closed, fills a
/// bounded session table (`session_refused`) on every built-in arm; a
/// server that ends idle sessions takes the leftovers back, and the
/// 2026-07-28 wire has no session to leave.
#[test]
fn a_session_per_call_runs_a_bounded_server_out_of_sessions_unless_idle_ones_end() {
    let (_, s) = load(Field::FreshSessionPerCall);
    for v in [
        Variant::Unguarded,
        Variant::Keys,
        Variant::Guarded,
        Variant::Cancel,
    ] {
        let (r, _) = run::run(&s, 0, v, &Options::default()).unwrap();
        assert!(
            r.metrics.failures_by_cause.get("session_refused") > Some(&0),
            "{}: {:?}",
            v.as_str(),
            r.metrics.failures_by_cause
        );
        assert!(r.metrics.reinitializations >= 3, "a session per call");
    }
    let mut idle = s.clone();
    idle.set("server.session_idle_ms", "50").unwrap();
    let mut y2026 = s.clone();
    y2026.set("era", "2026-07-28").unwrap();
    for v in [Variant::Unguarded, Variant::Keys, Variant::Guarded] {
        assert_eq!(failed(&idle, v), 0, "{} ending idle sessions", v.as_str());
    }
    for v in [Variant::Unguarded, Variant::Keys] {
        assert_eq!(
            failed(&y2026, v),
            0,
            "{} on the 2026-07-28 wire",
            v.as_str()
        );
    }
}

/// cancel-never-sent: the call this client gives up runs on to its effect
/// on the arms that wait for a cancellation (`cancel_not_sent`); the same
/// clients that cancel it lose the same call with nothing run
/// (`gave_up`), unless the server drops the cancellation
/// (`cancel_ignored`); the `cancel` arm stops it on the close it sees.
#[test]
fn a_call_given_up_without_a_cancellation_runs_on_unless_the_close_cancels_it() {
    let (_, s) = load(Field::CancelNeverSent);
    let causes = |s: &Scenario, v: Variant| {
        let (r, _) = run::run(s, 0, v, &Options::default()).unwrap();
        r.metrics.failures_by_cause
    };
    let mut cancelling = s.clone();
    cancelling.set("client.field", "[]").unwrap();
    let mut dropping = cancelling.clone();
    dropping
        .set("server.cancel_notifications", "dropped")
        .unwrap();
    for v in [Variant::Unguarded, Variant::Keys] {
        let name = v.as_str();
        assert_eq!(causes(&s, v).get("cancel_not_sent"), Some(&1), "{name}");
        let honest = causes(&cancelling, v);
        assert_eq!(honest.get("gave_up"), Some(&1), "{name}: {honest:?}");
        assert_eq!(honest.len(), 1, "{name}: {honest:?}");
        let dropped = causes(&dropping, v);
        assert_eq!(
            dropped.get("cancel_ignored"),
            Some(&1),
            "{name}: {dropped:?}"
        );
    }
    let closing = causes(&s, Variant::Cancel);
    assert_eq!(closing.get("gave_up"), Some(&1), "cancel: {closing:?}");
    assert_eq!(closing.len(), 1, "cancel: {closing:?}");
}

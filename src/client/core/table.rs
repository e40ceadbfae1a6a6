//! The reaction table's rows: for each request the client makes, the
//! actions [`react`] returns for each answer it can get, as the client
//! does them today. The requests, the answers and the checks that hold
//! the rows to [`react`] and to every pair are in `tests.rs`.

use super::tests::{
    each, json, row, with, Kind, Reply, Row, ADVISED, GET_REFUSALS, LEGACY, REPLIES, STATUS,
    UNNAMED, V,
};
use super::*;

use Action as A;
use Kind as K;
use Reply as R;

pub(super) fn initialize_rows() -> Vec<Row> {
    let init_stream = Answer::Stream {
        status: 200,
        session: true,
    };
    let init_json = Answer::Json {
        status: 200,
        session: true,
        result: true,
        hint: false,
    };
    let mut rows = vec![
        // The result follows on the stream, for the session its headers name.
        with(
            K::Initialize,
            R::Stream200,
            init_stream,
            UNNAMED,
            &[A::Answered, A::AwaitInitResult],
        ),
        // Headers naming no session: the stream is read, nothing awaited.
        row(K::Initialize, R::Stream200, UNNAMED, &[A::Answered]),
        with(
            K::Initialize,
            R::Json200,
            init_json,
            UNNAMED,
            &[A::Initialized],
        ),
        // A 200 that names no session is a failed initialize.
        row(K::Initialize, R::Json200, UNNAMED, &[A::RetryInit]),
        // Its stream is never named: a break or an end before the result
        // is a failed initialize, a gap only touches it.
        row(K::Initialize, R::Drop, UNNAMED, &[A::RetryInit]),
        row(K::Initialize, R::ReadTimeout, UNNAMED, &[A::RetryInit]),
        row(K::Initialize, R::Ended, UNNAMED, &[A::RetryInit]),
        row(K::Initialize, R::Gap, UNNAMED, &[A::Touch]),
        row(K::Initialize, R::NoAnswer, UNNAMED, &[A::RetryInit]),
    ];
    let refusals = [
        R::Accepted202,
        R::Bad400,
        R::NotFound404,
        R::NotAllowed405,
        R::Conflict409,
        R::Gone410,
        R::TooLarge413,
        R::Unprocessable422,
        R::BadGateway502,
    ];
    rows.extend(each(K::Initialize, &refusals, UNNAMED, &[A::RetryInit]));
    rows.push(row(
        K::Initialize,
        R::Unavailable503,
        UNNAMED,
        &[STATUS, A::RetryInit],
    ));
    rows
}

pub(super) fn call_rows() -> Vec<Row> {
    let inactive = View {
        op_active: false,
        ..V
    };
    let error_200 = json(200);
    let named = |hint| A::RecordStatus {
        hint,
        stream_first: true,
    };
    let mut rows = vec![
        row(K::Call, R::Stream200, V, &[A::Answered]),
        row(K::Call, R::Json200, V, &[A::DeliverJson]),
        // A 200 whose body is no result (an error): failed.
        with(K::Call, R::Json200, error_200, V, &[STATUS, A::Abandon]),
        // An operation already done or abandoned ignores its answers.
        row(K::Call, R::Json200, inactive, &[]),
        row(K::Call, R::Unavailable503, inactive, &[]),
        // 202: the response rides the standalone stream, if there is one.
        row(K::Call, R::Accepted202, V, &[A::RideStandalone]),
        row(
            K::Call,
            R::Accepted202,
            View {
                standalone: false,
                ..V
            },
            &[],
        ),
        row(K::Call, R::NotFound404, V, &[STATUS, A::Reinit]),
        row(
            K::Call,
            R::Conflict409Hint,
            V,
            &[named(true), A::ResumeNamed],
        ),
        row(K::Call, R::Conflict409, V, &[named(true), A::RetryPost]),
        row(
            K::Call,
            R::Gone410,
            V,
            &[named(false), A::FinishNamed, A::Reissue],
        ),
        row(K::Call, R::Unavailable503, V, &[STATUS, A::RetryPost]),
        // The stream broke or went silent: the behaviour decides (OnBreak).
        row(K::Call, R::Drop, V, &[A::Interrupt { clean: false }]),
        row(K::Call, R::ReadTimeout, V, &[A::Interrupt { clean: false }]),
        // Broken before any event: no response, the POST again.
        row(K::Call, R::Drop, UNNAMED, &[A::NoResponse, A::RetryPost]),
        row(
            K::Call,
            R::Ended,
            V,
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        // Ended after `retry:`: a polling close, resumed as told.
        row(K::Call, R::Ended, ADVISED, &[A::Detach, A::PollResume]),
        // ... but broken after it, a failure like any other.
        row(K::Call, R::Drop, ADVISED, &[A::Interrupt { clean: false }]),
        // ... and with the call done, an ordinary end.
        row(
            K::Call,
            R::Ended,
            View {
                op_active: false,
                ..ADVISED
            },
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        row(K::Call, R::Gap, V, &[A::Touch, A::RecordGap]),
        with(
            K::Call,
            R::Gap,
            Answer::Gap { readable: false },
            V,
            &[A::Touch],
        ),
        row(K::Call, R::NoAnswer, V, &[A::NoResponse, A::RetryPost]),
        with(
            K::Call,
            R::NoAnswer,
            Answer::Unanswered { connected: true },
            V,
            &[A::NoResponse, A::RetryPost],
        ),
        row(K::Call, R::NoAnswer, inactive, &[A::RetryPost]),
    ];
    let failed = [
        R::Bad400,
        R::NotAllowed405,
        R::TooLarge413,
        R::Unprocessable422,
        R::BadGateway502,
    ];
    rows.extend(each(K::Call, &failed, V, &[STATUS, A::Abandon]));
    // Under a key a gateway's failure is sent again: it is safe.
    let keyed = View { keyed: true, ..V };
    rows.push(row(
        K::Call,
        R::BadGateway502,
        keyed,
        &[STATUS, A::RetryPost],
    ));
    rows
}

pub(super) fn resume_rows() -> Vec<Row> {
    let refused = [STATUS, A::Detach, A::EndHold, A::ResumeRefused];
    let empty = View {
        brought_nothing: true,
        ..V
    };
    let idle = View {
        waiting: false,
        ..V
    };
    let mut rows = vec![
        row(
            K::ResumeGet,
            R::Stream200,
            V,
            &[A::Answered, A::ResumeAccepted],
        ),
        row(
            K::ResumeGet,
            R::NotFound404,
            V,
            &[STATUS, A::Detach, A::EndHold, A::Reinit],
        ),
        // A 200 that ends bringing nothing while operations wait: refused.
        row(
            K::ResumeGet,
            R::EmptyResume200,
            empty,
            &[A::Detach, A::EndHold, A::ResumeRefused],
        ),
        // rmcp's reconnect policy: the same resume again, without end.
        row(
            K::ResumeGet,
            R::EmptyResume200,
            View {
                reconnect_forever: true,
                ..empty
            },
            &[A::Detach, A::EndHold, A::Reconnect],
        ),
        // A replay the server closed after `retry:`: resumed as told.
        row(K::ResumeGet, R::Ended, ADVISED, &[A::Detach, A::PollResume]),
        // ... and with nothing waiting, an ordinary end.
        row(
            K::ResumeGet,
            R::EmptyResume200,
            View {
                waiting: false,
                ..empty
            },
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        row(
            K::ResumeGet,
            R::Ended,
            V,
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        row(K::ResumeGet, R::Drop, V, &[A::Interrupt { clean: false }]),
        row(
            K::ResumeGet,
            R::Drop,
            empty,
            &[A::Interrupt { clean: false }],
        ),
        row(
            K::ResumeGet,
            R::ReadTimeout,
            V,
            &[A::Interrupt { clean: false }],
        ),
        row(K::ResumeGet, R::Gap, V, &[A::Touch, A::RecordGap]),
        row(
            K::ResumeGet,
            R::Gap,
            View {
                session: false,
                ..V
            },
            &[A::Touch],
        ),
        row(K::ResumeGet, R::NoAnswer, V, &[A::Detach, A::RetryResume]),
        // Nothing to resume for, unless a transport switch waits on it.
        row(K::ResumeGet, R::NoAnswer, idle, &[A::Detach]),
        row(
            K::ResumeGet,
            R::NoAnswer,
            View {
                switch_pending: true,
                ..idle
            },
            &[A::Detach, A::RetryResume],
        ),
    ];
    // 410 (evicted), 405 (a server that does not resume), any refusal.
    rows.extend(each(K::ResumeGet, &GET_REFUSALS, V, &refused));
    rows
}

pub(super) fn standalone_rows() -> Vec<Row> {
    let mut rows = vec![
        row(K::StandaloneGet, R::Stream200, V, &[A::Answered]),
        row(K::StandaloneGet, R::NotFound404, V, &[A::Reinit]),
        row(
            K::StandaloneGet,
            R::Drop,
            V,
            &[A::Interrupt { clean: false }],
        ),
        // Broken before its priming event named it: opened again.
        row(K::StandaloneGet, R::Drop, UNNAMED, &[A::RetryOpen]),
        // (The reader reports silence only while calls ride the stream.)
        row(
            K::StandaloneGet,
            R::ReadTimeout,
            V,
            &[A::Interrupt { clean: false }],
        ),
        row(
            K::StandaloneGet,
            R::Ended,
            V,
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        row(
            K::StandaloneGet,
            R::Ended,
            ADVISED,
            &[A::Detach, A::PollResume],
        ),
        row(K::StandaloneGet, R::Gap, V, &[A::Touch, A::RecordGap]),
        row(K::StandaloneGet, R::NoAnswer, V, &[A::RetryOpen]),
    ];
    rows.extend(each(K::StandaloneGet, &GET_REFUSALS, V, &[A::RetryOpen]));
    rows
}

pub(super) fn legacy_get_rows() -> Vec<Row> {
    let before_endpoint = View {
        session: false,
        ..UNNAMED
    };
    let mut rows = vec![
        row(K::LegacyGet, R::Stream200, LEGACY, &[A::Answered]),
        // The legacy stream lost: that is the network change.
        row(
            K::LegacyGet,
            R::Drop,
            LEGACY,
            &[A::Switch, A::Interrupt { clean: false }],
        ),
        row(
            K::LegacyGet,
            R::ReadTimeout,
            LEGACY,
            &[A::Switch, A::Interrupt { clean: false }],
        ),
        row(
            K::LegacyGet,
            R::Ended,
            LEGACY,
            &[A::Switch, A::EndHold, A::Interrupt { clean: true }],
        ),
        // Lost after the endpoint event, before any numbered event: the
        // change, once as a lost stream and once as a failed exchange.
        row(
            K::LegacyGet,
            R::Drop,
            View {
                named: false,
                ..LEGACY
            },
            &[A::Switch, A::Switch],
        ),
        // Lost before the endpoint event: no session yet, initialize again.
        row(K::LegacyGet, R::Drop, before_endpoint, &[A::RetryInit]),
        // After the switch, a legacy stream still ending is no change.
        row(
            K::LegacyGet,
            R::Ended,
            V,
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        row(K::LegacyGet, R::Gap, LEGACY, &[A::Touch, A::RecordGap]),
        row(K::LegacyGet, R::NoAnswer, LEGACY, &[A::Switch]),
        row(K::LegacyGet, R::NoAnswer, before_endpoint, &[A::RetryInit]),
    ];
    // Answered without SSE: the legacy stream failed to open.
    let refusals = [
        R::Json200,
        R::Bad400,
        R::NotFound404,
        R::NotAllowed405,
        R::Conflict409,
        R::Gone410,
        R::Unavailable503,
        R::BadGateway502,
    ];
    rows.extend(each(
        K::LegacyGet,
        &refusals,
        before_endpoint,
        &[A::RetryInit],
    ));
    rows
}

pub(super) fn legacy_post_rows() -> Vec<Row> {
    let mut rows = vec![
        // Accepted: its answer rides the legacy stream.
        row(K::LegacyPost, R::Accepted202, LEGACY, &[]),
        row(K::LegacyPost, R::NotFound404, LEGACY, &[STATUS, A::Reinit]),
        // A lost legacy message (initialize, subscribe, a call): start over.
        row(K::LegacyPost, R::NoAnswer, LEGACY, &[A::ReinitNow]),
    ];
    let recorded = [
        R::Json200,
        R::Bad400,
        R::NotAllowed405,
        R::Conflict409,
        R::Gone410,
        R::TooLarge413,
        R::Unprocessable422,
        R::Unavailable503,
        R::BadGateway502,
    ];
    rows.extend(each(K::LegacyPost, &recorded, LEGACY, &[STATUS]));
    rows
}

pub(super) fn subscribe_rows() -> Vec<Row> {
    let mut rows = vec![
        row(K::Subscribe, R::Stream200, V, &[A::Answered]),
        row(K::Subscribe, R::NotFound404, V, &[A::Reinit]),
        row(K::Subscribe, R::Drop, V, &[A::Interrupt { clean: false }]),
        row(K::Subscribe, R::Drop, UNNAMED, &[A::RetrySubscribe]),
        row(
            K::Subscribe,
            R::ReadTimeout,
            V,
            &[A::Interrupt { clean: false }],
        ),
        row(
            K::Subscribe,
            R::Ended,
            V,
            &[A::EndHold, A::Interrupt { clean: true }],
        ),
        row(K::Subscribe, R::Gap, V, &[A::Touch, A::RecordGap]),
        row(K::Subscribe, R::NoAnswer, V, &[A::RetrySubscribe]),
    ];
    // Any other answer: the subscription is best effort, nothing follows.
    let ignored = [
        R::Json200,
        R::Accepted202,
        R::Bad400,
        R::NotAllowed405,
        R::Conflict409,
        R::Gone410,
        R::TooLarge413,
        R::Unprocessable422,
        R::Unavailable503,
        R::BadGateway502,
    ];
    rows.extend(each(K::Subscribe, &ignored, V, &[]));
    rows
}

pub(super) fn cancel_rows() -> Vec<Row> {
    // Sent and forgotten: the server's acceptance goes on the record,
    // nothing else follows (a request it no longer knows, a session
    // gone, a lost answer: the client has left the request already).
    let mut rows = vec![row(K::Cancel, R::Accepted202, V, &[A::CancelAccepted])];
    let not_here = [R::Accepted202, R::EmptyResume200, R::Conflict409Hint];
    let ignored: Vec<Reply> = REPLIES
        .into_iter()
        .filter(|r| !not_here.contains(r))
        .collect();
    rows.extend(each(K::Cancel, &ignored, V, &[]));
    rows
}

//! The reaction table, row by row: for every request the client makes ×
//! every answer it can get, the actions [`react`] returns, as the client
//! does them today. The pairs that cannot happen are listed with why, and
//! a test fails when a pair is in neither list.

use super::*;

/// The requests, as the issue names them; `Delete` is one the virtual
/// client never sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Initialize,
    Call,
    ResumeGet,
    StandaloneGet,
    LegacyGet,
    LegacyPost,
    Subscribe,
    Delete,
}

const KINDS: [Kind; 8] = [
    Kind::Initialize,
    Kind::Call,
    Kind::ResumeGet,
    Kind::StandaloneGet,
    Kind::LegacyGet,
    Kind::LegacyPost,
    Kind::Subscribe,
    Kind::Delete,
];

impl Kind {
    /// The core's request of this kind (none for one never sent).
    fn request(self) -> Option<Request> {
        match self {
            Kind::Initialize => Some(Request::Initialize),
            Kind::Call => Some(Request::Call),
            Kind::ResumeGet => Some(Request::Resume),
            Kind::StandaloneGet => Some(Request::Open),
            Kind::LegacyGet => Some(Request::LegacyOpen),
            Kind::LegacyPost => Some(Request::LegacyPost),
            Kind::Subscribe => Some(Request::Subscribe),
            Kind::Delete => None,
        }
    }

    /// The kind of a core request: a new request the table misses does
    /// not compile.
    fn of(r: Request) -> Kind {
        match r {
            Request::Initialize => Kind::Initialize,
            Request::Call => Kind::Call,
            Request::Resume => Kind::ResumeGet,
            Request::Open => Kind::StandaloneGet,
            Request::LegacyOpen => Kind::LegacyGet,
            Request::LegacyPost => Kind::LegacyPost,
            Request::Subscribe => Kind::Subscribe,
        }
    }
}

/// The answers, as the issue names them, and two more the client tells
/// apart: no answer at all, and a stream that ends cleanly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Reply {
    Stream200,
    Json200,
    Accepted202,
    EmptyResume200,
    Bad400,
    NotFound404,
    NotAllowed405,
    Conflict409Hint,
    Conflict409,
    Gone410,
    TooLarge413,
    Unprocessable422,
    Unavailable503,
    /// A gateway's 502 (504 is answered alike).
    BadGateway502,
    /// The connection lost during the stream (a planned drop, a break).
    Drop,
    /// The stream silent past the read timeout while it owes events.
    ReadTimeout,
    Gap,
    /// The connection failed, or was lost or timed out before the headers.
    NoAnswer,
    /// The stream ended cleanly.
    Ended,
}

const REPLIES: [Reply; 19] = [
    Reply::Stream200,
    Reply::Json200,
    Reply::Accepted202,
    Reply::EmptyResume200,
    Reply::Bad400,
    Reply::NotFound404,
    Reply::NotAllowed405,
    Reply::Conflict409Hint,
    Reply::Conflict409,
    Reply::Gone410,
    Reply::TooLarge413,
    Reply::Unprocessable422,
    Reply::Unavailable503,
    Reply::BadGateway502,
    Reply::Drop,
    Reply::ReadTimeout,
    Reply::Gap,
    Reply::NoAnswer,
    Reply::Ended,
];

fn json(status: u16) -> Answer {
    Answer::Json {
        status,
        session: false,
        result: false,
        hint: false,
    }
}

impl Reply {
    /// The core's answer this reply is, as a row uses it unless it says
    /// otherwise.
    fn answer(self) -> Answer {
        match self {
            Reply::Stream200 => Answer::Stream {
                status: 200,
                session: false,
            },
            Reply::Json200 => Answer::Json {
                status: 200,
                session: false,
                result: true,
                hint: false,
            },
            Reply::Accepted202 => json(202),
            Reply::Bad400 => json(400),
            Reply::NotFound404 => json(404),
            Reply::NotAllowed405 => json(405),
            Reply::Conflict409Hint => Answer::Json {
                status: 409,
                session: false,
                result: false,
                hint: true,
            },
            Reply::Conflict409 => json(409),
            Reply::Gone410 => json(410),
            Reply::TooLarge413 => json(413),
            Reply::Unprocessable422 => json(422),
            Reply::Unavailable503 => json(503),
            Reply::BadGateway502 => json(502),
            Reply::Drop | Reply::ReadTimeout => Answer::Ended { clean: false },
            Reply::EmptyResume200 | Reply::Ended => Answer::Ended { clean: true },
            Reply::Gap => Answer::Gap { readable: true },
            Reply::NoAnswer => Answer::Unanswered { connected: false },
        }
    }

    /// Whether `a` is an answer of this reply (a row's override stays one).
    fn admits(self, a: Answer) -> bool {
        match (self, a) {
            (Reply::Stream200, Answer::Stream { status, .. }) => status == 200,
            (Reply::Json200, Answer::Json { status, .. }) => status == 200,
            (Reply::Conflict409Hint, Answer::Json { status, hint, .. }) => status == 409 && hint,
            (Reply::Conflict409, Answer::Json { status, hint, .. }) => status == 409 && !hint,
            (Reply::NoAnswer, Answer::Unanswered { .. }) | (Reply::Gap, Answer::Gap { .. }) => true,
            (r, a) => r.answer() == a,
        }
    }
}

/// A client mid-run on streamable HTTP: a session, its standalone stream
/// known, the call active, the exchange's stream named, something
/// brought, operations waiting on a resume.
const V: View = View {
    session: true,
    legacy: false,
    op_active: true,
    standalone: true,
    named: true,
    brought_nothing: false,
    waiting: true,
    switch_pending: false,
    keyed: false,
    advised: false,
    reconnect_forever: false,
};

/// The exchange's stream carried the server's `retry:` advice.
const ADVISED: View = View { advised: true, ..V };

/// An exchange no event id has named yet (an initialize's never is).
const UNNAMED: View = View { named: false, ..V };

/// A legacy client whose `GET /sse` named its session.
const LEGACY: View = View { legacy: true, ..V };

const STATUS: Action = Action::RecordStatus {
    hint: false,
    stream_first: false,
};

struct Row {
    kind: Kind,
    reply: Reply,
    answer: Answer,
    view: View,
    then: Vec<Action>,
}

fn row(kind: Kind, reply: Reply, view: View, then: &[Action]) -> Row {
    with(kind, reply, reply.answer(), view, then)
}

fn with(kind: Kind, reply: Reply, answer: Answer, view: View, then: &[Action]) -> Row {
    Row {
        kind,
        reply,
        answer,
        view,
        then: then.to_vec(),
    }
}

use Action as A;
use Kind as K;
use Reply as R;

/// The answers a GET can get that are neither a stream nor a 404 (nor
/// not applicable to a GET).
const GET_REFUSALS: [Reply; 7] = [
    R::Json200,
    R::Bad400,
    R::NotAllowed405,
    R::Conflict409,
    R::Gone410,
    R::Unavailable503,
    R::BadGateway502,
];

/// The statuses a request answers the same way, one row each.
fn each(kind: Kind, replies: &[Reply], view: View, then: &[Action]) -> Vec<Row> {
    replies.iter().map(|&r| row(kind, r, view, then)).collect()
}

fn initialize_rows() -> Vec<Row> {
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
        R::Unavailable503,
        R::BadGateway502,
    ];
    rows.extend(each(K::Initialize, &refusals, UNNAMED, &[A::RetryInit]));
    rows
}

fn call_rows() -> Vec<Row> {
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

fn resume_rows() -> Vec<Row> {
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

fn standalone_rows() -> Vec<Row> {
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

fn legacy_get_rows() -> Vec<Row> {
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

fn legacy_post_rows() -> Vec<Row> {
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

fn subscribe_rows() -> Vec<Row> {
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

fn rows() -> Vec<Row> {
    let mut rows = initialize_rows();
    rows.extend(call_rows());
    rows.extend(resume_rows());
    rows.extend(standalone_rows());
    rows.extend(legacy_get_rows());
    rows.extend(legacy_post_rows());
    rows.extend(subscribe_rows());
    rows
}

/// The pairs that cannot happen, with why.
fn not_applicable() -> Vec<(Kind, Reply, &'static str)> {
    let mut na = Vec::new();
    for r in REPLIES {
        na.push((K::Delete, r, "the virtual client never sends DELETE"));
    }
    for k in [
        K::Initialize,
        K::Call,
        K::StandaloneGet,
        K::LegacyGet,
        K::LegacyPost,
        K::Subscribe,
    ] {
        na.push((k, R::EmptyResume200, "an empty 200 answers only a resume"));
    }
    for k in [
        K::Initialize,
        K::ResumeGet,
        K::StandaloneGet,
        K::LegacyGet,
        K::LegacyPost,
        K::Subscribe,
    ] {
        na.push((
            k,
            R::Conflict409Hint,
            "Rule M's hint answers only a call's POST",
        ));
    }
    for k in [K::ResumeGet, K::StandaloneGet, K::LegacyGet] {
        na.push((k, R::Accepted202, "a 202 answers a POST, never a GET"));
        na.push((k, R::TooLarge413, "a GET has no body to be too large"));
        na.push((
            k,
            R::Unprocessable422,
            "a GET carries no Idempotency-Key to mismatch",
        ));
    }
    for r in [R::Stream200, R::Drop, R::ReadTimeout, R::Gap, R::Ended] {
        na.push((
            K::LegacyPost,
            r,
            "a legacy POST is answered 202; its answer rides the legacy stream",
        ));
    }
    na
}

#[test]
fn every_row_is_what_the_client_does() {
    for r in rows() {
        let request = r
            .kind
            .request()
            .expect("a row is of a request the client sends");
        assert!(
            r.reply.admits(r.answer),
            "{:?} x {:?}: {:?} is not that reply",
            r.kind,
            r.reply,
            r.answer
        );
        assert_eq!(
            react(&r.view, request, r.answer),
            r.then,
            "{:?} x {:?} ({:?}) with {:?}",
            r.kind,
            r.reply,
            r.answer,
            r.view
        );
    }
}

#[test]
fn every_pair_is_in_the_table_or_not_applicable() {
    let rows = rows();
    let na = not_applicable();
    let mut missing = Vec::new();
    let mut both = Vec::new();
    for k in KINDS {
        for r in REPLIES {
            let in_table = rows.iter().any(|row| row.kind == k && row.reply == r);
            let listed = na.iter().filter(|(nk, nr, _)| *nk == k && *nr == r).count();
            match (in_table, listed) {
                (true, 0) | (false, 1) => {}
                (false, 0) => missing.push((k, r)),
                _ => both.push((k, r)),
            }
        }
    }
    assert!(missing.is_empty(), "pairs in neither list: {missing:?}");
    assert!(
        both.is_empty(),
        "pairs in both lists, or listed twice: {both:?}"
    );
}

#[test]
fn every_request_the_client_makes_has_a_kind_in_the_table() {
    for r in Request::ALL {
        let k = Kind::of(r);
        assert!(KINDS.contains(&k));
        assert_eq!(k.request(), Some(r));
    }
    let sent = KINDS.iter().filter(|k| k.request().is_some()).count();
    assert_eq!(
        sent,
        Request::ALL.len(),
        "one kind per request the client makes"
    );
}

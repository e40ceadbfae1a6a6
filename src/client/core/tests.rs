//! The reaction table, checked: for every request the client makes ×
//! every answer it can get, the actions [`react`] returns, as the client
//! does them today (the rows are in `table.rs`). The pairs that cannot
//! happen are listed with why, and a test fails when a pair is in neither
//! list.

use super::*;

/// The requests, as the issue names them; `Delete` is one the virtual
/// client never sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Initialize,
    Call,
    ResumeGet,
    StandaloneGet,
    LegacyGet,
    LegacyPost,
    Subscribe,
    Cancel,
    Delete,
}

const KINDS: [Kind; 9] = [
    Kind::Initialize,
    Kind::Call,
    Kind::ResumeGet,
    Kind::StandaloneGet,
    Kind::LegacyGet,
    Kind::LegacyPost,
    Kind::Subscribe,
    Kind::Cancel,
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
            Kind::Cancel => Some(Request::Cancel),
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
            Request::Cancel => Kind::Cancel,
        }
    }
}

/// The answers, as the issue names them, and two more the client tells
/// apart: no answer at all, and a stream that ends cleanly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Reply {
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

pub(super) const REPLIES: [Reply; 19] = [
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

pub(super) fn json(status: u16) -> Answer {
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
pub(super) const V: View = View {
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
pub(super) const ADVISED: View = View { advised: true, ..V };

/// An exchange no event id has named yet (an initialize's never is).
pub(super) const UNNAMED: View = View { named: false, ..V };

/// A legacy client whose `GET /sse` named its session.
pub(super) const LEGACY: View = View { legacy: true, ..V };

pub(super) const STATUS: Action = Action::RecordStatus {
    hint: false,
    stream_first: false,
};

pub(super) struct Row {
    kind: Kind,
    reply: Reply,
    answer: Answer,
    view: View,
    then: Vec<Action>,
}

pub(super) fn row(kind: Kind, reply: Reply, view: View, then: &[Action]) -> Row {
    with(kind, reply, reply.answer(), view, then)
}

pub(super) fn with(kind: Kind, reply: Reply, answer: Answer, view: View, then: &[Action]) -> Row {
    Row {
        kind,
        reply,
        answer,
        view,
        then: then.to_vec(),
    }
}

use Kind as K;
use Reply as R;

/// The answers a GET can get that are neither a stream nor a 404 (nor
/// not applicable to a GET).
pub(super) const GET_REFUSALS: [Reply; 7] = [
    R::Json200,
    R::Bad400,
    R::NotAllowed405,
    R::Conflict409,
    R::Gone410,
    R::Unavailable503,
    R::BadGateway502,
];

/// The statuses a request answers the same way, one row each.
pub(super) fn each(kind: Kind, replies: &[Reply], view: View, then: &[Action]) -> Vec<Row> {
    replies.iter().map(|&r| row(kind, r, view, then)).collect()
}

fn rows() -> Vec<Row> {
    let mut rows = table::initialize_rows();
    rows.extend(table::call_rows());
    rows.extend(table::resume_rows());
    rows.extend(table::standalone_rows());
    rows.extend(table::legacy_get_rows());
    rows.extend(table::legacy_post_rows());
    rows.extend(table::subscribe_rows());
    rows.extend(table::cancel_rows());
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
        K::Cancel,
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
        K::Cancel,
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

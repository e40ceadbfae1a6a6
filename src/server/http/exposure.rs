//! What a server on a real socket needs and the simulator must not have:
//! unpredictable session ids, `Origin` and `Host` allow-lists, strict HTTP
//! framing, and a bound on every resource one client can make the server
//! hold (connections, time to send a request, sessions, open streams,
//! sizes). [`Exposure::simulated`]
//! (the default) turns every one of them off, so that a simulated run is the
//! function of its seed it always was; `mcp-chaos serve` uses
//! [`Exposure::served`].

use std::time::Duration;

/// Where session ids come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionIds {
    /// ChaCha20 seeded by `[server] session_seed`: the same ids every run
    /// (the simulator's determinism).
    Seeded,
    /// The operating system's CSPRNG: nobody can predict an id, and a
    /// restarted server never hands out (nor knows) an old one.
    Os,
}

/// Settings of a server exposed on a real socket. Each bound is `None`
/// (unbounded) in the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct Exposure {
    /// Where session ids come from.
    pub session_ids: SessionIds,
    /// Browser origins allowed to talk to the server (`scheme://host[:port]`,
    /// lowercase); a request with any other `Origin` gets 403. `None`: no
    /// check. A request without `Origin` (not a browser) is always served.
    pub allowed_origins: Option<Vec<String>>,
    /// Most connections held at once. At the cap the oldest idle one is
    /// closed to make room; when none is idle the new one gets 503.
    pub max_connections: Option<usize>,
    /// Longest a client may take to send a request head (and longest a
    /// kept-alive connection may stay idle). `None`: hyper's 30 s.
    pub header_timeout: Option<Duration>,
    /// Longest a client may take to send a request body: past it, 408 and
    /// the connection is closed.
    pub body_timeout: Option<Duration>,
    /// Longest JSON-RPC request id, bytes as encoded (a longer one: 400).
    pub max_request_id_bytes: Option<usize>,
    /// Longest `params`, bytes as sent (a longer one: 400).
    pub max_params_bytes: Option<usize>,
    /// Host names a request may name besides the loopback ones
    /// (`localhost`, `127.0.0.1`, `[::1]`), lowercase, any port; a request
    /// naming another gets 403 (DNS rebinding). `None`: no check.
    pub allowed_hosts: Option<Vec<String>>,
    /// RFC 9112 framing enforced: an HTTP/1.1 request without `Host` or any
    /// request with two gets 400, a `Transfer-Encoding` other than exactly
    /// `chunked` gets 501.
    pub strict_http: bool,
    /// A request naming a session with another bearer token than the one
    /// that opened it (or with one when it was opened without, or the
    /// reverse) is answered as for an unknown session: 404.
    pub bind_sessions: bool,
    /// Most live sessions one bearer token may hold (429 past it).
    pub max_sessions_per_principal: Option<usize>,
    /// Most live sessions opened without a bearer token from one peer
    /// address (429 past it, with `Retry-After`).
    pub max_anonymous_sessions_per_peer: Option<usize>,
    /// A session nobody used for this long, with no stream attached, ends
    /// as if deleted.
    pub session_idle: Option<Duration>,
    /// The same for a session opened without a bearer token (the shorter
    /// of the two applies): anonymous slots come back sooner.
    pub anonymous_session_idle: Option<Duration>,
    /// Most SSE responses open at once on one session (429 past it).
    pub max_open_streams_per_session: Option<usize>,
    /// Most SSE responses open at once for one principal: the sessions'
    /// bearer token, else the peer address that opened them (429 past it).
    pub max_open_streams_per_principal: Option<usize>,
    /// Most streams one session may hold at once (POST streams, the
    /// standalone stream), and ten times as many of their event ids: each
    /// keeps a little state until it is released
    /// (`Session::release_if_done`). Past it the session is full: 503,
    /// start a new one.
    pub max_streams_per_session: Option<usize>,
    /// Most bytes the side-effect ledger holds for every principal together
    /// (tags, effects, committed keys) with the key table's entries, each
    /// costing its tokens', tags', keys' and stored results' bytes plus
    /// `ledger::ENTRY_OVERHEAD`, and most for one principal: past its
    /// share a principal's own oldest are forgotten, past the total the
    /// oldest of the principal holding the most. The ledger also forgets a
    /// session's own effects when the session ends.
    pub ledger_bytes: Option<LedgerBytes>,
    /// The task table's bounds: running tasks counted per principal and
    /// in all (429 past them), finished ones in a byte budget per
    /// principal and in all.
    pub task_bounds: Option<crate::ledger::tasks::TaskBounds>,
    /// The key input-required states are signed with (`serve
    /// --state-key-file`); without it, drawn on first use.
    pub state_key: Option<[u8; 32]>,
    /// Most bytes every session's event store holds together. Past it, the
    /// session storing an event gives up its own oldest events first (a
    /// resume then gets a `gap`, or 410 when a result went), so one client
    /// filling the budget costs only its own and later events' history.
    pub store_bytes: Option<usize>,
    /// What `serve` offers beside the ledger tools (`--fixtures`): the
    /// simulator never offers any.
    pub fixtures: crate::server::Fixtures,
    /// One line on stderr per request served (`serve --log`): its
    /// connection, method, path, session and the response's status and
    /// content type.
    pub log: bool,
}

impl Default for Exposure {
    fn default() -> Self {
        Exposure::simulated()
    }
}

impl Exposure {
    /// The simulator's: seeded ids, no checks, no new bounds.
    pub fn simulated() -> Self {
        Exposure {
            session_ids: SessionIds::Seeded,
            allowed_origins: None,
            allowed_hosts: None,
            strict_http: false,
            bind_sessions: true,
            max_connections: None,
            header_timeout: None,
            body_timeout: None,
            max_request_id_bytes: None,
            max_params_bytes: None,
            max_sessions_per_principal: None,
            max_anonymous_sessions_per_peer: None,
            session_idle: None,
            anonymous_session_idle: None,
            max_open_streams_per_session: None,
            max_open_streams_per_principal: None,
            max_streams_per_session: None,
            ledger_bytes: None,
            task_bounds: None,
            state_key: None,
            store_bytes: None,
            fixtures: crate::server::Fixtures::None,
            log: false,
        }
    }

    /// `mcp-chaos serve`'s defaults: OS ids, loopback origins and hosts,
    /// strict framing, and every bound on.
    pub fn served() -> Self {
        Exposure {
            session_ids: SessionIds::Os,
            allowed_origins: Some(Vec::new()),
            allowed_hosts: Some(Vec::new()),
            strict_http: true,
            bind_sessions: true,
            max_connections: Some(1024),
            header_timeout: Some(Duration::from_secs(10)),
            body_timeout: Some(Duration::from_secs(10)),
            max_request_id_bytes: Some(256),
            max_params_bytes: Some(4096),
            max_sessions_per_principal: Some(64),
            max_anonymous_sessions_per_peer: Some(256),
            session_idle: Some(Duration::from_secs(600)),
            anonymous_session_idle: Some(Duration::from_secs(60)),
            // A client may run several calls at once in a session (parallel
            // tool calls), each on its own POST stream, beside its GET.
            max_open_streams_per_session: Some(16),
            // Half the default connection cap: one principal never holds
            // every connection, and 200 clients from one address without a
            // token (a POST stream and a GET each) still fit.
            max_open_streams_per_principal: Some(512),
            max_streams_per_session: Some(10_000),
            // A keyed call holds about 1.3 KB (its tag, its effect, its key
            // and stored result, each with the overhead): 1 MiB is some 800
            // of one principal's calls, and 12 MiB holds 200 principals'
            // 20 keyed calls each (5.2 MB) twice over.
            ledger_bytes: Some(LedgerBytes {
                total: 12 * 1024 * 1024,
                per_principal: 1024 * 1024,
            }),
            // 256 running tasks per principal, 4,096 in all; a finished
            // task holds about 1 KB (its result, the overhead): 1 MiB is
            // some 1,000 per principal, 12 MiB in all.
            state_key: None,
            task_bounds: Some(crate::ledger::tasks::TaskBounds {
                running_per_principal: 256,
                running: 4_096,
                finished_bytes_per_principal: 1024 * 1024,
                finished_bytes: 12 * 1024 * 1024,
            }),
            store_bytes: Some(64 * 1024 * 1024),
            fixtures: crate::server::Fixtures::None,
            log: false,
        }
    }

    /// Whether a request's `Origin` may be served: always when the check is
    /// off; else a loopback origin (`localhost`, `127.0.0.1`, `[::1]`, any
    /// port, http or https) or one on the allow-list.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let Some(extra) = &self.allowed_origins else {
            return true;
        };
        let origin = origin.trim().to_ascii_lowercase();
        is_loopback_origin(&origin) || extra.contains(&origin)
    }
}

impl Exposure {
    /// A request with an `Origin` header that is not allowed (an unreadable
    /// one included), whichever of several it is; a request without one is
    /// never refused.
    pub fn refuses_origin(&self, headers: &http::HeaderMap) -> bool {
        headers
            .get_all(http::header::ORIGIN)
            .iter()
            .any(|o| !o.to_str().is_ok_and(|o| self.origin_allowed(o)))
    }
}

/// What a refused `Origin` is told (403).
pub const ORIGIN_REFUSED: &str =
    "Origin not allowed: serve from a loopback origin or start the server with --allow-origin";

/// `http(s)://localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix("[::1]") {
        Some(port) => return port.is_empty() || is_port(port),
        None => rest,
    };
    let (name, port) = match host.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (host, None),
    };
    matches!(name, "localhost" | "127.0.0.1") && port.is_none_or(|p| is_port(&format!(":{p}")))
}

/// `:` and 1 to 5 digits.
pub(in crate::server) fn is_port(s: &str) -> bool {
    s.strip_prefix(':')
        .is_some_and(|d| !d.is_empty() && d.len() <= 5 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Normalises an `--allow-origin` value: `scheme://host[:port]`, lowercase,
/// no path. `Err` names what is wrong.
pub fn parse_origin(s: &str) -> Result<String, String> {
    let o = s.trim().trim_end_matches('/').to_ascii_lowercase();
    let ok = o.split_once("://").is_some_and(|(scheme, host)| {
        !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            && !host.is_empty()
            && !host.contains(['/', '?', '#', ' ', '@'])
    });
    if ok {
        Ok(o)
    } else {
        Err(format!(
            "{s:?} is not an origin: write scheme://host[:port], e.g. https://app.example"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_pass_and_others_need_the_list() {
        let mut e = Exposure::served();
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:8080",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(e.origin_allowed(ok), "{ok}");
        }
        for no in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost:80x",
            "null",
            "file://localhost",
            "",
        ] {
            assert!(!e.origin_allowed(no), "{no}");
        }
        e.allowed_origins = Some(vec![parse_origin("https://App.example/").unwrap()]);
        assert!(e.origin_allowed("https://app.example"));
        assert!(!e.origin_allowed("http://app.example"));
        assert!(Exposure::simulated().origin_allowed("http://evil.example"));
    }

    #[test]
    fn allow_origin_values_are_checked() {
        assert_eq!(
            parse_origin("https://a.example:8443").unwrap(),
            "https://a.example:8443"
        );
        for bad in ["a.example", "https://", "https://a/b", "://x"] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}

/// The side-effect ledger's byte bounds ([`Exposure::ledger_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LedgerBytes {
    pub total: usize,
    pub per_principal: usize,
}

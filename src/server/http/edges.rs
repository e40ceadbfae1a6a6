//! The HTTP edges of an exposed server, checked before any route looks at a
//! request: exactly one `Host` (RFC 9112 §3.2), only `chunked` as a
//! transfer coding (§6.1: hyper decodes `gzip, chunked` as plain chunked,
//! so the gzip would be silently ignored), every `Origin` allowed, and a
//! `Host` the server answers for (a DNS-rebinding page names its own host
//! name while its requests reach loopback). All of it is off in the
//! simulator ([`Exposure::simulated`]): the virtual clients' requests never
//! meet it.

use super::exposure::{is_port, Exposure, ORIGIN_REFUSED};
use http::{header, HeaderMap, StatusCode, Uri, Version};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Why a request is refused at the edge: its status, what it is told, and
/// whether the connection closes after (the body's framing is not trusted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeRefusal {
    /// 400, 403 or 501.
    pub status: StatusCode,
    /// The JSON-RPC error message.
    pub message: &'static str,
    /// Close the connection after the response.
    pub close: bool,
}

/// What a request naming a host outside the allow-list is told (403).
pub const HOST_REFUSED: &str =
    "Host not allowed: use a loopback name (localhost, 127.0.0.1, [::1]) or start the server with --allow-host NAME";

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Exposure {
    /// The first edge check a request fails, if any: a missing (HTTP/1.1)
    /// or repeated `Host` or an unreadable one (400), a transfer coding
    /// other than exactly `chunked` (501), a refused `Origin` (403), a host
    /// outside the allow-list (403).
    pub fn refuse_edges(
        &self,
        version: Version,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Option<EdgeRefusal> {
        let refuse = |status, message, close| {
            Some(EdgeRefusal {
                status,
                message,
                close,
            })
        };
        let hosts: Vec<_> = headers.get_all(header::HOST).iter().collect();
        if self.strict_http {
            if hosts.len() > 1 {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "more than one Host header: send exactly one",
                    true,
                );
            }
            if hosts.is_empty() && version == Version::HTTP_11 {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "missing Host header: HTTP/1.1 requests must name the host",
                    true,
                );
            }
            if !chunked_only(headers) {
                return refuse(
                    StatusCode::NOT_IMPLEMENTED,
                    "unsupported Transfer-Encoding: send the body with Content-Length or Transfer-Encoding: chunked alone",
                    true,
                );
            }
        }
        if self.refuses_origin(headers) {
            return refuse(StatusCode::FORBIDDEN, ORIGIN_REFUSED, false);
        }
        if let Some(extra) = &self.allowed_hosts {
            // The absolute form's authority stands for the Host header
            // (RFC 9112 §3.2.2), so both must be allowed.
            let named = hosts
                .iter()
                .map(|h| h.to_str().ok())
                .chain(uri.authority().map(|a| Some(a.as_str())));
            for h in named {
                let ok = h
                    .and_then(host_name)
                    .is_some_and(|n| LOOPBACK_HOSTS.contains(&n.as_str()) || extra.contains(&n));
                if !ok {
                    return refuse(StatusCode::FORBIDDEN, HOST_REFUSED, false);
                }
            }
        }
        None
    }

    /// Adds the host `--addr` names and the address it bound to the
    /// allow-list (when there is one): a client naming the server as it was
    /// told to is served.
    pub fn allow_bound_host(&mut self, addr: &str, bound: SocketAddr) {
        let Some(hosts) = &mut self.allowed_hosts else {
            return;
        };
        let named = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
        for h in [parse_host(named).ok(), Some(ip_name(bound.ip()))]
            .into_iter()
            .flatten()
        {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
    }
}

/// Whether the request's transfer codings, if any, are exactly `chunked`.
fn chunked_only(headers: &HeaderMap) -> bool {
    let mut codings = headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("?").split(','))
        .map(str::trim);
    match codings.next() {
        None => true,
        Some(first) => first.eq_ignore_ascii_case("chunked") && codings.next().is_none(),
    }
}

/// A `Host` value's name, lowercase (`[v6]` keeps its brackets), without
/// its port; `None` when it is no `name[:port]`.
fn host_name(value: &str) -> Option<String> {
    let v = value.trim().to_ascii_lowercase();
    let (name, port) = match v.strip_prefix('[') {
        Some(rest) => {
            let end = rest.find(']')? + 2;
            v.split_at(end)
        }
        None => v.split_at(v.find(':').unwrap_or(v.len())),
    };
    let name_ok = !name.is_empty()
        && (name.starts_with('[')
            || name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)));
    (name_ok && (port.is_empty() || is_port(port))).then(|| name.to_string())
}

/// An address as a `Host` names it: IPv6 in brackets.
fn ip_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Normalises an `--allow-host` value: a host name or address without a
/// port (any port is allowed), lowercase, IPv6 in brackets. `Err` names
/// what is wrong.
pub fn parse_host(s: &str) -> Result<String, String> {
    let t = s.trim();
    let bare = t.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
    if let Ok(v6) = bare.unwrap_or(t).parse::<Ipv6Addr>() {
        return Ok(ip_name(IpAddr::V6(v6)));
    }
    match host_name(t) {
        Some(n) if !n.starts_with('[') && !t.contains(':') => Ok(n),
        _ => Err(format!(
            "{s:?} is not a host name: give a name or address without a port (any port is allowed), e.g. mcp.example or 192.168.1.5"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(version: Version, uri: &str, headers: &[(&str, &str)]) -> Option<EdgeRefusal> {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let mut e = Exposure::served();
        e.allowed_hosts = Some(vec![parse_host("MCP.example").unwrap()]);
        e.refuse_edges(version, &uri.parse().unwrap(), &h)
    }

    fn status(r: Option<EdgeRefusal>) -> u16 {
        r.map_or(200, |r| r.status.as_u16())
    }

    #[test]
    fn hosts_must_be_one_and_allowed() {
        let v11 = Version::HTTP_11;
        for (host, want) in [
            ("localhost", 200),
            ("localhost:8080", 200),
            ("127.0.0.1:1", 200),
            ("[::1]:3000", 200),
            ("[::1]", 200),
            ("LOCALHOST", 200),
            ("mcp.example:443", 200),
            ("evil.example", 403),
            ("localhost.evil.example", 403),
            ("127.0.0.1.evil.example", 403),
            ("localhost:80x", 403),
            ("[::2]", 403),
            ("user@localhost", 403),
            ("", 403),
        ] {
            assert_eq!(status(req(v11, "/mcp", &[("host", host)])), want, "{host}");
        }
        assert_eq!(status(req(v11, "/mcp", &[])), 400);
        // HTTP/1.0 may omit it.
        assert_eq!(status(req(Version::HTTP_10, "/mcp", &[])), 200);
        let two = [("host", "localhost"), ("host", "localhost")];
        assert_eq!(status(req(v11, "/mcp", &two)), 400);
        // An absolute target names the host too.
        let abs = req(v11, "http://evil.example/mcp", &[("host", "localhost")]);
        assert_eq!(status(abs), 403);
        let abs = req(v11, "http://localhost:9/mcp", &[("host", "localhost")]);
        assert_eq!(status(abs), 200);
        // Off in the simulator.
        let h = HeaderMap::new();
        let uri = "/mcp".parse().unwrap();
        assert_eq!(Exposure::simulated().refuse_edges(v11, &uri, &h), None);
    }

    #[test]
    fn only_chunked_alone_is_a_transfer_coding() {
        let v11 = Version::HTTP_11;
        let host = ("host", "localhost");
        for (te, want) in [
            (&[("transfer-encoding", "chunked")][..], 200),
            (&[("transfer-encoding", "Chunked")][..], 200),
            (&[("transfer-encoding", "gzip, chunked")][..], 501),
            (&[("transfer-encoding", "chunked, chunked")][..], 501),
            (
                &[
                    ("transfer-encoding", "gzip"),
                    ("transfer-encoding", "chunked"),
                ][..],
                501,
            ),
            (&[("transfer-encoding", "")][..], 501),
        ] {
            let mut h = vec![host];
            h.extend_from_slice(te);
            let r = req(v11, "/mcp", &h);
            assert_eq!(status(r), want, "{te:?}");
            assert!(r.is_none_or(|r| r.close), "{te:?}");
        }
    }

    #[test]
    fn every_origin_is_checked() {
        let v11 = Version::HTTP_11;
        let h = |o2| {
            req(
                v11,
                "/mcp",
                &[
                    ("host", "localhost"),
                    ("origin", "http://localhost"),
                    ("origin", o2),
                ],
            )
        };
        assert_eq!(status(h("http://evil.example")), 403);
        assert_eq!(status(h("http://127.0.0.1:3000")), 200);
    }

    #[test]
    fn allow_host_values_are_checked() {
        assert_eq!(parse_host("MCP.Example").unwrap(), "mcp.example");
        assert_eq!(parse_host("::1").unwrap(), "[::1]");
        assert_eq!(parse_host("[fe80::2]").unwrap(), "[fe80::2]");
        assert_eq!(parse_host("192.168.1.5").unwrap(), "192.168.1.5");
        for bad in ["a.example:8080", "", "a/b", "a b", "[nope]", "x@y"] {
            assert!(parse_host(bad).is_err(), "{bad}");
        }
        let mut e = Exposure::served();
        e.allow_bound_host("myhost:0", "10.0.0.2:8080".parse().unwrap());
        assert_eq!(
            e.allowed_hosts,
            Some(vec!["myhost".to_string(), "10.0.0.2".to_string()])
        );
        e.allow_bound_host("[::]:0", "[::]:1".parse().unwrap());
        assert!(e.allowed_hosts.unwrap().contains(&"[::]".to_string()));
    }
}

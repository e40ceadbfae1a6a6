//! Where the probe connects: a URL as `--url`, `--legacy-url` or a
//! legacy server's `endpoint` event gives it, its port checked, and the
//! one loopback check every connection passes.

use std::fmt;
use std::net::SocketAddr;

/// Where the server is: `http://HOST:PORT/PATH`.
#[derive(Clone, Debug)]
pub struct Target {
    /// Host name or address, as given.
    pub host: String,
    /// TCP port (80 when the URL names none).
    pub port: u16,
    /// Request path (`/mcp`), with its query if any.
    pub path: String,
    /// Where the URL came from (`--url`, `--legacy-url`, a server's
    /// `endpoint` event), for the messages that refuse it.
    pub from: &'static str,
}

impl Target {
    /// Reads a URL given as `from` (a flag, or what a server sent). Only
    /// plain `http://` URLs: the probe speaks no TLS.
    pub fn parse(url: &str, from: &'static str) -> Result<Target, String> {
        let uri: ::http::Uri = url
            .parse()
            .map_err(|e| format!("{from} {url:?} is not a URL ({e}): give http://HOST:PORT/mcp"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                    "{from} {url:?}: the probe speaks plain HTTP; point it at the server's own port, not its TLS front"
                ))
            }
            _ => return Err(format!("{from} {url:?} needs http://, e.g. http://127.0.0.1:8080/mcp")),
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("{from} {url:?} names no host: give http://HOST:PORT/mcp"))?;
        let port = port_of(uri.authority().map_or("", |a| a.as_str())).ok_or_else(|| {
            format!("{from} {url:?}: the port is not a number in 1..=65535: give http://HOST:PORT/mcp with PORT in 1..=65535")
        })?;
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .filter(|p| p != "/" || url.ends_with('/'))
            .unwrap_or_else(|| "/".into());
        Ok(Target {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            path,
            from,
        })
    }

    /// Where `reference` (a legacy server's `endpoint` event: a path, a
    /// relative path or a whole URL) points, seen from this URL.
    pub fn join(&self, reference: &str) -> Result<Target, String> {
        const FROM: &str = "the server's endpoint event";
        if reference.starts_with("//") {
            return Target::parse(&format!("http:{reference}"), FROM);
        }
        // A scheme (RFC 3986: a letter, then letters, digits, `+-.`, then
        // `:`) makes it a whole URL; a `://` later, in a query, does not.
        let scheme = reference.split_once(':').map(|(s, _)| s);
        if scheme.is_some_and(|s| {
            s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }) {
            return Target::parse(reference, FROM);
        }
        let path = if reference.starts_with('/') {
            reference.to_string()
        } else {
            let dir = self.path.split('?').next().unwrap_or("/");
            let dir = &dir[..dir.rfind('/').map_or(0, |i| i + 1)];
            format!("{}{reference}", if dir.is_empty() { "/" } else { dir })
        };
        Ok(Target {
            from: FROM,
            ..self.with_path(&path)
        })
    }

    /// `HOST:PORT` as the `Host` header carries it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The same server, another path (the legacy transport's `/sse`).
    pub fn with_path(&self, path: &str) -> Target {
        Target {
            path: path.to_string(),
            ..self.clone()
        }
    }
}

/// The port an authority (`[userinfo@]host[:port]`) names: 80 when none,
/// `None` when it is no number in 1..=65535 (the `http` crate alone reads
/// such a port as absent, which would probe port 80).
fn port_of(authority: &str) -> Option<u16> {
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match hostport.rfind(']') {
        Some(end) => hostport[end + 1..].strip_prefix(':'),
        None => hostport.rsplit_once(':').map(|(_, p)| p),
    };
    match port {
        None => Some(80),
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse().ok().filter(|&n: &u16| n != 0)
        }
        Some(_) => None,
    }
}

/// Why a URL may not be connected.
#[derive(Debug)]
pub enum Refused {
    /// Its host has no address.
    Unresolved(String),
    /// An address of its host is not on this machine (without
    /// `--allow-remote`).
    Remote(String),
}

/// The addresses of `target`, every one of them loopback unless
/// `allow_remote`: the one check for every URL the probe connects to.
/// The probe then connects to these addresses, never to the name again
/// (a second lookup could answer differently).
pub async fn resolve(target: &Target, allow_remote: bool) -> Result<Vec<SocketAddr>, Refused> {
    let host = target.host.as_str();
    let from = target.from;
    let addrs: Vec<_> = tokio::net::lookup_host((host, target.port))
        .await
        .map_err(|e| Refused::Unresolved(format!("{from} host {host:?} does not resolve: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(Refused::Unresolved(format!(
            "{from} host {host:?} has no address"
        )));
    }
    if !allow_remote {
        if let Some(a) = addrs.iter().find(|a| !a.ip().to_canonical().is_loopback()) {
            return Err(Refused::Remote(format!(
                "{from} {target} resolves to {}, not a loopback address: pass --allow-remote to probe a server on another machine",
                a.ip()
            )));
        }
    }
    Ok(addrs)
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::{port_of, resolve, Refused, Target};

    #[test]
    fn a_port_is_a_number_in_range_or_refused() {
        for (authority, port) in [
            ("127.0.0.1", Some(80)),
            ("127.0.0.1:8080", Some(8080)),
            ("[::1]:65535", Some(65535)),
            ("[::1]", Some(80)),
            ("user@localhost:3000", Some(3000)),
            ("127.0.0.1:99999", None),
            ("127.0.0.1:0", None),
            ("127.0.0.1:", None),
            ("127.0.0.1:+80", None),
            ("127.0.0.1:http", None),
        ] {
            assert_eq!(port_of(authority), port, "{authority}");
        }
        let err = Target::parse("http://127.0.0.1:70000/mcp", "--legacy-url").unwrap_err();
        assert!(
            err.starts_with("--legacy-url") && err.contains("1..=65535"),
            "{err}"
        );
    }

    #[test]
    fn an_endpoint_is_joined_to_the_url_it_came_from() {
        let sse = Target::parse("http://127.0.0.1:9000/a/sse?x=1", "--legacy-url").unwrap();
        for (reference, url) in [
            (
                "/messages?sessionId=s",
                "http://127.0.0.1:9000/messages?sessionId=s",
            ),
            (
                "messages?sessionId=s",
                "http://127.0.0.1:9000/a/messages?sessionId=s",
            ),
            ("http://192.0.2.1/m", "http://192.0.2.1:80/m"),
            ("//localhost:7/m", "http://localhost:7/m"),
            (
                "/m?back=http://192.0.2.1/x",
                "http://127.0.0.1:9000/m?back=http://192.0.2.1/x",
            ),
        ] {
            let t = sse.join(reference).unwrap();
            assert_eq!(t.to_string(), url, "{reference}");
            assert_eq!(t.from, "the server's endpoint event");
        }
        let err = sse.join("https://127.0.0.1/m").unwrap_err();
        assert!(err.contains("plain HTTP"), "{err}");
    }

    #[test]
    fn every_resolved_address_must_be_loopback() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let check = |url: &str, allow: bool| {
            let t = Target::parse(url, "--url").unwrap();
            rt.block_on(resolve(&t, allow))
        };
        assert!(check("http://127.0.0.1:1/mcp", false).is_ok());
        assert!(check("http://[::ffff:127.0.0.1]:1/mcp", false).is_ok());
        for remote in [
            "http://0.0.0.0:1/mcp",
            "http://192.0.2.1:1/mcp",
            "http://[::]:1/mcp",
        ] {
            match check(remote, false) {
                Err(Refused::Remote(e)) => assert!(e.contains("--allow-remote"), "{e}"),
                other => panic!("{remote}: {other:?}"),
            }
            assert!(check(remote, true).is_ok(), "{remote} with --allow-remote");
        }
    }
}

//! Rule T — transport continuity (docs/rules.md). Session identity (the token)
//! is not session continuity (capabilities, subscriptions, in-flight
//! correlation, the event cursor): a request carrying a session id issued
//! under transport T is served only under T, unless the server registered
//! a cross-transport cursor mapping for that session. Never translate a
//! cursor silently. The server always knows which transport a request came
//! on, so this rule has no blind spot.

use serde::Serialize;

/// The transports a session can be issued under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Streamable HTTP (`/mcp`).
    Streamable,
    /// Legacy HTTP+SSE (`/sse` + `/messages`), 2024-11-05.
    Legacy,
}

/// Rule T's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportVerdict {
    /// Same transport as the session was issued under: serve.
    Serve,
    /// Another transport, but a cross-transport mapping is registered:
    /// serve, translating cursors through the mapping (and say so).
    ServeMapped,
    /// Another transport and no mapping: 404; the client re-initializes.
    Reject,
}

/// Rule T for one request: the session was issued under `issued`, the
/// request came on `arriving`, and `mapped` says whether a cross-transport
/// mapping is registered for the session.
pub fn check_transport(issued: Transport, arriving: Transport, mapped: bool) -> TransportVerdict {
    if issued == arriving {
        TransportVerdict::Serve
    } else if mapped {
        TransportVerdict::ServeMapped
    } else {
        TransportVerdict::Reject
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Transport::*;

    #[test]
    fn every_row() {
        // (issued, arriving, mapped) → verdict; the mapping never matters
        // on the issuing transport.
        let rows = [
            (Streamable, Streamable, false, TransportVerdict::Serve),
            (Streamable, Streamable, true, TransportVerdict::Serve),
            (Legacy, Legacy, false, TransportVerdict::Serve),
            (Legacy, Legacy, true, TransportVerdict::Serve),
            (Legacy, Streamable, false, TransportVerdict::Reject),
            (Legacy, Streamable, true, TransportVerdict::ServeMapped),
            (Streamable, Legacy, false, TransportVerdict::Reject),
            (Streamable, Legacy, true, TransportVerdict::ServeMapped),
        ];
        for (issued, arriving, mapped, want) in rows {
            assert_eq!(
                check_transport(issued, arriving, mapped),
                want,
                "{issued:?} → {arriving:?}, mapped {mapped}"
            );
        }
    }
}

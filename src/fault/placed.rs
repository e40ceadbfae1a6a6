//! Faults placed at a protocol boundary of one operation instead of at a
//! time: the boundary ([`Boundary`]: before the request is sent, after
//! the server received it, the response head, after the k-th event, the
//! result) and how `[[faults.explicit]]` writes one — the fault's own
//! keys, its `at_ms` left out, plus `at`, `client`, `call` and, for
//! `at = "event"`, `after_event`.

use super::Fault;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Where in one operation's exchange a placed fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// The client sent the call's request (its first attempt); the server
    /// has not yet begun it.
    RequestSent,
    /// The server began the call (the ledger recorded its first
    /// execution).
    RequestReceived,
    /// The call's response head reached the client.
    ResponseHead,
    /// The client received the call's `after_event`-th event (1-based;
    /// progress events, over every stream of the operation).
    Event,
    /// The client received the call's result.
    Result,
}

impl At {
    /// Every boundary kind, in the order an exchange reaches them.
    pub const ALL: [At; 5] = [
        At::RequestSent,
        At::RequestReceived,
        At::ResponseHead,
        At::Event,
        At::Result,
    ];

    /// The name a scenario writes.
    pub fn as_str(self) -> &'static str {
        match self {
            At::RequestSent => "request_sent",
            At::RequestReceived => "request_received",
            At::ResponseHead => "response_head",
            At::Event => "event",
            At::Result => "result",
        }
    }
}

/// One protocol boundary of one operation: client `client`'s call `call`
/// (0-based) at `at` (and, for an event, after its `after_event`-th).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundary {
    /// Client index (global, 0-based).
    pub client: u32,
    /// Call index (0-based).
    pub call: u32,
    /// Which boundary.
    pub at: At,
    /// For [`At::Event`]: events received before it fires (1-based);
    /// 0 otherwise.
    #[serde(default)]
    pub after_event: u32,
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Boundary {
            client, call, at, ..
        } = *self;
        match at {
            At::Event => write!(
                f,
                "after event {} of client {client}'s call {call}",
                self.after_event
            ),
            _ => write!(f, "{} of client {client}'s call {call}", at.as_str()),
        }
    }
}

/// The keys a placed fault adds to its kind's own.
pub const PLACEMENT_KEYS: [&str; 4] = ["at", "client", "call", "after_event"];

/// One `[[faults.explicit]]` table as a fault: a plain one as its kind
/// reads it; one with `at` (other than a drop's `at = "event"`, which is
/// the plain drop) as [`Fault::Placed`].
fn from_table(mut t: toml::Table) -> Result<Fault, String> {
    let Some(at) = t.remove("at") else {
        return t.try_into::<Fault>().map_err(|e| e.message().to_string());
    };
    let at: At = at.try_into().map_err(|_| {
        "`at` must be one of request_sent, request_received, response_head, event, result"
            .to_string()
    })?;
    let is_drop = t.get("kind").and_then(|k| k.as_str()) == Some("drop");
    if is_drop && at == At::Event {
        return t.try_into::<Fault>().map_err(|e| e.message().to_string());
    }
    let int = |t: &mut toml::Table, key: &str, required: bool| -> Result<u32, String> {
        let v = if is_drop {
            t.get(key).cloned()
        } else {
            t.remove(key)
        };
        match v {
            Some(toml::Value::Integer(n)) => {
                u32::try_from(n).map_err(|_| format!("`{key}` must be 0 or more"))
            }
            Some(_) => Err(format!("`{key}` must be an integer")),
            None if required => Err(format!("a fault placed with `at` needs `{key}`")),
            None => Ok(0),
        }
    };
    let client = int(&mut t, "client", true)?;
    let call = int(&mut t, "call", true)?;
    let after_event = int(&mut t, "after_event", at == At::Event)?;
    if at == At::Event && after_event == 0 {
        return Err("`after_event` is 1-based: use 1 or more".into());
    }
    if at != At::Event && is_drop {
        t.remove("after_event");
        t.insert("after_event".into(), toml::Value::Integer(0));
    }
    if t.get("kind").and_then(|k| k.as_str()) == Some("switch") {
        return Err("a switch is placed by its `after_call`: it takes no `at`".into());
    }
    // The boundary is its time: a placed fault writes no `at_ms`.
    if t.contains_key("at_ms") {
        return Err("a fault placed with `at` fires at its boundary: drop `at_ms`".into());
    }
    let kind = t.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if !is_drop && kind != "switch" {
        t.insert("at_ms".into(), toml::Value::Integer(0));
    }
    let fault = t.try_into::<Fault>().map_err(|e| e.message().to_string())?;
    Ok(Fault::Placed {
        on: Boundary {
            client,
            call,
            at,
            after_event: if at == At::Event { after_event } else { 0 },
        },
        fault: Box::new(fault),
    })
}

/// A fault as one `[[faults.explicit]]` table ([`from_table`] reads it
/// back to the same fault).
pub fn to_table(f: &Fault) -> toml::Table {
    let plain = |f: &Fault| match toml::Value::try_from(f) {
        Ok(toml::Value::Table(t)) => t,
        _ => unreachable!("a fault serializes to a table"),
    };
    let Fault::Placed { on, fault } = f else {
        return plain(f);
    };
    let mut t = plain(fault);
    t.remove("at_ms");
    t.remove("after_event");
    t.insert("at".into(), toml::Value::String(on.at.as_str().into()));
    t.insert("client".into(), toml::Value::Integer(on.client.into()));
    t.insert("call".into(), toml::Value::Integer(on.call.into()));
    if on.at == At::Event {
        t.insert(
            "after_event".into(),
            toml::Value::Integer(on.after_event.into()),
        );
    }
    t
}

/// Reads `[[faults.explicit]]`.
pub fn de_explicit<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Fault>, D::Error> {
    let tables = Vec::<toml::Table>::deserialize(d)?;
    tables
        .into_iter()
        .enumerate()
        .map(|(i, t)| from_table(t).map_err(|e| serde::de::Error::custom(format!("[{i}]: {e}"))))
        .collect()
}

/// Writes `[[faults.explicit]]` (placed faults as [`to_table`] writes them).
pub fn ser_explicit<S: Serializer>(faults: &[Fault], s: S) -> Result<S::Ok, S::Error> {
    let tables: Vec<toml::Table> = faults.iter().map(to_table).collect();
    tables.serialize(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(src: &str) -> Result<Fault, String> {
        from_table(src.parse::<toml::Table>().unwrap())
    }

    #[test]
    fn a_placed_fault_reads_back_as_it_was_written() {
        let cases = [
            "kind = \"partition\"\nhost = 0\nduration_ms = 300\nat = \"event\"\nclient = 1\ncall = 0\nafter_event = 2\n",
            "kind = \"restart\"\nat = \"request_received\"\nclient = 0\ncall = 1\n",
            "kind = \"drop\"\nclient = 0\ncall = 1\nat = \"response_head\"\n",
            "kind = \"drop\"\nclient = 0\ncall = 1\nat = \"result\"\n",
        ];
        for src in cases {
            let f = read(src).unwrap();
            assert!(matches!(f, Fault::Placed { .. }), "{src}: {f:?}");
            assert_eq!(read(&to_table(&f).to_string()).unwrap(), f, "{src}");
        }
        // A drop at an event is the plain drop.
        let f = read("kind = \"drop\"\nclient = 0\ncall = 1\nafter_event = 2\nat = \"event\"\n");
        assert_eq!(
            f.unwrap(),
            Fault::Drop {
                client: 0,
                call: 1,
                after_event: 2,
                close: crate::fault::Close::Fin,
            }
        );
    }

    #[test]
    fn a_placed_fault_with_a_time_or_a_bad_boundary_is_refused() {
        for (src, says) in [
            (
                "kind = \"restart\"\nat_ms = 5\nat = \"result\"\nclient = 0\ncall = 0\n",
                "at_ms",
            ),
            (
                "kind = \"restart\"\nat = \"result\"\ncall = 0\n",
                "needs `client`",
            ),
            (
                "kind = \"restart\"\nat = \"later\"\nclient = 0\ncall = 0\n",
                "must be one of",
            ),
            (
                "kind = \"restart\"\nat = \"event\"\nclient = 0\ncall = 0\n",
                "after_event",
            ),
            (
                "kind = \"switch\"\nclient = 0\nafter_call = 0\nat = \"result\"\ncall = 0\n",
                "switch",
            ),
        ] {
            let e = read(src).unwrap_err();
            assert!(e.contains(says), "{src}: {e}");
        }
    }
}

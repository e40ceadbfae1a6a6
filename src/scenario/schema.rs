//! The keys a scenario file may write, table by table, exactly as the
//! parser knows them: serde's own field lists, read off the structs, so
//! sims/README.md (whose key tables a test holds equal to these) and the
//! `--set` check cannot drift from the loader. Also the nearest known word
//! to a misspelt one, for messages that name the fix.

use super::deployment::DeploymentSpec;
use super::format::{ClientGroup, Expect, HealSpec, NetworkSpec, Regression, Scenario};
use crate::fault::{Close, Direction, Fault, FaultSpec, SkewOn};
use crate::settings::ServerConfig;
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The error [`Probe`] answers with: the field list serde passed it.
#[derive(Debug)]
struct Fields(&'static [&'static str]);

impl std::fmt::Display for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fields {:?}", self.0)
    }
}

impl std::error::Error for Fields {}

impl de::Error for Fields {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Fields(&[])
    }
}

/// A deserializer that holds no data: asked for a struct, it fails with
/// the struct's field names, which derived code hands every deserializer.
struct Probe;

impl<'de> Deserializer<'de> for Probe {
    type Error = Fields;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
        Err(Fields(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Fields> {
        Err(Fields(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The keys a derived `Deserialize` struct accepts, in declaration order.
pub fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    match T::deserialize(Probe) {
        Err(Fields(f)) => f,
        Ok(_) => &[],
    }
}

/// The keys of `[[faults.explicit]]`, over every kind (`kind` included).
/// An internally tagged enum hands no field list to its deserializer, so
/// they are read off one fault of each kind as it prints; the match below
/// stops compiling when a kind is added without its sample.
pub fn explicit_fault_keys() -> Vec<String> {
    let samples = samples();
    let mut keys = Vec::new();
    for f in &samples {
        match f {
            Fault::Drop { .. }
            | Fault::Partition { .. }
            | Fault::Switch { .. }
            | Fault::Restart { .. }
            | Fault::Latency { .. }
            | Fault::ReplicaCrash { .. }
            | Fault::ReplicaDrain { .. }
            | Fault::Deploy { .. }
            | Fault::BalancerRestart { .. }
            | Fault::ReplicaAdd { .. }
            | Fault::ReplicaRemove { .. }
            | Fault::StorePartition { .. }
            | Fault::StoreLagWindow { .. }
            | Fault::Oneway { .. }
            | Fault::Hold { .. }
            | Fault::Truncate { .. }
            | Fault::Slice { .. }
            | Fault::Bandwidth { .. }
            | Fault::SlowClose { .. }
            | Fault::Skew { .. }
            | Fault::Stall { .. }
            | Fault::ReceiverRestart { .. }
            | Fault::RefreshLost { .. }
            | Fault::StoreRestart { .. } => {}
            // A placed fault's own keys are PLACEMENT_KEYS, added below.
            Fault::Placed { .. } => continue,
        }
        let value = serde_json::to_value(f).expect("faults serialize");
        for k in value.as_object().expect("a fault is a table").keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    for k in crate::fault::PLACEMENT_KEYS {
        if !keys.iter().any(|x| x == k) {
            keys.push(k.to_string());
        }
    }
    keys
}

/// Every table of a scenario file with the keys the parser accepts in it,
/// headed as sims/README.md heads its sections (`top level` for the keys
/// outside any table).
pub fn tables() -> Vec<(&'static str, Vec<String>)> {
    let owned = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        ("top level", owned(fields_of::<Scenario>())),
        ("[server]", owned(fields_of::<ServerConfig>())),
        ("[[clients]]", owned(fields_of::<ClientGroup>())),
        (
            "[clients.receiver]",
            owned(fields_of::<super::ReceiverSpec>()),
        ),
        ("[faults]", owned(fields_of::<FaultSpec>())),
        ("[[faults.explicit]]", explicit_fault_keys()),
        ("[faults.swarm]", owned(fields_of::<crate::fault::Swarm>())),
        ("[network]", owned(fields_of::<NetworkSpec>())),
        ("[heal]", owned(fields_of::<HealSpec>())),
        ("[deployment]", owned(fields_of::<DeploymentSpec>())),
        ("[intermediary]", owned(fields_of::<super::Intermediary>())),
        ("[expect.<arm>]", owned(fields_of::<Expect>())),
        ("[regression]", owned(fields_of::<Regression>())),
    ]
}

/// The candidate closest to `word` by edit distance, when it is close
/// enough to be the word meant (a third of its length, at least 2 edits).
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let most = (word.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `cfg` with `[server] key = value` set (`--set server.KEY=VALUE`; `key`
/// without the `server.` prefix): VALUE is read as TOML (a number, a
/// boolean, a quoted string), else as a bare string. An unknown key names
/// the nearest known one; a value of the wrong type names the type the
/// key takes and its default.
pub fn set_server(cfg: &ServerConfig, key: &str, value: &str) -> Result<ServerConfig, String> {
    let known = fields_of::<ServerConfig>();
    if !known.contains(&key) {
        return Err(match nearest(key, known.iter().copied()) {
            Some(near) => format!(
                "no server setting {key:?}: did you mean server.{near}? (sims/README.md lists \
                 every [server] key)"
            ),
            None => format!(
                "no server setting {key:?}: use one of {} (sims/README.md says what each does)",
                known.join(", ")
            ),
        });
    }
    set_field("server", cfg, key, value)
}

/// The `[[clients]]` keys `--set client.KEY=VALUE` may set (for every
/// group at once): how clients hold connections, not what they do.
pub const CLIENT_SETTABLE: &[&str] = &["connections", "pool_idle_ms", "reconnect", "field"];

/// `g` with `client.KEY=VALUE` applied (`--set`), or one line naming the
/// fix: only [`CLIENT_SETTABLE`] keys, each with its type.
pub fn set_client(g: &ClientGroup, key: &str, value: &str) -> Result<ClientGroup, String> {
    if !CLIENT_SETTABLE.contains(&key) {
        let near = nearest(key, CLIENT_SETTABLE.iter().copied())
            .map(|n| format!("did you mean client.{n}? "))
            .unwrap_or_default();
        return Err(format!(
            "no client setting {key:?}: {near}--set takes client.{} (other [[clients]] keys \
             are edited in the scenario file)",
            CLIENT_SETTABLE.join(" or client.")
        ));
    }
    // `client.field=key-per-attempt` names one behaviour; a TOML list
    // names several (`[]`: none).
    let one;
    let value = if key == "field" && !value.trim_start().starts_with('[') {
        one = format!("[{:?}]", value.trim_matches('"'));
        one.as_str()
    } else {
        value
    };
    set_field("client", g, key, value)
}

impl DeploymentSpec {
    /// This table with the `deployment.KEY=VALUE` ones of `sets` applied
    /// in order (others, and a value that does not apply, are skipped:
    /// the run's own check refuses them). Beside [`set_deployment`], so
    /// the table's own file knows nothing of the `--set` syntax.
    pub fn with_sets(&self, sets: &[(String, String)]) -> DeploymentSpec {
        let mut d = self.clone();
        for (k, v) in sets {
            if let Some(field) = k.strip_prefix("deployment.") {
                if let Ok(next) = set_deployment(&d, field, v) {
                    d = next;
                }
            }
        }
        d
    }
}

/// `d` with `deployment.KEY=VALUE` applied (`--set`), or one line naming
/// the fix: an unknown key is told the nearest known one.
pub fn set_deployment(
    d: &DeploymentSpec,
    key: &str,
    value: &str,
) -> Result<DeploymentSpec, String> {
    set_known("deployment", d, key, value)
}

/// `i` with `[intermediary]` key `key` set to `value` (`--set
/// intermediary.KEY=VALUE`), or one line naming the keys it takes.
pub fn set_intermediary(
    i: &super::Intermediary,
    key: &str,
    value: &str,
) -> Result<super::Intermediary, String> {
    set_known("intermediary", i, key, value)
}

/// `cfg` of `[table]` with `key` set to `value`, once `key` is one of the
/// table's: else one line naming the nearest and every key it takes.
fn set_known<T>(table: &str, cfg: &T, key: &str, value: &str) -> Result<T, String>
where
    T: serde::Serialize + for<'de> Deserialize<'de> + Default,
{
    let known = fields_of::<T>();
    if !known.contains(&key) {
        let near = nearest(key, known.iter().copied())
            .map(|n| format!("did you mean {table}.{n}? "))
            .unwrap_or_default();
        return Err(format!(
            "no {table} setting {key:?}: {near}[{table}] takes {}",
            known.join(", ")
        ));
    }
    set_field(table, cfg, key, value)
}

/// `cfg` with its field `key` (a known one) set to `value`, read as TOML
/// (a number, a boolean, a quoted string), else as a bare string; a value
/// of the wrong type is told the type `key` takes and its default.
fn set_field<T>(table: &str, cfg: &T, key: &str, value: &str) -> Result<T, String>
where
    T: serde::Serialize + for<'de> Deserialize<'de> + Default,
{
    let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let mut fields = toml::Table::try_from(cfg).map_err(|e| e.to_string())?;
    let default = toml::Table::try_from(T::default())
        .ok()
        .and_then(|t| t.get(key).cloned());
    fields.insert(key.to_string(), parsed);
    toml::Value::Table(fields)
        .try_into()
        .map_err(|e: toml::de::Error| {
            let one = e.message().lines().next().unwrap_or("").trim().to_string();
            // An unset optional setting has no default to tell its type:
            // serde's expectation does (`expected u64`).
            let whole = ["usize", "u64", "u32"]
                .iter()
                .any(|t| one.ends_with(&format!("expected {t}")));
            let takes = match &default {
                Some(toml::Value::Integer(_)) => "a whole number",
                Some(toml::Value::Boolean(_)) => "true or false",
                Some(toml::Value::Float(_)) => "a number",
                None if whole => "a whole number",
                _ => "",
            };
            let example = match &default {
                Some(toml::Value::String(s)) => format!("{table}.{key}={s}"),
                Some(v) => format!("{table}.{key}={v}"),
                None => String::new(),
            };
            match (takes.is_empty(), example.is_empty()) {
                (false, false) => {
                    format!("{one}: {key} takes {takes}, e.g. {example} (the default)")
                }
                (true, false) => format!("{one}: e.g. {example} (the default)"),
                (false, true) => format!("{one}: {key} takes {takes} (unset by default)"),
                _ => one,
            }
        })
}

/// One fault of each kind, every optional key set (a drop's `close` is
/// RST so that it prints).
fn samples() -> Vec<Fault> {
    vec![
        Fault::Drop {
            client: 0,
            call: 0,
            after_event: 1,
            close: Close::Rst,
        },
        Fault::Partition {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
        },
        Fault::Switch {
            client: 0,
            after_call: 0,
        },
        Fault::Restart { at_ms: 0 },
        Fault::Latency {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
            max_ms: 1,
        },
        Fault::ReplicaCrash {
            replica: 0,
            at_ms: 0,
            duration_ms: 0,
            mode: crate::fault::CrashMode::Kill,
        },
        Fault::ReplicaDrain {
            replica: 0,
            at_ms: 0,
            grace_ms: 0,
        },
        Fault::Deploy {
            at_ms: 0,
            grace_ms: 0,
        },
        Fault::BalancerRestart { at_ms: 0 },
        Fault::ReplicaAdd { at_ms: 0 },
        Fault::ReplicaRemove {
            replica: 0,
            at_ms: 0,
        },
        Fault::StorePartition {
            at_ms: 0,
            duration_ms: 0,
        },
        Fault::StoreLagWindow {
            at_ms: 0,
            duration_ms: 0,
            lag_ms: 0,
        },
        Fault::StoreRestart { at_ms: 0 },
        Fault::Oneway {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
            direction: Direction::ToServer,
        },
        Fault::Hold {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
        },
        Fault::Truncate {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
            bytes: 1,
            direction: Direction::ToClient,
            close: Close::Rst,
        },
        Fault::Slice {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
            bytes: 1,
            delay_ms: 1,
        },
        Fault::Bandwidth {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
            bytes_per_s: 1,
        },
        Fault::SlowClose {
            host: 0,
            at_ms: 0,
            duration_ms: 1,
            delay_ms: 1,
        },
        Fault::Skew {
            at_ms: 0,
            offset_ms: 1,
            on: SkewOn::Client,
            host: 0,
            clock: crate::fault::SkewClock::Wall,
        },
        Fault::Stall {
            at_ms: 0,
            duration_ms: 1,
            replica: Some(0),
        },
        Fault::ReceiverRestart {
            client: 0,
            at_ms: 0,
            duration_ms: 1,
        },
        Fault::RefreshLost {
            client: 0,
            at_ms: 0,
            duration_ms: 1,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// sims/README.md's key tables: section (`[server]`, `top level`…) →
    /// key → its default cell.
    fn readme_tables() -> BTreeMap<String, BTreeMap<String, String>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sims/README.md");
        let text = std::fs::read_to_string(path).unwrap();
        let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut section = String::new();
        for line in text.lines() {
            if let Some(head) = line.strip_prefix("### ") {
                section = match head.split('`').nth(1) {
                    Some(quoted) => quoted.to_string(),
                    None => head.trim().to_lowercase(),
                };
            } else if line.starts_with("| `") && !section.is_empty() {
                let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
                let key = cells[0].trim().trim_matches('`').to_string();
                let default = cells.get(1).map_or("", |c| c.trim()).to_string();
                out.entry(section.clone()).or_default().insert(key, default);
            }
        }
        out
    }

    /// Every key the parser accepts has a row in sims/README.md under its
    /// table, no row names a key the parser refuses, and every default the
    /// README writes as a value is the code's default.
    #[test]
    fn sims_readme_documents_every_key_with_its_default() {
        let readme = readme_tables();
        for (table, keys) in tables() {
            let rows = readme
                .get(table)
                .unwrap_or_else(|| panic!("sims/README.md has no `### `{table}`` section"));
            let documented: BTreeSet<&str> = rows.keys().map(String::as_str).collect();
            let accepted: BTreeSet<&str> = keys.iter().map(String::as_str).collect();
            let missing: Vec<_> = accepted.difference(&documented).collect();
            let unknown: Vec<_> = documented.difference(&accepted).collect();
            assert!(
                missing.is_empty() && unknown.is_empty(),
                "sims/README.md {table}: keys the parser accepts but the README lacks: \
                 {missing:?}; rows the parser refuses: {unknown:?}"
            );
            for (key, cell) in rows {
                assert!(!cell.is_empty(), "{table} {key}: no default written");
            }
        }
        let defaults: [(&str, toml::Table); 6] = [
            (
                "[server]",
                toml::Table::try_from(ServerConfig::default()).unwrap(),
            ),
            (
                "[[clients]]",
                toml::Table::try_from(ClientGroup::default()).unwrap(),
            ),
            (
                "[faults]",
                toml::Table::try_from(FaultSpec::default()).unwrap(),
            ),
            (
                "[network]",
                toml::Table::try_from(NetworkSpec::default()).unwrap(),
            ),
            (
                "[heal]",
                toml::Table::try_from(HealSpec::default()).unwrap(),
            ),
            (
                "[expect.<arm>]",
                toml::Table::try_from(Expect::default()).unwrap(),
            ),
        ];
        let mut checked = 0;
        for (table, values) in defaults {
            for (key, value) in values {
                let cell = &readme[table][&key];
                let written = cell
                    .strip_prefix('`')
                    .and_then(|c| c.split('`').next())
                    .unwrap_or_else(|| {
                        panic!("{table} {key}: default {value} not written as `value`: {cell:?}")
                    });
                let parsed = toml::from_str::<toml::Table>(&format!("v = {written}"))
                    .unwrap_or_else(|e| panic!("{table} {key}: {written:?} is not TOML: {e}"))
                    .remove("v")
                    .unwrap();
                assert_eq!(
                    parsed, value,
                    "{table} {key}: README says {written}, the code {value}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 40, "{checked} defaults checked");
    }

    #[test]
    fn fields_come_from_the_structs() {
        let server = fields_of::<ServerConfig>();
        assert!(server.contains(&"store_capacity") && server.contains(&"sdk"));
        assert_eq!(fields_of::<HealSpec>(), ["duration_ms"]);
        assert_eq!(
            fields_of::<NetworkSpec>(),
            ["latency_ms", "tcp_capacity", "client_hosts", "tick_ms"]
        );
        let explicit = explicit_fault_keys();
        for k in [
            "kind",
            "client",
            "call",
            "after_event",
            "host",
            "at_ms",
            "max_ms",
        ] {
            assert!(explicit.iter().any(|e| e == k), "{k} in {explicit:?}");
        }
    }

    #[test]
    fn the_nearest_key_is_suggested_and_a_far_one_is_not() {
        let known = fields_of::<ServerConfig>();
        assert_eq!(
            nearest("store_capasity", known.iter().copied()),
            Some("store_capacity")
        );
        assert_eq!(
            nearest("max_sesions", known.iter().copied()),
            Some("max_sessions")
        );
        assert_eq!(nearest("zzz", known.iter().copied()), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }

    #[test]
    fn set_names_the_fix() {
        let d = ServerConfig::default();
        let e = set_server(&d, "store_capasity", "3").unwrap_err();
        assert!(e.contains("did you mean server.store_capacity?"), "{e}");
        let e = set_server(&d, "store_capacity", "abc").unwrap_err();
        assert!(
            e.contains("store_capacity takes a whole number, e.g. server.store_capacity=1024"),
            "{e}"
        );
        let e = set_server(&d, "durable_dedup", "yes").unwrap_err();
        assert!(e.contains("true or false"), "{e}");
        let e = set_server(&d, "delivery", "sideways").unwrap_err();
        assert!(e.contains("post-stream") && !e.contains('\n'), "{e}");
        let s = set_server(&d, "store_capacity", "64").unwrap();
        assert_eq!(s.store_capacity, 64);
        let s = set_server(&d, "delivery", "session-stream").unwrap();
        assert_eq!(s.delivery, crate::settings::Delivery::SessionStream);
    }
}

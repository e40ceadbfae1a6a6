//! The loader: a scenario file read, parsed and held to its own bounds
//! (see `bounds.rs`), its `[regression]` table turned into the bounds it
//! implies, and `--set` overrides applied. One line per refusal, naming
//! the key and the fix.

use super::format::{RegressionKind, Scenario, ScenarioError};
use super::schema;
use crate::settings::ServerConfig;
use std::path::Path;

impl Scenario {
    /// Reads a scenario file and holds it to its own bounds (commands
    /// load through `crate::check::load`, which adds the house's checks).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|message| ScenarioError::Parse {
            path: path.display().to_string(),
            message,
        })
    }

    /// Parses scenario text and holds it to its own bounds (see
    /// `crate::check::parse` for the house's checks too).
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(String::new(), |span| {
                let (line, col) = line_col(text, span.start);
                format!("line {line}, column {col}: ")
            });
            format!("{at}{}", toml_problem(e.message()))
        })?;
        s.apply_regression()?;
        s.validate()?;
        let (hosts, clients) = (s.network.client_hosts, s.total_clients());
        // The default (4 hosts) fits any count; a file that asks for more
        // hosts than clients asks for hosts that run nothing.
        if u64::from(hosts) > clients && written(text, "network", "client_hosts") {
            return Err(format!(
                "network.client_hosts = {hosts} is above the {clients} clients: a host without a \
                 client runs nothing (and a fault on it applies to no one); use at most {clients}"
            ));
        }
        Ok(s)
    }

    /// A `[regression]` table implies its arm's bounds (hazard: each metric
    /// at least 1; bug: at most 0): added when the file does not write
    /// them, refused when it writes others. Whether its arm and metrics
    /// exist is checked above the loader (`crate::check`).
    fn apply_regression(&mut self) -> Result<(), String> {
        let Some(r) = self.regression.clone() else {
            return Ok(());
        };
        if r.metrics.is_empty() {
            return Err(
                "regression.metrics is empty: name what the run shows, e.g. [\"duplicate_side_effects\"]"
                    .into(),
            );
        }
        let mut e = self.expect.of(&r.server);
        for m in &r.metrics {
            let (min, max) = (e.min.get(m).copied(), e.max.get(m).copied());
            let fits = match r.kind {
                RegressionKind::Hazard => min.unwrap_or(1) >= 1 && max.is_none_or(|x| x >= 1),
                RegressionKind::Bug => max.unwrap_or(0) == 0 && min.unwrap_or(0) == 0,
            };
            if !fits {
                return Err(format!(
                    "expect.{}: a {} regression pins {m} {}; the file bounds it otherwise: \
                     drop those bounds or change regression.kind",
                    r.server,
                    r.kind.as_str(),
                    match r.kind {
                        RegressionKind::Hazard => "at least 1 (passes while it reproduces)",
                        RegressionKind::Bug => "at most 0 (fails until fixed)",
                    }
                ));
            }
            match r.kind {
                RegressionKind::Hazard => e.min.insert(m.clone(), min.unwrap_or(1)),
                RegressionKind::Bug => e.max.insert(m.clone(), 0),
            };
        }
        self.expect.set(&r.server, e);
        Ok(())
    }

    /// Overrides one setting (`--set server.KEY=VALUE`, or
    /// `deployment.KEY=VALUE`, `intermediary.KEY=VALUE`, or `client.KEY=VALUE` for every client group): VALUE is read as TOML
    /// (a number, a boolean, a quoted string), else as a bare string.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let named = |e: String| format!("--set {key}={value}: {e}");
        if key == "era" {
            self.era = value.trim_matches('"').parse().map_err(named)?;
            return Ok(());
        }
        if key == "swarm" {
            self.faults.swarm_on = parse_on(value).map_err(named)?;
            return Ok(());
        }
        if let Some(field) = key.strip_prefix("client.") {
            for g in &mut self.clients {
                *g = schema::set_client(g, field, value).map_err(named)?;
            }
            return Ok(());
        }
        if let Some(field) = key.strip_prefix("deployment.") {
            // Checked as a whole with the scenario, once every --set is
            // in: replicas and their balancer may come in either order.
            self.deployment =
                schema::set_deployment(&self.deployment, field, value).map_err(named)?;
            return Ok(());
        }
        if let Some(field) = key.strip_prefix("intermediary.") {
            self.intermediary =
                schema::set_intermediary(&self.intermediary, field, value).map_err(named)?;
            return Ok(());
        }
        self.server = check_set(&self.server, key, value).map_err(named)?;
        Ok(())
    }
}

/// `on` or `off` (`true`/`false`).
fn parse_on(value: &str) -> Result<bool, String> {
    match value.trim_matches('"') {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        v => Err(format!("swarm is on or off, not {v:?}")),
    }
}

/// `cfg` with `--set KEY=VALUE` applied, or one line naming the fix (the
/// caller names the input): only `server.*` settings, and the
/// `client.*` ones of [`schema::CLIENT_SETTABLE`] (checked against a
/// default group, `cfg` unchanged), can be set (a bare server key is
/// told its prefix), an unknown key is told the nearest known one, a
/// value of the wrong type the type its key takes.
pub fn check_set(cfg: &ServerConfig, key: &str, value: &str) -> Result<ServerConfig, String> {
    if key == "era" {
        value.trim_matches('"').parse::<crate::settings::Era>()?;
        return Ok(cfg.clone());
    }
    if key == "swarm" {
        parse_on(value)?;
        return Ok(cfg.clone());
    }
    if let Some(field) = key.strip_prefix("client.") {
        schema::set_client(&super::ClientGroup::default(), field, value)?;
        return Ok(cfg.clone());
    }
    if let Some(field) = key.strip_prefix("deployment.") {
        schema::set_deployment(&super::DeploymentSpec::default(), field, value)?;
        return Ok(cfg.clone());
    }
    if let Some(field) = key.strip_prefix("intermediary.") {
        schema::set_intermediary(&super::Intermediary::default(), field, value)?;
        return Ok(cfg.clone());
    }
    let Some(field) = key.strip_prefix("server.") else {
        let server = schema::fields_of::<ServerConfig>();
        let fix = if server.contains(&key) {
            format!("server settings are named with their table: --set server.{key}={value}")
        } else {
            "only the era, [server], [deployment] and [intermediary] settings and \
             client.connections / client.pool_idle_ms / client.reconnect / client.field can be set (--set \
             server.KEY=VALUE, e.g. server.store_capacity=64, deployment.replicas=3 or \
             intermediary.buffer=true); other tables are edited in the scenario file"
                .to_string()
        };
        return Err(fix);
    };
    schema::set_server(cfg, field, value)
}

/// A TOML error's message on one line, with the fix where the error
/// alone does not say it.
fn toml_problem(message: &str) -> String {
    let one = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    let fix = if one.contains("duplicate key") {
        ": write each table once (merge the two into one)".to_string()
    } else if one.contains("recursion limit") {
        ": keys and values nest at most 80 levels deep (scenarios need 3): flatten it".to_string()
    } else {
        did_you_mean(&one).map_or(String::new(), |n| format!(": did you mean `{n}`?"))
    };
    format!("{one}{fix}")
}

/// For serde's "unknown field `X`, expected one of `a`, `b`" (or an
/// unknown variant), the expected name nearest to `X`, if one is near.
fn did_you_mean(message: &str) -> Option<&str> {
    let at = message
        .find("unknown field `")
        .or_else(|| message.find("unknown variant `"))?;
    let rest = &message[at..];
    let start = rest.find('`')? + 1;
    let end = start + rest[start..].find('`')?;
    let word = &rest[start..end];
    let expected = &rest[end + 1..];
    let candidates = expected.split('`').skip(1).step_by(2);
    super::schema::nearest(word, candidates)
}

/// Whether `text` writes `key` in its `[table]` (rather than taking the
/// default). Called only on text that parsed.
fn written(text: &str, table: &str, key: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get(table)?.as_table()?.get(key).cloned())
        .is_some()
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Behaviour;
    use crate::settings::ServerConfig;

    const MIN: &str = r#"
name = "t"
duration_ms = 1000
[[clients]]
behaviour = "retry-by-post"
"#;

    /// `[expect.<era>.<arm>]` beside `[expect.<arm>]`: read apart, written
    /// back as they were, picked by the run's era; a bad table names its
    /// place.
    #[test]
    fn era_expectations_parse_round_trip_and_apply_in_their_era() {
        use crate::settings::Era;
        let s = Scenario::parse(
            r#"
name = "t"
duration_ms = 1000
era = "2026-07-28"
[[clients]]
behaviour = "retry-by-post"
[expect.guarded.max]
ops_failed = 0
[expect."2025-11-25".guarded.max]
ops_failed = 1
"#,
        )
        .unwrap();
        assert_eq!(s.expect.0["guarded"].max["ops_failed"], 0);
        assert_eq!(s.expect.1[&Era::Y2025]["guarded"].max["ops_failed"], 1);
        let written = toml::to_string(&s.expect).unwrap();
        let again: crate::scenario::Expectations = toml::from_str(&written).unwrap();
        assert_eq!(again, s.expect, "written back as read: {written}");
        let own = s.expect.in_era(Era::Y2026, Era::Y2026);
        assert_eq!(own.of("guarded").max["ops_failed"], 0);
        let old = s.expect.in_era(Era::Y2026, Era::Y2025);
        assert_eq!(old.of("guarded").max["ops_failed"], 1);
        assert!(old.1.is_empty());
        let bad = format!("{MIN}[expect.\"2026-07-28\".guarded]\nmxa = {{}}\n");
        let e = Scenario::parse(&bad).unwrap_err().to_string();
        assert!(e.contains("expect.2026-07-28"), "{e}");
    }

    #[test]
    fn a_minimal_scenario_takes_defaults() {
        let s = Scenario::parse(MIN).unwrap();
        assert_eq!(s.clients[0].behaviour, Behaviour::RetryByPost);
        assert_eq!(s.clients[0].count, 1);
        assert_eq!(s.server, ServerConfig::default());
    }

    #[test]
    fn sdk_quirk_settings_parse_and_the_preset_sets_both() {
        use crate::settings::{CompletedResume, Replay, Sdk};
        let s = Scenario::parse(&format!(
            "{MIN}[server]\nreplay = \"inclusive\"\ncompleted_resume = \"empty\"\n"
        ))
        .unwrap();
        assert_eq!(s.server.replay_mode(), Replay::Inclusive);
        assert_eq!(s.server.completed_resume_mode(), CompletedResume::Empty);
        let d = ServerConfig::default();
        assert_eq!(d.replay_mode(), Replay::Exclusive);
        assert_eq!(d.completed_resume_mode(), CompletedResume::Replay);
        let rmcp = Scenario::parse(&format!("{MIN}[server]\nsdk = \"rmcp\"\n")).unwrap();
        assert_eq!(rmcp.server.sdk, Some(Sdk::Rmcp));
        assert_eq!(rmcp.server.replay_mode(), Replay::Inclusive);
        assert_eq!(rmcp.server.completed_resume_mode(), CompletedResume::Empty);
        // Agreeing with the preset is fine; contradicting it is refused.
        Scenario::parse(&format!(
            "{MIN}[server]\nsdk = \"rmcp\"\nreplay = \"inclusive\"\n"
        ))
        .unwrap();
        for (extra, needle) in [
            (
                "replay = \"exclusive\"",
                "server.replay = \"exclusive\" contradicts server.sdk",
            ),
            (
                "completed_resume = \"replay\"",
                "server.completed_resume = \"replay\" contradicts server.sdk",
            ),
        ] {
            let err =
                Scenario::parse(&format!("{MIN}[server]\nsdk = \"rmcp\"\n{extra}\n")).unwrap_err();
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert!(!err.contains('\n'), "one line: {err:?}");
        }
        // The Python preset drops cancellations; saying otherwise beside it
        // is refused too.
        use crate::settings::CancelNotifications;
        assert_eq!(d.cancel_mode(), CancelNotifications::Honoured);
        let py = Scenario::parse(&format!("{MIN}[server]\nsdk = \"python\"\n")).unwrap();
        assert_eq!(py.server.cancel_mode(), CancelNotifications::Dropped);
        assert!(py.server.prime_resume_mode() && !d.prime_resume_mode());
        assert_eq!(py.server.replay_mode(), Replay::Exclusive);
        let err = Scenario::parse(&format!(
            "{MIN}[server]\nsdk = \"python\"\ncancel_notifications = \"honoured\"\n"
        ))
        .unwrap_err();
        assert!(
            err.contains(
                "server.cancel_notifications = \"honoured\" contradicts server.sdk = \"python\""
            ),
            "{err}"
        );
        // The TypeScript v2 preset drops cancellations and lets a close
        // stop nothing.
        use crate::settings::OnClose;
        assert_eq!(d.close_mode(), OnClose::Cancel);
        let ts = Scenario::parse(&format!("{MIN}[server]\nsdk = \"typescript\"\n")).unwrap();
        assert_eq!(ts.server.close_mode(), OnClose::RunOn);
        assert_eq!(ts.server.cancel_mode(), CancelNotifications::Dropped);
        assert!(!ts.server.prime_resume_mode());
        let err = Scenario::parse(&format!(
            "{MIN}[server]\nsdk = \"typescript\"\non_close = \"cancel\"\n"
        ))
        .unwrap_err();
        assert!(
            err.contains("server.on_close = \"cancel\" contradicts server.sdk = \"typescript\""),
            "{err}"
        );
        // go-sdk's server: no buffering header, a close that stops
        // nothing, and the 2025-11-25 wire alone.
        let go = Scenario::parse(&format!("{MIN}[server]\nsdk = \"go\"\n")).unwrap();
        assert!(!go.server.buffering_header() && d.buffering_header());
        assert_eq!(go.server.close_mode(), OnClose::RunOn);
        assert_eq!(go.server.cancel_mode(), CancelNotifications::Honoured);
        let err = Scenario::parse(&format!(
            "era = \"2026-07-28\"\n{MIN}[server]\nsdk = \"go\"\n"
        ))
        .unwrap_err();
        assert!(err.contains("refuses the 2026-07-28 wire"), "{err}");
        // C#'s hybrid mode is what the built-in server does on every knob.
        let cs = Scenario::parse(&format!("{MIN}[server]\nsdk = \"csharp\"\n"))
            .unwrap()
            .server;
        assert_eq!(
            (
                cs.replay_mode(),
                cs.completed_resume_mode(),
                cs.cancel_mode()
            ),
            (d.replay_mode(), d.completed_resume_mode(), d.cancel_mode())
        );
        assert_eq!(
            (
                cs.prime_resume_mode(),
                cs.close_mode(),
                cs.buffering_header()
            ),
            (d.prime_resume_mode(), d.close_mode(), d.buffering_header())
        );
        let err = Scenario::parse(&format!("{MIN}[server]\nreplay = \"sideways\"\n")).unwrap_err();
        assert!(err.contains("unknown variant"), "{err}");
        // Defaults print nothing new: a printed scenario is unchanged.
        let printed = toml::to_string(&ServerConfig::default()).unwrap();
        for key in [
            "replay",
            "completed_resume",
            "cancel_notifications",
            "prime_resume",
            "on_close",
            "sdk",
        ] {
            let line = format!("{key} =");
            assert!(
                !printed.lines().any(|l| l.starts_with(&line)),
                "{key} printed: {printed}"
            );
        }
    }

    #[test]
    fn bad_scenarios_name_the_problem() {
        let bad = [
            (format!("{MIN}\nbogus = 1"), "unknown field"),
            (MIN.replace("retry-by-post", "teleport"), "unknown variant"),
            (format!("{MIN}[network]\ntcp_capacity = 1\n"), "tcp_capacity"),
            (format!("{MIN}[server]\nevents_tick_ms = 100\nevents_retention = 0\n"), "server.events_retention = 0"),
            (format!("{MIN}[server]\nevents_tick_ms = 100\nevents_retention = 4097\n"), "outside 1..=4096"),
            (format!("{MIN}[server]\nevents_tick_ms = 100\nevents_poll_ms = 0\n"), "events_poll_ms"),
            (format!("{MIN}[server]\nevents_truncation = \"loud\"\n"), "unknown variant"),
            (format!("{MIN}[[faults.explicit]]\nkind = \"drop\"\nclient = 9\ncall = 0\nafter_event = 1\n"), "client 9"),
            ("name = 1".to_string(), "invalid type"),
        ];
        for (text, needle) in bad {
            let err = Scenario::parse(&text).unwrap_err();
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
        }
    }

    #[test]
    fn the_printed_plan_replays_as_explicit_faults() {
        let s = Scenario::parse(
            r#"
name = "t"
duration_ms = 10000
[[clients]]
behaviour = "resume"
count = 20
calls = 10
[faults]
drop_rate = 0.2
partitions = 3
restarts = 1
latency_spikes = 2
latency_spike_max_ms = 50
[[faults.explicit]]
kind = "restart"
at_ms = 5
"#,
        )
        .unwrap();
        let plan = s.fault_plan(3);
        let text = format!(
            "name = \"r\"\nduration_ms = 10000\n[[clients]]\nbehaviour = \"resume\"\ncount = 20\ncalls = 10\n[faults]\n{}",
            plan.to_toml().replace("[[explicit]]", "[[faults.explicit]]")
        );
        let replay = Scenario::parse(&text).unwrap();
        assert_eq!(
            replay.fault_plan(99),
            plan,
            "explicit faults ignore the seed"
        );
    }

    #[test]
    fn every_committed_scenario_loads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sims");
        let mut n = 0;
        for dir in [root.clone(), root.join("regressions"), root.join("deploy")] {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "toml") {
                    Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                }
            }
        }
        assert!(n >= 11);
    }

    #[test]
    fn a_misspelt_key_or_value_names_the_nearest_known_one() {
        let text = "name = \"t\"\nduraton_ms = 1000\n[[clients]]\nbehaviour = \"resume\"\n";
        let e = Scenario::parse(text).unwrap_err();
        assert!(e.contains("did you mean `duration_ms`?"), "{e}");
        let text = "name = \"t\"\n[[client]]\nbehaviour = \"resume\"\n";
        let e = Scenario::parse(text).unwrap_err();
        assert!(e.contains("did you mean `clients`?"), "{e}");
        let text = "name = \"t\"\n[[clients]]\nbehaviour = \"resum\"\n";
        let e = Scenario::parse(text).unwrap_err();
        assert!(e.contains("did you mean `resume`?"), "{e}");
        let far = "name = \"t\"\nzzzzzzzzzz = 1\n";
        let e = Scenario::parse(far).unwrap_err();
        assert!(!e.contains("did you mean"), "nothing near: {e}");
    }
}

//! Scenarios (`sims/*.toml`, schema in sims/README.md): the file format
//! (`format.rs`), the keys each table takes (`schema.rs`), the loader
//! (`load.rs`), the `[deployment]` table (`deployment.rs`), a webhook client's receiver (`receiver.rs`), the bounds it holds a scenario to (`bounds.rs`) and the
//! name rule (`names.rs`).

mod bounds;
mod deployment;
mod fault_values;
mod format;
mod intermediary;
mod load;
mod names;
mod receiver;
pub mod schema;

pub use bounds::{
    check_server, CONNECTIONS_PER_CLIENT, EPHEMERAL_PORTS, MAX_CLIENTS, MAX_FIRST_EVENT_ID, MAX_MS,
    MAX_TCP_CAPACITY, MAX_TIMED_FAULTS, PORTS_PER_HOST,
};
pub use deployment::{
    BalancerKind, DeploymentSpec, OnDeadUpstream, PinKey, ResumeRouting, StoreKind, Topology,
    MAX_REPLICAS,
};
pub use format::{
    Behaviour, ClientGroup, Connections, EventsMode, Expect, Expectations, Field, HealSpec,
    NetworkSpec, Reconnect, Regression, RegressionKind, Scenario, ScenarioError,
    DEFAULT_CONNECTIONS,
};
pub use intermediary::Intermediary;
pub use load::check_set;
pub use names::{check_name, fit_name, MAX_NAME_LEN};
pub use receiver::{Dedup, ReceiverSpec};

//! The bodies of the small commands: `run` (`one_run`), `explain`,
//! `merge`, `serve`. The commands that drive many runs stand in their own
//! folders (`compare`, `explore`, `shrink`, `scale`).

pub mod explain;
pub mod merge;
pub mod one_run;
pub mod serve;

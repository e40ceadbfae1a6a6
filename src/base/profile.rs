//! Client profiles (`--clients`): the capabilities every client of a run
//! gets, whatever its group says.

/// A client profile (`--clients`): the capabilities every client of a
/// run gets, whatever its group says, so that one scenario measures what
/// each client capability buys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    /// No `Idempotency-Key`, no cursor on POST.
    Plain,
    /// `Idempotency-Key` on every non-idempotent call.
    Keys,
    /// The cursor list (and lost requests) on every POST.
    Cursors,
    /// Both.
    KeysCursors,
    /// The tasks extension declared (2026-07-28): calls run as tasks,
    /// polled; no key. Not applicable in the 2025-11-25 era.
    Tasks,
    /// Tasks, each created under an `Idempotency-Key`. Not applicable in
    /// the 2025-11-25 era.
    TasksKeys,
}

impl Profile {
    /// Every profile, in report order.
    pub const ALL: [Profile; 6] = [
        Profile::Plain,
        Profile::Keys,
        Profile::Cursors,
        Profile::KeysCursors,
        Profile::Tasks,
        Profile::TasksKeys,
    ];

    /// `plain`, `keys`, `cursors` or `keys+cursors`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Plain => "plain",
            Profile::Keys => "keys",
            Profile::Cursors => "cursors",
            Profile::KeysCursors => "keys+cursors",
            Profile::Tasks => "tasks",
            Profile::TasksKeys => "tasks+keys",
        }
    }

    /// What its clients do, in a few words: one line of a glossary.
    pub fn words(self) -> &'static str {
        match self {
            Profile::Plain => "clients that send no `Idempotency-Key` and no cursor",
            Profile::Keys => "clients that send an `Idempotency-Key` on every non-idempotent call",
            Profile::Cursors => "clients that send the last event ids they saw with every POST",
            Profile::KeysCursors => "clients that send both keys and cursors",
            Profile::Tasks => "clients that run calls as tasks (2026-07-28 tasks extension) and poll them, without keys",
            Profile::TasksKeys => "clients that create each task under an `Idempotency-Key`",
        }
    }

    /// Sends `Idempotency-Key`.
    pub fn keys(self) -> bool {
        matches!(
            self,
            Profile::Keys | Profile::KeysCursors | Profile::TasksKeys
        )
    }

    /// Declares the tasks extension.
    pub fn tasks(self) -> bool {
        matches!(self, Profile::Tasks | Profile::TasksKeys)
    }

    /// Presents cursors on POST.
    pub fn cursors(self) -> bool {
        matches!(self, Profile::Cursors | Profile::KeysCursors)
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!("unknown client profile {s:?}: use plain, keys, cursors, keys+cursors, tasks or tasks+keys")
            })
    }
}

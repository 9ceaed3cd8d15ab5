//! Why a run could not be verified: one fixed text per reason, for the store and the owner.

/// Why a run could not be verified. Fixed texts: they go into the store and the owner's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotRegular,
    HardLinked,
    Replaced,
    Unreadable,
    TooLarge,
    Incomplete,
    Malformed,
    OtherSession,
    NotOnBranch,
    BrokenChain,
    Mismatch,
    StreamFault,
    /// An event of a type runread does not know fell inside the run: what it did to the run
    /// cannot be told, so no answer is taken from the run (a newer agent's event, read strictly).
    UnknownEvent,
    NotFound,
    /// The proof could not be written to the journal (or did not read back).
    Journal,
    /// The file changed while it was read (the agent was still writing): read again.
    Busy,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NotRegular => "session file is not a regular file (a symbolic link?)",
            Refusal::HardLinked => "session file has more than one link",
            Refusal::Replaced => "session file was replaced or changed during the read",
            Refusal::Unreadable => "session file could not be read",
            Refusal::TooLarge => "session file exceeds the evidence line bound",
            Refusal::Incomplete => "session file ends in an unfinished line",
            Refusal::Malformed => "session file has a malformed line",
            Refusal::OtherSession => "session file belongs to another session or cwd",
            Refusal::NotOnBranch => {
                "the announced answer is not the run's final message on the active branch"
            }
            Refusal::BrokenChain => "the run does not chain to the leaf pinned at start",
            Refusal::Mismatch => "the persisted answer differs from the announced one",
            Refusal::StreamFault => "the event stream had an unreadable line in this run",
            Refusal::UnknownEvent => {
                "the event stream had an event of a type runread does not know in this run"
            }
            Refusal::NotFound => "the session file was not found",
            Refusal::Journal => "the proof could not be journaled",
            Refusal::Busy => "session file kept changing while it was read",
        }
    }

    /// A refusal that may go away when the file is read again a moment later (the agent was
    /// still writing its last lines).
    pub fn transient(self) -> bool {
        matches!(
            self,
            Refusal::NotOnBranch | Refusal::Incomplete | Refusal::Busy
        )
    }
}

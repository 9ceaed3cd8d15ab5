//! What each agent's records can show, asked by the layers above without naming the agent: the
//! service decides what to serve from these answers, and only this crate knows which agent gives
//! which ([`Records::of`]).

/// Where an agent records the values `read_target_metadata` reports: the `source` of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataSources {
    /// The line kind that records the session's saved (configured) model.
    pub saved_model: &'static str,
    /// The line kind that records the model each response reports.
    pub run_model: &'static str,
    /// The line that records the session itself (cwd, version, provider) when the prompt line
    /// does not: Codex's `session_meta`, everyone else's header.
    pub header_line: &'static str,
}

/// What an agent's records can show of a run beyond its own lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Records {
    /// The run's explicit child agents leave records beside the session file, one per tool call
    /// that started one ([`crate::agents::children`]): Claude Code's subagents.
    pub child_records: bool,
    /// Why the run's child agents are not covered when `runread run` supervised it and the agent
    /// leaves no child records.
    pub children_unobserved_supervised: &'static str,
    pub metadata: MetadataSources,
    /// Each response names its provider with its model (`provider/model`): Pi.
    pub provider_in_run_model: bool,
    /// `None`: the agent records how each response ended (Pi's and Claude Code's stop reason,
    /// Codex's turn end): a run it answered is `completed`, and whether its answer was cut at the
    /// model's output limit is known (`final_truncated`). Else why a run whose last record is a
    /// model message is `unknown` (Gemini CLI records neither): that message is only its
    /// candidate, which a supervisor's proof — the agent's own stream reporting exactly that text,
    /// and its success — makes the answer; and a cut-off is never marked, not even in that
    /// stream (`final_truncated` then says nothing).
    pub unrecorded_end: Option<&'static str>,
}

impl Records {
    /// Whether the agent records how each response ended (see [`Records::unrecorded_end`]).
    pub fn end_recorded(&self) -> bool {
        self.unrecorded_end.is_none()
    }
}

/// Why a session file alone does not cover child agents, whichever agent wrote it.
pub const CHILDREN_UNOBSERVED_PASSIVE: &str = "a session file does not show child agents";

/// What the agent keeps of one child agent a run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildRecord {
    /// The agent wrote that the child finished.
    pub finished: bool,
    /// When the child's own transcript was last written, in nanoseconds since the epoch; `None`
    /// when there is none to look at.
    pub transcript_modified_ns: Option<i64>,
}

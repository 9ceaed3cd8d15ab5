//! Each tool's output as a type: what the tool serves (its fields, its states as enums), and what
//! the owner's console renders from [`crate::owner::Owner::preview_as`]. Each type's schema,
//! derived, is the tool's declared output schema.

pub use crate::evidence::publication::{Basis as Evidence, State as AnswerState};
pub use crate::evidence::values::{Coverage, GapReason};
pub use crate::tools::artifacts::{
    Kind as ArtifactKind, ListOutput as ArtifactList, Listed as ListedArtifact,
    ReadOutput as ArtifactChunk,
};
pub use crate::tools::final_answer::{
    Chunk as AnswerChunk, Claim as AnswerClaim, Output as FinalAnswer, OverallState,
};
pub use crate::tools::granted_targets::{
    ListOutput as GrantedTargets, Listed as GrantedTarget, RunLine as GrantedRun,
};
pub use crate::tools::history::{Output as History, ServedEvent};
pub use crate::tools::metadata::{
    ModelTokens, Output as Metadata, Sourced, TokenCounts, Usage, UsageSource, thousands,
};
pub use crate::tools::work_state::{
    Aggregate, Child, ChildKind, Coverages, Covered, ForegroundSource, ForegroundState,
    Output as WorkState, WorkState as State,
};

/// An output type the owner's preview can return typed: the tool it is the output of.
pub trait ToolOutput: serde::de::DeserializeOwned {
    const TOOL: &'static str;
}

impl ToolOutput for FinalAnswer {
    const TOOL: &'static str = crate::tools::READ_FINAL_ANSWER;
}
impl ToolOutput for History {
    const TOOL: &'static str = crate::tools::READ_HISTORY;
}
impl ToolOutput for WorkState {
    const TOOL: &'static str = crate::tools::READ_WORK_STATE;
}
impl ToolOutput for Metadata {
    const TOOL: &'static str = crate::tools::READ_TARGET_METADATA;
}
impl ToolOutput for ArtifactList {
    const TOOL: &'static str = crate::tools::LIST_ARTIFACTS;
}

/// A preview's output, typed, and as a reader gets it.
#[derive(Debug)]
pub struct Previewed<T> {
    pub output: T,
    pub json: serde_json::Map<String, serde_json::Value>,
}

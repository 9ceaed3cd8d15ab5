//! Recovery inspection: judging an interrupted call from its start record and binding alone.
//!
//! [`inspect`] takes the start record's metadata (which carries no sealed input), its receipts
//! and the registry; it has no key provider and no adapter to call, so by construction it can
//! neither decrypt the input nor re-run the call.

use serde::Serialize;

use runread_store::{Receipt, StartMeta};

use crate::registry::{Effect, Registry};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    pub start_id: String,
    pub tool: String,
    pub created_at_ms: i64,
    /// Whether the binding recorded at start is still the one compiled in.
    pub binding_current: bool,
    /// `read_only_no_side_effects` for read bindings; `unknown` when the binding is gone.
    pub effect: &'static str,
    /// `retry_safe` for read bindings; `unknown` otherwise.
    pub verdict: &'static str,
    /// `completed` (a receipt exists) or `interrupted` (start without receipt).
    pub state: &'static str,
    pub receipts: Vec<Receipt>,
}

pub fn inspect(meta: &StartMeta, receipts: Vec<Receipt>, registry: &Registry) -> Inspection {
    let binding = registry.get(&meta.tool);
    let binding_current = binding.is_some_and(|b| b.definition_digest == meta.binding_digest);
    let read = binding.is_some_and(|b| b.effect == Effect::Read);
    Inspection {
        start_id: meta.start_id.clone(),
        tool: meta.tool.clone(),
        created_at_ms: meta.created_at_ms,
        binding_current,
        effect: if read {
            "read_only_no_side_effects"
        } else {
            "unknown"
        },
        verdict: if read { "retry_safe" } else { "unknown" },
        state: if receipts.is_empty() {
            "interrupted"
        } else {
            "completed"
        },
        receipts,
    }
}

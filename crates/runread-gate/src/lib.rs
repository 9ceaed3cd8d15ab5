//! The trusted execution gate. Every `tools/call` that passed admission runs through
//! [`Gate::execute`], in this order:
//!
//! durable start record → current binding → sealed input → key → execute → normalize output.
//!
//! - The [`registry::Registry`] is built once at startup from the compiled-in definitions and frozen;
//!   a binding whose definition digest drifted from its pinned value is refused.
//! - The start record (who, which tool and binding, which target, input digest, time, and the
//!   sealed input) is committed before any adapter work.
//! - The input is sealed with AES-256-GCM under a key from the [`runread_keys::KeyProvider`]; the adapter
//!   runs on the unsealed, re-validated copy, never on the caller's.
//! - A call runs on the [`FeatureReader`] its admission made (a read-only reader of its tool's
//!   own feature, typed, no downcast) with an [`ExecToken`] that only this crate can mint, and
//!   only under the binding of the tool it was admitted for; the binding's deadline bounds the caller from the start of admission (a
//!   late result is discarded: a timeout is not a cancellation of I/O).
//! - [`Gate::execute_admitted`] runs admission, the gate and the re-check after it on one blocking
//!   thread, so a call crosses from the async threads once however much store work it does.
//! - Output is validated against the tool's output schema, capped, and bound by a
//!   domain-separated digest into an append-only receipt.
//!
//! This crate sees no transport.
#![forbid(unsafe_code)]

pub mod gate;
pub mod log;
pub mod recovery;
pub mod registry;
pub mod seal;

pub use gate::{Call, Gate, GateAdmission, GateOutput};
pub use registry::{Definition, ExecToken, FeatureReader, ReceiptFacts, Registry, Served};

/// Most bindings a registry holds.
pub const REGISTRY_MAX_BINDINGS: usize = 128;

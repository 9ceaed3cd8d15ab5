//! The service: what runread answers readers with and what the owner acts through, transport-free.
//!
//! Its rooms:
//! - [`service`]: what readers reach — [`Service`], admission and the gate, one call at a time;
//! - [`tools`]: one file per tool (its definition, rules, adapter and output), the catalog, the
//!   schemas and the outputs as types;
//! - [`evidence`]: what every reading rests on ([`evidence::Reading`]) — a run's lines read back,
//!   its snapshot, the publication rule, supervised proofs, fork histories, known secrets;
//! - [`owner`]: one [`Owner`] handle for every act and view of the owner, used by the CLI and the
//!   console alike, with no gate;
//! - [`oauth`]: runread as the authorization server of its connectors;
//! - [`admission`], [`rate`], [`tasks`]: the rules of admission, the bound on each reader's calls,
//!   and calls answered later as tasks;
//! - [`refusals`]: what the audit keeps of calls refused before the gate.
//!
//! This root declares the rooms and re-exports what callers name; it defines nothing.
#![forbid(unsafe_code)]

pub mod access;
pub mod admission;
pub mod evidence;
pub mod oauth;
pub mod owner;
pub mod rate;
pub mod refusals;
pub mod service;
pub mod tasks;
pub mod tools;

pub use admission::KeyContext;
pub use evidence::{Config, Reading};
pub use owner::Owner;
pub use service::{Answer, Service};
pub use tools::{ToolDef, definitions, outputs, pinned_bindings};

//! The evidence a reading rests on: the ground every reading shares ([`Reading`]), a run's lines
//! read back and checked against the index (`source`), its snapshot when the file is gone
//! ([`snapshot`]), the rule that publishes a final answer ([`publication`]) on supervised proofs
//! ([`supervised`]) or passive settling, a fork's inherited history ([`fork`]), the known secrets
//! everything is masked with ([`secrets`]), and the values several outputs speak ([`values`]).

pub mod fork;
pub mod publication;
mod reading;
pub mod secrets;
pub mod snapshot;
pub(crate) mod source;
pub mod supervised;
pub mod values;

pub(crate) use reading::unavailable;
#[cfg(test)]
pub(crate) use reading::wait_slots;
pub use reading::{Config, Reading};

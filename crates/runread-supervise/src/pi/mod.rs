//! Pi under supervision: its event stream ([`events`]) and the state machine over it
//! ([`state`]).

pub mod events;
pub mod state;

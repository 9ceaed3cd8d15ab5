//! The owner's sealing keys and what is sealed under them.
//!
//! - [`keys`]: the key file (0600, one `KEY_ID HEX` line per key, the last one current), created
//!   on first use in the runread home or given by path; rotation, export and import; every key
//!   handed out zeroizes its bytes when dropped.
//! - [`seal`]: AES-256-GCM under one of those keys, a fresh random nonce per seal, and as
//!   associated data a versioned domain prefix plus what the sealed bytes belong to.
//!
//! The gate seals each call's input with them; the service seals snapshots and secrets. Neither
//! the console nor any reader-facing layer holds a key: the owner's handle does.
#![forbid(unsafe_code)]

pub mod keys;
pub mod seal;

pub use keys::{FileKeys, KeyError, KeyFile, KeyProvider, OwnedKey};

//! runread's vocabulary, shared by every other crate: the six-field [`Target`], the
//! [`Feature`]s a grant names, every numeric bound in [`limits`], the fixed [`ErrorCode`]s,
//! the trust [`envelope`], the HMAC-bound [`cursor`] codec, read [`key`]s and the UTF-8
//! [`chunk`]er.
//!
//! This crate touches no file, socket or process (only the clock and the system's random source):
//! it is the place where a rule is written once and tested at its edge.
#![forbid(unsafe_code)]

pub mod canonical;
pub mod chunk;
pub mod cursor;
pub mod envelope;
pub mod error;
pub mod feature;
pub mod key;
pub mod limits;
pub mod redact;
pub mod target;
pub mod timefmt;

pub use error::ErrorCode;
pub use feature::Feature;
pub use target::Target;

/// Whether a file's permission bits (`st_mode`) keep it to its owner: nothing for group or
/// others. The one rule for every file runread keeps secret (sealing keys, journal entries, a
/// stdio key file, the home).
pub fn is_owner_only(mode: u32) -> bool {
    mode & 0o077 == 0
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Fills a fresh array from the operating system's CSPRNG.
///
/// Fails closed: a machine that cannot produce randomness cannot mint keys or ids.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out)?;
    Ok(out)
}

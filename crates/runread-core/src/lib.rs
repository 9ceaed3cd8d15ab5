//! runread's vocabulary, shared by every other crate: the six-field [`Target`], the [`Agent`]s, the
//! [`Feature`]s a grant names, every numeric bound in [`limits`], the fixed [`ErrorCode`]s,
//! the trust [`envelope`], the HMAC-bound [`cursor`] codec, read [`key`]s and the UTF-8
//! [`chunk`]er.
//!
//! This crate touches no file, socket or process (only the clock and the system's random source):
//! it is the place where a rule is written once and tested at its edge.
#![forbid(unsafe_code)]

pub mod agent;
pub mod canonical;
pub mod chunk;
pub mod cursor;
pub mod envelope;
pub mod error;
pub mod feature;
pub mod key;
pub mod label;
pub mod limits;
pub mod names;
pub mod oauth;
pub mod redact;
pub mod slots;
pub mod target;
pub mod timefmt;

pub use agent::Agent;
pub use error::ErrorCode;
pub use feature::Feature;
pub use target::Target;

/// Reads all of `reader` into `buf` (cleared first) when it holds at most `max` bytes, and says
/// whether it did: `Ok(false)` when it holds more, and then no more than `max + 1` bytes were read.
/// The one bounded read of every small file runread keeps secret (sealing keys, read keys, a TLS
/// key): room for `max + 1` bytes is reserved before the first read, so the buffer never moves
/// while it fills and a caller that zeroizes it leaves no copy behind in freed memory.
pub fn read_at_most(
    reader: impl std::io::Read,
    max: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    use std::io::Read as _;
    let room = usize::try_from(max.saturating_add(1))
        .map_err(|_| std::io::Error::other("bound larger than memory"))?;
    buf.clear();
    buf.reserve_exact(room);
    reader.take(max.saturating_add(1)).read_to_end(buf)?;
    Ok(buf.len() as u64 <= max)
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

#[cfg(test)]
mod tests {
    use super::read_at_most;

    #[test]
    fn read_at_most_reads_n_bytes_and_refuses_n_plus_one_reading_no_further() {
        const MAX: u64 = 64;
        let mut buf = Vec::new();
        assert!(read_at_most(&[7u8; MAX as usize][..], MAX, &mut buf).unwrap());
        assert_eq!(buf, [7u8; MAX as usize]);
        let mut long = std::io::Cursor::new(vec![1u8; 1000]);
        assert!(!read_at_most(&mut long, MAX, &mut buf).unwrap());
        assert_eq!(
            buf.len() as u64,
            MAX + 1,
            "one byte past the bound, no more"
        );
        assert_eq!(long.position(), MAX + 1);
        assert!(read_at_most(&b""[..], MAX, &mut buf).unwrap());
        assert!(buf.is_empty(), "the buffer is cleared first");
    }

    #[test]
    fn read_at_most_fills_one_allocation_that_never_moves() {
        const MAX: u64 = 4096;
        /// Gives its bytes 7 at a time, as a pipe might, and notes where the first read went.
        struct Trickle {
            left: usize,
            first_read_at: Option<usize>,
        }
        impl std::io::Read for Trickle {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                self.first_read_at.get_or_insert(out.as_ptr() as usize);
                let n = out.len().min(7).min(self.left);
                out[..n].fill(3);
                self.left -= n;
                Ok(n)
            }
        }
        let mut source = Trickle {
            left: MAX as usize,
            first_read_at: None,
        };
        let mut buf = Vec::new();
        assert!(read_at_most(&mut source, MAX, &mut buf).unwrap());
        assert_eq!(buf.len() as u64, MAX);
        // The first bytes went straight into the buffer the last ones are in: reserved whole
        // before reading, never reallocated (and so never copied) while it filled.
        assert_eq!(source.first_read_at, Some(buf.as_ptr() as usize));
    }
}

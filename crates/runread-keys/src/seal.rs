//! AES-256-GCM under one of the owner's keys: a fresh 96-bit random nonce per seal, and
//! associated data the caller chooses (a versioned domain prefix and what the bytes belong to),
//! so that sealed bytes open only with their key and for what they were sealed for. Only the key
//! id is stored beside the ciphertext.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};

use crate::keys::OwnedKey;

/// Nonce length: 96 bits.
pub const NONCE_BYTES: usize = 12;

/// Ciphertext with its tag, and the nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub nonce: [u8; NONCE_BYTES],
    pub ciphertext: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum SealError {
    Randomness,
    Crypto,
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SealError::Randomness => "the system's random source failed",
            SealError::Crypto => "sealing failed",
        })
    }
}

/// Seals `plaintext` with caller-chosen associated data (e.g. a domain prefix and a name), for
/// values at rest other than call inputs: known secrets and read keys.
pub fn seal_bytes(key: &OwnedKey, aad: &[u8], plaintext: &[u8]) -> Result<Sealed, SealError> {
    let nonce = runread_core::random_bytes::<NONCE_BYTES>().map_err(|_| SealError::Randomness)?;
    let cipher = Aes256Gcm::new_from_slice(key.bytes()).map_err(|_| SealError::Crypto)?;
    let ciphertext = cipher
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .map_err(|_| SealError::Crypto)?;
    Ok(Sealed { nonce, ciphertext })
}

/// Opens what [`seal_bytes`] sealed with the same key and associated data.
pub fn open_bytes(key: &OwnedKey, aad: &[u8], sealed: &Sealed) -> Result<Vec<u8>, SealError> {
    let cipher = Aes256Gcm::new_from_slice(key.bytes()).map_err(|_| SealError::Crypto)?;
    cipher
        .decrypt(
            &Nonce::from(sealed.nonce),
            Payload {
                msg: &sealed.ciphertext,
                aad,
            },
        )
        .map_err(|_| SealError::Crypto)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(b: u8) -> OwnedKey {
        OwnedKey::new([b; 32], None)
    }

    #[test]
    fn sealed_bytes_open_only_with_their_key_and_associated_data() {
        let sealed = seal_bytes(&key(1), b"aad", b"secret").unwrap();
        assert_eq!(open_bytes(&key(1), b"aad", &sealed).unwrap(), b"secret");
        assert_eq!(
            open_bytes(&key(2), b"aad", &sealed).unwrap_err(),
            SealError::Crypto
        );
        assert!(open_bytes(&key(1), b"aae", &sealed).is_err());
        let mut tampered = sealed.clone();
        tampered.ciphertext[0] ^= 1;
        assert!(open_bytes(&key(1), b"aad", &tampered).is_err());
    }

    #[test]
    fn every_seal_uses_a_fresh_nonce() {
        let a = seal_bytes(&key(1), b"aad", b"x").unwrap();
        let b = seal_bytes(&key(1), b"aad", b"x").unwrap();
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
    }

    proptest! {
        /// Any change to any byte of the associated data makes opening fail.
        #[test]
        fn any_changed_aad_byte_fails(aad in proptest::collection::vec(any::<u8>(), 1..64), index in 0usize..64, flip in 1u8..=255) {
            let sealed = seal_bytes(&key(1), &aad, b"input").unwrap();
            let mut changed = aad.clone();
            let i = index % changed.len();
            changed[i] ^= flip;
            prop_assert!(open_bytes(&key(1), &changed, &sealed).is_err());
        }
    }
}

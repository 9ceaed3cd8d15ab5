//! Sealed inputs: AES-256-GCM, a fresh 96-bit random nonce per seal, and as associated data a
//! versioned domain prefix plus the envelope (everything the start record says about the call,
//! except nonce, ciphertext and tag). Only the key id is stored beside the ciphertext.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use serde::Serialize;

use crate::keys::OwnedKey;

/// Versioned domain prefix of the associated data.
pub const AAD_DOMAIN: &[u8] = b"runread.sealed-input.v1\0";
/// Nonce length: 96 bits.
pub const NONCE_BYTES: usize = 12;

/// What the sealed input is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub start_id: String,
    pub key_id: String,
    pub grant_id: String,
    pub tool: String,
    pub binding_digest: String,
    pub target_digest: String,
    pub input_digest: String,
    pub created_at_ms: i64,
}

impl Envelope {
    /// The associated data: domain prefix, then the envelope's canonical JSON.
    pub fn aad(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let mut out = Vec::with_capacity(AAD_DOMAIN.len() + json.len());
        out.extend_from_slice(AAD_DOMAIN);
        out.extend_from_slice(&json);
        out
    }
}

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

pub fn seal(key: &OwnedKey, envelope: &Envelope, plaintext: &[u8]) -> Result<Sealed, SealError> {
    let nonce = runread_core::random_bytes::<NONCE_BYTES>().map_err(|_| SealError::Randomness)?;
    let cipher = Aes256Gcm::new_from_slice(key.bytes()).map_err(|_| SealError::Crypto)?;
    let aad = envelope.aad();
    let ciphertext = cipher
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: plaintext,
                aad: &aad,
            },
        )
        .map_err(|_| SealError::Crypto)?;
    Ok(Sealed { nonce, ciphertext })
}

/// The plaintext, if and only if `sealed` was made with this key for exactly this envelope.
pub fn open(key: &OwnedKey, envelope: &Envelope, sealed: &Sealed) -> Result<Vec<u8>, SealError> {
    let cipher = Aes256Gcm::new_from_slice(key.bytes()).map_err(|_| SealError::Crypto)?;
    let aad = envelope.aad();
    cipher
        .decrypt(
            &Nonce::from(sealed.nonce),
            Payload {
                msg: &sealed.ciphertext,
                aad: &aad,
            },
        )
        .map_err(|_| SealError::Crypto)
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

    fn env() -> Envelope {
        Envelope {
            start_id: "s1".into(),
            key_id: "k1".into(),
            grant_id: "g1".into(),
            tool: "read_final_answer".into(),
            binding_digest: "b".into(),
            target_digest: "t".into(),
            input_digest: "i".into(),
            created_at_ms: 5,
        }
    }

    fn key(b: u8) -> OwnedKey {
        OwnedKey::new([b; 32], None)
    }

    #[test]
    fn sealed_input_opens_only_with_its_key_and_envelope() {
        let sealed = seal(&key(1), &env(), b"{\"target\":1}").unwrap();
        assert_eq!(open(&key(1), &env(), &sealed).unwrap(), b"{\"target\":1}");
        assert_eq!(
            open(&key(2), &env(), &sealed).unwrap_err(),
            SealError::Crypto
        );
        let mut other = env();
        other.tool = "get_run".into();
        assert!(open(&key(1), &other, &sealed).is_err());
        let mut tampered = sealed.clone();
        tampered.ciphertext[0] ^= 1;
        assert!(open(&key(1), &env(), &tampered).is_err());
    }

    #[test]
    fn every_seal_uses_a_fresh_nonce() {
        let a = seal(&key(1), &env(), b"x").unwrap();
        let b = seal(&key(1), &env(), b"x").unwrap();
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
    }

    proptest! {
        /// Any change to any byte of the associated data makes opening fail.
        #[test]
        fn any_changed_aad_byte_fails(index in 0usize..400, flip in 1u8..=255) {
            let e = env();
            let sealed = seal(&key(1), &e, b"input").unwrap();
            let mut aad = e.aad();
            let i = index % aad.len();
            aad[i] ^= flip;
            let cipher = Aes256Gcm::new_from_slice(&[1u8; 32]).unwrap();
            let r = cipher.decrypt(&Nonce::from(sealed.nonce), Payload { msg: &sealed.ciphertext, aad: &aad });
            prop_assert!(r.is_err());
        }
    }
}

//! Sealed inputs: each call's input sealed (`runread_keys::seal`) with, as associated data, a
//! versioned domain prefix plus the envelope (everything the start record says about the call,
//! except nonce, ciphertext and tag).

use serde::Serialize;

use runread_keys::OwnedKey;
pub use runread_keys::seal::{NONCE_BYTES, SealError, Sealed};
use runread_keys::seal::{open_bytes, seal_bytes};

/// Versioned domain prefix of the associated data.
pub const AAD_DOMAIN: &[u8] = b"runread.sealed-input.v1\0";

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

/// Seals a call's input for exactly its envelope.
pub fn seal(key: &OwnedKey, envelope: &Envelope, plaintext: &[u8]) -> Result<Sealed, SealError> {
    seal_bytes(key, &envelope.aad(), plaintext)
}

/// The plaintext, if and only if `sealed` was made with this key for exactly this envelope.
pub fn open(key: &OwnedKey, envelope: &Envelope, sealed: &Sealed) -> Result<Vec<u8>, SealError> {
    open_bytes(key, &envelope.aad(), sealed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    use aes_gcm::{Aes256Gcm, Nonce};
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

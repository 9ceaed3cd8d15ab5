//! Read keys: 256 random bits written as 64 lowercase hex characters. Only a hash is stored.

use subtle::ConstantTimeEq;

use crate::limits::READ_KEY_HEX_LEN;

/// A fresh read key, as the owner sees it once.
pub fn generate() -> Result<String, getrandom::Error> {
    Ok(hex::encode(crate::random_bytes::<32>()?))
}

/// Whether `s` has the shape of a read key: exactly 64 lowercase hex characters.
pub fn is_well_formed(s: &str) -> bool {
    s.len() == READ_KEY_HEX_LEN && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The stored form of a key: SHA-256 under a domain prefix, lowercase hex.
/// A key is 256 random bits, so a fast hash is the right tool (no password stretching needed).
pub fn hash(key: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"runread.read-key.v1\0");
    h.update(key.as_bytes());
    hex::encode(h.finalize())
}

/// Constant-time equality of two stored key hashes.
pub fn hashes_equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_well_formed_and_distinct() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert!(is_well_formed(&a) && is_well_formed(&b));
        assert_ne!(a, b);
    }

    #[test]
    fn key_shape_is_exactly_64_lowercase_hex() {
        assert!(is_well_formed(&"a".repeat(64)));
        assert!(!is_well_formed(&"a".repeat(63)));
        assert!(!is_well_formed(&"a".repeat(65)));
        assert!(!is_well_formed(&"A".repeat(64)));
        assert!(!is_well_formed(&"g".repeat(64)));
    }

    #[test]
    fn hash_is_stable_and_compares_equal_only_to_itself() {
        let k = "0".repeat(64);
        assert!(hashes_equal(&hash(&k), &hash(&k)));
        assert!(!hashes_equal(&hash(&k), &hash(&"1".repeat(64))));
        assert_ne!(hash(&k), k);
    }
}

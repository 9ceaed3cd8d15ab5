//! The credentials of connectors (runread as an OAuth 2.1 authorization server): opaque tokens
//! and codes, stored only as hashes, PKCE S256, and the short code that matches the public
//! authorization page with the owner's console.

use base64::Engine;
use sha2::Digest;
use subtle::ConstantTimeEq;

/// What prefixes a token of each kind: a leaked string says what it is.
pub const ACCESS_TOKEN_PREFIX: &str = "rra_";
pub const REFRESH_TOKEN_PREFIX: &str = "rrr_";
pub const CODE_PREFIX: &str = "rrc_";

/// A fresh opaque credential: `prefix` and 256 random bits in lowercase hex.
pub fn generate(prefix: &str) -> Result<String, getrandom::Error> {
    Ok(format!(
        "{prefix}{}",
        hex::encode(crate::random_bytes::<32>()?)
    ))
}

/// Whether `s` has the shape [`generate`] gives with `prefix`.
pub fn is_well_formed(prefix: &str, s: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == 64 && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The stored form of a token or code: SHA-256 under its own domain prefix, lowercase hex.
pub fn hash(credential: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(b"runread.oauth.v1\0");
    h.update(credential.as_bytes());
    hex::encode(h.finalize())
}

/// A PKCE code challenge as S256 writes it: 43 characters of unpadded base64url.
pub fn is_s256_challenge(s: &str) -> bool {
    s.len() == 43
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A PKCE code verifier (RFC 7636 4.1): 43 to 128 unreserved characters.
pub fn is_verifier(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `verifier` answers `challenge` under S256, compared in constant time.
pub fn s256_matches(verifier: &str, challenge: &str) -> bool {
    if !is_verifier(verifier) {
        return false;
    }
    let digest = sha2::Sha256::digest(verifier.as_bytes());
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    computed.len() == challenge.len() && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

/// Letters and digits nobody confuses when reading them off one screen onto another.
const USER_CODE_ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ23456789";

/// A short code shown on the public authorization page and on the console: `XXXX-XXXX`.
pub fn user_code() -> Result<String, getrandom::Error> {
    let bytes = crate::random_bytes::<8>()?;
    let mut code = String::with_capacity(9);
    for (i, b) in bytes.iter().enumerate() {
        if i == 4 {
            code.push('-');
        }
        let at = usize::from(*b) % USER_CODE_ALPHABET.len();
        code.push(char::from(
            USER_CODE_ALPHABET.get(at).copied().unwrap_or(b'B'),
        ));
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_example_verifier_matches_its_challenge() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(is_s256_challenge(challenge));
        assert!(s256_matches(verifier, challenge));
        assert!(!s256_matches(&verifier.replace('d', "e"), challenge));
        // `plain`: the verifier itself as the challenge never matches.
        assert!(!s256_matches(verifier, verifier));
    }

    #[test]
    fn verifier_length_is_bounded_at_43_and_128() {
        assert!(!is_verifier(&"a".repeat(42)));
        assert!(is_verifier(&"a".repeat(43)));
        assert!(is_verifier(&"a".repeat(128)));
        assert!(!is_verifier(&"a".repeat(129)));
        assert!(!is_verifier(&format!("{}+", "a".repeat(42))));
    }

    #[test]
    fn tokens_have_their_shape_and_distinct_hashes() {
        let a = generate(ACCESS_TOKEN_PREFIX).unwrap();
        let r = generate(REFRESH_TOKEN_PREFIX).unwrap();
        assert!(is_well_formed(ACCESS_TOKEN_PREFIX, &a));
        assert!(!is_well_formed(ACCESS_TOKEN_PREFIX, &r));
        assert_ne!(hash(&a), hash(&r));
        assert_ne!(hash(&a), crate::key::hash(&a), "its own domain");
        let code = user_code().unwrap();
        assert_eq!(code.len(), 9);
        assert_eq!(code.as_bytes()[4], b'-');
    }
}

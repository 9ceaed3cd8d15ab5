//! The exact six-field target every tool call names (docs/architecture.md, "Invariants").

use serde::{Deserialize, Serialize};

use crate::limits::TARGET_FIELD_MAX_BYTES;

/// One run, named exactly. All six fields must equal a live grant's target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// UUID of the runread store.
    pub instance: String,
    /// The workspace's registration revision.
    pub revision: u64,
    /// Id of the registered workspace.
    pub workspace_id: String,
    /// The agent's own session id.
    pub session_id: String,
    /// runread's counter for the session file's identity.
    pub generation: u64,
    /// Entry id of the user message that starts the run.
    pub run_id: String,
}

impl Target {
    /// Checks the shape of every field: bounded length, a conservative id alphabet, revision and
    /// generation at least 1.
    /// Shape only; whether the target exists or is granted is the service's question.
    pub fn validate_shape(&self) -> bool {
        [
            &self.instance,
            &self.workspace_id,
            &self.session_id,
            &self.run_id,
        ]
        .into_iter()
        .all(|s| is_id(s))
            && self.revision >= 1
            && self.generation >= 1
    }

    /// A stable digest of the whole target, used to bind cursors to it.
    pub fn digest(&self) -> [u8; 32] {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"runread.target.v1\0");
        for part in [
            &self.instance,
            &self.workspace_id,
            &self.session_id,
            &self.run_id,
        ] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        h.update(self.revision.to_be_bytes());
        h.update(self.generation.to_be_bytes());
        h.finalize().into()
    }
}

/// An id is 1..=128 bytes of ASCII letters, digits, `-`, `_`, `.` or `:`.
pub fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= TARGET_FIELD_MAX_BYTES
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Target {
        Target {
            instance: "0b1c".into(),
            revision: 1,
            workspace_id: "w1".into(),
            session_id: "s1".into(),
            generation: 1,
            run_id: "r1".into(),
        }
    }

    #[test]
    fn target_refuses_unknown_fields() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v["extra"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Target>(v).is_err());
    }

    #[test]
    fn id_shape_is_bounded_at_128_bytes() {
        assert!(is_id(&"a".repeat(TARGET_FIELD_MAX_BYTES)));
        assert!(!is_id(&"a".repeat(TARGET_FIELD_MAX_BYTES + 1)));
        assert!(!is_id(""));
        assert!(!is_id("../etc"));
        assert!(!is_id("a b"));
    }

    #[test]
    fn every_field_changes_the_digest() {
        let base = sample().digest();
        let mut t = sample();
        t.instance.push('x');
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.revision += 1;
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.workspace_id.push('x');
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.session_id.push('x');
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.generation += 1;
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.run_id.push('x');
        assert_ne!(t.digest(), base);
    }
}

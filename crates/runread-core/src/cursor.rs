//! Cursors: opaque, HMAC-bound positions.
//!
//! A cursor carries a purpose and a position; its MAC also covers what it pages through — the
//! exact target, or for a listing the reader it lists for — and the version of that data, which
//! are *not* carried: the server recomputes the MAC from the request's target (or the reader) and
//! the current version, so a cursor tampered with, issued for another target, another reader,
//! another purpose or an older version of the data fails the same way.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};
use subtle::ConstantTimeEq;

use crate::limits::CURSOR_MAX_BYTES;
use crate::target::Target;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

const FORMAT_V1: u8 = 1;
const DOMAIN: &[u8] = b"runread.cursor.v1\0";
const MAC_LEN: usize = 32;
const PAYLOAD_LEN: usize = 1 + 1 + 8;

/// What a cursor pages through. A cursor of one purpose is refused by every other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Purpose {
    FinalAnswer = 1,
    History = 2,
    Artifact = 3,
    /// A reader's granted targets (`list_granted_targets`), scoped to the reader.
    GrantedTargets = 4,
}

impl Purpose {
    fn from_byte(b: u8) -> Option<Purpose> {
        match b {
            1 => Some(Purpose::FinalAnswer),
            2 => Some(Purpose::History),
            3 => Some(Purpose::Artifact),
            4 => Some(Purpose::GrantedTargets),
            _ => None,
        }
    }
}

/// The secret that signs cursors. Shared by every server of one store, so that any of them
/// accepts the others' cursors.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        CursorKey(bytes)
    }

    /// An HMAC under this key.
    fn keyed(&self) -> HmacSha256 {
        // Infallible for HMAC: any key length is accepted.
        <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"))
    }

    fn mac(&self, payload: &[u8], scope: &[u8; 32], version: &str) -> [u8; MAC_LEN] {
        let mut mac = self.keyed();
        mac.update(DOMAIN);
        mac.update(payload);
        mac.update(scope);
        mac.update(&(version.len() as u64).to_be_bytes());
        mac.update(version.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// A cursor for `position` in the data of `purpose` at `version` of `target`.
    pub fn encode(
        &self,
        purpose: Purpose,
        target: &Target,
        version: &str,
        position: u64,
    ) -> String {
        self.encode_scoped(purpose, &target.digest(), version, position)
    }

    /// The position a cursor names, if and only if it was issued by this key for exactly this
    /// purpose, target and version.
    pub fn decode(
        &self,
        cursor: &str,
        purpose: Purpose,
        target: &Target,
        version: &str,
    ) -> Option<u64> {
        self.decode_scoped(cursor, purpose, &target.digest(), version)
    }

    /// A cursor for `position` in a listing of `purpose` for the reader `reader_id`, at
    /// `version` of what it lists.
    pub fn encode_for_reader(
        &self,
        purpose: Purpose,
        reader_id: &str,
        version: &str,
        position: u64,
    ) -> String {
        self.encode_scoped(purpose, &reader_scope(reader_id), version, position)
    }

    /// The position a reader's listing cursor names, if and only if it was issued by this key
    /// for exactly this purpose, reader and version.
    pub fn decode_for_reader(
        &self,
        cursor: &str,
        purpose: Purpose,
        reader_id: &str,
        version: &str,
    ) -> Option<u64> {
        self.decode_scoped(cursor, purpose, &reader_scope(reader_id), version)
    }

    fn encode_scoped(
        &self,
        purpose: Purpose,
        scope: &[u8; 32],
        version: &str,
        position: u64,
    ) -> String {
        let mut buf = Vec::with_capacity(PAYLOAD_LEN + MAC_LEN);
        buf.push(FORMAT_V1);
        buf.push(purpose as u8);
        buf.extend_from_slice(&position.to_be_bytes());
        let mac = self.mac(&buf, scope, version);
        buf.extend_from_slice(&mac);
        URL_SAFE_NO_PAD.encode(buf)
    }

    fn decode_scoped(
        &self,
        cursor: &str,
        purpose: Purpose,
        scope: &[u8; 32],
        version: &str,
    ) -> Option<u64> {
        if cursor.len() > CURSOR_MAX_BYTES {
            return None;
        }
        let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        if raw.len() != PAYLOAD_LEN + MAC_LEN {
            return None;
        }
        let (payload, mac) = raw.split_at(PAYLOAD_LEN);
        let expected = self.mac(payload, scope, version);
        if !bool::from(expected.as_slice().ct_eq(mac)) {
            return None;
        }
        let [format, purpose_byte, pos @ ..] = payload else {
            return None;
        };
        if *format != FORMAT_V1 || Purpose::from_byte(*purpose_byte) != Some(purpose) {
            return None;
        }
        let pos: [u8; 8] = pos.try_into().ok()?;
        Some(u64::from_be_bytes(pos))
    }
}

/// What a task handle names (the Tasks extension): a tool called with its exact arguments by one
/// reader, and the handle's time. Carried in the handle, signed with the cursor key and bound to
/// the reader, so any gateway of the store answers it and a restart loses nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskHandle {
    pub tool: String,
    pub args: serde_json::Value,
    pub created_ms: i64,
    pub expires_ms: i64,
}

const TASK_PREFIX: &str = "rrt1.";
const TASK_DOMAIN: &[u8] = b"runread.task.v1\0";

impl CursorKey {
    fn task_mac(&self, reader_id: &str, payload: &[u8]) -> [u8; MAC_LEN] {
        let mut mac = self.keyed();
        mac.update(TASK_DOMAIN);
        mac.update(&reader_scope(reader_id));
        mac.update(payload);
        mac.finalize().into_bytes().into()
    }

    /// A keyed digest (hex) of `data` under this key, for `domain`: what tells two equal records
    /// apart from two different ones without storing either in clear, and which nobody without
    /// the key can compute to test a guess.
    pub fn fingerprint(&self, domain: &[u8], data: &[u8]) -> String {
        let mut mac = self.keyed();
        mac.update(b"runread.fingerprint.v1\0");
        mac.update(&(domain.len() as u64).to_be_bytes());
        mac.update(domain);
        mac.update(data);
        hex::encode(mac.finalize().into_bytes())
    }

    /// The handle of `task` for the reader `reader_id`: `None` when it would be longer than
    /// [`crate::limits::TASK_HANDLE_MAX_BYTES`].
    pub fn seal_task(&self, reader_id: &str, task: &TaskHandle) -> Option<String> {
        let payload = crate::canonical::to_vec(&serde_json::json!({
            "t": task.tool, "a": task.args, "c": task.created_ms, "e": task.expires_ms,
        }));
        let mac = self.task_mac(reader_id, &payload);
        let handle = format!(
            "{TASK_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(mac)
        );
        (handle.len() <= crate::limits::TASK_HANDLE_MAX_BYTES).then_some(handle)
    }

    /// The task a handle names, if and only if this key issued it to `reader_id` and its time is
    /// not up at `now_ms`.
    pub fn open_task(&self, reader_id: &str, handle: &str, now_ms: i64) -> Option<TaskHandle> {
        if handle.len() > crate::limits::TASK_HANDLE_MAX_BYTES {
            return None;
        }
        let (payload, mac) = handle.strip_prefix(TASK_PREFIX)?.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        let expected = self.task_mac(reader_id, &payload);
        if !bool::from(expected.as_slice().ct_eq(&mac)) {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&payload).ok()?;
        let task = TaskHandle {
            tool: v.get("t")?.as_str()?.to_owned(),
            args: v.get("a")?.clone(),
            created_ms: v.get("c")?.as_i64()?,
            expires_ms: v.get("e")?.as_i64()?,
        };
        (now_ms < task.expires_ms).then_some(task)
    }
}

/// What a reader's listing cursor is bound to: the reader's id, in a domain no target digest
/// shares (`runread.target.v1`), so a listing cursor never names a target's data or the reverse.
fn reader_scope(reader_id: &str) -> [u8; 32] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"runread.cursor.reader.v1\0");
    h.update((reader_id.len() as u64).to_be_bytes());
    h.update(reader_id.as_bytes());
    h.finalize().into()
}

#[cfg(test)]
mod task_tests {
    use super::*;

    fn task() -> TaskHandle {
        TaskHandle {
            tool: "read_final_answer".into(),
            args: serde_json::json!({"target": {"runId": "r1"}, "limit": 4096}),
            created_ms: 1_000,
            expires_ms: 5_000,
        }
    }

    #[test]
    fn a_task_handle_opens_for_its_reader_until_its_time() {
        let key = CursorKey::from_bytes([7; 32]);
        let h = key.seal_task("reader-a", &task()).unwrap();
        assert_eq!(key.open_task("reader-a", &h, 4_999), Some(task()));
        assert_eq!(key.open_task("reader-a", &h, 5_000), None, "its time is up");
        assert_eq!(
            key.open_task("reader-b", &h, 2_000),
            None,
            "another reader's"
        );
        assert_eq!(
            CursorKey::from_bytes([8; 32]).open_task("reader-a", &h, 2_000),
            None,
            "another store's"
        );
    }

    #[test]
    fn a_task_handle_with_a_changed_argument_is_refused() {
        let key = CursorKey::from_bytes([7; 32]);
        let h = key.seal_task("reader-a", &task()).unwrap();
        let (payload, mac) = h
            .strip_prefix(TASK_PREFIX)
            .unwrap()
            .split_once('.')
            .unwrap();
        let mut v: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        v["a"]["limit"] = serde_json::json!(8192);
        let forged = format!(
            "{TASK_PREFIX}{}.{mac}",
            URL_SAFE_NO_PAD.encode(crate::canonical::to_vec(&v))
        );
        assert_eq!(key.open_task("reader-a", &forged, 2_000), None);
        assert_eq!(key.open_task("reader-a", &h[..h.len() - 1], 2_000), None);
    }

    #[test]
    fn a_task_handle_is_bounded() {
        let key = CursorKey::from_bytes([7; 32]);
        let mut big = task();
        big.args = serde_json::json!({"x": "y".repeat(crate::limits::TASK_HANDLE_MAX_BYTES)});
        assert_eq!(key.seal_task("reader-a", &big), None);
        let long = format!(
            "{TASK_PREFIX}{}",
            "A".repeat(crate::limits::TASK_HANDLE_MAX_BYTES)
        );
        assert_eq!(key.open_task("reader-a", &long, 0), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn target() -> Target {
        Target {
            instance: "i".into(),
            revision: 1,
            workspace_id: "w".into(),
            session_id: "s".into(),
            generation: 1,
            run_id: "r".into(),
        }
    }

    fn key() -> CursorKey {
        CursorKey::from_bytes([7u8; 32])
    }

    #[test]
    fn cursor_round_trips_for_its_own_target_purpose_and_version() {
        let c = key().encode(Purpose::FinalAnswer, &target(), "v1", 4096);
        assert_eq!(
            key().decode(&c, Purpose::FinalAnswer, &target(), "v1"),
            Some(4096)
        );
    }

    #[test]
    fn cursor_is_refused_for_another_purpose_target_version_or_key() {
        let c = key().encode(Purpose::FinalAnswer, &target(), "v1", 10);
        assert_eq!(key().decode(&c, Purpose::History, &target(), "v1"), None);
        assert_eq!(
            key().decode(&c, Purpose::FinalAnswer, &target(), "v2"),
            None
        );
        let mut other = target();
        other.generation = 2;
        assert_eq!(key().decode(&c, Purpose::FinalAnswer, &other, "v1"), None);
        let other_key = CursorKey::from_bytes([8u8; 32]);
        assert_eq!(
            other_key.decode(&c, Purpose::FinalAnswer, &target(), "v1"),
            None
        );
    }

    #[test]
    fn a_readers_listing_cursor_is_refused_for_another_reader_version_purpose_or_a_target() {
        let c = key().encode_for_reader(Purpose::GrantedTargets, "r-1", "v1", 3);
        assert_eq!(
            key().decode_for_reader(&c, Purpose::GrantedTargets, "r-1", "v1"),
            Some(3)
        );
        assert_eq!(
            key().decode_for_reader(&c, Purpose::GrantedTargets, "r-2", "v1"),
            None
        );
        assert_eq!(
            key().decode_for_reader(&c, Purpose::GrantedTargets, "r-1", "v2"),
            None
        );
        assert_eq!(
            key().decode_for_reader(&c, Purpose::History, "r-1", "v1"),
            None
        );
        assert_eq!(
            key().decode(&c, Purpose::GrantedTargets, &target(), "v1"),
            None
        );
        let t = key().encode(Purpose::GrantedTargets, &target(), "v1", 3);
        assert_eq!(
            key().decode_for_reader(&t, Purpose::GrantedTargets, "r-1", "v1"),
            None
        );
    }

    #[test]
    fn oversized_and_garbage_cursors_are_refused() {
        assert_eq!(
            key().decode(
                &"A".repeat(CURSOR_MAX_BYTES + 1),
                Purpose::FinalAnswer,
                &target(),
                "v1"
            ),
            None
        );
        assert_eq!(
            key().decode("not base64 !", Purpose::FinalAnswer, &target(), "v1"),
            None
        );
        assert_eq!(
            key().decode("", Purpose::FinalAnswer, &target(), "v1"),
            None
        );
    }

    proptest! {
        #[test]
        fn any_single_byte_tamper_is_refused(pos in any::<u64>(), index in 0usize..(PAYLOAD_LEN + MAC_LEN), flip in 1u8..=255) {
            let c = key().encode(Purpose::FinalAnswer, &target(), "v1", pos);
            let mut raw = URL_SAFE_NO_PAD.decode(&c).unwrap();
            raw[index] ^= flip;
            let tampered = URL_SAFE_NO_PAD.encode(&raw);
            prop_assert_eq!(key().decode(&tampered, Purpose::FinalAnswer, &target(), "v1"), None);
        }

        #[test]
        fn any_truncation_or_extension_is_refused(pos in any::<u64>(), cut in 1usize..56, extra in "[A-Za-z0-9_-]{1,8}") {
            let c = key().encode(Purpose::FinalAnswer, &target(), "v1", pos);
            let cut = cut.min(c.len());
            prop_assert_eq!(key().decode(&c[..c.len() - cut], Purpose::FinalAnswer, &target(), "v1"), None);
            let longer = format!("{c}{extra}");
            prop_assert_eq!(key().decode(&longer, Purpose::FinalAnswer, &target(), "v1"), None);
        }
    }
}

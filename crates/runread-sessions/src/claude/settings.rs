//! What Claude Code's settings say about its own session files: it deletes those not written to
//! for `cleanupPeriodDays` days (30 when unset) when it starts.

use std::io::Read as _;
use std::path::Path;

use crate::profile::{Cleanup, DefaultPlace};

/// Days Claude Code keeps a session file it no longer writes to, when its settings do not say.
pub const CLEANUP_PERIOD_DAYS_DEFAULT: u32 = 30;
/// Longest settings file read: Claude Code's are a few KiB; a longer one is not read (the
/// default is assumed, and said to be).
pub const SETTINGS_MAX_BYTES: u64 = 1024 * 1024;

/// The user's settings: `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`.
const USER_SETTINGS: DefaultPlace = DefaultPlace {
    env: "CLAUDE_CONFIG_DIR",
    under_env: &["settings.json"],
    under_home: &[".claude", "settings.json"],
};

/// Claude Code's cleanup, from the user's settings in this process's environment.
pub(crate) fn cleanup() -> Cleanup {
    match USER_SETTINGS.resolve() {
        Some(path) => cleanup_from(&path),
        None => Cleanup {
            after_days: CLEANUP_PERIOD_DAYS_DEFAULT,
            set_in: None,
        },
    }
}

/// The cleanup the settings file at `path` sets; the default when it does not set one, is not
/// there, is longer than [`SETTINGS_MAX_BYTES`] or is not JSON.
pub(crate) fn cleanup_from(path: &Path) -> Cleanup {
    let days = period_days(path);
    Cleanup {
        after_days: days.unwrap_or(CLEANUP_PERIOD_DAYS_DEFAULT),
        set_in: days.map(|_| path.to_path_buf()),
    }
}

fn period_days(path: &Path) -> Option<u32> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(SETTINGS_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > SETTINGS_MAX_BYTES {
        return None;
    }
    let settings: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let days = settings.get("cleanupPeriodDays")?.as_u64()?;
    Some(u32::try_from(days).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_read_from_the_settings_and_defaults_to_thirty_days() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        assert_eq!(cleanup_from(&path).after_days, CLEANUP_PERIOD_DAYS_DEFAULT);
        assert_eq!(cleanup_from(&path).set_in, None);
        std::fs::write(&path, r#"{"model":"opus"}"#).unwrap();
        assert_eq!(cleanup_from(&path).after_days, 30);
        std::fs::write(&path, r#"{"cleanupPeriodDays": 7}"#).unwrap();
        let set = cleanup_from(&path);
        assert_eq!((set.after_days, set.set_in), (7, Some(path.clone())));
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(cleanup_from(&path).after_days, 30);
    }

    #[test]
    fn a_settings_file_at_its_bound_is_read_and_one_byte_over_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let head = r#"{"cleanupPeriodDays": 9}"#;
        let mut text = head.to_owned();
        text.push_str(&" ".repeat(SETTINGS_MAX_BYTES as usize - head.len()));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(cleanup_from(&path).after_days, 9);
        text.push(' ');
        std::fs::write(&path, &text).unwrap();
        assert_eq!(cleanup_from(&path).after_days, CLEANUP_PERIOD_DAYS_DEFAULT);
    }
}

//! OpenCode's command line under supervision (`opencode run …`, with `--format json` ensured)
//! and the database that keeps the session of one invocation.
//!
//! OpenCode keeps every session in one SQLite database: `$OPENCODE_DB` (a path relative to its
//! data folder, or absolute; `:memory:` keeps nothing on disk), else `opencode.db` in its data
//! folder (`$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`) — OpenCode 1.18.33's own
//! rule for a release build. The agent runs with runread's environment, so the database is found
//! in it. One session is named `<database>#<session id>`, the name the session reader opens.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use runread_core::Agent;

use crate::args::{flag_value, is_option, with_options};

/// The database a release of OpenCode keeps its sessions in, in its data folder.
pub const DATABASE_FILE: &str = "opencode.db";
/// The variable that names another database.
pub const DATABASE_ENV: &str = "OPENCODE_DB";

/// Why OpenCode's arguments cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not `opencode run`: the terminal interface, or another command, streams no events.
    NotRun,
    /// Another `--format` than `json`.
    Format(String),
    /// An option that takes the run away from what supervision can prove (why, fixed).
    Option { option: String, why: &'static str },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::NotRun => f.write_str(
                "runread run supervises OpenCode's `run` command only: `runread run -- opencode run \"…\"`",
            ),
            Refused::Format(m) => write!(
                f,
                "runread run reads OpenCode's json events; drop `--format {m}` \
                 (runread adds `--format json`)"
            ),
            Refused::Option { option, why } => write!(
                f,
                "runread run cannot supervise OpenCode with `{option}`: {why}"
            ),
        }
    }
}

/// Options that take a run away from what supervision proves.
const REFUSED_OPTIONS: &[(&str, &str)] = &[
    ("-i", "it continues interactively, without an event stream"),
    (
        "--interactive",
        "it continues interactively, without an event stream",
    ),
    (
        "--attach",
        "it runs on another server, whose database may not be on this machine",
    ),
    (
        "--dir",
        "it works in another folder than the one runread supervises",
    ),
];

/// OpenCode's arguments with `--format json` ensured. Anything but `opencode run …`, another
/// format, or an option that leaves the event stream or the supervised folder is refused.
pub fn with_json(args: &[OsString]) -> Result<Vec<OsString>, Refused> {
    if args.first().map(OsString::as_os_str) != Some(OsStr::new("run")) {
        return Err(Refused::NotRun);
    }
    for a in args.iter().take_while(|a| a.as_os_str() != "--") {
        let a = a.to_string_lossy();
        if let Some((option, why)) = REFUSED_OPTIONS.iter().find(|(o, _)| is_option(&a, o)) {
            return Err(Refused::Option {
                option: (*option).to_owned(),
                why,
            });
        }
    }
    match flag_value(args, "--format") {
        Some(m) if m == "json" => Ok(args.to_vec()),
        Some(m) => Err(Refused::Format(m.to_string_lossy().into_owned())),
        None => Ok(with_options(args, &["--format", "json"])),
    }
}

/// The database of OpenCode whose data folder is `data`, with `$OPENCODE_DB` = `named`:
/// `None` when it keeps its sessions in memory, or when there is no data folder to find it in.
pub fn database_at(data: Option<&Path>, named: Option<&OsStr>) -> Option<PathBuf> {
    match named.filter(|n| !n.is_empty()) {
        Some(n) if n == ":memory:" => None,
        Some(n) if Path::new(n).is_absolute() => Some(PathBuf::from(n)),
        Some(n) => Some(data?.join(n)),
        None => Some(data?.join(DATABASE_FILE)),
    }
}

/// The database OpenCode started from runread's environment keeps its sessions in.
pub fn database() -> Option<PathBuf> {
    let data = runread_ingest::AgentDir::default_for(Agent::OpenCode).map(|d| d.dir);
    database_at(data.as_deref(), std::env::var_os(DATABASE_ENV).as_deref())
}

/// The session `session_id` (the id the stream named, never a guess) of the database `db`:
/// `<db>#<id>`, once the database exists.
pub fn find_session(db: &Path, session_id: &str) -> Option<PathBuf> {
    // A link is named as it is, for the session reader to refuse it.
    std::fs::symlink_metadata(db).ok()?;
    runread_sessions::opencode::session_name_of(db, session_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn opencode_run_gets_json_events_and_what_leaves_them_is_refused() {
        assert_eq!(
            with_json(&os(&["run", "hi", "--continue"])).unwrap(),
            os(&["run", "hi", "--continue", "--format", "json"])
        );
        assert_eq!(
            with_json(&os(&["run", "--format", "json", "hi"])).unwrap(),
            os(&["run", "--format", "json", "hi"])
        );
        assert_eq!(
            with_json(&os(&["run", "--format=json", "hi"])).unwrap(),
            os(&["run", "--format=json", "hi"])
        );
        assert_eq!(
            with_json(&os(&["run", "hi", "--", "--x"])).unwrap(),
            os(&["run", "hi", "--format", "json", "--", "--x"])
        );
        assert_eq!(
            with_json(&os(&["run", "hi", "--format", "default"])),
            Err(Refused::Format("default".into()))
        );
        assert_eq!(with_json(&os(&["hi"])), Err(Refused::NotRun));
        assert_eq!(with_json(&os(&[])), Err(Refused::NotRun));
        assert_eq!(with_json(&os(&["serve"])), Err(Refused::NotRun));
        for o in ["-i", "--interactive", "--attach", "--dir"] {
            assert!(
                matches!(
                    with_json(&os(&["run", "hi", o, "x"])),
                    Err(Refused::Option { option, .. }) if option == o
                ),
                "{o}"
            );
        }
        assert!(with_json(&os(&["run", "--dir=/x", "hi"])).is_err());
        // After `--`, a prompt, not an option.
        assert!(with_json(&os(&["run", "--", "--dir"])).is_ok());
        assert!(
            Refused::NotRun
                .to_string()
                .contains("runread run -- opencode run")
        );
    }

    #[test]
    fn the_database_is_opencodes_own_choice_and_the_session_is_named_in_it() {
        let data = Path::new("/d/opencode");
        assert_eq!(
            database_at(Some(data), None),
            Some(PathBuf::from("/d/opencode/opencode.db"))
        );
        assert_eq!(
            database_at(Some(data), Some(OsStr::new("other.db"))),
            Some(PathBuf::from("/d/opencode/other.db"))
        );
        assert_eq!(
            database_at(None, Some(OsStr::new("/abs/x.db"))),
            Some(PathBuf::from("/abs/x.db"))
        );
        assert_eq!(database_at(Some(data), Some(OsStr::new(":memory:"))), None);
        assert_eq!(
            database_at(Some(data), Some(OsStr::new(""))),
            Some(PathBuf::from("/d/opencode/opencode.db"))
        );
        assert_eq!(database_at(None, None), None);

        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("opencode.db");
        let id = "ses_db3da50c7ffeuRkymmfPn0Jvzc";
        assert_eq!(find_session(&db, id), None, "no database yet");
        std::fs::write(&db, "").unwrap();
        let name = find_session(&db, id).unwrap();
        assert_eq!(name, PathBuf::from(format!("{}#{id}", db.display())));
        assert_eq!(find_session(&db, "../x"), None);
        assert_eq!(find_session(&db, "ses_a#b"), None);
    }
}

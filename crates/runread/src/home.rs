//! Where runread keeps its state.

use std::path::{Path, PathBuf};

use runread_keys::KeyFile;

/// A runread home as one process uses it: the directory of its state, and the sealing key file
/// it uses (the home's `gate-keys`, or the file `--gate-keys` names).
pub struct Home {
    dir: PathBuf,
    pub keys: KeyFile,
}

impl Home {
    /// The home in `dir`, with `named` (`--gate-keys`) as its sealing key file when given.
    pub fn new(dir: PathBuf, named: Option<PathBuf>) -> Home {
        let keys = match named {
            Some(path) => KeyFile::Named(path),
            None => KeyFile::InHome(dir.clone()),
        };
        Home { dir, keys }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `--home`/`RUNREAD_HOME`, else `$XDG_DATA_HOME/runread`, else `~/.local/share/runread`.
pub fn resolve(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(h) = explicit {
        return Ok(h);
    }
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return Ok(PathBuf::from(x).join("runread"));
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set; pass --home DIR")?;
    Ok(PathBuf::from(home)
        .join(".local")
        .join("share")
        .join("runread"))
}

/// Creates the home (owner-only) if needed.
pub fn ensure(home: &std::path::Path) -> Result<(), String> {
    if !home.exists() {
        runread_platform::file::owner_only_dir(std::fs::DirBuilder::new().recursive(true))
            .create(home)
            .map_err(|e| format!("{}: {e}", home.display()))?;
    }
    let meta = std::fs::metadata(home).map_err(|e| format!("{}: {e}", home.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "{} is not a directory: --home names the folder runread keeps its state in",
            home.display()
        ));
    }
    if !runread_platform::file::is_owner_only(&meta) {
        eprintln!(
            "warning: {} is readable by other users; chmod 700 it",
            home.display()
        );
    }
    Ok(())
}

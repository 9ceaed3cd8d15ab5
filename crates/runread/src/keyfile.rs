//! `--key-file PATH` of `reader add`, `reader rotate` and `grant`: the new key written to a file
//! only the owner can read instead of the terminal, so it passes through no screen, scrollback or
//! shell history.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a new key will go: checked before anything is made (no key is made that cannot be kept),
/// as an absolute path (its parent resolved), so the printed `export` line works from any directory.
pub(crate) fn check(path: &Path) -> Result<PathBuf, String> {
    let shown = path.display();
    let name = path
        .file_name()
        .ok_or_else(|| format!("--key-file {shown}: names no file"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent = parent
        .canonicalize()
        .map_err(|_| format!("--key-file {shown}: its directory does not exist"))?;
    if !parent.is_dir() {
        return Err(format!(
            "--key-file {shown}: its directory is not a directory"
        ));
    }
    let full = parent.join(name);
    // symlink_metadata: a dangling link is a file there too, and never followed.
    if full.symlink_metadata().is_ok() {
        return Err(format!(
            "--key-file {shown}: it exists; runread never overwrites a key file (remove it, or \
             name a new one)"
        ));
    }
    Ok(full)
}

/// Writes `key` and a newline to `path`, created new with mode 0600 (never over an existing file
/// or through a link: `create_new`); a partial file is removed.
pub(crate) fn write(path: &Path, key: &str) -> Result<(), String> {
    let mut f = runread_platform::file::owner_only_file(
        std::fs::OpenOptions::new().write(true).create_new(true),
    )
    .open(path)
    .map_err(|e| format!("cannot create {}: {}", path.display(), e.kind()))?;
    let written = f
        .write_all(format!("{key}\n").as_bytes())
        .and_then(|()| f.sync_all());
    if let Err(e) = written {
        drop(f);
        // Ours (create_new): a partial key file is no use to anyone.
        let _ = std::fs::remove_file(path);
        return Err(format!("cannot write {}: {}", path.display(), e.kind()));
    }
    Ok(())
}

/// What happened to a new key: written to the file `--key-file` named, or to be shown.
pub(crate) enum KeyOut {
    Shown,
    Written(PathBuf),
}

/// Writes `key` to `path` when there is one; when writing fails after the key was made, the key
/// is shown instead (a key neither kept nor shown would be lost) and the owner told why.
pub(crate) fn keep(path: Option<PathBuf>, key: &str) -> KeyOut {
    match path {
        None => KeyOut::Shown,
        Some(p) => match write(&p, key) {
            Ok(()) => KeyOut::Written(p),
            Err(why) => {
                eprintln!("runread: {why}; the key is printed instead");
                KeyOut::Shown
            }
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test's unwrap is its assertion
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_file_is_made_new_with_mode_0600_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = check(&dir.path().join("k.key")).unwrap();
        assert!(p.is_absolute());
        write(&p, "abc").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "abc\n");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(check(&p).unwrap_err().contains("never overwrites"));
        assert!(write(&p, "def").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "abc\n");
        let gone = dir.path().join("no-such-dir").join("k.key");
        assert!(check(&gone).unwrap_err().contains("does not exist"));
        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert!(check(&link).unwrap_err().contains("never overwrites"));
    }
}

//! `runread keys rotate|list|export|import`, and which key file a process uses (`--gate-keys`
//! or the home's `gate-keys`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use runread_gate::keys::KeyFile;

use crate::KeysCmd;

/// The `--gate-keys` file, set once from the command line before any command runs.
static NAMED_KEY_FILE: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Uses `named` (from `--gate-keys` / `RUNREAD_GATE_KEYS_FILE`) instead of the home's key file
/// for the rest of the process.
pub(crate) fn use_key_file(named: Option<PathBuf>) {
    let _ = NAMED_KEY_FILE.set(named);
}

/// The key file this process uses with `home`.
pub(crate) fn key_file(home: &Path) -> KeyFile {
    match NAMED_KEY_FILE.get() {
        Some(Some(path)) => KeyFile::Named(path.clone()),
        _ => KeyFile::InHome(home.to_path_buf()),
    }
}

pub(crate) fn keys(home: &Path, cmd: KeysCmd) -> Result<(), String> {
    let file = key_file(home);
    match cmd {
        KeysCmd::Rotate => {
            let id = crate::servecmd::gate_keys(home)?
                .rotate()
                .map_err(|e| e.to_string())?;
            outln!("new sealing key {id} is current; older keys stay readable");
        }
        KeysCmd::List => {
            let ids = crate::servecmd::gate_keys(home)?
                .ids()
                .map_err(|e| e.to_string())?;
            print_ids(&ids);
        }
        KeysCmd::Export { file: dest } => {
            let ids = crate::servecmd::gate_keys(home)?.export(&dest)?;
            outln!(
                "wrote {} sealing key(s) to {} (0600; move it as a secret, then: runread keys import FILE)",
                ids.len(),
                dest.display()
            );
            print_ids(&ids);
        }
        KeysCmd::Import { file: src } => {
            let done = runread_gate::keys::FileKeys::import(&file, &src)?;
            outln!(
                "imported into {}: {} added, {} already there; current: {}",
                file.path().display(),
                done.added.len(),
                done.present.len(),
                done.current
            );
            for id in &done.added {
                outln!("added    {id}");
            }
            for id in &done.present {
                outln!("present  {id}");
            }
        }
    }
    Ok(())
}

/// Key ids, oldest first, the current one marked. Never the keys.
fn print_ids(ids: &[String]) {
    for (i, id) in ids.iter().enumerate() {
        let current = if i + 1 == ids.len() {
            "  (current)"
        } else {
            ""
        };
        outln!("{id}{current}");
    }
}

//! `runread keys rotate|list|export|import`, on the key file the home uses (`--gate-keys` or the
//! home's `gate-keys`: [`Home`]).

use crate::args::KeysCmd;
use crate::context::home_keys;
use crate::home::Home;

pub(crate) fn keys(home: &Home, cmd: KeysCmd) -> Result<(), String> {
    match cmd {
        KeysCmd::Rotate => {
            let id = home_keys(home)?.rotate().map_err(|e| e.to_string())?;
            outln!("new sealing key {id} is current; older keys stay readable");
        }
        KeysCmd::List => {
            let ids = home_keys(home)?.ids().map_err(|e| e.to_string())?;
            print_ids(&ids);
        }
        KeysCmd::Export { file: dest } => {
            let ids = home_keys(home)?.export(&dest)?;
            outln!(
                "wrote {} sealing key(s) to {} (0600; move it as a secret, then: runread keys import FILE)",
                ids.len(),
                dest.display()
            );
            print_ids(&ids);
        }
        KeysCmd::Import { file: src } => {
            let done = runread_keys::FileKeys::import(&home.keys, &src)?;
            outln!(
                "imported into {}: {} added, {} already there; current: {}",
                home.keys.path().display(),
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

//! `runread secret add|list`.

use super::*;

pub(crate) fn secret(home: &crate::home::Home, store: &dyn Store, cmd: SecretCmd) -> Res {
    match cmd {
        SecretCmd::Add { name } => {
            use std::io::Read;
            let mut value = String::new();
            std::io::stdin()
                .take(runread_core::redact::SECRET_MAX_BYTES as u64 + 2)
                .read_to_string(&mut value)
                .map_err(|e| format!("stdin: {e}"))?;
            let value = value.strip_suffix('\n').unwrap_or(&value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            let keys = crate::servecmd::gate_keys(home)?;
            runread_service::owner::add_secret(store, &keys, &name, value, now_ms())
                .map_err(|e| e.to_string())?;
            outln!(
                "known secret {name:?} stored sealed; it is masked in everything runread returns"
            );
            Ok(())
        }
        SecretCmd::List => {
            for n in runread_service::owner::secret_names(store).map_err(|e| e.to_string())? {
                outln!("{n}");
            }
            Ok(())
        }
    }
}

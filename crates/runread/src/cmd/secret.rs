//! `runread secret add|list`.

use crate::Res;
use crate::context::Context;
use runread_core::timefmt::now_ms;

use crate::args::SecretCmd;

pub(crate) fn secret(ctx: &Context, cmd: SecretCmd) -> Res {
    let owner = ctx.owner()?;
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
            owner
                .add_secret(&name, value, now_ms())
                .map_err(|e| e.to_string())?;
            outln!(
                "known secret {name:?} stored sealed; it is masked in everything runread returns"
            );
            Ok(())
        }
        SecretCmd::List => {
            for n in owner.secret_names().map_err(|e| e.to_string())? {
                outln!("{n}");
            }
            Ok(())
        }
    }
}

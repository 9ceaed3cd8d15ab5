//! Files and environment variables the owner points runread at: a read key file (`serve --stdio`,
//! `read`), and known secrets not stored (`--secrets-file`, `--secret-env`). Each read bounded.

/// Most lines read from a secrets file.
pub(crate) const SECRETS_FILE_MAX_BYTES: u64 = 1024 * 1024;

pub(crate) fn extra_secrets(
    file: Option<&std::path::Path>,
    env_names: &[String],
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if let Some(f) = file {
        let meta = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
        if meta.len() > SECRETS_FILE_MAX_BYTES {
            return Err(format!(
                "{} is larger than {SECRETS_FILE_MAX_BYTES} bytes",
                f.display()
            ));
        }
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        out.extend(runread_service::evidence::secrets::parse_secrets_file(
            &text,
        ));
    }
    for name in env_names.iter().filter(|n| !n.is_empty()) {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => out.push(v),
            _ => {
                eprintln!("warning: environment variable {name} is not set; nothing to mask for it")
            }
        }
    }
    for s in &out {
        if !runread_service::evidence::secrets::acceptable_length(s) {
            return Err(format!(
                "every known secret must be {}..={} bytes long",
                runread_core::redact::SECRET_MIN_BYTES,
                runread_core::redact::SECRET_MAX_BYTES
            ));
        }
    }
    Ok(out)
}

/// Most bytes of a key file: a 64-character key and some whitespace.
pub(crate) const KEY_FILE_MAX_BYTES: u64 = 1024;

/// The read key in `path` (trimmed), read within [`KEY_FILE_MAX_BYTES`]; with `owner_only`, refused
/// when group or others may read the file (a key file a server is started with).
pub(crate) fn read_key_file(path: &std::path::Path, owner_only: bool) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if owner_only && !runread_platform::file::is_owner_only(&meta) {
        return Err(format!(
            "{} is readable by other users; chmod 600 it",
            path.display()
        ));
    }
    let mut bytes = Vec::new();
    let within = runread_core::read_at_most(file, KEY_FILE_MAX_BYTES, &mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !within {
        return Err(format!(
            "{} is larger than {KEY_FILE_MAX_BYTES} bytes: not a key file",
            path.display()
        ));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("{} is not text: not a key file", path.display()))?;
    Ok(text.trim().to_owned())
}

//! Reading and extending an agent's command line, the way its own option parser would: what
//! every agent's argument rules (in its folder) are built from.

use std::ffi::OsString;

/// The value of `--flag VALUE` or `--flag=VALUE` among the agent's arguments (the last one wins;
/// nothing after a `--` that ends the options).
pub fn flag_value(args: &[OsString], flag: &str) -> Option<OsString> {
    let mut found = None;
    let mut it = args.iter();
    let with_eq = format!("{flag}=");
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if s == "--" {
            break;
        }
        if s == flag {
            found = it.next().cloned();
        } else if let Some(v) = s.strip_prefix(&with_eq) {
            found = Some(OsString::from(v));
        }
    }
    found
}

/// Whether one of `flags` is among the options (before a `--` that ends them).
pub fn has_flag(args: &[OsString], flags: &[&str]) -> bool {
    args.iter()
        .take_while(|a| a.as_os_str() != "--")
        .any(|a| flags.iter().any(|f| a.as_os_str() == *f))
}

/// `args` with `extra` added before a `--` that ends the options (else at the end).
pub fn with_options(args: &[OsString], extra: &[&str]) -> Vec<OsString> {
    let at = args
        .iter()
        .position(|a| a.as_os_str() == "--")
        .unwrap_or(args.len());
    let mut out = args.to_vec();
    let tail = out.split_off(at);
    out.extend(extra.iter().map(OsString::from));
    out.extend(tail);
    out
}

/// Whether `arg` is `option`, or `option` with its value attached (`--option=value` for a long
/// option, `-Xvalue` for a short one).
pub fn is_option(arg: &str, option: &str) -> bool {
    arg == option
        || if option.starts_with("--") {
            arg.strip_prefix(option).is_some_and(|v| v.starts_with('='))
        } else {
            arg.len() > option.len() && arg.starts_with(option)
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_flags_value_is_its_last_before_the_end_of_options() {
        let args = os(&["--mode", "a", "--mode=b", "--", "--mode", "c"]);
        assert_eq!(flag_value(&args, "--mode"), Some("b".into()));
        assert!(has_flag(&args, &["--mode"]));
        assert!(!has_flag(&os(&["--", "--mode"]), &["--mode"]));
        assert_eq!(
            with_options(&os(&["x", "--", "y"]), &["--z"]),
            os(&["x", "--z", "--", "y"])
        );
        assert!(is_option("--cd=/x", "--cd") && is_option("-C/x", "-C"));
        assert!(!is_option("--cdx", "--cd") && !is_option("-c", "-C"));
    }
}

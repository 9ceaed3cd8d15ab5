//! This machine's name, as the system gives it.
//!
//! On every Unix the name is `uname`'s node name: the kernel's host name on Linux, the local host
//! name (`Johns-MacBook.local`) on macOS, which has no `/proc/sys/kernel/hostname` and no
//! `/etc/hostname`. Elsewhere, the `COMPUTERNAME` Windows sets.

/// Most bytes of a host name taken from the system (DNS names are at most 253).
pub const HOST_NAME_MAX_BYTES: usize = 255;

/// This machine's name, trimmed; `None` when the system gives none, or one that is empty, not
/// UTF-8 or longer than [`HOST_NAME_MAX_BYTES`].
pub fn host_name() -> Option<String> {
    #[cfg(unix)]
    let raw = rustix::system::uname().nodename().to_bytes().to_vec();
    #[cfg(not(unix))]
    let raw = std::env::var("COMPUTERNAME").ok()?.into_bytes();
    accept(&raw)
}

/// `raw` as a host name, by [`host_name`]'s rules.
fn accept(raw: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(raw).ok()?.trim();
    (!name.is_empty() && name.len() <= HOST_NAME_MAX_BYTES).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_taken_up_to_the_bound_and_refused_past_it() {
        let at = "h".repeat(HOST_NAME_MAX_BYTES);
        assert_eq!(accept(at.as_bytes()).as_deref(), Some(at.as_str()));
        let over = "h".repeat(HOST_NAME_MAX_BYTES + 1);
        assert_eq!(accept(over.as_bytes()), None);
        assert_eq!(accept(b" box.local\n").as_deref(), Some("box.local"));
        assert_eq!(accept(b"  "), None);
        assert_eq!(accept(b"\xff\xfe"), None);
    }

    /// `uname` gives the name the kernel keeps (on Linux, also in `/proc`, which this test may read).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_name_is_the_kernels() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(host_name().as_deref(), Some(kernel.trim()));
    }
}

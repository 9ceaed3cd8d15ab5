//! Release builds of `runread` ask the linker to lay out side by side the functions `serve` runs
//! to start, to answer a reader and to watch (`link/serve.order`, made by `bench/link_order.py`).
//!
//! The kernel maps a binary's code in windows around each page a process touches, and fat LTO
//! scatters the code a server runs over the whole binary: an idle `runread serve` held ~10 MiB
//! of code resident for ~2.7 MiB it runs (bench/PROFILES.md, issue 58). The list only orders
//! the layout; a name the binary no longer has is skipped, so a stale list costs memory, never
//! correctness.
//!
//! Only where the linker is known to take the list: rustc's own `rust-lld`, the default on
//! x86_64 Linux since Rust 1.90, with no linker chosen by the build's configuration. Anywhere
//! else (another target, an older rustc, a `linker` or `-C linker-features` setting) the link is
//! the default one. `RUNREAD_LINK_ORDER=0` turns it off.
#![forbid(unsafe_code)]

use std::env;
use std::path::Path;
use std::process::Command;

/// The first stable Rust whose x86_64 Linux target links with its own `rust-lld` by default.
const RUST_LLD_DEFAULT_SINCE_MINOR: u32 = 90;

fn main() {
    println!("cargo:rerun-if-changed=link/serve.order");
    println!("cargo:rerun-if-env-changed=RUNREAD_LINK_ORDER");
    if !linker_takes_order() {
        return;
    }
    let Ok(dir) = env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = Path::new(&dir).join("link").join("serve.order");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

fn linker_takes_order() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("RUNREAD_LINK_ORDER") != "0"
        && env::var_os("RUSTC_LINKER").is_none()
        && !["linker", "link-self-contained", "fuse-ld"]
            .iter()
            .any(|f| flags.contains(f))
        && rustc_minor().is_some_and(|m| m >= RUST_LLD_DEFAULT_SINCE_MINOR)
}

/// The minor version of the rustc building this crate (`rustc 1.95.0 (…)` → 95).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

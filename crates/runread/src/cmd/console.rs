//! `runread console` and `runread serve --console`: the owner's console on its own loopback
//! listener, its one-time login URL printed on standard output (a line of its own), optionally
//! opened in the browser.

use crate::Res;
use crate::args::ConsoleArgs;
use crate::context::Context;
use crate::inputs::extra_secrets;
use runread_service::Config;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use runread_console::Console;

/// Prints the console's login URL and serves it until `shutdown`; `open` hands the URL to the
/// desktop's browser opener.
pub async fn serve_console(
    console: Arc<Console>,
    listen: SocketAddr,
    open: bool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let c = console.clone();
    runread_console::serve(
        console,
        listen,
        move |bound| match c.login_url(bound) {
            Ok(url) => {
                eprintln!(
                    "runread console at http://{bound}/ — log in once with this link (it works once, for {} minutes):",
                    runread_console::auth::LOGIN_TOKEN_TTL.as_secs() / 60
                );
                outln!("{url}");
                if open {
                    open_browser(&url);
                }
            }
            Err(r) => eprintln!("console: no login link ({})", r.code()),
        },
        shutdown,
    )
    .await
    .map_err(|e| console_cannot_listen(listen, &e))
}

/// Why the console cannot serve at `listen`, in words (a port taken is the usual case).
fn console_cannot_listen(listen: SocketAddr, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "the console cannot listen on {listen}: something else (another runread console?) \
             already listens there; stop it, or pick another address with --console-listen \
             (`runread console --listen`)"
        ),
        std::io::ErrorKind::AddrNotAvailable => {
            format!("the console cannot listen on {listen}: this machine has no such address")
        }
        _ => format!("the console cannot listen on {listen}: {e}"),
    }
}

/// The desktop's opener ([`crate::platform::BROWSER_OPENER`]); says so if there is none.
fn open_browser(url: &str) {
    let opener = crate::platform::BROWSER_OPENER;
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("could not start {opener}: open the link above in your browser");
    }
}

/// `runread console`: the console alone, its configs naming `--mcp-url`.
pub fn console(ctx: &Context, a: ConsoleArgs) -> Res {
    let extra = extra_secrets(a.secrets_file.as_deref(), &a.secret_env)?;
    let config = Config {
        settle_quiet: Duration::from_millis(a.settle_ms),
        ..Config::default()
    };
    let console = Console::new(ctx.owner_with(config, extra)?, a.mcp_url);
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(serve_console(
        console,
        a.listen,
        a.open,
        crate::stop::until_stopped(),
    ))
}

//! `runread serve` over HTTP (with `--watch`, `--console`) or stdio, and the service a serving
//! process answers with.

use crate::Res;
use crate::args::ServeArgs;
use crate::cmd::ingest::spawn_watcher;
use crate::context::Context;
use crate::inputs::extra_secrets;
use crate::inputs::read_key_file;
use crate::stop::until_stopped;
use runread_core::timefmt::now_ms;
use runread_service::Config;
use runread_store::Store;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
/// Seconds between two sweeps of `serve` for snapshots whose last grant ended.
pub(crate) const SNAPSHOT_SWEEP_SECS: u64 = 60;
/// Sweeps between two maintenance passes of the gate's log (seals and the retention's prunes).
pub(crate) const AUDIT_PASS_EVERY_SWEEPS: u64 = 10;

/// The thread that destroys, every [`SNAPSHOT_SWEEP_SECS`], the snapshots whose last grant
/// ended (grants expire by time, not by an act of the owner), and, every
/// [`AUDIT_PASS_EVERY_SWEEPS`] sweeps (the first at once), runs a maintenance pass of the gate's
/// log ([`runread_gate::log::maintain`]).
struct SnapshotSweeper {
    /// Dropped to stop the thread at once (its wait between sweeps ends).
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl SnapshotSweeper {
    fn spawn(owner: runread_service::Owner) -> Result<SnapshotSweeper, String> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("runread-snapshots".into())
            .spawn(move || {
                for sweep in 0u64.. {
                    if let Err(e) = owner.destroy_unshared_snapshots(now_ms()) {
                        eprintln!("runread: snapshots not swept: {}", e.as_str());
                    }
                    if sweep % AUDIT_PASS_EVERY_SWEEPS == 0 {
                        maintain_log(&**owner.store());
                    }
                    match stopped.recv_timeout(Duration::from_secs(SNAPSHOT_SWEEP_SECS)) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                        _ => return,
                    }
                }
            })
            .map(|thread| SnapshotSweeper { stop, thread })
            .map_err(|e| e.to_string())
    }

    /// Stops the sweeper and waits for it: at most the sweep it is in.
    fn stop_and_join(self) {
        drop(self.stop);
        let _ = self.thread.join();
    }
}

/// One maintenance pass of the gate's log, as `serve` runs it: what it could not do goes to the
/// log, never stops serving.
fn maintain_log(store: &dyn Store) {
    let pass = runread_gate::log::Retention::of(store)
        .map_err(|e| e.to_string())
        .and_then(|r| runread_gate::log::maintain(store, r, now_ms()).map_err(|e| e.to_string()));
    match pass {
        Ok(m) if m.mismatch.is_some() || m.broken_chain.is_some() => eprintln!(
            "runread: the audit log does not verify; nothing of it is removed (see `runread audit verify`)"
        ),
        Ok(_) => {}
        Err(e) => eprintln!("runread: audit log not maintained: {e}"),
    }
}

/// `runread serve`: over stdio with a key file, else over HTTP (with the console if asked),
/// with the watcher in the same process if asked.
///
/// Grants expire by time; a thread of its own destroys, every [`SNAPSHOT_SWEEP_SECS`], the
/// snapshots no live grant holds any more (until serving ends).
pub(crate) fn serve_command(ctx: &Context, a: ServeArgs) -> Res {
    // Read before anything starts: a bad --public-url or --cors-origin stops here, with its error.
    let public = public_origin(a.public_url.as_deref(), a.cimd_allow_host, &a.cors_origin)?;
    let watcher = match a.watch {
        true => {
            let remembered = crate::folders::remembered(ctx.home.dir());
            Some(spawn_watcher(ctx, a.dirs.resolve(false, remembered)?)?)
        }
        false => None,
    };
    let sweeper = SnapshotSweeper::spawn(ctx.owner()?)?;
    let extra = extra_secrets(a.secrets_file.as_deref(), &a.secret_env)?;
    let config = Config {
        settle_quiet: Duration::from_millis(a.settle_ms),
        calls_per_minute: a.calls_per_minute,
        access_request_ttl: Duration::from_secs(a.request_expiry_seconds),
        ..Config::default()
    };
    let served = match (a.stdio, a.key_file) {
        (true, Some(kf)) => serve_stdio(ctx, &kf, config, extra, a.protocol.into(), a.notify),
        _ => serve(
            ctx,
            a.listen,
            config,
            extra,
            runread_mcp::guards::Allowed {
                hosts: a.allow_host,
                origins: a.allow_origin,
                protocols: a.protocol.into(),
                public,
            },
            a.console.then_some((a.console_listen, a.open)),
            a.notify,
        ),
    };
    // The watcher and the sweeper hold the store too: it closes only once they are done.
    sweeper.stop_and_join();
    if let Some(watcher) = watcher {
        watcher.stop_and_join();
    }
    served
}

/// The connector's public origin of `--public-url`, with the hosts of `--cimd-allow-host` and the
/// origins of `--cors-origin` (each refused at startup, with what to give, unless exact).
fn public_origin(
    url: Option<&str>,
    cimd_private_hosts: Vec<String>,
    cors_origins: &[String],
) -> Result<Option<Arc<runread_mcp::public::PublicOrigin>>, String> {
    let Some(url) = url else { return Ok(None) };
    let mut public = runread_mcp::public::PublicOrigin::parse(url)?;
    public.cimd_private_hosts = cimd_private_hosts;
    public.cors_origins = cors_origins
        .iter()
        .map(|o| runread_mcp::cors::parse_origin(o))
        .collect::<Result<_, _>>()?;
    Ok(Some(Arc::new(public)))
}

pub(crate) fn serve(
    ctx: &Context,
    listen: SocketAddr,
    config: Config,
    extra: Vec<String>,
    allowed: runread_mcp::guards::Allowed,
    console: Option<(SocketAddr, bool)>,
    notify: bool,
) -> Res {
    if !listen.ip().is_loopback() && allowed.hosts.is_empty() {
        return Err(format!(
            "refusing to listen on {listen}: runread serves loopback only unless --allow-host names this host"
        ));
    }
    let service = ctx.service(config, extra)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    if notify {
        rt.spawn(crate::notify::notify_requests(ctx.store.clone()));
    }
    // The console names the MCP endpoint as bound (the port may have been 0).
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel::<SocketAddr>();
    let console_failed = Arc::new(ConsoleFailure::default());
    if let Some((console_listen, open)) = console {
        rt.spawn(serve_console_beside(
            service.clone(),
            bound_rx,
            console_listen,
            open,
            console_failed.clone(),
        ));
    }
    let versions = match allowed.protocols {
        runread_mcp::guards::Protocols::All => runread_mcp::server::ALL_VERSIONS,
        runread_mcp::guards::Protocols::Modern => runread_mcp::server::MODERN_VERSIONS,
    }
    .iter()
    .map(|v| v.as_str())
    .collect::<Vec<_>>()
    .join(", ");
    let public = allowed.public.clone();
    let shutdown = stopped_or_console_failed(console_failed.clone());
    rt.block_on(async move {
        runread_mcp::server::serve_with(
            service,
            listen,
            allowed,
            |addr| {
                eprintln!(
                    "runread serving MCP ({versions}) at http://{addr}{} (Ctrl-C to stop)",
                    runread_mcp::MCP_PATH
                );
                if let Some(p) = &public {
                    eprintln!(
                        "connectors: {} (OAuth; approve each connection on the console)",
                        p.connector.resource
                    );
                }
                let _ = bound_tx.send(addr);
            },
            shutdown,
        )
        .await
        .map_err(|e| format!("serve {listen}: {e}"))
    })?;
    match console_failed.message.get() {
        Some(why) => Err(format!("{why}; stopped serving MCP too")),
        None => Ok(()),
    }
}

/// Why `serve --console` ended: its console could not serve (its port taken, say). One who asked
/// for the console is not left with MCP alone, so the whole command ends, non-zero.
#[derive(Default)]
struct ConsoleFailure {
    message: std::sync::OnceLock<String>,
    noticed: tokio::sync::Notify,
}

/// The console of `serve --console`, once MCP is bound; what stops it early is kept in `failed`.
async fn serve_console_beside(
    service: Arc<runread_service::Service>,
    bound: tokio::sync::oneshot::Receiver<SocketAddr>,
    listen: SocketAddr,
    open: bool,
    failed: Arc<ConsoleFailure>,
) {
    let Ok(mcp) = bound.await else { return };
    let url = format!("http://{mcp}{}", runread_mcp::MCP_PATH);
    let console = runread_console::Console::new(service.owner(), url);
    let served = crate::cmd::console::serve_console(console, listen, open, until_stopped()).await;
    if let Err(e) = served {
        let _ = failed.message.set(e);
        // A permit is kept when nobody waits yet: the server sees it as soon as it looks.
        failed.noticed.notify_one();
    }
}

/// Resolves when the process is asked to stop, or when the console beside MCP failed.
async fn stopped_or_console_failed(failed: Arc<ConsoleFailure>) {
    tokio::select! {
        () = until_stopped() => {}
        () = failed.noticed.notified() => {}
    }
}

pub(crate) fn serve_stdio(
    ctx: &Context,
    key_file: &std::path::Path,
    config: Config,
    extra: Vec<String>,
    protocols: runread_mcp::guards::Protocols,
    notify: bool,
) -> Res {
    let key = read_key_file(key_file, true)?;
    let service = ctx.service(config, extra)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    if notify {
        rt.spawn(crate::notify::notify_requests(ctx.store.clone()));
    }
    // The end of stdin ends the session; a signal ends it too. Then the calls still on blocking
    // threads get the HTTP server's grace to finish, and the runtime does not wait for the
    // blocking read of stdin, which only the client's end of the pipe would end.
    let served = rt.block_on(async {
        tokio::select! {
            served = runread_mcp::server::serve_stdio(service, key, protocols) => served,
            () = until_stopped() => Ok(()),
        }
    });
    rt.shutdown_timeout(runread_mcp::server::GRACEFUL_SHUTDOWN_MAX);
    served
}

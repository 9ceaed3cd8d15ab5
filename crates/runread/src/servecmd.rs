//! `runread serve` over HTTP (with `--watch`, `--console`) or stdio, and the service a serving
//! process answers with.

use super::*;

/// The sealing keys of `home` (made on first use), or the `--gate-keys` file; every command that
/// seals or unseals opens them here.
pub(crate) fn gate_keys(home: &crate::home::Home) -> Result<runread_gate::keys::FileKeys, String> {
    let file = &home.keys;
    file.open()
        .map_err(|e| format!("gate keys {}: {e}", file.path().display()))
}

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
    fn spawn(store: Arc<dyn Store>) -> Result<SnapshotSweeper, String> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("runread-snapshots".into())
            .spawn(move || {
                for sweep in 0u64.. {
                    if let Err(e) = runread_service::snapshot::destroy_unshared(&*store, now_ms()) {
                        eprintln!("runread: snapshots not swept: {}", e.as_str());
                    }
                    if sweep % AUDIT_PASS_EVERY_SWEEPS == 0 {
                        maintain_log(&*store);
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

/// The service over `store`, with the sealing keys of `home` and its frozen binding registry.
pub(crate) fn service(
    home: &crate::home::Home,
    store: Arc<dyn Store>,
    config: Config,
) -> Result<Arc<Service>, String> {
    Ok(serving_service(home, store, config, Vec::new())?.0)
}

/// The service a serving process answers with (MCP, the console), masking also the `extra`
/// known secrets, and the sealing keys it was built with.
pub(crate) fn serving_service(
    home: &crate::home::Home,
    store: Arc<dyn Store>,
    mut config: Config,
    extra: Vec<String>,
) -> Result<(Arc<Service>, Arc<dyn runread_gate::keys::KeyProvider>), String> {
    // Supervised proofs live in this home's journal: every service of the home checks them.
    config.journal_root = Some(runread_supervise::journal_root(home.dir()));
    let keys: Arc<dyn runread_gate::keys::KeyProvider> = Arc::new(gate_keys(home)?);
    let service = Service::new(store, keys.clone(), config)
        .map_err(|e| format!("refusing to start: {e}"))?
        .with_extra_secrets(keys.clone(), extra);
    Ok((Arc::new(service), keys))
}

/// `runread serve`: over stdio with a key file, else over HTTP (with the console if asked),
/// with the watcher in the same process if asked.
///
/// Grants expire by time; a thread of its own destroys, every [`SNAPSHOT_SWEEP_SECS`], the
/// snapshots no live grant holds any more (until serving ends).
pub(crate) fn serve_command(home: &crate::home::Home, store: Arc<dyn Store>, a: ServeArgs) -> Res {
    let watcher = match a.watch {
        true => Some(spawn_watcher(home, store.clone(), a.dirs.resolve(false)?)?),
        false => None,
    };
    let sweeper = SnapshotSweeper::spawn(store.clone())?;
    let extra = extra_secrets(a.secrets_file.as_deref(), &a.secret_env)?;
    let config = Config {
        settle_quiet: Duration::from_millis(a.settle_ms),
        calls_per_minute: a.calls_per_minute,
        ..Config::default()
    };
    let served = match (a.stdio, a.key_file) {
        (true, Some(kf)) => serve_stdio(home, store, &kf, config, extra, a.protocol.into()),
        _ => serve(
            home,
            store,
            a.listen,
            config,
            extra,
            runread_mcp::guards::Allowed {
                hosts: a.allow_host,
                origins: a.allow_origin,
                protocols: a.protocol.into(),
                public: public_origin(a.public_url.as_deref(), a.cimd_allow_host)?,
            },
            a.console.then_some((a.console_listen, a.open)),
        ),
    };
    // The watcher and the sweeper hold the store too: it closes only once they are done.
    sweeper.stop_and_join();
    if let Some(watcher) = watcher {
        watcher.stop_and_join();
    }
    served
}

/// The connector's public origin of `--public-url`, with the hosts of `--cimd-allow-host`.
fn public_origin(
    url: Option<&str>,
    cimd_private_hosts: Vec<String>,
) -> Result<Option<Arc<runread_mcp::public::PublicOrigin>>, String> {
    let Some(url) = url else { return Ok(None) };
    let mut public = runread_mcp::public::PublicOrigin::parse(url)?;
    public.cimd_private_hosts = cimd_private_hosts;
    Ok(Some(Arc::new(public)))
}

/// The signals that stop runread's long-running commands: Ctrl-C (SIGINT), and SIGTERM, what
/// service managers and supervisors send. Either ends the command gracefully, and the store closes
/// as the process ends: its last connection copies the write-ahead log back and removes it, so the
/// next start has no log to read back (a killed server leaves one, up to `CHECKPOINT_INLINE_PAGES`
/// long). Once registered, neither ends the process where it stands.
pub(crate) struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Registers both; within a runtime.
    pub(crate) fn register() -> std::io::Result<StopSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Resolves at the first of them.
    pub(crate) async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// Resolves when the process is asked to stop ([`StopSignals`]); Ctrl-C alone if they cannot be
/// registered.
pub(crate) async fn until_stopped() {
    match StopSignals::register() {
        Ok(mut signals) => signals.recv().await,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

pub(crate) fn serve(
    home: &crate::home::Home,
    store: Arc<dyn Store>,
    listen: SocketAddr,
    config: Config,
    extra: Vec<String>,
    allowed: runread_mcp::guards::Allowed,
    console: Option<(SocketAddr, bool)>,
) -> Res {
    if !listen.ip().is_loopback() && allowed.hosts.is_empty() {
        return Err(format!(
            "refusing to listen on {listen}: runread serves loopback only unless --allow-host names this host"
        ));
    }
    let (service, keys) = serving_service(home, store.clone(), config, extra)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    // The console names the MCP endpoint as bound (the port may have been 0).
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel::<SocketAddr>();
    if let Some((console_listen, open)) = console {
        let service = service.clone();
        rt.spawn(async move {
            let Ok(mcp) = bound_rx.await else { return };
            let url = format!("http://{mcp}{}", runread_mcp::MCP_PATH);
            let console = runread_console::Console::new(service, store, keys, url);
            let served =
                consolecmd::serve_console(console, console_listen, open, until_stopped()).await;
            if let Err(e) = served {
                eprintln!("{e}");
            }
        });
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
            until_stopped(),
        )
        .await
        .map_err(|e| format!("serve {listen}: {e}"))
    })
}

pub(crate) fn serve_stdio(
    home: &crate::home::Home,
    store: Arc<dyn Store>,
    key_file: &std::path::Path,
    config: Config,
    extra: Vec<String>,
    protocols: runread_mcp::guards::Protocols,
) -> Res {
    let key = read_key_file(key_file, true)?;
    let (service, _) = serving_service(home, store, config, extra)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
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

/// A flag that [`StopSignals`] set, for a command that runs on threads of its own (`runread
/// watch`): a small runtime on a thread of its own waits for them. They are registered before this
/// returns.
pub(crate) fn stop_on_signal() -> Result<Arc<std::sync::atomic::AtomicBool>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut signals = rt
        .block_on(async { StopSignals::register() })
        .map_err(|e| format!("could not wait for signals: {e}"))?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let set = stop.clone();
    std::thread::Builder::new()
        .name("runread-signals".into())
        .spawn(move || {
            rt.block_on(signals.recv());
            set.store(true, std::sync::atomic::Ordering::SeqCst);
        })
        .map_err(|e| e.to_string())?;
    Ok(stop)
}

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
        out.extend(runread_service::secrets::parse_secrets_file(&text));
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
        if !runread_service::secrets::acceptable_length(s) {
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
    use std::os::unix::fs::PermissionsExt;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if owner_only && !runread_core::is_owner_only(meta.permissions().mode()) {
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

//! Stopping long-running commands (`serve`, `console`, `watch`) gracefully on Ctrl-C or SIGTERM.

use std::sync::Arc;

use crate::platform::StopSignals;

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

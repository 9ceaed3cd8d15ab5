//! `runread watch`: follow session directories continuously, so passive runs appear, grow and
//! settle in the store while the agent works.
//!
//! File notifications wake the watcher — inotify on Linux, FSEvents on macOS (through `notify`) —
//! and a periodic rescan is the safety net for anything notifications miss (a directory created
//! after the watch started, an overflowed queue, a filesystem without notifications). A
//! notification is only a wake-up: which file changed is never taken from it, so FSEvents'
//! coalescing (several changes, or a whole folder, in one event, delivered after a short latency)
//! costs at most one pass that finds nothing new, and the path an event spells (on a
//! case-insensitive volume, perhaps not as the walk spells it) is never compared. Bursts are debounced into one pass. Each pass is an
//! ordinary incremental ingest: unchanged files cost a stat, appends cost their new bytes, and a
//! rotated, deleted or rewritten file starts a new generation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use runread_store::Index;

use crate::{AgentDir, IngestError, Report, ingest_dir};

/// How long to wait for a burst of notifications to end before ingesting.
pub const DEBOUNCE: Duration = Duration::from_millis(150);
/// How often the watcher checks whether it should stop or rescan.
const TICK: Duration = Duration::from_millis(250);
/// Default period of the safety-net rescan.
pub const RESCAN_DEFAULT: Duration = Duration::from_secs(5);

/// Whether a notification can mean that a session changed: every kind but a read. notify's
/// inotify backend also reports opens and closes without a write, and each pass opens the
/// directories it lists and the files it reads: woken by those, an idle watcher would pass again
/// and again, every debounce, for ever. A close after a write is a change.
fn may_change_a_session(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, EventKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Watches `dirs` (each agent's session directory; one that does not exist yet is found by the
/// rescan once it does) until `stop` is set, calling `on_pass` after every ingest pass (its
/// report sums every directory's).
pub fn watch(
    store: Arc<dyn Index>,
    dirs: &[AgentDir],
    rescan: Duration,
    stop: Arc<AtomicBool>,
    mut on_pass: impl FnMut(&Report),
) -> Result<(), IngestError> {
    let (tx, rx) = channel::<()>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if res.is_ok_and(|event| may_change_a_session(&event.kind)) {
            let _ = tx.send(());
        }
    })
    .map_err(|e| IngestError::Watch(e.to_string()))?;
    let mut watched = vec![false; dirs.len()];
    let mut pass = |watcher: &mut notify::RecommendedWatcher| -> Result<(), IngestError> {
        let mut total = Report::default();
        for (d, watched) in dirs.iter().zip(watched.iter_mut()) {
            if !d.dir.is_dir() {
                continue;
            }
            if !*watched {
                let mode = if runread_sessions::profile(d.agent).sessions_in_subfolders() {
                    RecursiveMode::Recursive
                } else {
                    RecursiveMode::NonRecursive
                };
                watcher
                    .watch(&d.dir, mode)
                    .map_err(|e| IngestError::Watch(e.to_string()))?;
                *watched = true;
            }
            let (report, _) = ingest_dir(&*store, d, runread_core::timefmt::now_ms(), |_| {})?;
            total.add(&report);
        }
        on_pass(&total);
        Ok(())
    };
    pass(&mut watcher)?;
    let mut last_pass = Instant::now();
    // A pass reads every session's record: what the store cached for it is handed back once the
    // watcher goes idle (a tick with nothing to do), not between the passes of a burst.
    let mut caching = true;
    while !stop.load(Ordering::SeqCst) {
        // Wake at least every TICK to notice `stop`; rescan when the period has passed.
        match rx.recv_timeout(TICK) {
            Ok(()) => {
                // Debounce: let the burst finish.
                while rx.recv_timeout(DEBOUNCE).is_ok() {}
                pass(&mut watcher)?;
                (last_pass, caching) = (Instant::now(), true);
            }
            Err(RecvTimeoutError::Timeout) if last_pass.elapsed() >= rescan => {
                pass(&mut watcher)?;
                (last_pass, caching) = (Instant::now(), true);
            }
            Err(RecvTimeoutError::Timeout) if caching => {
                store.release_memory();
                caching = false;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    drop(watcher);
    Ok(())
}

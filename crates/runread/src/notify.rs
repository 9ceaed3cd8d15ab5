//! `runread serve --notify`: a desktop notification for each new access request, so the owner
//! need not watch the console to learn that a reader waits for a decision.
//!
//! It names the reader and nothing else: the request's reason, words and workspace are the
//! reader's own text, and a notification is shown outside runread (in the desktop's history, on
//! a locked screen), where runread can neither mask nor quote it. The owner reads the rest with
//! `runread requests` or on the console. Which program shows it is the platform module's choice
//! ([`crate::platform::notification`]); this module decides when, and bounds how long it may
//! take.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use runread_core::timefmt::now_ms;
use runread_store::Store;
use runread_store::changes::Change;
use tokio::sync::broadcast::error::RecvError;

/// How long one notification's program may run before it is killed: a notifier that hangs (no
/// desktop session to talk to) must not hold the next request's notification back for long.
pub(crate) const NOTIFY_WAIT_MAX: Duration = Duration::from_secs(5);
/// How often a running notifier is looked at while [`NOTIFY_WAIT_MAX`] runs.
const NOTIFY_POLL: Duration = Duration::from_millis(25);
/// How often the pending requests are read even when the change feed says nothing: a safety net
/// for a change it could not carry (another process's commit on a store whose feed hears only
/// its own), never the way a request is normally noticed.
pub(crate) const NOTIFY_RECHECK: Duration = Duration::from_secs(30);

/// The notification's title.
const TITLE: &str = "runread";

/// What the notification says of a request of `reader`: its name, and where to decide.
pub(crate) fn body(reader: &str) -> String {
    format!(
        "{} asks for access — see the console or `runread requests`",
        crate::human::inert(reader)
    )
}

/// What one notification came to.
enum Shown {
    Yes,
    /// The desktop's notifier is not installed (or this system has none): said once.
    NoNotifier(&'static str),
    Failed(String),
}

/// Shows the notification `body`, waiting at most [`NOTIFY_WAIT_MAX`] for its program.
fn show(body: &str) -> Shown {
    let Some((program, mut command)) = crate::platform::notification(TITLE, body) else {
        return Shown::NoNotifier("this system's desktop notifier");
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Shown::NoNotifier(program);
        }
        Err(e) => return Shown::Failed(format!("{program}: {e}")),
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Shown::Yes,
            Ok(Some(status)) => return Shown::Failed(format!("{program} ended with {status}")),
            Ok(None) if started.elapsed() < NOTIFY_WAIT_MAX => std::thread::sleep(NOTIFY_POLL),
            Ok(None) => {
                // Killed and reaped: no notifier outlives its wait, none is left a zombie.
                let _ = child.kill();
                let _ = child.wait();
                return Shown::Failed(format!(
                    "{program} did not finish within {} s",
                    NOTIFY_WAIT_MAX.as_secs()
                ));
            }
            Err(e) => return Shown::Failed(format!("{program}: {e}")),
        }
    }
}

/// What the notifier remembers between passes.
#[derive(Default)]
struct Notified {
    /// The pending requests already notified (a request is notified once, shown or not): never
    /// more than the requests pending at once, as those no longer pending are forgotten.
    ids: HashSet<String>,
    /// Whether the missing notifier was said in the log already.
    said_missing: bool,
}

/// One pass: reads the pending requests and notifies those not notified yet. What fails goes to
/// the log; serving goes on.
fn pass(store: &dyn Store, notified: &mut Notified) {
    let now = now_ms();
    let pending = match store.access_requests_pending(now) {
        Ok(pending) => pending,
        Err(e) => {
            eprintln!("runread: access requests not read for notifications: {e}");
            return;
        }
    };
    notified
        .ids
        .retain(|id| pending.iter().any(|r| &r.id == id));
    let fresh: Vec<_> = pending
        .iter()
        .filter(|r| !notified.ids.contains(&r.id))
        .collect();
    if fresh.is_empty() {
        return;
    }
    let readers = match store.readers() {
        Ok(readers) => readers,
        Err(e) => {
            eprintln!("runread: access requests not read for notifications: {e}");
            return;
        }
    };
    for request in fresh {
        notified.ids.insert(request.id.clone());
        // A request whose reader is gone is not the owner's to decide any more.
        let Some(reader) = readers
            .iter()
            .find(|r| r.id == request.reader_id && r.removed_at_ms.is_none())
        else {
            continue;
        };
        match show(&body(&reader.name)) {
            Shown::Yes => {}
            Shown::NoNotifier(program) => {
                if !std::mem::replace(&mut notified.said_missing, true) {
                    eprintln!(
                        "runread: --notify: {program} was not found, so access requests are not \
                         notified; see them with `runread requests` or on the console"
                    );
                }
            }
            Shown::Failed(why) => eprintln!("runread: an access request was not notified: {why}"),
        }
    }
}

/// Notifies each new access request until the runtime ends: a pass at once (requests already
/// waiting when serving starts), then one at each change the store's feed announces of a
/// request (or of anything, when it cannot say what: another process's commit, a missed
/// change), and one every [`NOTIFY_RECHECK`] whatever it says.
pub(crate) async fn notify_requests(store: std::sync::Arc<dyn Store>) {
    let mut changes = store.changes().subscribe();
    let mut notified = Notified::default();
    loop {
        // The store and the notifier block: off the async threads.
        let s = store.clone();
        notified = match tokio::task::spawn_blocking(move || {
            pass(&*s, &mut notified);
            notified
        })
        .await
        {
            Ok(notified) => notified,
            Err(_) => return,
        };
        if !next_change(&mut changes).await {
            return;
        }
    }
}

/// Waits for a change that may concern a request, or for [`NOTIFY_RECHECK`]; `false` when the
/// feed ended (its store closed).
async fn next_change(changes: &mut tokio::sync::broadcast::Receiver<Change>) -> bool {
    let recheck = tokio::time::sleep(NOTIFY_RECHECK);
    tokio::pin!(recheck);
    loop {
        tokio::select! {
            () = &mut recheck => return true,
            change = changes.recv() => match change {
                Ok(Change::AccessRequest(_) | Change::Unknown) | Err(RecvError::Lagged(_)) => {
                    return true;
                }
                Ok(_) => continue,
                Err(RecvError::Closed) => return false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_names_the_reader_and_where_to_decide_and_nothing_else() {
        assert_eq!(
            body("claude-code"),
            "claude-code asks for access — see the console or `runread requests`"
        );
        assert!(!body("a\u{1b}[2Jb").contains('\u{1b}'));
    }
}

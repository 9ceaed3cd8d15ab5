//! Changes between processes on one PostgreSQL: a commit that changes runs sends `NOTIFY` on
//! [`CHANNEL`] in its own transaction (delivered only if it commits), and one listener thread per
//! process that waits turns what other processes sent into changes on its own feed.
//!
//! The payload is `<origin>:<session id>`: `origin` names the sending store, so a listener
//! ignores its own process's notifications (already published when they committed). A listener
//! that loses its connection reconnects with backoff, and publishes [`Change::Unknown`] once it
//! listens again: what was sent meanwhile is lost, and every wait re-checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;

use crate::changes::{CHANNEL, Change, ChangeFeed};

/// How often the listener looks at its stop flag while nothing arrives.
pub const LISTEN_POLL: Duration = Duration::from_millis(250);
/// Longest pause before the listener connects again after losing its connection.
pub const RELISTEN_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// The payload a commit of `origin` sends for `session_id`.
pub(crate) fn payload(origin: &str, session_id: &str) -> String {
    format!("{origin}:{session_id}")
}

/// What a notification's payload means to the listener of `origin`: `None` for its own, or one
/// it cannot read.
fn change_of(origin: &str, payload: &str) -> Option<Change> {
    let (from, session_id) = payload.split_once(':')?;
    (from != origin && !session_id.is_empty()).then(|| Change::Session(session_id.to_owned()))
}

/// Starts the listener thread: it connects with `dial`, listens, and publishes other origins'
/// changes on `feed` until `stop` is set.
pub(crate) fn spawn(
    dial: impl Fn() -> crate::Result<Client> + Send + 'static,
    origin: String,
    feed: ChangeFeed,
    stop: Arc<AtomicBool>,
) {
    let started = std::thread::Builder::new()
        .name("runread-listen".into())
        .spawn(move || listen(&dial, &origin, &feed, &stop));
    if let Err(e) = started {
        // Waits still re-check on their own: slower, never wrong.
        tracing::warn!(error = %e, "no listener for other processes' changes");
    }
}

fn listen(
    dial: &dyn Fn() -> crate::Result<Client>,
    origin: &str,
    feed: &ChangeFeed,
    stop: &AtomicBool,
) {
    let mut backoff = LISTEN_POLL;
    let mut first = true;
    while !stop.load(Ordering::Acquire) {
        let mut client = match dial().and_then(|mut c| {
            c.batch_execute(&format!("LISTEN {CHANNEL}"))?;
            Ok(c)
        }) {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "listening for changes: connecting again");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(RELISTEN_BACKOFF_MAX);
                continue;
            }
        };
        backoff = LISTEN_POLL;
        if !first {
            feed.publish(Change::Unknown);
        }
        first = false;
        while !stop.load(Ordering::Acquire) && !client.is_closed() {
            let mut notifications = client.notifications();
            match notifications.timeout_iter(LISTEN_POLL).next() {
                Ok(Some(n)) => {
                    if let Some(change) = change_of(origin, n.payload()) {
                        feed.publish(change);
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "listening for changes: connection lost");
                    break;
                }
                Ok(None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_reads_other_origins_and_ignores_its_own() {
        let p = payload("a1", "session-x");
        assert_eq!(
            change_of("b2", &p),
            Some(Change::Session("session-x".into()))
        );
        assert_eq!(change_of("a1", &p), None);
        assert_eq!(change_of("b2", "no-colon"), None);
        assert_eq!(change_of("b2", "a1:"), None);
    }
}

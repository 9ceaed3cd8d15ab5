//! The change feed: what ingest and supervision publish when a session's runs change, and what
//! a waiting reader (`wait_for_run`) wakes on.
//!
//! A change is a hint, never an answer: it names the session whose runs (or supervised records)
//! changed, and a wait that wakes on it reads the run again through admission. So a change
//! published twice costs one more re-check, and a change missed costs at most one re-check
//! interval ([`runread_core::limits::WAIT_RECHECK_MS`]), never a wrong answer.
//!
//! Within one process every store publishes on its own feed after it commits. Between processes
//! and hosts on one PostgreSQL, the commit also sends `NOTIFY` on [`CHANNEL`] in the same
//! transaction, and a listener (started by the first wait, [`ChangeFeed::subscribe`]) turns what
//! it hears from other processes back into changes on this process's feed. Between processes on
//! one SQLite file, the first wait starts a watcher of the file's `data_version` (SQLite has no
//! `NOTIFY`), which announces any other connection's commit as [`Change::Unknown`].

use std::sync::Arc;

use runread_core::limits::CHANGE_FEED_CAPACITY;
use tokio::sync::broadcast;

/// The PostgreSQL channel changes are announced on.
pub const CHANNEL: &str = "runread_changes";

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The runs of this session (its index, or a supervisor's record of one of its runs).
    Session(String),
    /// An access request was filed or decided (in this process; another's decision is heard as
    /// [`Change::Unknown`] on SQLite, and by a wait's re-check on PostgreSQL).
    AccessRequest(String),
    /// Changes may have been missed (a listener reconnected): every wait re-checks.
    Unknown,
}

/// One process's feed of changes. Cheap to clone; every clone publishes to the same waits.
#[derive(Clone)]
pub struct ChangeFeed {
    sender: broadcast::Sender<Change>,
    /// Called once, by the first subscriber, with the feed: starts what brings other processes'
    /// changes in (PostgreSQL's listener). `None`: nothing to start (SQLite, or already started).
    start: Arc<std::sync::Mutex<Option<Starter>>>,
}

/// What the first subscriber starts.
pub(crate) type Starter = Box<dyn FnOnce(ChangeFeed) + Send>;

/// A [`ChangeFeed`] that ends when its store's does ([`ChangeFeed::downgrade`]).
pub(crate) struct WeakChangeFeed {
    sender: broadcast::WeakSender<Change>,
}

impl WeakChangeFeed {
    /// The feed, while its store lives. (Its starter is already spent: it started this.)
    pub(crate) fn upgrade(&self) -> Option<ChangeFeed> {
        self.sender.upgrade().map(|sender| ChangeFeed {
            sender,
            start: Arc::default(),
        })
    }
}

impl Default for ChangeFeed {
    fn default() -> Self {
        ChangeFeed::new(None)
    }
}

impl ChangeFeed {
    /// A feed; `start` (if any) runs when the first wait subscribes.
    pub(crate) fn new(start: Option<Starter>) -> ChangeFeed {
        let (sender, _) = broadcast::channel(CHANGE_FEED_CAPACITY);
        ChangeFeed {
            sender,
            start: Arc::new(std::sync::Mutex::new(start)),
        }
    }

    /// Tells every subscribed wait that `change` happened. Nobody listening is not an error.
    pub fn publish(&self, change: Change) {
        let _ = self.sender.send(change);
    }

    /// Whether any wait listens now.
    pub fn listening(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// A handle that does not keep the feed alive: what a listener thread holds, so that it
    /// ends with its store.
    pub(crate) fn downgrade(&self) -> WeakChangeFeed {
        WeakChangeFeed {
            sender: self.sender.downgrade(),
        }
    }

    /// A receiver of every change published from now on; the first one starts the listener for
    /// other processes' changes, if this store has one.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        let receiver = self.sender.subscribe();
        let start = self
            .start
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(start) = start {
            start(self.clone());
        }
        receiver
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    #[test]
    fn a_subscriber_hears_changes_published_after_it_subscribed() {
        let feed = ChangeFeed::default();
        feed.publish(Change::Session("before".into()));
        let mut rx = feed.subscribe();
        feed.publish(Change::Session("s1".into()));
        assert_eq!(rx.try_recv().ok(), Some(Change::Session("s1".into())));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn the_first_subscriber_starts_the_listener_once() {
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = count.clone();
        let feed = ChangeFeed::new(Some(Box::new(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        })));
        assert_eq!(count.load(Ordering::SeqCst), 0);
        let _a = feed.subscribe();
        let _b = feed.clone().subscribe();
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_subscriber_that_falls_behind_the_capacity_is_told_it_lagged() {
        let feed = ChangeFeed::default();
        let mut rx = feed.subscribe();
        for i in 0..=CHANGE_FEED_CAPACITY {
            feed.publish(Change::Session(i.to_string()));
        }
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(1))
        ));
    }
}

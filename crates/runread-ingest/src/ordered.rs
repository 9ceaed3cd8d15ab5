//! Work done on a few threads, its results taken back in the order it was handed out: the pool
//! and the reorder buffer of an ingest pass, apart from what the pass decides.
//!
//! The caller hands out items one at a time, in order: each is either already done
//! ([`InOrder::done`]) or work for the threads ([`InOrder::work`]); [`InOrder::next`] gives the
//! results back in that same order, each as soon as it and every one before it are there. The
//! threads start with the first piece of work (a pass with nothing to read starts none) and end
//! when the caller returns. A thread that panicked hands back nothing, and the caller hears of
//! it ([`Lost`]) rather than waiting for it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, PoisonError};
use std::thread::Scope;

/// A thread of the pool panicked, or the pool stopped: its result will not come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lost;

/// Whether a piece of work is the only one being done with none waiting: then it may use a
/// second thread of its own (reading ahead) without competing with the pool for the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alone {
    Yes,
    No,
}

/// Runs `drive` with a pool of up to `threads` threads doing `work`, and returns what it returns
/// once every thread has ended.
pub(crate) fn in_order<J, R, W, T>(
    threads: usize,
    work: W,
    drive: impl FnOnce(&mut InOrder<'_, '_, J, R, W>) -> T,
) -> T
where
    J: Send,
    R: Send,
    W: Fn(J, Alone) -> R + Sync,
{
    let (job_tx, job_rx) = channel::<(usize, J)>();
    let job_rx = Mutex::new(job_rx);
    let (done_tx, done_rx) = channel::<(usize, Option<R>)>();
    let busy = Busy::default();
    std::thread::scope(|scope| {
        let mut pool = InOrder {
            scope,
            threads: threads.max(1),
            work: &work,
            job_rx: &job_rx,
            busy: &busy,
            job_tx: Some(job_tx),
            done_tx: Some(done_tx),
            done_rx,
            ready: BTreeMap::new(),
            handed_out: 0,
            taken: 0,
            working: 0,
        };
        let out = drive(&mut pool);
        // The threads end when the work channel closes.
        pool.job_tx = None;
        out
    })
}

/// The pool as its caller drives it (see [`in_order`]).
pub(crate) struct InOrder<'scope, 'env, J, R, W> {
    scope: &'scope Scope<'scope, 'env>,
    threads: usize,
    work: &'env W,
    job_rx: &'env Mutex<Receiver<(usize, J)>>,
    busy: &'env Busy,
    job_tx: Option<Sender<(usize, J)>>,
    /// Until the threads start: each gets a clone.
    done_tx: Option<Sender<(usize, Option<R>)>>,
    done_rx: Receiver<(usize, Option<R>)>,
    /// Results that came back before one handed out earlier (`None`: its thread panicked).
    ready: BTreeMap<usize, Option<R>>,
    /// Items handed out so far (the next one's place).
    handed_out: usize,
    /// Results taken back so far (the next one to give).
    taken: usize,
    /// Pieces of work handed to the threads and not yet back.
    working: usize,
}

impl<'scope, 'env, J, R, W> InOrder<'scope, 'env, J, R, W>
where
    J: Send + 'env,
    R: Send + 'env,
    W: Fn(J, Alone) -> R + Sync,
{
    /// The next item, already done.
    pub(crate) fn done(&mut self, result: R) {
        self.ready.insert(self.handed_out, Some(result));
        self.handed_out += 1;
    }

    /// The next item, as work for the threads.
    pub(crate) fn work(&mut self, job: J) -> Result<(), Lost> {
        self.start();
        self.busy.queued.fetch_add(1, Ordering::Relaxed);
        let tx = self.job_tx.as_ref().ok_or(Lost)?;
        tx.send((self.handed_out, job)).map_err(|_| Lost)?;
        self.handed_out += 1;
        self.working += 1;
        Ok(())
    }

    /// Pieces of work handed to the threads and not yet taken back from them.
    pub(crate) fn working(&self) -> usize {
        self.working
    }

    /// The next result in order: at once if it is there, else after waiting for the threads;
    /// `None` when every item handed out was given back.
    pub(crate) fn next(&mut self) -> Result<Option<R>, Lost> {
        loop {
            if let Some(r) = self.next_ready()? {
                return Ok(Some(r));
            }
            if self.taken == self.handed_out {
                return Ok(None);
            }
            self.wait()?;
        }
    }

    /// The next result in order if it is there now, without waiting.
    pub(crate) fn next_ready(&mut self) -> Result<Option<R>, Lost> {
        let Some(r) = self.ready.remove(&self.taken) else {
            return Ok(None);
        };
        self.taken += 1;
        r.map(Some).ok_or(Lost)
    }

    /// Waits for one piece of work to come back from the threads.
    fn wait(&mut self) -> Result<(), Lost> {
        let (at, result) = self.done_rx.recv().map_err(|_| Lost)?;
        self.working -= 1;
        self.ready.insert(at, result);
        Ok(())
    }

    /// Starts the threads, once.
    fn start(&mut self) {
        let Some(done_tx) = self.done_tx.take() else {
            return;
        };
        for _ in 0..self.threads {
            let (done_tx, job_rx, busy, work) =
                (done_tx.clone(), self.job_rx, self.busy, self.work);
            self.scope.spawn(move || serve(work, job_rx, busy, done_tx));
        }
    }
}

/// One thread of the pool: takes the next piece of work, does it, and hands it back with its
/// place, until the work channel closes or the caller stops listening.
fn serve<J, R>(
    work: &(impl Fn(J, Alone) -> R + Sync),
    job_rx: &Mutex<Receiver<(usize, J)>>,
    busy: &Busy,
    done_tx: Sender<(usize, Option<R>)>,
) {
    loop {
        // One thread at a time waits for the next piece; the lock is not held while working.
        let job = job_rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((at, job)) = job else { break };
        let alone = busy.start();
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(job, alone))).ok();
        busy.end();
        if done_tx.send((at, result)).is_err() {
            break;
        }
    }
}

/// How many pieces of work wait and are being done. Counts, not locks: a late look only changes
/// whether a piece reads ahead.
#[derive(Default)]
struct Busy {
    queued: AtomicUsize,
    doing: AtomicUsize,
}

impl Busy {
    /// A thread took a queued piece: whether it is alone.
    fn start(&self) -> Alone {
        let waiting = self
            .queued
            .fetch_sub(1, Ordering::Relaxed)
            .saturating_sub(1);
        let doing = self.doing.fetch_add(1, Ordering::Relaxed) + 1;
        if waiting == 0 && doing == 1 {
            Alone::Yes
        } else {
            Alone::No
        }
    }

    fn end(&self) {
        self.doing.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results come back in the order handed out, whatever order the threads finish in, done
    /// items and work mixed.
    #[test]
    fn results_come_back_in_the_order_handed_out() {
        let got = in_order(
            4,
            |n: u64, _| {
                // Later items finish first.
                std::thread::sleep(std::time::Duration::from_millis(40 - n * 4));
                n
            },
            |pool| {
                let mut got = Vec::new();
                for n in 0..10u64 {
                    if n % 3 == 0 {
                        pool.done(n);
                    } else {
                        pool.work(n).unwrap();
                    }
                }
                while let Some(n) = pool.next().unwrap() {
                    got.push(n);
                }
                assert_eq!(pool.next(), Ok(None), "every item came back once");
                got
            },
        );
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }

    /// Nothing handed to the threads starts none, and a lone piece of work is alone.
    #[test]
    fn a_lone_piece_of_work_is_alone() {
        let alone = in_order(
            2,
            |(), alone| alone,
            |pool| {
                assert!(pool.done_tx.is_some(), "no thread before the first work");
                pool.work(()).unwrap();
                pool.next().unwrap()
            },
        );
        assert_eq!(alone, Some(Alone::Yes));
    }

    /// A thread that panics loses its result: the caller hears `Lost`, it does not hang.
    #[test]
    fn a_panicking_piece_of_work_is_lost() {
        let r = in_order(
            2,
            |n: u32, _| {
                assert!(n != 1, "this piece fails");
                n
            },
            |pool| {
                pool.work(0).unwrap();
                pool.work(1).unwrap();
                (pool.next(), pool.next())
            },
        );
        assert_eq!(r.0, Ok(Some(0)));
        assert_eq!(r.1, Err(Lost));
    }
}

//! The bound on calls per reader ([`READER_CALLS_PER_MINUTE_MAX`], or the owner's
//! `serve --calls-per-minute`): every gated call writes a start record and a receipt, so this is
//! what bounds how fast one key grows the store. A token bucket per reader: as many calls at once
//! as the bound, refilled at the bound per minute; a call beyond it is refused `busy` before it
//! reaches the gate (and writes nothing to the gate's log; the refusal log keeps one `busy` a
//! minute per reader: [`CallRate::first_busy_of_minute`]).
//!
//! Per process: each gateway of a shared store counts its own calls.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use runread_core::limits::READER_CALLS_PER_MINUTE_MAX;

/// Readers the counter tracks at most; beyond, the buckets that are full again (their readers
/// idle for a minute or more) are forgotten first.
pub const RATE_READERS_TRACKED_MAX: usize = 4_096;

/// One reader's bucket: calls left (in thousandths of a call) and when it was last filled.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    milli_calls: u64,
    at_ms: i64,
    /// The minute (its start, ms) of the last `busy` the refusal log was given.
    busy_logged_minute: i64,
}

/// The call rate of every reader, bounded at `per_minute`.
#[derive(Debug)]
pub struct CallRate {
    per_minute: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Default for CallRate {
    fn default() -> Self {
        CallRate::new(READER_CALLS_PER_MINUTE_MAX)
    }
}

impl CallRate {
    pub fn new(per_minute: u32) -> CallRate {
        CallRate {
            per_minute: per_minute.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn full(&self) -> u64 {
        u64::from(self.per_minute) * 1_000
    }

    /// Takes one call of `reader_id`'s at `now_ms`: false when it has none left.
    pub fn take(&self, reader_id: &str, now_ms: i64) -> bool {
        let full = self.full();
        // A counter of plain numbers, each written whole: still consistent after a panic.
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= RATE_READERS_TRACKED_MAX && !buckets.contains_key(reader_id) {
            let refilled = |b: &Bucket| self.refilled(b, now_ms) >= full;
            buckets.retain(|_, b| !refilled(b));
        }
        let bucket = buckets.entry(reader_id.to_owned()).or_insert(Bucket {
            milli_calls: full,
            at_ms: now_ms,
            busy_logged_minute: i64::MIN,
        });
        let left = self.refilled(bucket, now_ms);
        let allowed = left >= 1_000;
        *bucket = Bucket {
            milli_calls: if allowed { left - 1_000 } else { left },
            at_ms: now_ms.max(bucket.at_ms),
            busy_logged_minute: bucket.busy_logged_minute,
        };
        allowed
    }

    /// Whether `reader_id`'s call refused `busy` at `now_ms` is the first of its minute, which
    /// the refusal log keeps: a reader past its bound makes calls as fast as it can, and a row
    /// for each would push every other refusal out of the log.
    pub fn first_busy_of_minute(&self, reader_id: &str, now_ms: i64) -> bool {
        let minute = now_ms.div_euclid(60_000);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        match buckets.get_mut(reader_id) {
            Some(b) if b.busy_logged_minute == minute => false,
            Some(b) => {
                b.busy_logged_minute = minute;
                true
            }
            None => true,
        }
    }

    /// What `b` holds at `now_ms`: refilled at `per_minute` a minute (a thousandth of a call per
    /// `60 / per_minute` ms), never past full; a clock that stepped back refills nothing.
    fn refilled(&self, b: &Bucket, now_ms: i64) -> u64 {
        let elapsed = u64::try_from(now_ms.saturating_sub(b.at_ms)).unwrap_or(0);
        let refill = elapsed.saturating_mul(u64::from(self.per_minute)) / 60;
        b.milli_calls.saturating_add(refill).min(self.full())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_makes_its_bound_at_once_and_not_one_more() {
        let r = CallRate::new(READER_CALLS_PER_MINUTE_MAX);
        for i in 0..READER_CALLS_PER_MINUTE_MAX {
            assert!(r.take("a", 1_000), "call {i}");
        }
        assert!(!r.take("a", 1_000), "N + 1");
        assert!(r.take("b", 1_000), "another reader has its own");
    }

    #[test]
    fn the_bound_refills_at_its_rate_and_never_past_full() {
        let r = CallRate::new(60);
        for _ in 0..60 {
            assert!(r.take("a", 0));
        }
        assert!(!r.take("a", 999), "a call a second: not yet");
        assert!(r.take("a", 1_000), "one second, one call");
        assert!(!r.take("a", 1_000));
        // A long idle time fills it to the bound, not beyond.
        for _ in 0..60 {
            assert!(r.take("a", 10_000_000));
        }
        assert!(!r.take("a", 10_000_000));
        // A clock that steps back refills nothing.
        assert!(!r.take("a", 0));
    }

    #[test]
    fn the_readers_tracked_are_bounded() {
        let r = CallRate::new(10);
        for i in 0..RATE_READERS_TRACKED_MAX + 10 {
            assert!(r.take(&format!("r{i}"), 0));
        }
        let tracked = r.buckets.lock().unwrap().len();
        assert!(tracked <= RATE_READERS_TRACKED_MAX + 10);
        // A minute later every bucket is full again: they are forgotten to make room.
        assert!(r.take("late", 60_000));
        assert!(r.buckets.lock().unwrap().len() <= 2);
    }

    #[test]
    fn a_readers_busy_is_logged_once_a_minute() {
        let rate = CallRate::new(1);
        assert!(rate.take("r", 60_000));
        assert!(!rate.take("r", 60_001));
        assert!(rate.first_busy_of_minute("r", 60_001));
        assert!(!rate.first_busy_of_minute("r", 119_999));
        assert!(rate.first_busy_of_minute("r", 120_000));
        assert!(rate.first_busy_of_minute("another", 120_000));
    }
}

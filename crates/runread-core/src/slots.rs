//! Slots bounded in all and per key: what a caller may hold at once, so that one key (a reader's
//! key hash, a reader id) never takes more than its share and everyone together never more than
//! the whole. The transport's body readers and the service's waits are two such bounds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// At most `total_max` slots held at once, at most `per_key_max` of them by one key.
#[derive(Debug)]
pub struct KeyedSlots {
    total_max: usize,
    per_key_max: usize,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    /// Slots held per key; a key holding none has no entry.
    per_key: HashMap<String, usize>,
}

/// One slot; given back when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<KeyedSlots>,
    key: String,
}

impl KeyedSlots {
    pub fn new(total_max: usize, per_key_max: usize) -> Arc<KeyedSlots> {
        Arc::new(KeyedSlots {
            total_max,
            per_key_max,
            held: Mutex::new(Held::default()),
        })
    }

    /// A slot for `key`, or `None` when the key or everyone is at the bound.
    pub fn try_take(self: &Arc<Self>, key: &str) -> Option<Slot> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = held.per_key.get(key).copied().unwrap_or(0);
        if mine >= self.per_key_max || held.total >= self.total_max {
            return None;
        }
        held.total += 1;
        held.per_key.insert(key.to_owned(), mine + 1);
        Some(Slot {
            slots: self.clone(),
            key: key.to_owned(),
        })
    }

    /// Slots held now, in all.
    pub fn held(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self
            .slots
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        held.total = held.total.saturating_sub(1);
        if let Some(n) = held.per_key.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.per_key.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_share_and_gets_it_back() {
        let slots = KeyedSlots::new(10, 3);
        let mut mine: Vec<Slot> = (0..3).map(|_| slots.try_take("a").unwrap()).collect();
        assert!(
            slots.try_take("a").is_none(),
            "one more than the key's share"
        );
        let other = slots.try_take("b").unwrap();
        mine.pop();
        assert!(slots.try_take("a").is_some());
        drop(other);
        drop(mine);
        assert_eq!(slots.held(), 0);
    }

    #[test]
    fn every_key_together_holds_at_most_the_total() {
        let slots = KeyedSlots::new(4, 2);
        let held: Vec<Slot> = (0..4)
            .map(|i| slots.try_take(&format!("k{}", i / 2)).unwrap())
            .collect();
        assert_eq!(slots.held(), 4);
        assert!(slots.try_take("fresh").is_none(), "one more than the total");
        drop(held);
        assert!(slots.try_take("fresh").is_some());
    }
}

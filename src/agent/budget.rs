//! `IterationBudget`: how many model calls one turn may make (90 for a parent, 50 for a child).

use std::sync::atomic::{AtomicU32, Ordering};

/// A thread-safe counter of model calls. `refund()` gives back an iteration that should not count
/// (e.g. a retry after compression).
#[derive(Debug)]
pub struct IterationBudget {
    max: u32,
    used: AtomicU32,
}

impl IterationBudget {
    pub fn new(max: u32) -> Self {
        IterationBudget {
            max,
            used: AtomicU32::new(0),
        }
    }

    /// Takes one iteration; false when the budget is spent.
    pub fn consume(&self) -> bool {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                (u < self.max).then_some(u + 1)
            })
            .is_ok()
    }

    /// Gives one iteration back (never below zero).
    pub fn refund(&self) {
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| u.checked_sub(1));
    }

    pub fn used(&self) -> u32 {
        self.used.load(Ordering::SeqCst)
    }

    pub fn remaining(&self) -> u32 {
        self.max.saturating_sub(self.used())
    }

    pub fn max(&self) -> u32 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_until_spent_then_refund() {
        let b = IterationBudget::new(2);
        assert!(b.consume());
        assert!(b.consume());
        assert!(!b.consume());
        assert_eq!(b.remaining(), 0);
        b.refund();
        assert_eq!(b.remaining(), 1);
        assert!(b.consume());
        let empty = IterationBudget::new(0);
        empty.refund();
        assert_eq!(empty.used(), 0);
        assert!(!empty.consume());
    }
}

//! Admission for background reviews (memory and skill reviews that run after a turn).
//!
//! Each review is a whole agent holding a copy of the conversation and making its own model
//! calls. In the gateway a hundred chats can reach their review interval in the same minute;
//! without a bound that is a hundred agents and a hundred model connections at once (the soak
//! showed the HTTP pool and the heap ratcheting up with every such burst). So at most
//! [`MAX_RUNNING`] reviews run at a time, at most [`MAX_ADMITTED`] are accepted (running or
//! waiting), and a review refused now is simply due again after the next turn.
//!
//! The line belongs to `Services` (one per process, or one per test), never to a static.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Reviews running at the same time.
pub const MAX_RUNNING: usize = 2;
/// Reviews accepted (running plus waiting for a slot); past this, new ones are deferred.
pub const MAX_ADMITTED: usize = 8;

/// A bounded line: `max_admitted` places, of which `running` may run at once. Clones share
/// the line.
#[derive(Debug, Clone)]
pub struct Admission {
    inner: Arc<Line>,
}

#[derive(Debug)]
struct Line {
    running: Arc<Semaphore>,
    admitted: AtomicUsize,
    max_admitted: usize,
}

/// A review's place in line. Dropping it (done, failed or never started) frees the place.
#[derive(Debug)]
pub struct Ticket {
    line: Arc<Line>,
}

impl Default for Admission {
    fn default() -> Self {
        Admission::new(MAX_RUNNING, MAX_ADMITTED)
    }
}

impl Admission {
    pub fn new(running: usize, max_admitted: usize) -> Self {
        Admission {
            inner: Arc::new(Line {
                running: Arc::new(Semaphore::new(running)),
                admitted: AtomicUsize::new(0),
                max_admitted,
            }),
        }
    }

    /// A place for one more review, or `None` when the line is full.
    pub fn admit(&self) -> Option<Ticket> {
        let line = &self.inner;
        line.admitted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < line.max_admitted).then_some(n + 1)
            })
            .ok()
            .map(|_| Ticket { line: line.clone() })
    }

    /// Reviews admitted and not finished (running or waiting).
    pub fn admitted(&self) -> usize {
        self.inner.admitted.load(Ordering::SeqCst)
    }
}

impl Ticket {
    /// Waits for a running slot; the review runs while the returned permit lives.
    pub async fn run_slot(&self) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed; `None` would only mean that it was.
        self.line.running.clone().acquire_owned().await.ok()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.line.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admission_is_bounded_and_slots_limit_running() {
        let line = Admission::new(2, 4);
        let tickets: Vec<Ticket> = std::iter::from_fn(|| line.admit()).collect();
        assert_eq!(tickets.len(), 4);
        assert!(line.admit().is_none(), "a full line refuses");
        let first = tickets[0].run_slot().await.unwrap();
        let _second = tickets[1].run_slot().await.unwrap();
        let third =
            tokio::time::timeout(std::time::Duration::from_millis(50), tickets[2].run_slot()).await;
        assert!(third.is_err(), "only two run at once");
        drop(first);
        assert!(tickets[2].run_slot().await.is_some());
        drop(tickets);
        assert_eq!(line.admitted(), 0, "finished reviews free their places");
        assert!(line.admit().is_some());
        // Two lines do not share places.
        let other = Admission::new(1, 1);
        let _held = other.admit().unwrap();
        assert!(other.admit().is_none());
        assert!(line.admit().is_some());
    }
}

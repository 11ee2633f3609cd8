//! The async door to the store. There is one connection, so one query runs at a time: async
//! callers wait their turn on a semaphore, and only the caller whose turn it is occupies a
//! blocking thread. Without the queue a burst of turns parked one blocking thread each on the
//! connection's mutex (74 threads in the gateway soak), and each thread's allocator arena kept
//! its own fragments, so RSS kept climbing.

use std::sync::Arc;

use super::{SessionStore, StoreError};

impl SessionStore {
    /// Runs `f` on a blocking thread once the connection is free. Cancelling the returned future
    /// before its turn costs nothing; after that, the call completes and keeps the turn until it
    /// is done, so the next caller never waits on the mutex from a thread of its own.
    pub async fn call<T, F>(self: &Arc<Self>, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&SessionStore) -> Result<T, StoreError> + Send + 'static,
    {
        let turn = self
            .queue
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?;
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let out = f(&store);
            drop(turn);
            out
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_run_one_at_a_time_and_all_complete() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SessionStore::open(&dir.path().join("state.db")).unwrap());
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..40 {
            let (store, running, most) = (store.clone(), running.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                store
                    .call(move |_| {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(2));
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok(i)
                    })
                    .await
            }));
        }
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await.unwrap().unwrap());
        }
        results.sort();
        assert_eq!(results, (0..40).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 1, "two store calls overlapped");
    }

    #[tokio::test]
    async fn an_error_from_the_call_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SessionStore::open(&dir.path().join("state.db")).unwrap());
        let err = store
            .call(|_| -> Result<(), StoreError> { Err(StoreError::SessionNotFound("nope".into())) })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("`nope` does not exist"), "{err}");
    }
}

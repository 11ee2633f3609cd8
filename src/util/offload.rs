//! The one off-runtime helper: blocking work (file reads and writes, lock waits, SQLite scans,
//! the system-prompt build) called from async code goes through [`offload`] or
//! [`offload_detached`], so a slow disk or a held lock costs one blocking-pool thread, never a
//! runtime worker that other chats are waiting on.
//!
//! Outside a tokio runtime (CLI subcommands, unit tests) the work simply runs inline.

/// The blocking task ended without a value (it panicked or the runtime is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("the background work `{what}` stopped before it finished ({message}); try again")]
pub struct OffloadError {
    pub what: &'static str,
    pub message: String,
}

/// Runs `work` on the blocking pool and waits for its value. `what` names the work in errors.
pub async fn offload<T, F>(what: &'static str, work: F) -> Result<T, OffloadError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(work());
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| OffloadError {
            what,
            message: e.to_string(),
        })
}

/// Starts `work` on the blocking pool without waiting for it (persistence nobody awaits).
/// Without a runtime it runs inline.
pub fn offload_detached<F>(what: &'static str, work: F)
where
    F: FnOnce() + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            drop(handle.spawn_blocking(work));
        }
        Err(_) => {
            tracing::debug!(what, "no async runtime: running inline");
            work();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn blocking_work_does_not_hold_the_runtime() {
        // A single-threaded runtime: if the sleep ran on it, the ticker could not advance.
        let ticker = tokio::spawn(async {
            let mut ticks = 0;
            for _ in 0..5 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                ticks += 1;
            }
            ticks
        });
        let value = offload("test sleep", || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            7
        })
        .await
        .unwrap();
        assert_eq!(value, 7);
        assert!(
            ticker.is_finished(),
            "the runtime kept running during the blocking work"
        );
        assert_eq!(ticker.await.unwrap(), 5);
    }

    #[test]
    fn without_a_runtime_work_runs_inline() {
        let (tx, rx) = std::sync::mpsc::channel();
        offload_detached("inline", move || tx.send(3).unwrap());
        assert_eq!(rx.try_recv().unwrap(), 3);
    }
}

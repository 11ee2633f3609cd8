//! Hands freed heap back to the operating system while the gateway runs for days.
//!
//! glibc keeps memory freed by worker threads in its arenas and returns it only when the top of
//! an arena happens to be free, so after a burst (a thousand chats at once, then quiet) the
//! process would keep its peak RSS. `malloc_trim(0)` walks every arena and releases whole free
//! pages. It runs shortly after sessions leave memory (that is when much was freed; evictions
//! come in bursts, so it waits for the burst to settle) and otherwise every `PERIOD`.
//! Measured by `cargo bench --bench gateway` (RSS after a 1,000-session burst went idle).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A trim at least this often, even when nothing was evicted.
pub const PERIOD: Duration = Duration::from_secs(30);
/// After an eviction, wait this long for the rest of the burst before trimming.
pub const SETTLE: Duration = Duration::from_secs(1);

/// Returns free heap pages to the OS (glibc); a no-op with other C libraries.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only takes the allocator's own locks and touches no caller memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Logs (at debug) where the process's memory is after a trim, for operators chasing growth:
/// heap in use, heap free but kept by the allocator, large blocks mapped on their own, and what
/// SQLite holds (its page cache and statements; its high-water mark since start).
fn report() {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: both only read allocator / SQLite counters.
        let (heap, sqlite_now, sqlite_peak) = unsafe {
            (
                libc::mallinfo2(),
                rusqlite::ffi::sqlite3_memory_used(),
                rusqlite::ffi::sqlite3_memory_highwater(0),
            )
        };
        let kib = |b: usize| b / 1024;
        tracing::debug!(
            heap_in_use_kib = kib(heap.uordblks),
            heap_free_kept_kib = kib(heap.fordblks),
            heap_arena_kib = kib(heap.arena),
            mapped_blocks_kib = kib(heap.hblkhd),
            sqlite_kib = sqlite_now / 1024,
            sqlite_peak_kib = sqlite_peak / 1024,
            "memory after trim"
        );
    }
}

/// Told when memory was freed in bulk (a session left memory); trims soon after.
#[derive(Default)]
pub struct Trimmer {
    freed: Notify,
}

impl Trimmer {
    /// Something big was dropped; a trim follows within about `SETTLE`.
    pub fn note_freed(&self) {
        // One stored permit is enough: a trim after the latest note covers all earlier ones.
        self.freed.notify_one();
    }

    /// Trims after each burst of notes and every `period`, until `shutdown`.
    pub async fn run(
        self: Arc<Self>,
        period: Duration,
        settle: Duration,
        shutdown: CancellationToken,
    ) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.freed.notified() => {
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = tokio::time::sleep(settle) => {}
                    }
                }
                _ = tokio::time::sleep(period) => {}
            }
            // Off the async workers: a trim holds each arena's lock while it walks it.
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
            report();
        }
    }
}

//! Keeps the gateway's bookkeeping in state.db from growing forever. Every inbound update is
//! recorded (with its event) and every answer goes through the delivery ledger (with its text),
//! so a busy bot adds megabytes a day that nothing reads once the turn is answered and delivered.
//! Those finished records are deleted once older than `gateway.ledger_retention_days` (default
//! 7); the conversation itself stays in `messages`. Runs at startup and every `PERIOD`.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::sessions::SessionStore;

/// How often old records are looked for.
pub const PERIOD: Duration = Duration::from_secs(3600);

/// Deletes finished records older than `keep` now, then every `period`, until `shutdown`.
pub async fn run(
    store: Arc<SessionStore>,
    keep: Duration,
    period: Duration,
    shutdown: CancellationToken,
) {
    loop {
        let before = crate::gateway::unix_now() - keep.as_secs_f64();
        match store.call(move |s| s.gateway_prune(before)).await {
            Ok((0, 0)) => {}
            Ok((inbound, outbound)) => {
                tracing::info!(inbound, outbound, "old gateway records pruned")
            }
            // Pruning is housekeeping: a failure is retried next period, never fatal.
            Err(e) => tracing::warn!(error = %e, "cannot prune old gateway records"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(period) => {}
        }
    }
}

//! The API server's accept loop, built to survive a hostile network.
//!
//! `axum::serve` has no header-read timeout, no connection cap and stops on nothing but spins on
//! accept errors; found when tried as an attacker would: 3,000 half-sent requests were held open
//! for 40 s and 20,000 exhausted the file descriptors so real clients timed out. So this loop:
//! - reads request headers under a deadline (`header_timeout`, hyper's `header_read_timeout`):
//!   a half-sent request loses its connection, not the server its slot;
//! - caps open connections (`max_connections`) and connections per peer IP
//!   (`max_connections_per_ip`): past a cap the new connection is closed at once, so one noisy
//!   address cannot crowd out everyone else;
//! - backs off when `accept` fails (out of file descriptors: EMFILE/ENFILE, or any other error)
//!   instead of spinning on the error or dying, and logs it at most once a second.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::gateway::session::lock;

/// How long a failing `accept` waits before trying again (doubling up to the maximum).
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_millis(500);
/// Open connections get this long to finish once shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Connection limits of the API server (`gateway.api_server.*` in config.yaml).
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionLimits {
    /// A client must send its whole request head within this long (`header_timeout`, s).
    pub header_timeout: Duration,
    /// Open connections at once (`max_connections`).
    pub max_connections: usize,
    /// Open connections from one IP address (`max_connections_per_ip`).
    pub max_per_ip: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 512,
            max_per_ip: 64,
        }
    }
}

/// Open connections per peer address; an entry leaves when its last connection closes.
#[derive(Default)]
struct PerIp {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place in [`PerIp`], given back on drop.
struct IpSlot {
    table: Arc<PerIp>,
    ip: IpAddr,
}

impl PerIp {
    fn try_take(table: &Arc<PerIp>, ip: IpAddr, max: usize) -> Option<IpSlot> {
        let mut open = lock(&table.open);
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(IpSlot {
            table: table.clone(),
            ip,
        })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.table.open);
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Logs a repeating condition at most once a second, with how often it happened meanwhile.
struct Throttled {
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttled {
    fn new() -> Self {
        Throttled {
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(count since the last report)` when it is time to report again.
    fn due(&mut self) -> Option<u64> {
        self.suppressed += 1;
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return None;
        }
        self.last = Some(Instant::now());
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Serves `app` on `listener` until `shutdown`, under `limits`.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let per_ip = Arc::new(PerIp::default());
    let mut backoff = ACCEPT_BACKOFF_MIN;
    let (mut accept_errors, mut refused) = (Throttled::new(), Throttled::new());
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(a) => {
                backoff = ACCEPT_BACKOFF_MIN;
                a
            }
            Err(e) => {
                // Out of file descriptors (or another transient failure): the pending
                // connection stays in the backlog; wait for connections to close, then retry.
                if let Some(n) = accept_errors.due() {
                    tracing::warn!(error = %e, times = n, ?backoff, "API server cannot accept a connection; backing off");
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let Some(ip_slot) = PerIp::try_take(&per_ip, peer.ip(), limits.max_per_ip) else {
            if let Some(n) = refused.due() {
                tracing::warn!(ip = %peer.ip(), times = n, "API server: too many connections from one address; closed");
            }
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if let Some(n) = refused.due() {
                tracing::warn!(
                    times = n,
                    max = limits.max_connections,
                    "API server: connection cap reached; closed"
                );
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let _held = (slot, ip_slot);
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(peer = %peer, error = %e, "API connection ended with an error");
                    }
                }
                _ = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
                }
            }
        });
    }
    // Every connection holds a slot: all slots back means all connections closed.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, slots.acquire_many(all)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_ip_slots_are_capped_and_given_back() {
        let table = Arc::new(PerIp::default());
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let a = PerIp::try_take(&table, ip, 2).unwrap();
        let _b = PerIp::try_take(&table, ip, 2).unwrap();
        assert!(PerIp::try_take(&table, ip, 2).is_none());
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(PerIp::try_take(&table, other, 2).is_some());
        drop(a);
        assert!(PerIp::try_take(&table, ip, 2).is_some());
    }

    #[test]
    fn the_table_forgets_closed_addresses() {
        let table = Arc::new(PerIp::default());
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        drop(PerIp::try_take(&table, ip, 1));
        assert!(lock(&table.open).is_empty());
    }

    #[test]
    fn throttled_reports_once_per_second() {
        let mut t = Throttled::new();
        assert_eq!(t.due(), Some(1));
        assert_eq!(t.due(), None);
        assert_eq!(t.due(), None);
        t.last = Some(Instant::now() - Duration::from_secs(2));
        assert_eq!(t.due(), Some(3));
    }
}

//! The HTTP client setup shared by the model providers and the platform adapters: a rustls
//! crypto provider installed, TLS whose root certificates load at the first handshake
//! (`tls.rs`: building a client reads no certificate files), and a bounded pool of idle
//! connections.
//!
//! reqwest keeps every connection it ever needed at once (90 s idle, no count limit). In the
//! gateway, a burst of parallel turns left dozens of idle connections with their buffers for the
//! rest of the burst's life, which the soak saw as RSS ratcheting up with each busier minute.

use std::time::Duration;

/// Idle connections kept per host; a busier moment opens more and closes them once idle.
pub const MAX_IDLE_PER_HOST: usize = 4;
/// How long an idle connection is kept for reuse.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// reqwest (built without a bundled crypto provider) panics when it builds a client and no rustls
/// provider is installed. `main` installs ring; library users and tests may not have.
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: some provider is then installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A client builder with the crypto provider in place, lazily loaded TLS roots and the idle
/// pool bounded.
pub fn client_builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    ensure_crypto_provider();
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_max_idle_per_host(MAX_IDLE_PER_HOST)
        .pool_idle_timeout(IDLE_TIMEOUT);
    match super::tls::client_config() {
        Ok(tls) => builder.tls_backend_preconfigured(tls),
        // Not expected (ring supports the default versions); reqwest's own set-up still works.
        Err(e) => {
            tracing::warn!(error = %e, "cannot prepare the lazy TLS set-up; using reqwest's");
            builder
        }
    }
}

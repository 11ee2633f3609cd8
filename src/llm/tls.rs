//! TLS for every HTTP client hermes builds: rustls (ring) with the platform verifier, whose
//! root certificates are loaded at the first TLS handshake — once per process — instead of each
//! time a client is built.
//!
//! Why: reqwest builds `rustls_platform_verifier::Verifier` inside `ClientBuilder::build`, and
//! on Linux that reads every file under `/etc/ssl/certs` (~290 files, ~900 system calls, a few
//! milliseconds) before the client exists. That sat on the start path of every front end, and
//! each extra client (Telegram, hubs, model probes) loaded its own copy. A model server on an
//! `http://` URL (a local server, the test mock) never needs roots at all; for an `https://`
//! model, [`prewarm`] starts the load on a background thread while the rest of start-up runs.
//!
//! Verification is unchanged: certificates are checked by the same platform verifier (same
//! roots, same `SSL_CERT_FILE`/`SSL_CERT_DIR` handling, same errors); only *when* it is built
//! moved. The handshake signature checks need no roots and use the provider's algorithms,
//! exactly as `WebPkiServerVerifier` does.
//!
//! The loaded verifier is a process-wide `LazyLock`, like a compiled regex: immutable data read
//! from the system, not state a `Services` owns (two `Services` in a test share it harmlessly).

use std::sync::{Arc, LazyLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The platform verifier, built (roots read) on first use.
static PLATFORM: LazyLock<Result<Arc<rustls_platform_verifier::Verifier>, rustls::Error>> =
    LazyLock::new(|| {
        let started = std::time::Instant::now();
        let verifier = rustls_platform_verifier::Verifier::new(provider())
            .map(Arc::new)
            .map_err(|e| {
                rustls::Error::General(format!(
                    "cannot load the system's root certificates ({e}); install the \
                     ca-certificates package or point SSL_CERT_FILE at a CA bundle"
                ))
            });
        tracing::debug!(elapsed = ?started.elapsed(), ok = verifier.is_ok(), "TLS roots loaded");
        verifier
    });

/// The installed crypto provider (`main` installs ring), else ring.
fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// Starts loading the root certificates on a background thread (an `https://` model is about
/// to be called): the load then overlaps the rest of start-up and the TCP connect. Harmless
/// when they are loaded already or a thread cannot be started (the handshake loads them).
pub fn prewarm() {
    if LazyLock::get(&PLATFORM).is_some() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("tls-roots".into())
        .spawn(|| {
            LazyLock::force(&PLATFORM);
        });
}

/// True when `url` is reached over TLS (its client will need the roots).
pub fn needs_roots(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

/// A rustls client configuration as reqwest would build it by default (TLS 1.2 and 1.3,
/// ALPN h2 then http/1.1, SNI on), with the lazily loaded platform verifier.
pub fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = provider();
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyPlatformVerifier { provider }))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Verifies server certificates with the platform verifier, loading it at the first handshake.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &*PLATFORM {
            Ok(verifier) => verifier.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ),
            Err(e) => Err(e.clone()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_urls_need_roots_and_plain_http_does_not() {
        assert!(needs_roots("https://api.openai.com/v1"));
        assert!(needs_roots("HTTPS://example.com"));
        assert!(!needs_roots("http://127.0.0.1:8080/v1"));
        assert!(!needs_roots("http"));
        assert!(!needs_roots(""));
    }

    #[test]
    fn config_offers_h2_then_http1_and_both_tls_versions() {
        let config = client_config().unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(config.enable_sni);
        let schemes = LazyPlatformVerifier {
            provider: provider(),
        }
        .supported_verify_schemes();
        assert!(schemes.contains(&SignatureScheme::ECDSA_NISTP256_SHA256));
        assert!(schemes.contains(&SignatureScheme::RSA_PSS_SHA256));
    }
}

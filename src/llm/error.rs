//! `LlmError` and the closed `FailoverReason` enum the agent loop decides from.
//!
//! Classification looks at the HTTP status first and the provider's own error body second; the
//! body is kept verbatim (redacted) so the user sees what the provider said.

use std::fmt;
use std::time::Duration;

/// Why a model call failed. The loop chooses retry/rotate/compress/fallback from this alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailoverReason {
    Auth,
    AuthPermanent,
    Billing,
    RateLimit,
    Overloaded,
    ServerError,
    Timeout,
    ContextOverflow,
    ModelNotFound,
    FormatError,
    Unknown,
}

impl FailoverReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FailoverReason::Auth => "auth",
            FailoverReason::AuthPermanent => "auth_permanent",
            FailoverReason::Billing => "billing",
            FailoverReason::RateLimit => "rate_limit",
            FailoverReason::Overloaded => "overloaded",
            FailoverReason::ServerError => "server_error",
            FailoverReason::Timeout => "timeout",
            FailoverReason::ContextOverflow => "context_overflow",
            FailoverReason::ModelNotFound => "model_not_found",
            FailoverReason::FormatError => "format_error",
            FailoverReason::Unknown => "unknown",
        }
    }

    /// Worth trying the same request again after a pause.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            FailoverReason::RateLimit
                | FailoverReason::Overloaded
                | FailoverReason::ServerError
                | FailoverReason::Timeout
                | FailoverReason::Unknown
        )
    }
}

impl fmt::Display for FailoverReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed model call.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", self.describe())]
pub struct LlmError {
    pub reason: FailoverReason,
    /// HTTP status, when the failure came from a response.
    pub status: Option<u16>,
    /// The provider's own error body (or the transport error text), secrets redacted.
    pub body: String,
    /// Server-requested delay (`Retry-After`), if any.
    pub retry_after: Option<Duration>,
    /// The endpoint that failed, for the user's benefit.
    pub endpoint: String,
    /// True when some output was already streamed before the failure.
    pub partial: bool,
    /// The connection was refused by a loopback address: nothing listens on that port (a local
    /// server that is not running, or a wrong port), which waiting rarely fixes.
    pub refused_locally: bool,
}

/// Whether `err` (any layer of it) is a refused TCP connection and `url`'s host is loopback.
pub fn refused_on_loopback(err: &(dyn std::error::Error + 'static), url: &str) -> bool {
    let mut current = Some(err);
    let mut refused = false;
    while let Some(e) = current {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            refused = true;
            break;
        }
        current = e.source();
    }
    refused && is_loopback_url(url)
}

/// `http://127.0.0.1:8080/v1`, `http://localhost/…`, `http://[::1]:…` are loopback.
fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl LlmError {
    pub fn new(reason: FailoverReason, body: impl Into<String>) -> Self {
        LlmError {
            reason,
            status: None,
            body: crate::security::redact::redact(&body.into()),
            retry_after: None,
            endpoint: String::new(),
            partial: false,
            refused_locally: false,
        }
    }

    fn describe(&self) -> String {
        let mut out = format!("LLM request failed ({})", self.reason);
        if let Some(status) = self.status {
            out.push_str(&format!(" with HTTP {status}"));
        }
        if !self.endpoint.is_empty() {
            out.push_str(&format!(" at {}", self.endpoint));
        }
        if !self.body.is_empty() {
            let body: String = self.body.chars().take(2000).collect();
            out.push_str(&format!(": {}", body.trim()));
        }
        if let Some(hint) = self.hint() {
            out.push_str(&format!("\nhint: {hint}"));
        }
        out
    }

    fn hint(&self) -> Option<&'static str> {
        match self.reason {
            FailoverReason::Auth | FailoverReason::AuthPermanent => Some(
                "check the API key (--api-key, OPENAI_API_KEY or model.api_key in config.yaml)",
            ),
            FailoverReason::Billing => Some("the provider reports a billing or quota problem"),
            FailoverReason::ModelNotFound => Some("check the model name (-m/--model)"),
            FailoverReason::ContextOverflow => {
                Some("the conversation is larger than the model's context window")
            }
            _ => None,
        }
    }

    /// Classify an HTTP error response from its status and body.
    pub fn from_http(status: u16, body: &str, retry_after: Option<Duration>) -> Self {
        let mut err = LlmError::new(classify(Some(status), body), body);
        err.status = Some(status);
        err.retry_after = retry_after;
        err
    }
}

/// Maps a status code and provider body to a reason. Body patterns refine the status (a 400 that
/// says "context length" is an overflow, a 429 that says "quota" is billing).
pub fn classify(status: Option<u16>, body: &str) -> FailoverReason {
    let lower = body.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    const BILLING: &[&str] = &[
        "insufficient_quota",
        "insufficient credits",
        "insufficient_credits",
        "exceeded your current quota",
        "payment required",
        "payment_required",
        "billing",
        "balance_depleted",
        "no_usable_credits",
        "out of extra usage",
    ];
    const OVERFLOW: &[&str] = &[
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "too many tokens",
        "prompt is too long",
        "reduce the length",
    ];
    const REVOKED: &[&str] = &[
        "token_revoked",
        "token_invalidated",
        "invalid_grant",
        "revoked",
        "deactivated",
    ];
    match status {
        Some(401) | Some(403) if has(REVOKED) => FailoverReason::AuthPermanent,
        Some(401) | Some(403) if has(BILLING) => FailoverReason::Billing,
        Some(401) | Some(403) => FailoverReason::Auth,
        Some(402) => FailoverReason::Billing,
        Some(429) if has(BILLING) => FailoverReason::Billing,
        Some(429) => FailoverReason::RateLimit,
        Some(404) if has(&["model"]) => FailoverReason::ModelNotFound,
        Some(408) | Some(504) | Some(524) => FailoverReason::Timeout,
        Some(413) => FailoverReason::ContextOverflow,
        Some(503) | Some(529) => FailoverReason::Overloaded,
        Some(400) | Some(422) if has(OVERFLOW) => FailoverReason::ContextOverflow,
        Some(400) if has(&["model_not_found", "does not exist", "unknown model"]) => {
            FailoverReason::ModelNotFound
        }
        Some(400) | Some(422) => FailoverReason::FormatError,
        Some(s) if s >= 500 && has(&["overloaded"]) => FailoverReason::Overloaded,
        Some(s) if s >= 500 => FailoverReason::ServerError,
        _ if has(OVERFLOW) => FailoverReason::ContextOverflow,
        _ if has(&["overloaded"]) => FailoverReason::Overloaded,
        _ if has(&["rate limit", "rate_limit"]) => FailoverReason::RateLimit,
        _ => FailoverReason::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_body_refine_each_other() {
        assert_eq!(classify(Some(429), "slow down"), FailoverReason::RateLimit);
        assert_eq!(
            classify(Some(429), r#"{"error":{"code":"insufficient_quota"}}"#),
            FailoverReason::Billing
        );
        assert_eq!(
            classify(
                Some(400),
                "This model's maximum context length is 8192 tokens"
            ),
            FailoverReason::ContextOverflow
        );
        assert_eq!(
            classify(Some(400), "bad field"),
            FailoverReason::FormatError
        );
        assert_eq!(classify(Some(401), "invalid key"), FailoverReason::Auth);
        assert_eq!(
            classify(Some(401), "token_revoked"),
            FailoverReason::AuthPermanent
        );
        assert_eq!(
            classify(Some(404), "The model `x` does not exist"),
            FailoverReason::ModelNotFound
        );
        assert_eq!(classify(Some(503), ""), FailoverReason::Overloaded);
        assert_eq!(classify(Some(500), "boom"), FailoverReason::ServerError);
        assert_eq!(classify(None, "connection reset"), FailoverReason::Unknown);
    }

    #[test]
    fn retryable_reasons() {
        assert!(FailoverReason::RateLimit.is_retryable());
        assert!(!FailoverReason::Auth.is_retryable());
        assert!(!FailoverReason::ContextOverflow.is_retryable());
    }
}

//! HTTP details of the Anthropic Messages client: the endpoint URL, request headers
//! (`x-api-key`, `anthropic-version`, configured extras), reading error bodies with a size bound,
//! the server's requested delay, transport failures, and scrubbing the key from every error.

use std::time::{Duration, SystemTime};

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::ANTHROPIC_VERSION;
use crate::llm::{FailoverReason, LlmError, Provider};
use crate::security::redact::redact_value;

/// `{base}/messages` when the base already ends in `/v1` (as configured for api.anthropic.com),
/// else `{base}/v1/messages` (gateways document bases like `https://host/anthropic`).
pub fn messages_endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

pub(super) fn request_headers(provider: &Provider) -> Result<HeaderMap, LlmError> {
    let config_error = |what: String| {
        let mut err = LlmError::new(
            FailoverReason::FormatError,
            format!(
                "provider {:?} is misconfigured: {what}; fix it in config.yaml",
                provider.name
            ),
        );
        err.endpoint = provider.base_url.clone();
        err
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    headers.insert(
        HeaderName::from_static("anthropic-version"),
        HeaderValue::from_static(ANTHROPIC_VERSION),
    );
    if let Some(key) = provider.api_key.as_deref().filter(|k| !k.is_empty()) {
        let mut value = HeaderValue::from_str(key).map_err(|_| {
            config_error("the API key contains characters that cannot go in an HTTP header".into())
        })?;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-api-key"), value);
    }
    // Provider headers come last so configuration can replace ours (e.g. a beta header).
    for (name, value) in &provider.headers {
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| config_error(format!("invalid HTTP header name {name:?}")))?;
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| config_error(format!("invalid value for HTTP header {name}")))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The server's requested delay: `retry-after` (seconds or an HTTP date); for a 429 without one,
/// the earliest `anthropic-ratelimit-*-reset` time (RFC 3339). Unparseable values are ignored.
pub(super) fn retry_after(headers: &HeaderMap, status: u16, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let until = |at: SystemTime| at.duration_since(now).unwrap_or(Duration::ZERO);
    if let Some(value) = header("retry-after") {
        if let Some(delay) = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .and_then(|v| Duration::try_from_secs_f64(v).ok())
        {
            return Some(delay);
        }
        if let Ok(date) = chrono::DateTime::parse_from_rfc2822(value) {
            return Some(until(date.into()));
        }
    }
    if status != 429 {
        return None;
    }
    [
        "anthropic-ratelimit-requests-reset",
        "anthropic-ratelimit-tokens-reset",
        "anthropic-ratelimit-input-tokens-reset",
        "anthropic-ratelimit-output-tokens-reset",
    ]
    .iter()
    .filter_map(|name| header(name))
    .filter_map(|v| chrono::DateTime::parse_from_rfc3339(v).ok())
    .map(|date| until(date.into()))
    .min()
}

/// Reads at most `limit` bytes of a body as text (an error body can be anything a proxy sends).
pub(super) async fn read_limited(mut response: reqwest::Response, limit: usize) -> String {
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit.saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if bytes.len() >= limit {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                if bytes.is_empty() {
                    return format!("(the response body could not be read: {})", root_cause(&e));
                }
                break;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

pub(super) fn transport_error(err: &reqwest::Error, url: &str) -> LlmError {
    let cause = root_cause(err);
    if err.is_timeout() {
        LlmError::new(
            FailoverReason::Timeout,
            format!("timed out talking to {url}: {cause}"),
        )
    } else if err.is_connect() {
        let mut e = LlmError::new(
            FailoverReason::Unknown,
            format!("cannot connect to {url}: {cause} — is the server running and the URL right?"),
        );
        e.refused_locally = crate::llm::error::refused_on_loopback(err, url);
        e
    } else if err.is_builder() {
        LlmError::new(
            FailoverReason::FormatError,
            format!("cannot build a request for {url}: {cause} (check the base URL)"),
        )
    } else {
        LlmError::new(
            FailoverReason::Unknown,
            format!("request to {url} failed: {cause}"),
        )
    }
}

/// The innermost error message, the one that says what actually happened.
pub(super) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

pub(super) fn incomplete(detail: &str) -> LlmError {
    LlmError::new(
        FailoverReason::ServerError,
        format!("stream ended before the response was complete: {detail}"),
    )
}

/// Where errors happened and which secret to scrub from them.
#[derive(Clone)]
pub(super) struct ErrorContext {
    pub endpoint: String,
    pub api_key: Option<String>,
}

impl ErrorContext {
    pub fn finish(&self, mut err: LlmError) -> LlmError {
        if let Some(key) = &self.api_key {
            err.body = redact_value(&err.body, key);
        }
        err.endpoint = self.endpoint.clone();
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            messages_endpoint("https://api.anthropic.com/v1/"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            messages_endpoint("https://api.minimax.io/anthropic"),
            "https://api.minimax.io/anthropic/v1/messages"
        );
    }

    #[test]
    fn headers_carry_key_version_and_overrides() {
        let mut p = Provider::new(
            "anthropic",
            "claude-x",
            "http://x/v1",
            Some("sk-ant-1".into()),
        );
        p.headers.push(("anthropic-beta".into(), "b1".into()));
        let h = request_headers(&p).unwrap();
        assert_eq!(h["x-api-key"], "sk-ant-1");
        assert!(h["x-api-key"].is_sensitive());
        assert_eq!(h["anthropic-version"], ANTHROPIC_VERSION);
        assert_eq!(h["anthropic-beta"], "b1");
        assert!(h.get("authorization").is_none());
        let p = Provider::new("anthropic", "m", "http://x/v1", Some("bad\nkey".into()));
        let err = request_headers(&p).unwrap_err();
        assert!(!err.body.contains("bad\nkey"), "{}", err.body);
    }

    #[test]
    fn retry_after_sources() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, 429, now), None);
        h.insert(
            "anthropic-ratelimit-tokens-reset",
            HeaderValue::from_static("2023-11-14T22:13:30Z"),
        );
        h.insert(
            "anthropic-ratelimit-requests-reset",
            HeaderValue::from_static("2023-11-14T22:13:25Z"),
        );
        // 1_700_000_000 is 2023-11-14T22:13:20Z.
        assert_eq!(retry_after(&h, 429, now), Some(Duration::from_secs(5)));
        assert_eq!(retry_after(&h, 529, now), None);
        h.insert("retry-after", HeaderValue::from_static("0.2"));
        assert_eq!(retry_after(&h, 429, now), Some(Duration::from_millis(200)));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, 429, now), Some(Duration::from_secs(5)));
    }
}

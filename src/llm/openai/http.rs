//! The HTTP transport under async-openai: our own tower service and config, and the mapping of
//! every failure to an `LlmError`.
//!
//! async-openai's default executor retries on its own and, on an error response, keeps neither the
//! `Retry-After` header nor a non-JSON body. The agent loop owns retries and the user should see
//! what the server said, so this service sends each request exactly once and turns any non-2xx
//! response into an [`HttpFailure`] carrying status, `Retry-After` and the raw body.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;

use crate::llm::{FailoverReason, LlmError, Provider};
use crate::security::redact::redact_value;

/// Longest error body kept (HTML error pages can be large; the start says what went wrong).
const MAX_ERROR_BODY_CHARS: usize = 4000;

/// Accept header marking a request that expects an event stream (see [`HttpService`]).
pub(super) const EVENT_STREAM: &str = "text/event-stream";

/// Why the transport failed, with everything needed to classify it.
#[derive(Debug, thiserror::Error)]
pub(super) enum HttpFailure {
    #[error("HTTP {status}: {body}")]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// A streaming request answered with a plain JSON body: the server ignores `stream: true`.
    #[error("expected an event stream but the server answered with JSON")]
    NotEventStream { body: String },
    #[error("{detail}")]
    Transport {
        detail: String,
        timeout: bool,
        refused_locally: bool,
    },
}

/// async-openai configuration without its environment fallbacks (`OPENAI_API_KEY`,
/// `OPENAI_ORG_ID`, …): a custom or local endpoint must never receive a key meant for OpenAI, and
/// no `Authorization` header at all is sent when the provider has no key.
#[derive(Clone)]
pub(super) struct WireConfig {
    base_url: String,
    api_key: SecretString,
    headers: HeaderMap,
}

impl WireConfig {
    pub fn new(provider: &Provider) -> Result<Self, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = provider.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                config_error(
                    provider,
                    "the API key contains characters that cannot go in an HTTP header",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        // Provider headers come last so a configured `Authorization` can replace ours.
        for (name, value) in &provider.headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                config_error(provider, &format!("invalid HTTP header name {name:?}"))
            })?;
            let value = HeaderValue::from_str(value.trim()).map_err(|_| {
                config_error(provider, &format!("invalid value for HTTP header {name}"))
            })?;
            headers.insert(name, value);
        }
        Ok(WireConfig {
            base_url: provider.base_url.trim_end_matches('/').to_string(),
            api_key: SecretString::from(provider.api_key.clone().unwrap_or_default()),
            headers,
        })
    }
}

fn config_error(provider: &Provider, what: &str) -> LlmError {
    let mut err = LlmError::new(
        FailoverReason::FormatError,
        format!(
            "provider {:?} is misconfigured: {what}; fix it in config.yaml",
            provider.name
        ),
    );
    err.endpoint = provider.base_url.clone();
    err
}

impl async_openai::config::Config for WireConfig {
    fn headers(&self) -> HeaderMap {
        self.headers.clone()
    }
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }
    fn query(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }
    fn api_base(&self) -> &str {
        &self.base_url
    }
    fn api_key(&self) -> &SecretString {
        &self.api_key
    }
}

/// Sends each request once with reqwest; never retries.
#[derive(Clone)]
pub(super) struct HttpService {
    http: reqwest::Client,
}

impl HttpService {
    pub fn new(http: reqwest::Client) -> Self {
        HttpService { http }
    }
}

type HttpFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for HttpService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = HttpFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let http = self.http.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            let url = request.url().clone();
            let wants_stream = request
                .headers()
                .get(ACCEPT)
                .is_some_and(|v| v.as_bytes() == EVENT_STREAM.as_bytes());
            let response = http
                .execute(request)
                .await
                .map_err(|e| boxed(transport_failure(&e, url.as_str())))?;
            let status = response.status();
            if !status.is_success() {
                let retry_after = parse_retry_after(response.headers(), SystemTime::now());
                let body = read_body(response).await;
                let mut body = crate::util::truncate_chars(&body, MAX_ERROR_BODY_CHARS).to_string();
                if body.trim().is_empty() {
                    body = "(empty response body)".to_string();
                }
                if status.as_u16() == 404 && !body.to_ascii_lowercase().contains("model") {
                    // Nearly always a base URL without (or with a doubled) version path.
                    body.push_str(&format!(
                        "\n(no such endpoint: {url}; check the base URL, which usually ends in /v1)"
                    ));
                }
                return Err(boxed(HttpFailure::Status {
                    status: status.as_u16(),
                    retry_after,
                    body,
                }));
            }
            let is_json = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.to_ascii_lowercase().contains("json"));
            if wants_stream && is_json {
                let body = read_body(response).await;
                return Err(boxed(HttpFailure::NotEventStream { body }));
            }
            Ok(response)
        })
    }
}

fn boxed(failure: HttpFailure) -> OpenAIError {
    OpenAIError::Boxed(Box::new(failure))
}

async fn read_body(response: reqwest::Response) -> String {
    match response.bytes().await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("(the response body could not be read: {})", root_cause(&e)),
    }
}

fn transport_failure(err: &reqwest::Error, url: &str) -> HttpFailure {
    let cause = root_cause(err);
    let refused_locally = crate::llm::error::refused_on_loopback(err, url);
    if err.is_timeout() {
        HttpFailure::Transport {
            detail: format!("timed out talking to {url}: {cause}"),
            timeout: true,
            refused_locally,
        }
    } else if err.is_connect() {
        HttpFailure::Transport {
            detail: format!(
                "cannot connect to {url}: {cause} — is the server running and the URL right?"
            ),
            timeout: false,
            refused_locally,
        }
    } else {
        HttpFailure::Transport {
            detail: format!("request to {url} failed: {cause}"),
            timeout: false,
            refused_locally,
        }
    }
}

/// The innermost error message (e.g. "Connection refused (os error 111)"), which is the one that
/// says what actually happened; reqwest's outer layers only say "error sending request".
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// `retry-after-ms` (OpenAI), else `Retry-After` as (possibly fractional) seconds or an HTTP
/// date. Unparseable or negative values are ignored; a date in the past means "now".
pub(super) fn parse_retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |text: &str, scale: f64| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .and_then(|v| Duration::try_from_secs_f64(v / scale).ok())
    };
    if let Some(delay) = header("retry-after-ms").and_then(|v| seconds(v, 1000.0)) {
        return Some(delay);
    }
    let value = header("retry-after")?;
    if let Some(delay) = seconds(value, 1.0) {
        return Some(delay);
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at: SystemTime = date.into();
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Where errors happened and which secret to scrub from them.
#[derive(Clone)]
pub(super) struct ErrorContext {
    pub endpoint: String,
    pub api_key: Option<String>,
}

impl ErrorContext {
    /// Stamps the endpoint on `err` and scrubs the provider's own key from its body (generic
    /// patterns were applied when the error was created).
    pub fn finish(&self, mut err: LlmError) -> LlmError {
        if let Some(key) = &self.api_key {
            err.body = redact_value(&err.body, key);
        }
        err.endpoint = self.endpoint.clone();
        err
    }

    /// Maps an async-openai error (which wraps our [`HttpFailure`]) to an `LlmError`.
    pub fn map_openai(&self, err: OpenAIError) -> LlmError {
        let err = match err {
            OpenAIError::Boxed(inner) => match inner.downcast::<HttpFailure>() {
                Ok(failure) => from_failure(*failure),
                Err(other) => LlmError::new(FailoverReason::Unknown, other.to_string()),
            },
            OpenAIError::Reqwest(e) if e.is_builder() => LlmError::new(
                FailoverReason::FormatError,
                format!(
                    "cannot build a request for {}: {} (check the base URL, e.g. http://localhost:8080/v1)",
                    self.endpoint,
                    root_cause(&e)
                ),
            ),
            OpenAIError::Reqwest(e) => {
                let url = e
                    .url()
                    .map_or_else(|| self.endpoint.clone(), |u| u.to_string());
                from_failure(transport_failure(&e, &url))
            }
            OpenAIError::ApiError(api) => {
                let body = serde_json::to_string(&api.api_error).unwrap_or_default();
                LlmError::from_http(api.status_code.as_u16(), &body, None)
            }
            OpenAIError::JSONDeserialize(e, content) => LlmError::new(
                FailoverReason::Unknown,
                format!(
                    "the server's answer is not chat-completions JSON ({e}): {}",
                    crate::util::truncate_chars(&content, MAX_ERROR_BODY_CHARS)
                ),
            ),
            OpenAIError::StreamError(e) => incomplete_stream(&e.to_string()),
            OpenAIError::InvalidArgument(msg) => LlmError::new(
                FailoverReason::FormatError,
                format!("the request could not be built: {msg}"),
            ),
            other => LlmError::new(FailoverReason::Unknown, other.to_string()),
        };
        self.finish(err)
    }
}

fn from_failure(failure: HttpFailure) -> LlmError {
    match failure {
        HttpFailure::Status {
            status,
            retry_after,
            body,
        } => LlmError::from_http(status, &body, retry_after),
        HttpFailure::NotEventStream { body } => LlmError::new(
            FailoverReason::Unknown,
            format!(
                "expected an event stream, got: {}",
                crate::util::truncate_chars(&body, MAX_ERROR_BODY_CHARS)
            ),
        ),
        HttpFailure::Transport {
            detail,
            timeout,
            refused_locally,
        } => {
            let mut err = LlmError::new(
                if timeout {
                    FailoverReason::Timeout
                } else {
                    FailoverReason::Unknown
                },
                detail,
            );
            err.refused_locally = refused_locally;
            err
        }
    }
}

/// The error for a stream that stopped before the provider said it was finished.
pub(super) fn incomplete_stream(detail: &str) -> LlmError {
    LlmError::new(
        FailoverReason::ServerError,
        format!("stream ended before the response was complete: {detail}"),
    )
}

/// Whether a 4xx body says the server cannot stream (then we fall back to plain requests).
pub(super) fn refuses_streaming(err: &LlmError) -> bool {
    let lower = err.body.to_ascii_lowercase();
    matches!(err.status, Some(400..=499))
        && lower.contains("stream")
        && ["not supported", "unsupported", "not support"]
            .iter()
            .any(|n| lower.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        let parse = |pairs: &[(&str, &str)]| parse_retry_after(&headers(pairs), now);
        assert_eq!(parse(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            parse(&[("retry-after", "0.25")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse(&[("retry-after", " 0 ")]), Some(Duration::ZERO));
        assert_eq!(
            parse(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
            Some(Duration::from_millis(1500))
        );
        // 2015-10-21T07:28:00Z is 10 s after `now`.
        assert_eq!(
            parse(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse(&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")]),
            Some(Duration::ZERO)
        );
        for bad in ["-1", "soon", "NaN", "inf", "1e400"] {
            assert_eq!(parse(&[("retry-after", bad)]), None, "{bad}");
        }
        assert_eq!(parse(&[]), None);
    }

    #[test]
    fn no_authorization_without_a_key() {
        use async_openai::config::Config;
        let mut provider = Provider::new("custom", "m", "http://x/v1/", None);
        provider.headers.push(("X-Title".into(), "hermes".into()));
        let config = WireConfig::new(&provider).unwrap();
        assert!(config.headers().get(AUTHORIZATION).is_none());
        assert_eq!(config.headers()["x-title"], "hermes");
        assert_eq!(
            config.url("/chat/completions"),
            "http://x/v1/chat/completions"
        );

        let provider = Provider::new("openai", "m", "http://x/v1", Some("sk-test".into()));
        let config = WireConfig::new(&provider).unwrap();
        assert_eq!(config.headers()[AUTHORIZATION], "Bearer sk-test");

        let mut provider = Provider::new("custom", "m", "http://x/v1", None);
        provider.headers.push(("bad header".into(), "v".into()));
        let err = WireConfig::new(&provider).err().unwrap();
        assert!(
            err.body.contains("invalid HTTP header name"),
            "{}",
            err.body
        );
    }

    #[test]
    fn stream_refusals_are_recognised() {
        let refusal = LlmError::from_http(400, "Streaming is not supported", None);
        assert!(refuses_streaming(&refusal));
        let other = LlmError::from_http(400, "bad field `messages`", None);
        assert!(!refuses_streaming(&other));
        let server = LlmError::from_http(500, "stream not supported", None);
        assert!(!refuses_streaming(&server));
    }

    #[test]
    fn key_is_scrubbed_from_errors() {
        let ctx = ErrorContext {
            endpoint: "http://x/v1/chat/completions".into(),
            api_key: Some("plainkey-123456".into()),
        };
        let err = ctx.finish(LlmError::from_http(401, "bad key plainkey-123456", None));
        assert!(!err.body.contains("plainkey-123456"), "{}", err.body);
        assert_eq!(err.endpoint, "http://x/v1/chat/completions");
    }
}

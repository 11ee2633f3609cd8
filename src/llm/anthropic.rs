//! Anthropic Messages API client (`POST {base}/v1/messages`), for Claude on api.anthropic.com and
//! for gateways that speak the same protocol (base URLs ending in `/anthropic`).
//!
//! It owns one model call: build the body (`wire`, with the `system_and_3` prompt-cache markers
//! of `prompt_cache`), send it once with reqwest, decode the event stream (`sse`) and assemble
//! text, tool_use and thinking blocks into `LlmEvent`s (`assemble`), bounded in time (connect
//! timeout, idle timeout between chunks, overall deadline). It never retries: the agent loop
//! decides that from the `FailoverReason`. Dropping the stream drops the response body, which
//! closes the connection and so aborts the request.
//!
//! Extended thinking with tool use requires the signed thinking blocks of the assistant turn that
//! made the calls to be sent back unchanged. Our `Message` keeps reasoning as plain text only, so
//! the client remembers the signed blocks itself, keyed by the first tool-call id of the response
//! (bounded; see `ThinkingMemory`). A resumed process has no memory of them, and then sends none,
//! which the API accepts for earlier turns.

mod assemble;
mod http;
mod sse;
mod wire;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::time::{Instant, timeout_at};

use crate::llm::{ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmStream, Provider};
use assemble::Assembler;
use http::{
    ErrorContext, incomplete, read_limited, request_headers, retry_after, root_cause,
    transport_error,
};
use sse::SseDecoder;

pub use http::messages_endpoint;

/// The API version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Longest error body kept (the rest is cut; providers' messages are short).
const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;

/// Largest whole (non-streamed) answer accepted from a gateway that ignores `stream: true`.
const MAX_WHOLE_BODY_BYTES: usize = 64 * 1024 * 1024;

/// After the model said it is finished, how long we still wait for `message_stop`.
const AFTER_FINISH_GRACE: Duration = Duration::from_secs(10);

/// Responses whose signed thinking is remembered for replay (oldest forgotten first).
const THINKING_MEMORY: usize = 256;

/// An Anthropic Messages client for one provider.
pub struct AnthropicClient {
    provider: Provider,
    http: reqwest::Client,
    headers: HeaderMap,
    errors: ErrorContext,
    thinking: Arc<Mutex<ThinkingMemory>>,
}

impl AnthropicClient {
    pub fn new(provider: Provider) -> Result<Self, LlmError> {
        ensure_crypto_provider();
        let errors = ErrorContext {
            endpoint: messages_endpoint(&provider.base_url),
            api_key: provider.api_key.clone(),
        };
        let headers = request_headers(&provider)?;
        let http = reqwest::Client::builder()
            .connect_timeout(provider.connect_timeout)
            .build()
            .map_err(|e| {
                errors.finish(LlmError::new(
                    FailoverReason::Unknown,
                    format!("cannot create the HTTP client: {e}"),
                ))
            })?;
        Ok(AnthropicClient {
            provider,
            http,
            headers,
            errors,
            thinking: Arc::default(),
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.errors.endpoint
    }

    /// The exact JSON body `request` is sent as (cache markers included).
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let model = if request.model.is_empty() {
            &self.provider.model
        } else {
            &request.model
        };
        let memory = lock(&self.thinking);
        wire::request_body(
            request,
            model,
            Some(self.provider.cache_ttl),
            &|id: &str| memory.get(id),
        )
    }

    async fn send(&self, body: Vec<u8>, deadline: Instant) -> Result<reqwest::Response, LlmError> {
        let sent = self
            .http
            .post(&self.errors.endpoint)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = match timeout_at(deadline, sent).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(self.errors.finish(transport_error(&e, self.endpoint()))),
            Err(_) => return Err(self.errors.finish(self.request_timeout())),
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers(), status.as_u16(), SystemTime::now());
        let mut body = read_limited(response, MAX_ERROR_BODY_BYTES).await;
        if body.trim().is_empty() {
            body = "(empty response body)".to_string();
        }
        if status.as_u16() == 404 && !body.to_ascii_lowercase().contains("model") {
            body.push_str(&format!(
                "\n(no such endpoint: {}; check the base URL, e.g. https://api.anthropic.com/v1)",
                self.endpoint()
            ));
        }
        let mut err = LlmError::from_http(status.as_u16(), &body, retry_after);
        err.reason = assemble::refine(Some(status.as_u16()), &body, err.reason);
        Err(self.errors.finish(err))
    }

    fn request_timeout(&self) -> LlmError {
        LlmError::new(
            FailoverReason::Timeout,
            format!(
                "no complete answer within {:?} (the provider's request timeout)",
                self.provider.request_timeout
            ),
        )
    }

    /// A 200 that is not an event stream: a gateway that ignored `stream: true` (JSON), or
    /// something that is not this API at all.
    async fn whole_answer(&self, response: reqwest::Response) -> Result<LlmStream, LlmError> {
        let text = read_limited(response, MAX_WHOLE_BODY_BYTES).await;
        let shown = || crate::util::truncate_chars(&text, 2000).to_string();
        let message: Value = serde_json::from_str(&text).map_err(|e| {
            self.errors.finish(LlmError::new(
                FailoverReason::Unknown,
                format!(
                    "expected an event stream or a Messages JSON answer, got ({e}): {}",
                    shown()
                ),
            ))
        })?;
        let mut assembler = Assembler::default();
        let mut events = Vec::new();
        let replay = if message.get("type").and_then(Value::as_str) == Some("error") {
            vec![message]
        } else {
            assemble::whole_message_events(&message)
        };
        for event in &replay {
            assembler
                .push(event, &mut events)
                .map_err(|e| self.errors.finish(e))?;
        }
        remember_thinking(&self.thinking, &assembler);
        events.push(LlmEvent::Done(assembler.finish()));
        Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
    }
}

#[async_trait::async_trait]
impl LlmClient for AnthropicClient {
    async fn stream(&self, request: ChatRequest) -> Result<LlmStream, LlmError> {
        let deadline = after(self.provider.request_timeout);
        let body = serde_json::to_vec(&self.request_body(&request)).map_err(|e| {
            self.errors.finish(LlmError::new(
                FailoverReason::FormatError,
                format!("the request could not be encoded as JSON: {e}"),
            ))
        })?;
        let response = self.send(body, deadline).await?;
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.to_ascii_lowercase().contains("text/event-stream"));
        if !is_stream {
            return self.whole_answer(response).await;
        }
        let driver = Driver {
            inner: response
                .bytes_stream()
                .map(|chunk| chunk.map(|b| b.to_vec()))
                .boxed(),
            decoder: SseDecoder::default(),
            assembler: Assembler::default(),
            queue: VecDeque::new(),
            finished: false,
            emitted: false,
            idle: self.provider.stream_idle_timeout,
            deadline,
            errors: self.errors.clone(),
            thinking: self.thinking.clone(),
        };
        Ok(driver.into_stream())
    }

    fn provider(&self) -> &Provider {
        &self.provider
    }
}

/// Drives one open event stream: enforces the idle and overall deadlines, decodes SSE, feeds
/// events to the assembler and queues what they produce.
struct Driver {
    inner: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    decoder: SseDecoder,
    assembler: Assembler,
    queue: VecDeque<Result<LlmEvent, LlmError>>,
    finished: bool,
    /// Whether any delta already reached the caller (errors are then `partial`).
    emitted: bool,
    idle: Duration,
    deadline: Instant,
    errors: ErrorContext,
    thinking: Arc<Mutex<ThinkingMemory>>,
}

impl Driver {
    fn into_stream(self) -> LlmStream {
        futures::stream::unfold(self, |mut driver| async move {
            driver.next().await.map(|item| (item, driver))
        })
        .boxed()
    }

    async fn next(&mut self) -> Option<Result<LlmEvent, LlmError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if matches!(item, Ok(ref event) if !matches!(event, LlmEvent::Done(_))) {
                    self.emitted = true;
                }
                return Some(item);
            }
            if self.finished {
                return None;
            }
            self.step().await;
        }
    }

    async fn step(&mut self) {
        let complete = self.assembler.is_complete();
        let quiet = if complete {
            self.idle.min(AFTER_FINISH_GRACE)
        } else {
            self.idle
        };
        let limit = after(quiet).min(self.deadline);
        match timeout_at(limit, self.inner.next()).await {
            // The model said it was finished; a missing `message_stop` does not spoil it.
            Err(_) | Ok(Some(Err(_))) if complete => self.succeed(),
            Err(_) if limit == self.deadline => self.fail(LlmError::new(
                FailoverReason::Timeout,
                "the answer did not finish within the provider's request timeout",
            )),
            Err(_) => self.fail(LlmError::new(
                FailoverReason::Timeout,
                format!(
                    "the server sent nothing for {quiet:?} while streaming (stream idle timeout)"
                ),
            )),
            Ok(Some(Err(e))) => self.fail(incomplete(&format!(
                "the connection was interrupted ({})",
                root_cause(&e)
            ))),
            Ok(Some(Ok(bytes))) => match self.decoder.push(&bytes) {
                Ok(events) => self.handle(events),
                Err(e) => self.fail(LlmError::new(FailoverReason::ServerError, e)),
            },
            Ok(None) => {
                match self.decoder.finish() {
                    Ok(last) => self.handle(last.into_iter().collect()),
                    Err(e) => return self.fail(LlmError::new(FailoverReason::ServerError, e)),
                }
                if !self.finished {
                    if self.assembler.is_complete() {
                        self.succeed();
                    } else {
                        self.fail(incomplete(
                            "the server closed the stream before message_stop",
                        ));
                    }
                }
            }
        }
    }

    fn handle(&mut self, events: Vec<sse::SseEvent>) {
        for event in events {
            if self.finished {
                return;
            }
            let data: Value = match serde_json::from_str(&event.data) {
                Ok(data) => data,
                Err(e) => {
                    return self.fail(LlmError::new(
                        FailoverReason::ServerError,
                        format!(
                            "the server sent a malformed {} event ({e}): {}",
                            if event.event.is_empty() {
                                "stream"
                            } else {
                                &event.event
                            },
                            crate::util::truncate_chars(&event.data, 2000)
                        ),
                    ));
                }
            };
            let mut out = Vec::new();
            let pushed = self.assembler.push(&data, &mut out);
            self.queue.extend(out.into_iter().map(Ok));
            match pushed {
                Err(err) => return self.fail(err),
                Ok(()) if self.assembler.is_stopped() => return self.succeed(),
                Ok(()) => {}
            }
        }
    }

    fn succeed(&mut self) {
        let assembler = std::mem::take(&mut self.assembler);
        remember_thinking(&self.thinking, &assembler);
        self.queue.push_back(Ok(LlmEvent::Done(assembler.finish())));
        self.finished = true;
    }

    fn fail(&mut self, err: LlmError) {
        let mut err = self.errors.finish(err);
        err.partial = self.emitted || self.queue.iter().any(|item| item.is_ok());
        self.queue.push_back(Err(err));
        self.finished = true;
    }
}

/// Signed thinking blocks of recent responses, by their first tool-call id.
#[derive(Debug, Default)]
struct ThinkingMemory {
    entries: VecDeque<(String, Vec<Value>)>,
}

impl ThinkingMemory {
    fn get(&self, id: &str) -> Option<Vec<Value>> {
        self.entries
            .iter()
            .find(|(key, _)| key == id)
            .map(|(_, blocks)| blocks.clone())
    }

    fn insert(&mut self, id: String, blocks: Vec<Value>) {
        self.entries.retain(|(key, _)| *key != id);
        if self.entries.len() >= THINKING_MEMORY {
            self.entries.pop_front();
        }
        self.entries.push_back((id, blocks));
    }
}

fn lock(memory: &Mutex<ThinkingMemory>) -> MutexGuard<'_, ThinkingMemory> {
    // The memory is a cache: a panic elsewhere must not disable the client.
    memory
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn remember_thinking(memory: &Mutex<ThinkingMemory>, assembler: &Assembler) {
    let blocks = assembler.signed_thinking();
    if let Some(id) = assembler.first_call_id()
        && !blocks.is_empty()
    {
        lock(memory).insert(id, blocks);
    }
}

/// `now + timeout`, saturating: a configured timeout of "forever" must not overflow `Instant`.
fn after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(10 * 365 * 24 * 3600))
}

/// reqwest (built without a bundled crypto provider) panics when it builds a client and no rustls
/// provider is installed. `main` installs ring; library users and tests may not have.
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: some provider is then installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thinking_memory_is_bounded() {
        let mut m = ThinkingMemory::default();
        for i in 0..THINKING_MEMORY + 5 {
            m.insert(format!("id{i}"), vec![json!(i)]);
        }
        assert_eq!(m.entries.len(), THINKING_MEMORY);
        assert!(m.get("id4").is_none(), "the oldest are forgotten first");
        assert_eq!(m.get("id5"), Some(vec![json!(5)]));
        let last = format!("id{}", THINKING_MEMORY + 4);
        assert_eq!(m.get(&last), Some(vec![json!(THINKING_MEMORY + 4)]));
    }
}

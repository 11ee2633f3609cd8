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
use std::time::SystemTime;

use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::time::{Instant, timeout_at};

use crate::llm::stream_driver::{Driver, StreamLimits, WireStream, after};
use crate::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse, LlmStream, Provider,
};
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
        let http = super::http::client_builder(provider.connect_timeout)
            .build()
            .map_err(|e| {
                LlmError::new(
                    FailoverReason::Unknown,
                    format!("cannot create the HTTP client: {e}"),
                )
            })?;
        Self::with_http(provider, http)
    }

    /// A client on an existing HTTP client (its connection pool is shared).
    pub fn with_http(provider: Provider, http: reqwest::Client) -> Result<Self, LlmError> {
        let errors = ErrorContext {
            endpoint: messages_endpoint(&provider.base_url),
            api_key: provider.api_key.clone(),
        };
        let headers = request_headers(&provider)?;
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
        let wire = AnthropicWire {
            decoder: SseDecoder::default(),
            assembler: Assembler::default(),
            errors: self.errors.clone(),
            thinking: self.thinking.clone(),
            answer_bytes: 0,
        };
        let inner = response
            .bytes_stream()
            .map(|chunk| chunk.map(|b| b.to_vec()))
            .boxed();
        let limits = StreamLimits::of(&self.provider, deadline);
        Ok(Driver::new(inner, wire, limits).into_stream())
    }

    fn provider(&self) -> &Provider {
        &self.provider
    }
}

/// Anthropic's SSE events for the shared [`Driver`]: decodes the bytes, feeds each event to the
/// assembler, and stops at `message_stop`.
struct AnthropicWire {
    decoder: SseDecoder,
    assembler: Assembler,
    errors: ErrorContext,
    thinking: Arc<Mutex<ThinkingMemory>>,
    /// Text, thinking and tool-input bytes received (for the answer cap).
    answer_bytes: usize,
}

impl AnthropicWire {
    /// Feeds decoded events; `Ok(true)` once the message stopped (later events are ignored).
    fn handle(
        &mut self,
        events: Vec<sse::SseEvent>,
        out: &mut Vec<LlmEvent>,
    ) -> Result<bool, LlmError> {
        for event in events {
            let data: Value = serde_json::from_str(&event.data).map_err(|e| {
                LlmError::new(
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
                )
            })?;
            let delta = &data["delta"];
            self.answer_bytes += ["text", "thinking", "partial_json"]
                .iter()
                .filter_map(|k| delta.get(*k).and_then(Value::as_str))
                .map(str::len)
                .sum::<usize>();
            self.assembler.push(&data, out)?;
            if self.assembler.is_stopped() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl WireStream for AnthropicWire {
    type Chunk = Vec<u8>;
    type Error = reqwest::Error;

    fn is_complete(&self) -> bool {
        self.assembler.is_complete()
    }

    fn push(&mut self, bytes: Vec<u8>, out: &mut Vec<LlmEvent>) -> Result<bool, LlmError> {
        let events = self
            .decoder
            .push(&bytes)
            .map_err(|e| LlmError::new(FailoverReason::ServerError, e))?;
        self.handle(events, out)
    }

    fn end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        let last = self
            .decoder
            .finish()
            .map_err(|e| LlmError::new(FailoverReason::ServerError, e))?;
        if self.handle(last.into_iter().collect(), out)? || self.assembler.is_complete() {
            Ok(())
        } else {
            Err(incomplete(
                "the server closed the stream before message_stop",
            ))
        }
    }

    fn interrupted(&self, error: reqwest::Error) -> LlmError {
        incomplete(&format!(
            "the connection was interrupted ({})",
            root_cause(&error)
        ))
    }

    fn finish(&mut self, _out: &mut Vec<LlmEvent>) -> LlmResponse {
        let assembler = std::mem::take(&mut self.assembler);
        remember_thinking(&self.thinking, &assembler);
        assembler.finish()
    }

    fn finish_error(&self, error: LlmError) -> LlmError {
        self.errors.finish(error)
    }

    fn answer_bytes(&self) -> usize {
        self.answer_bytes
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

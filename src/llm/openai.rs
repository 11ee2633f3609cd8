//! OpenAI chat completions client (`/chat/completions`), the wire protocol spoken by OpenAI,
//! OpenRouter, Ollama, llama.cpp, vLLM and most gateways.
//!
//! It owns one model call: build the request (`wire`), send it once (`http`), turn the stream of
//! chunks into `LlmEvent`s (`assemble`), and bound it in time (connect timeout, idle timeout
//! between chunks, overall request timeout). It never retries: the agent loop decides that from
//! the `FailoverReason`. Servers that cannot stream are detected once and then called without
//! streaming for the rest of this client's life.

mod assemble;
mod cache;
mod http;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};

use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::types::stream::StreamResponse;
use futures::StreamExt;
use reqwest::header::ACCEPT;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::{Instant, timeout_at};

use crate::llm::prompt_cache::{self, CacheTtl};
use crate::llm::stream_driver::{Driver, StreamLimits, WireStream, after};
use crate::llm::{
    ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmResponse, LlmStream, Provider,
};
use assemble::Assembler;
use http::{EVENT_STREAM, ErrorContext, HttpFailure, HttpService, WireConfig};

/// A chat completions client for one provider.
pub struct OpenAiClient {
    provider: Provider,
    client: async_openai::Client<WireConfig>,
    errors: ErrorContext,
    /// Latched when the server refused to stream (or ignored `stream: true`); from then on every
    /// call is a plain request.
    no_stream: AtomicBool,
}

/// Why opening a stream did not give a stream.
enum OpenFailure {
    /// The server says it cannot stream: retry without streaming.
    Refused(LlmError),
    /// The server ignored `stream: true` and sent a whole completion: this is the answer.
    WholeBody(String),
    Failed(LlmError),
}

impl OpenAiClient {
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
        let config = WireConfig::new(&provider)?;
        let endpoint = format!(
            "{}/chat/completions",
            provider.base_url.trim_end_matches('/')
        );
        let errors = ErrorContext {
            endpoint,
            api_key: provider.api_key.clone(),
        };
        let client = async_openai::Client::build(http.clone(), config)
            .with_http_service(HttpService::new(http));
        Ok(OpenAiClient {
            provider,
            client,
            errors,
            no_stream: AtomicBool::new(false),
        })
    }

    /// True once the server has shown it cannot stream; calls are then made without streaming.
    pub fn streaming_disabled(&self) -> bool {
        self.no_stream.load(Ordering::Relaxed)
    }

    fn model<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.provider.model
        } else {
            &request.model
        }
    }

    /// The prompt-cache layout, for Claude reached through OpenRouter only (elsewhere on this
    /// wire, caching is automatic or absent and markers would be noise).
    fn cache(&self, request: &ChatRequest) -> Option<CacheTtl> {
        let (name, base) = (&self.provider.name, &self.provider.base_url);
        prompt_cache::is_openrouter_claude(name, base, self.model(request))
            .then_some(self.provider.cache_ttl)
    }

    fn request_timeout_error(&self) -> LlmError {
        self.errors.finish(LlmError::new(
            FailoverReason::Timeout,
            format!(
                "no complete answer within {:?} (the provider's request timeout)",
                self.provider.request_timeout
            ),
        ))
    }

    async fn open_stream(
        &self,
        request: &ChatRequest,
        deadline: Instant,
    ) -> Result<StreamResponse<Value>, OpenFailure> {
        let body = cache::body_for(request, self.model(request), true, self.cache(request));
        let chat = self
            .client
            .chat()
            .header(ACCEPT, EVENT_STREAM)
            .map_err(|e| OpenFailure::Failed(self.errors.map_openai(e)))?;
        let opened: Result<StreamResponse<Value>, OpenAIError> =
            match timeout_at(deadline, chat.create_stream_byot(&body)).await {
                Ok(result) => result,
                Err(_) => return Err(OpenFailure::Failed(self.request_timeout_error())),
            };
        match opened {
            Ok(stream) => Ok(stream),
            Err(OpenAIError::Boxed(inner)) => match inner.downcast::<HttpFailure>() {
                Ok(failure) => match *failure {
                    HttpFailure::NotEventStream { body } => Err(OpenFailure::WholeBody(body)),
                    other => Err(self.classify_open_error(OpenAIError::Boxed(Box::new(other)))),
                },
                Err(other) => Err(self.classify_open_error(OpenAIError::Boxed(other))),
            },
            Err(other) => Err(self.classify_open_error(other)),
        }
    }

    fn classify_open_error(&self, err: OpenAIError) -> OpenFailure {
        let err = self.errors.map_openai(err);
        if http::refuses_streaming(&err) {
            OpenFailure::Refused(err)
        } else {
            OpenFailure::Failed(err)
        }
    }

    /// One non-streaming call, replayed as events.
    async fn complete(
        &self,
        request: &ChatRequest,
        deadline: Instant,
    ) -> Result<LlmStream, LlmError> {
        let body = cache::body_for(request, self.model(request), false, self.cache(request));
        let answer: Result<Value, OpenAIError> =
            match timeout_at(deadline, self.client.chat().create_byot(&body)).await {
                Ok(result) => result,
                Err(_) => return Err(self.request_timeout_error()),
            };
        let answer = answer.map_err(|e| self.errors.map_openai(e))?;
        let events = self.completion_events(answer, !request.tools.is_empty())?;
        Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
    }

    /// A whole completion as the events a stream would have produced: deltas, then `Done`.
    fn completion_events(
        &self,
        answer: Value,
        tools_offered: bool,
    ) -> Result<Vec<LlmEvent>, LlmError> {
        let shown = || crate::util::truncate_chars(&answer.to_string(), 2000).to_string();
        let completion = wire::Completion::deserialize(&answer).map_err(|e| {
            self.errors.finish(LlmError::new(
                FailoverReason::Unknown,
                format!(
                    "the server's answer is not a chat completion ({e}): {}",
                    shown()
                ),
            ))
        })?;
        if completion.error.is_none() && completion.choices.as_ref().is_none_or(Vec::is_empty) {
            return Err(self.errors.finish(LlmError::new(
                FailoverReason::ServerError,
                format!("the server's answer has no choices: {}", shown()),
            )));
        }
        let mut assembler = Assembler::new(tools_offered);
        let mut events = Vec::new();
        assembler
            .push(completion.into_chunk(), &mut events)
            .map_err(|e| self.errors.finish(e))?;
        let response = assembler.finish(&mut events);
        events.push(LlmEvent::Done(response));
        Ok(events)
    }

    fn latch_no_stream(&self, why: &str) {
        if !self.no_stream.swap(true, Ordering::Relaxed) {
            tracing::info!(
                endpoint = %self.errors.endpoint,
                "server cannot stream ({why}); using non-streaming requests from now on"
            );
        }
    }
}

#[async_trait::async_trait]
impl LlmClient for OpenAiClient {
    async fn stream(&self, request: ChatRequest) -> Result<LlmStream, LlmError> {
        let deadline = after(self.provider.request_timeout);
        if !self.streaming_disabled() {
            match self.open_stream(&request, deadline).await {
                Ok(inner) => {
                    let wire = OpenAiWire {
                        assembler: Assembler::new(!request.tools.is_empty()),
                        errors: self.errors.clone(),
                        answer_bytes: 0,
                    };
                    let limits = StreamLimits::of(&self.provider, deadline);
                    let driver = Driver::new(inner, wire, limits);
                    return Ok(driver.into_stream());
                }
                Err(OpenFailure::Failed(err)) => return Err(err),
                Err(OpenFailure::Refused(err)) => self.latch_no_stream(&err.body),
                Err(OpenFailure::WholeBody(body)) => {
                    self.latch_no_stream("it ignored stream=true");
                    let answer: Value = serde_json::from_str(&body).map_err(|e| {
                        self.errors.finish(LlmError::new(
                            FailoverReason::Unknown,
                            format!(
                                "the server ignored stream=true and its answer is not JSON ({e}): {}",
                                crate::util::truncate_chars(&body, 2000)
                            ),
                        ))
                    })?;
                    let events = self.completion_events(answer, !request.tools.is_empty())?;
                    return Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed());
                }
            }
        }
        self.complete(&request, deadline).await
    }

    fn provider(&self) -> &Provider {
        &self.provider
    }
}

/// Chat-completions chunks (already split from SSE by async-openai) for the shared [`Driver`].
/// Dropping it drops async-openai's receiver, whose reader task then drops the HTTP response.
struct OpenAiWire {
    assembler: Assembler,
    errors: ErrorContext,
    /// Text, reasoning and tool-argument bytes received (for the answer cap).
    answer_bytes: usize,
}

impl WireStream for OpenAiWire {
    type Chunk = Value;
    type Error = OpenAIError;

    fn is_complete(&self) -> bool {
        self.assembler.is_complete()
    }

    fn push(&mut self, value: Value, out: &mut Vec<LlmEvent>) -> Result<bool, LlmError> {
        let chunk = wire::Chunk::deserialize(&value).map_err(|e| {
            LlmError::new(
                FailoverReason::Unknown,
                format!(
                    "the server sent a malformed stream chunk ({e}): {}",
                    crate::util::truncate_chars(&value.to_string(), 2000)
                ),
            )
        })?;
        self.answer_bytes += chunk.payload_len();
        self.assembler.push(chunk, out)?;
        // Completion is judged at the end of the stream (usage may still follow the finish).
        Ok(false)
    }

    fn end(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if self.assembler.is_complete() {
            Ok(())
        } else {
            Err(http::incomplete_stream(
                "the server closed the stream without a finish_reason or [DONE]",
            ))
        }
    }

    fn interrupted(&self, error: OpenAIError) -> LlmError {
        let detail = match error {
            OpenAIError::StreamError(e) => format!("the connection was interrupted ({e})"),
            other => other.to_string(),
        };
        http::incomplete_stream(&detail)
    }

    fn finish(&mut self, out: &mut Vec<LlmEvent>) -> LlmResponse {
        std::mem::take(&mut self.assembler).finish(out)
    }

    fn finish_error(&self, error: LlmError) -> LlmError {
        self.errors.finish(error)
    }

    fn answer_bytes(&self) -> usize {
        self.answer_bytes
    }
}

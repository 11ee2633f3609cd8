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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::traits::RequestOptionsBuilder;
use async_openai::types::stream::StreamResponse;
use futures::StreamExt;
use reqwest::header::ACCEPT;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::{Instant, timeout_at};

use crate::llm::prompt_cache::{self, CacheTtl};
use crate::llm::{ChatRequest, FailoverReason, LlmClient, LlmError, LlmEvent, LlmStream, Provider};
use assemble::Assembler;
use http::{EVENT_STREAM, ErrorContext, HttpFailure, HttpService, WireConfig};

/// After the provider said the answer is finished, how long we still wait for the trailing usage
/// chunk and `[DONE]` before accepting the answer as it is.
const AFTER_FINISH_GRACE: Duration = Duration::from_secs(10);

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
        ensure_crypto_provider();
        let config = WireConfig::new(&provider)?;
        let endpoint = format!(
            "{}/chat/completions",
            provider.base_url.trim_end_matches('/')
        );
        let errors = ErrorContext {
            endpoint,
            api_key: provider.api_key.clone(),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(provider.connect_timeout)
            .build()
            .map_err(|e| {
                errors.finish(LlmError::new(
                    FailoverReason::Unknown,
                    format!("cannot create the HTTP client: {e}"),
                ))
            })?;
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
                    let driver = Driver {
                        inner,
                        assembler: Assembler::new(!request.tools.is_empty()),
                        queue: VecDeque::new(),
                        finished: false,
                        emitted: false,
                        idle: self.provider.stream_idle_timeout,
                        deadline,
                        errors: self.errors.clone(),
                    };
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

/// Drives one open event stream: enforces the idle and overall deadlines, feeds chunks to the
/// assembler and queues the resulting events. Dropping it drops async-openai's receiver, whose
/// reader task then drops the HTTP response, closing the connection.
struct Driver {
    inner: StreamResponse<Value>,
    assembler: Assembler,
    queue: VecDeque<Result<LlmEvent, LlmError>>,
    finished: bool,
    /// Whether any delta already reached the caller (errors are then `partial`).
    emitted: bool,
    idle: Duration,
    deadline: Instant,
    errors: ErrorContext,
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

    /// Waits for the next chunk (or the end, or a deadline) and queues what it produces.
    async fn step(&mut self) {
        let complete = self.assembler.is_complete();
        let quiet = if complete {
            self.idle.min(AFTER_FINISH_GRACE)
        } else {
            self.idle
        };
        let limit = after(quiet).min(self.deadline);
        match timeout_at(limit, self.inner.next()).await {
            // The answer is whole; a missing `[DONE]` or trailing hiccup does not spoil it.
            Err(_) | Ok(None) | Ok(Some(Err(_))) if complete => self.succeed(),
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
            Ok(None) => self.fail(http::incomplete_stream(
                "the server closed the stream without a finish_reason or [DONE]",
            )),
            Ok(Some(Err(e))) => {
                let detail = match e {
                    OpenAIError::StreamError(e) => format!("the connection was interrupted ({e})"),
                    other => other.to_string(),
                };
                self.fail(http::incomplete_stream(&detail));
            }
            Ok(Some(Ok(value))) => {
                let chunk = match wire::Chunk::deserialize(&value) {
                    Ok(chunk) => chunk,
                    Err(e) => {
                        return self.fail(LlmError::new(
                            FailoverReason::Unknown,
                            format!(
                                "the server sent a malformed stream chunk ({e}): {}",
                                crate::util::truncate_chars(&value.to_string(), 2000)
                            ),
                        ));
                    }
                };
                let mut events = Vec::new();
                let pushed = self.assembler.push(chunk, &mut events);
                self.queue.extend(events.into_iter().map(Ok));
                if let Err(err) = pushed {
                    self.fail(err);
                }
            }
        }
    }

    fn succeed(&mut self) {
        let mut events = Vec::new();
        let response = std::mem::take(&mut self.assembler).finish(&mut events);
        self.queue.extend(events.into_iter().map(Ok));
        self.queue.push_back(Ok(LlmEvent::Done(response)));
        self.finished = true;
    }

    fn fail(&mut self, err: LlmError) {
        let mut err = self.errors.finish(err);
        err.partial = self.emitted || self.queue.iter().any(|item| item.is_ok());
        self.queue.push_back(Err(err));
        self.finished = true;
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

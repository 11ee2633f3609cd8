//! The LLM boundary: the `LlmClient` trait, our wire-neutral types, errors, provider resolution
//! and retry policy. One implementation per wire protocol (`openai.rs` speaks chat completions,
//! `anthropic.rs` the Anthropic Messages API); `prompt_cache.rs` places cache markers for both.

pub mod anthropic;
pub mod error;
pub mod http;
pub mod openai;
pub mod prompt_cache;
pub mod provider;
pub mod retry;
mod stream_driver;
pub mod text_tool_calls;
pub mod tls;
pub mod types;
pub mod usage_estimate;

use futures::stream::BoxStream;

pub use error::{FailoverReason, LlmError};
pub use provider::{Provider, WireApi};
pub use types::{ChatRequest, LlmEvent, LlmResponse, Message, Role, ToolCall, ToolSchema, Usage};

/// A stream of events for one model call; ends with `LlmEvent::Done` or an error.
pub type LlmStream = BoxStream<'static, Result<LlmEvent, LlmError>>;

/// One wire protocol. Implementations do not retry: the agent loop owns retry decisions
/// (see `retry.rs`), because only it knows whether output was already shown to the user.
#[async_trait::async_trait]
pub trait LlmClient: Send + Sync {
    /// Start a streaming call. Dropping the returned stream aborts the HTTP request.
    async fn stream(&self, request: ChatRequest) -> Result<LlmStream, LlmError>;

    /// The provider this client talks to (for logs, session rows and error messages).
    fn provider(&self) -> &Provider;
}

/// Builds the client for a resolved provider on a shared HTTP client (`Services::http`): key
/// rotations and fallbacks reuse its connections instead of opening a pool each.
pub fn client_with_http(
    provider: &Provider,
    http: &reqwest::Client,
) -> Result<std::sync::Arc<dyn LlmClient>, LlmError> {
    prewarm_tls(provider);
    match provider.wire_api {
        WireApi::ChatCompletions => Ok(std::sync::Arc::new(openai::OpenAiClient::with_http(
            provider.clone(),
            http.clone(),
        )?)),
        WireApi::AnthropicMessages => Ok(std::sync::Arc::new(
            anthropic::AnthropicClient::with_http(provider.clone(), http.clone())?,
        )),
    }
}

/// Builds the client for a resolved provider.
pub fn client_for(provider: &Provider) -> Result<std::sync::Arc<dyn LlmClient>, LlmError> {
    prewarm_tls(provider);
    match provider.wire_api {
        WireApi::ChatCompletions => Ok(std::sync::Arc::new(openai::OpenAiClient::new(
            provider.clone(),
        )?)),
        WireApi::AnthropicMessages => Ok(std::sync::Arc::new(anthropic::AnthropicClient::new(
            provider.clone(),
        )?)),
    }
}

/// A model on `https://` needs the system's root certificates for its first request: start
/// loading them now, beside the rest of start-up (a plain `http://` server never needs them).
fn prewarm_tls(provider: &Provider) {
    if tls::needs_roots(&provider.base_url) {
        tls::prewarm();
    }
}

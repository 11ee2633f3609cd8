//! `Provider` (a provider is data: name, base URL, key, wire protocol, timeouts) and its resolution
//! from flags, config.yaml, environment and local servers.

use std::fmt;
use std::time::Duration;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireApi {
    /// OpenAI `/chat/completions` (OpenAI, OpenRouter, Ollama, llama.cpp, vLLM, most gateways).
    ChatCompletions,
}

/// A resolved provider: everything needed to make a call.
#[derive(Clone)]
pub struct Provider {
    /// `custom`, `openai`, `openrouter`, `ollama`, ... (also the `billing_provider` of a session).
    pub name: String,
    pub model: String,
    /// Base URL including the version path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// `None` for endpoints that need no key (local servers, custom endpoints).
    pub api_key: Option<String>,
    pub wire_api: WireApi,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    pub connect_timeout: Duration,
    /// Upper bound on one whole request, streaming included.
    pub request_timeout: Duration,
    /// Longest silence tolerated between two stream chunks.
    pub stream_idle_timeout: Duration,
}

impl Provider {
    pub fn new(name: &str, model: &str, base_url: &str, api_key: Option<String>) -> Self {
        Provider {
            name: name.to_string(),
            model: model.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.filter(|k| !k.is_empty()),
            wire_api: WireApi::ChatCompletions,
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(180),
        }
    }
}

// Hand-written so the key can never reach a log line through `{:?}`.
impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("wire_api", &self.wire_api)
            .finish_non_exhaustive()
    }
}

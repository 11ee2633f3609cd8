//! OpenAI chat completions client (being written by the LLM helper; this is the agreed API).

use crate::llm::{ChatRequest, LlmClient, LlmError, LlmStream, Provider};

pub struct OpenAiClient {
    provider: Provider,
}

impl OpenAiClient {
    pub fn new(provider: Provider) -> Result<Self, LlmError> {
        Ok(OpenAiClient { provider })
    }
}

#[async_trait::async_trait]
impl LlmClient for OpenAiClient {
    async fn stream(&self, _request: ChatRequest) -> Result<LlmStream, LlmError> {
        Err(LlmError::new(crate::llm::FailoverReason::Unknown, "not yet"))
    }
    fn provider(&self) -> &Provider {
        &self.provider
    }
}

//! `WireApi`: which wire protocol a provider speaks, its `model.api_mode` spelling, and its
//! detection from the provider name and base URL (reference §3.2: an explicit `api_mode` wins,
//! then the provider, then the base URL; the caller applies the explicit mode).

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireApi {
    /// OpenAI `/chat/completions` (OpenAI, OpenRouter, Ollama, llama.cpp, vLLM, most gateways).
    ChatCompletions,
    /// Anthropic `/v1/messages` (api.anthropic.com and gateways with a `/anthropic` base URL).
    AnthropicMessages,
}

impl WireApi {
    /// The config spelling (`model.api_mode`), as in Python Hermes.
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::ChatCompletions => "chat_completions",
            WireApi::AnthropicMessages => "anthropic_messages",
        }
    }

    /// Parses `model.api_mode`; `None` for modes this build does not speak.
    pub fn parse(mode: &str) -> Option<WireApi> {
        match mode.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "chat_completions" | "openai" => Some(WireApi::ChatCompletions),
            "anthropic_messages" | "anthropic" => Some(WireApi::AnthropicMessages),
            _ => None,
        }
    }

    /// The protocol implied by a provider name and base URL when no `api_mode` is configured
    /// (reference §3.2): provider `anthropic`, host `api.anthropic.com` or a base URL ending in
    /// `/anthropic` speak Messages; everything else speaks chat completions.
    pub fn detect(provider_name: &str, base_url: &str) -> WireApi {
        let base = base_url.trim_end_matches('/').to_ascii_lowercase();
        let host = base
            .split_once("://")
            .map_or(base.as_str(), |(_, rest)| rest)
            .split(['/', ':'])
            .next()
            .unwrap_or("");
        if provider_name == "anthropic"
            || host == "api.anthropic.com"
            || base.ends_with("/anthropic")
        {
            WireApi::AnthropicMessages
        } else {
            WireApi::ChatCompletions
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_detection_follows_provider_then_base_url() {
        use WireApi::*;
        for (name, base, want) in [
            ("anthropic", "http://127.0.0.1:9/v1", AnthropicMessages),
            ("custom", "https://api.anthropic.com/v1", AnthropicMessages),
            ("custom", "https://API.anthropic.com:443", AnthropicMessages),
            (
                "custom",
                "https://api.minimax.io/anthropic/",
                AnthropicMessages,
            ),
            (
                "custom",
                "http://evil.example/api.anthropic.com/v1",
                ChatCompletions,
            ),
            (
                "openrouter",
                "https://openrouter.ai/api/v1",
                ChatCompletions,
            ),
            ("custom", "http://h:1/v1", ChatCompletions),
        ] {
            assert_eq!(WireApi::detect(name, base), want, "{name} {base}");
        }
        assert_eq!(
            WireApi::parse("anthropic-messages"),
            Some(AnthropicMessages)
        );
        assert_eq!(WireApi::parse(" Chat_Completions "), Some(ChatCompletions));
        assert_eq!(WireApi::parse("codex_responses"), None);
        assert_eq!(AnthropicMessages.as_str(), "anthropic_messages");
    }
}

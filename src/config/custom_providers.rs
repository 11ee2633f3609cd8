//! `custom_providers:` in config.yaml (Python Hermes's list format): each entry adds a row to the
//! provider table (`llm::provider::table`), selected with `--provider NAME` / `model.provider:
//! NAME` (or `custom:NAME`). Typed here; the provider table turns an entry into a row.
//!
//! ```yaml
//! custom_providers:
//!   - name: My Gateway            # selected as `my-gateway` or `custom:my-gateway`
//!     base_url: https://gw.example/v1
//!     key_env: MY_GATEWAY_KEY      # or api_key: ... (pooled keys: MY_GATEWAY_KEY_2..9)
//!     model: some-model            # the default model
//!     api_mode: chat_completions   # or anthropic_messages
//!     extra_headers: {X-Team: a}
//! ```
//! Python-only fields (`models`, `context_length`, `extra_body`, ...) are accepted and ignored;
//! any other key is a typo (an error with "did you mean", `config/keys.rs`). The entries are
//! parsed with the rest of config.yaml (`ConfigFile::custom_providers`); `validate` checks what
//! serde cannot (a name, a usable base_url, no name twice).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One `custom_providers` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CustomProvider {
    pub name: String,
    #[serde(alias = "baseUrl", alias = "url", alias = "api")]
    pub base_url: String,
    #[serde(alias = "apiKey")]
    pub api_key: Option<String>,
    #[serde(alias = "keyEnv", alias = "api_key_env", alias = "apiKeyEnv")]
    pub key_env: Option<String>,
    #[serde(alias = "apiMode", alias = "transport")]
    pub api_mode: Option<String>,
    #[serde(alias = "default_model", alias = "defaultModel")]
    pub model: Option<String>,
    pub extra_headers: BTreeMap<String, String>,
    pub request_timeout_seconds: Option<f64>,
    // Read by Python Hermes only: accepted as written (listed, so a misspelt key is an error).
    pub models: Option<Value>,
    #[serde(alias = "contextLength")]
    pub context_length: Option<Value>,
    pub extra_body: Option<Value>,
    pub stale_timeout_seconds: Option<Value>,
    #[serde(alias = "rateLimitDelay")]
    pub rate_limit_delay: Option<Value>,
    pub ssl_verify: Option<Value>,
    pub ssl_ca_cert: Option<Value>,
    pub discover_models: Option<Value>,
    pub provider: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CustomProvidersError {
    #[error("custom_providers entry {index} in config.yaml: {message}")]
    Entry { index: usize, message: String },
}

impl CustomProvider {
    /// The name it is selected by: lower case, spaces as `-` (Python Hermes's normalisation).
    pub fn slug(&self) -> String {
        normalize(&self.name)
    }
}

/// Python Hermes's custom-provider name normalisation.
pub fn normalize(name: &str) -> String {
    name.trim().to_lowercase().replace(' ', "-")
}

/// Checks the entries serde parsed: each has a name and an http(s) base_url, no name twice.
pub fn validate(entries: &[CustomProvider]) -> Result<(), CustomProvidersError> {
    for (i, provider) in entries.iter().enumerate() {
        let err = |message: String| CustomProvidersError::Entry {
            index: i + 1,
            message,
        };
        if provider.slug().is_empty() {
            return Err(err("has no `name`; add `name: my-provider`".into()));
        }
        let url = provider.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.len() <= "https://".len()
        {
            return Err(err(format!(
                "`{}` has no usable base_url ({:?}); set `base_url: https://host/v1`",
                provider.name, provider.base_url
            )));
        }
        if entries[..i].iter().any(|p| p.slug() == provider.slug()) {
            return Err(err(format!(
                "the name `{}` is used twice; give each custom provider its own name",
                provider.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<CustomProvider>, CustomProvidersError> {
        let list: Vec<CustomProvider> = serde_saphyr::from_str(text).unwrap();
        validate(&list).map(|()| list)
    }

    #[test]
    fn python_entries_parse_with_aliases() {
        let list = parse(
            "- name: My Gateway\n  url: http://gw:1/v1\n  apiKey: k\n  transport: anthropic_messages\n  default_model: m\n  context_length: 8000\n  models: [a, b]\n  extra_headers: {X-Team: a}\n",
        )
        .unwrap();
        assert_eq!(list.len(), 1);
        let p = &list[0];
        assert_eq!(p.slug(), "my-gateway");
        assert_eq!(p.base_url, "http://gw:1/v1");
        assert_eq!(p.api_key.as_deref(), Some("k"));
        assert_eq!(p.api_mode.as_deref(), Some("anthropic_messages"));
        assert_eq!(p.model.as_deref(), Some("m"));
        assert_eq!(p.extra_headers["X-Team"], "a");
    }

    #[test]
    fn entries_without_name_or_url_or_twice_are_readable_errors() {
        let e = parse("- name: x\n").unwrap_err().to_string();
        assert!(e.contains("entry 1") && e.contains("base_url"), "{e}");
        let e = parse("- base_url: http://h/v1\n").unwrap_err().to_string();
        assert!(e.contains("name"), "{e}");
        let e =
            parse("- {name: A, base_url: 'http://h/v1'}\n- {name: a, base_url: 'http://i/v1'}\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("entry 2") && e.contains("twice"), "{e}");
    }
}

//! `Provider` (a provider is data: name, base URL, key, wire protocol, timeouts) and its resolution
//! from flags, config.yaml, environment and local servers. Which providers exist, and everything
//! that depends on their names, comes from the table in `provider/table.rs`.

use std::fmt;
use std::time::Duration;

use crate::llm::prompt_cache::CacheTtl;

pub mod table;
mod wire_api;
pub use table::{Detect, ProviderRow, ProviderSpec, ProviderTable};
pub use wire_api::WireApi;

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
    /// The variable the key is read from (from the provider table); its credential pool also
    /// reads `<key_env>_2` … `<key_env>_9`.
    pub key_env: Option<String>,
    pub wire_api: WireApi,
    /// Lifetime of prompt-cache entries where caching markers are sent (Claude on the Messages
    /// API or through OpenRouter); from `prompt_caching.cache_ttl`.
    pub cache_ttl: crate::llm::prompt_cache::CacheTtl,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    pub connect_timeout: Duration,
    /// Upper bound on one whole request, streaming included.
    pub request_timeout: Duration,
    /// Longest silence tolerated between two stream chunks.
    pub stream_idle_timeout: Duration,
    /// Most answer bytes (text, reasoning, tool arguments) read from one response.
    pub max_answer_bytes: usize,
}

impl Provider {
    /// A provider whose wire protocol is detected from its name and base URL
    /// ([`WireApi::detect`]); set `wire_api` afterwards to force one.
    pub fn new(name: &str, model: &str, base_url: &str, api_key: Option<String>) -> Self {
        Provider {
            name: name.to_string(),
            model: model.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.filter(|k| !k.is_empty()),
            key_env: None,
            wire_api: WireApi::detect(name, base_url),
            cache_ttl: crate::llm::prompt_cache::CacheTtl::default(),
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(180),
            max_answer_bytes: crate::config::model_limits::DEFAULT_MAX_ANSWER_BYTES,
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

/// Provider settings given on the command line.
#[derive(Debug, Clone, Default)]
pub struct ProviderFlags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The help lists every way to configure one (derived from the provider table).
    #[error("{help}")]
    NothingConfigured { help: String },
    #[error(
        "unknown provider `{name}`; use one of: {known} (any OpenAI-compatible server works as `custom` with --base-url)"
    )]
    UnknownProvider { name: String, known: String },
    #[error(
        "model.api_mode `{mode}` in {config} is not supported by this build; use `chat_completions` or `anthropic_messages` (or remove it to detect the mode from the provider)"
    )]
    UnsupportedApiMode { mode: String, config: String },
    #[error("provider `{name}` needs a base URL: pass --base-url URL or set {env}")]
    NoBaseUrl { name: String, env: String },
    #[error("provider `{name}` needs an API key: pass --api-key or set {env}")]
    NoApiKey { name: String, env: String },
    #[error("{0}")]
    CustomProviders(#[from] crate::config::custom_providers::CustomProvidersError),
    #[error(
        "no model selected for provider `{name}` at {base_url}: pass -m MODEL or set model.default in config.yaml{detail}"
    )]
    NoModel {
        name: String,
        base_url: String,
        detail: String,
    },
}

/// What resolution can look at; the network probe is injectable so tests stay offline and fast.
pub struct ResolveInputs<'a> {
    pub flags: &'a ProviderFlags,
    pub config: &'a crate::config::Config,
    /// Timeout for probing local servers and listing models.
    pub probe_timeout: Duration,
}

/// Resolves the provider: flags → config.yaml `model:` → environment → a local server → error.
pub async fn resolve(inputs: ResolveInputs<'_>) -> Result<Provider, ProviderError> {
    let ResolveInputs {
        flags,
        config,
        probe_timeout,
    } = inputs;
    let env = &config.env;
    let cfg = &config.model;
    let model = flags.model.clone().or_else(|| cfg.default.clone());

    // 1–2. An explicit provider or base URL, from flags first, then config.yaml.
    let explicit_name = flags.provider.clone().or_else(|| {
        if flags.base_url.is_some() {
            None
        } else {
            cfg.provider.clone()
        }
    });
    let explicit_base = flags.base_url.clone().or_else(|| {
        (flags.provider.is_none())
            .then(|| cfg.base_url.clone())
            .flatten()
    });
    let explicit_key = flags.api_key.clone().or_else(|| cfg.api_key.clone());

    let table = ProviderTable::for_config(config)?;
    let env_var = |var: &Option<String>| {
        var.as_deref()
            .and_then(|v| env.get(v))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };

    let (row, name, base_url, key) = if explicit_name.is_some() || explicit_base.is_some() {
        let name = explicit_name.unwrap_or_else(|| "custom".to_string());
        let row = table
            .find(&name)
            .ok_or_else(|| ProviderError::UnknownProvider {
                name: name.trim().to_string(),
                known: table.names().join(", "),
            })?;
        let base = explicit_base
            .or_else(|| env_var(&row.base_env))
            .or_else(|| (!row.base_url.is_empty()).then(|| row.base_url.clone()))
            .ok_or_else(|| ProviderError::NoBaseUrl {
                name: row.name.clone(),
                env: row
                    .base_env
                    .clone()
                    .unwrap_or_else(|| "CUSTOM_BASE_URL".to_string()),
            })?;
        let key = explicit_key
            .or_else(|| env_var(&row.key_env))
            .or_else(|| row.api_key.clone());
        (row, row.name.clone(), base, key)
    } else if let Some(row) = table.env_detected().into_iter().find(|r| {
        env_var(&r.key_env).is_some() || (r.env_base_means_custom && env_var(&r.base_env).is_some())
    }) {
        // 3. Environment, in the table's detection order.
        let env_base = env_var(&row.base_env);
        let name = if row.env_base_means_custom && env_base.is_some() {
            "custom".to_string()
        } else {
            row.name.clone()
        };
        let base = env_base.unwrap_or_else(|| row.base_url.clone());
        (
            row,
            name,
            base,
            explicit_key.or_else(|| env_var(&row.key_env)),
        )
    } else {
        // 4. A local server that answers.
        let found = probe_local(&table, probe_timeout).await;
        match found {
            Some((row, models)) => {
                let model = model
                    .or_else(|| row.default_model.clone())
                    .or_else(|| models.into_iter().next())
                    .ok_or_else(|| ProviderError::NoModel {
                        name: row.name.clone(),
                        base_url: row.base_url.clone(),
                        detail: " (the server lists no models)".into(),
                    })?;
                let mut provider = Provider::new(&row.name, &model, &row.base_url, None);
                provider.cache_ttl = CacheTtl::from_config(config);
                config.model_limits.apply(&mut provider);
                return Ok(provider);
            }
            None => {
                return Err(ProviderError::NothingConfigured {
                    help: table
                        .nothing_configured_help(&config.home.config_path().display().to_string()),
                });
            }
        }
    };

    let key = key.filter(|k| !k.is_empty());
    if key.is_none() && row.key_required && name == row.name {
        return Err(ProviderError::NoApiKey {
            env: row
                .key_env
                .clone()
                .unwrap_or_else(|| "api_key in config.yaml".into()),
            name,
        });
    }
    // The protocol: `model.api_mode` when the config's model section is the one in use (flags
    // naming another provider or URL make it someone else's), else detected (reference §3.2).
    let configured_mode = cfg
        .api_mode
        .as_deref()
        .filter(|_| flags.provider.is_none() && flags.base_url.is_none());
    let wire_api = match configured_mode {
        Some(mode) => WireApi::parse(mode).ok_or_else(|| ProviderError::UnsupportedApiMode {
            mode: mode.to_string(),
            config: config.home.config_path().display().to_string(),
        })?,
        None => row
            .wire_api
            .unwrap_or_else(|| WireApi::detect(&name, &base_url)),
    };
    let model = match model.or_else(|| row.default_model.clone()) {
        Some(m) => m,
        None => list_models_for(wire_api, &base_url, key.as_deref(), probe_timeout)
            .await
            .and_then(|m| m.into_iter().next())
            .ok_or_else(|| ProviderError::NoModel {
                name: name.clone(),
                base_url: base_url.clone(),
                detail: String::new(),
            })?,
    };
    let mut provider = Provider::new(&name, &model, &base_url, key);
    provider.key_env = row.key_env.clone();
    provider.wire_api = wire_api;
    provider.headers = row.headers.clone();
    provider.cache_ttl = CacheTtl::from_config(config);
    config.model_limits.apply(&mut provider);
    if let Some(timeout) = row.request_timeout {
        provider.request_timeout = timeout;
    }
    Ok(provider)
}

/// Probes the table's local servers concurrently; the first in preference order that answers
/// wins.
async fn probe_local(
    table: &ProviderTable,
    timeout: Duration,
) -> Option<(&ProviderRow, Vec<String>)> {
    let probes = table.local_probes().into_iter().map(|row| async move {
        let models = list_models(&row.base_url, None, timeout).await;
        models.map(|m| (row, m))
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .next()
}

/// `GET {base}/models` → model ids; `None` when the server does not answer in time.
pub async fn list_models(
    base_url: &str,
    key: Option<&str>,
    timeout: Duration,
) -> Option<Vec<String>> {
    list_models_for(WireApi::ChatCompletions, base_url, key, timeout).await
}

/// [`list_models`] in the given protocol's dialect: the Messages API lists models at
/// `/v1/models` and authenticates with `x-api-key` instead of a bearer token.
pub async fn list_models_for(
    wire_api: WireApi,
    base_url: &str,
    key: Option<&str>,
    timeout: Duration,
) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct ModelList {
        #[serde(default)]
        data: Vec<ModelEntry>,
        #[serde(default)]
        models: Vec<ModelEntry>,
    }
    #[derive(serde::Deserialize)]
    struct ModelEntry {
        #[serde(alias = "name", alias = "model")]
        id: String,
    }
    let client = crate::llm::http::client_builder(timeout)
        .timeout(timeout)
        .build()
        .ok()?;
    let base = base_url.trim_end_matches('/');
    let mut req = match wire_api {
        WireApi::ChatCompletions => client.get(format!("{base}/models")),
        WireApi::AnthropicMessages => {
            let url = crate::llm::anthropic::messages_endpoint(base);
            let url = format!("{}/models", url.trim_end_matches("/messages"));
            client.get(url).header(
                "anthropic-version",
                crate::llm::anthropic::ANTHROPIC_VERSION,
            )
        }
    };
    if let Some(k) = key {
        req = match wire_api {
            WireApi::ChatCompletions => req.bearer_auth(k),
            WireApi::AnthropicMessages => req.header("x-api-key", k),
        };
    }
    let resp = req.send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let list: ModelList = resp.json().await.ok()?;
    Some(
        list.data
            .into_iter()
            .chain(list.models)
            .map(|m| m.id)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, EnvVars, HermesHome};

    fn config(env: &[(&str, &str)], yaml: &str) -> Config {
        let mut vars = EnvVars::default();
        for (k, v) in env {
            vars.set(*k, *v);
        }
        Config::from_yaml(
            HermesHome::new("/tmp/none"),
            vars,
            yaml,
            std::path::Path::new("/tmp/none/config.yaml"),
        )
        .unwrap()
    }

    async fn run(flags: ProviderFlags, cfg: &Config) -> Result<Provider, ProviderError> {
        resolve(ResolveInputs {
            flags: &flags,
            config: cfg,
            probe_timeout: Duration::from_millis(50),
        })
        .await
    }

    #[tokio::test]
    async fn flags_win_over_config_and_env() {
        let cfg = config(
            &[("OPENAI_API_KEY", "sk-env")],
            "model:\n  provider: openrouter\n  default: cfg-model\n",
        );
        let p = run(
            ProviderFlags {
                provider: Some("custom".into()),
                model: Some("flag-model".into()),
                base_url: Some("http://127.0.0.1:9/v1/".into()),
                api_key: None,
            },
            &cfg,
        )
        .await
        .unwrap();
        assert_eq!(p.name, "custom");
        assert_eq!(p.model, "flag-model");
        assert_eq!(p.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(p.api_key, None, "a custom endpoint needs no key");
    }

    #[tokio::test]
    async fn custom_uses_custom_base_url_env() {
        let cfg = config(&[("CUSTOM_BASE_URL", "http://h:1/v1")], "");
        let p = run(
            ProviderFlags {
                provider: Some("custom".into()),
                model: Some("m".into()),
                ..Default::default()
            },
            &cfg,
        )
        .await
        .unwrap();
        assert_eq!(p.base_url, "http://h:1/v1");
    }

    #[tokio::test]
    async fn config_model_section_is_used() {
        let cfg = config(
            &[],
            "model:\n  provider: custom\n  base_url: http://cfg:1/v1\n  default: llama\n",
        );
        let p = run(ProviderFlags::default(), &cfg).await.unwrap();
        assert_eq!((p.name.as_str(), p.model.as_str()), ("custom", "llama"));
        assert_eq!(p.base_url, "http://cfg:1/v1");
    }

    #[tokio::test]
    async fn env_keys_select_vendors() {
        let cfg = config(&[("OPENROUTER_API_KEY", "or-key")], "model: some/model\n");
        let p = run(ProviderFlags::default(), &cfg).await.unwrap();
        assert_eq!(p.name, "openrouter");
        assert_eq!(p.api_key.as_deref(), Some("or-key"));
        let cfg = config(&[("OPENAI_API_KEY", "k")], "model: gpt-4o\n");
        let p = run(ProviderFlags::default(), &cfg).await.unwrap();
        assert_eq!(p.base_url, "https://api.openai.com/v1");
    }

    #[tokio::test]
    async fn openai_without_key_is_a_clear_error() {
        let cfg = config(&[], "");
        let err = run(
            ProviderFlags {
                provider: Some("openai".into()),
                model: Some("gpt".into()),
                ..Default::default()
            },
            &cfg,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    }

    #[tokio::test]
    async fn unknown_provider_lists_known_ones() {
        let cfg = config(&[], "");
        let err = run(
            ProviderFlags {
                provider: Some("acme".into()),
                ..Default::default()
            },
            &cfg,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("openrouter"), "{err}");
    }

    #[tokio::test]
    async fn anthropic_provider_resolution() {
        let cfg = config(&[("ANTHROPIC_API_KEY", "sk-ant-env")], "model: claude-x\n");
        let p = run(ProviderFlags::default(), &cfg).await.unwrap();
        assert_eq!(
            (p.name.as_str(), p.wire_api),
            ("anthropic", WireApi::AnthropicMessages)
        );
        assert_eq!(p.base_url, "https://api.anthropic.com/v1");
        assert_eq!(p.api_key.as_deref(), Some("sk-ant-env"));
        assert_eq!(p.cache_ttl, CacheTtl::FiveMinutes);

        let cfg = config(&[], "prompt_caching:\n  cache_ttl: 1h\n");
        let flags = ProviderFlags {
            provider: Some("Claude".into()),
            model: Some("claude-x".into()),
            api_key: Some("k".into()),
            ..Default::default()
        };
        let p = run(flags, &cfg).await.unwrap();
        assert_eq!(
            (p.name.as_str(), p.wire_api),
            ("anthropic", WireApi::AnthropicMessages)
        );
        assert_eq!(p.cache_ttl, CacheTtl::OneHour);

        let cfg = config(&[], "");
        let err = run(
            ProviderFlags {
                provider: Some("anthropic".into()),
                model: Some("claude-x".into()),
                ..Default::default()
            },
            &cfg,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    }

    #[tokio::test]
    async fn api_mode_in_config_overrides_detection() {
        let yaml = |mode: &str, base: &str| {
            format!(
                "model:\n  provider: custom\n  base_url: {base}\n  default: m\n  api_mode: {mode}\n"
            )
        };
        let cfg = config(&[], &yaml("chat_completions", "http://gw/anthropic"));
        let p = run(ProviderFlags::default(), &cfg).await.unwrap();
        assert_eq!(p.wire_api, WireApi::ChatCompletions);
        let cfg = config(&[], &yaml("anthropic_messages", "http://gw/v1"));
        let p = run(ProviderFlags::default(), &cfg).await.unwrap();
        assert_eq!(p.wire_api, WireApi::AnthropicMessages);
        // Flags naming another endpoint make the config's api_mode someone else's.
        let flags = ProviderFlags {
            provider: Some("custom".into()),
            base_url: Some("http://other/v1".into()),
            ..Default::default()
        };
        let p = run(flags, &cfg).await.unwrap();
        assert_eq!(p.wire_api, WireApi::ChatCompletions);
        let cfg = config(&[], &yaml("codex_responses", "http://gw/v1"));
        let err = run(ProviderFlags::default(), &cfg).await.unwrap_err();
        assert!(
            matches!(err, ProviderError::UnsupportedApiMode { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("anthropic_messages"), "{err}");
    }

    #[test]
    fn debug_hides_the_key() {
        let p = Provider::new("openai", "m", "http://x", Some("sk-secret-123456".into()));
        assert!(!format!("{p:?}").contains("secret"));
    }
}

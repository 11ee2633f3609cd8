//! The provider paths of config.yaml, typed (Python Hermes 0.19 names): `providers.<name>`
//! (Python's keyed providers, plus our `api_keys` pool), `credential_pool_strategies`,
//! `fallback_providers` / the legacy `fallback_model`, and the approval switch of the API
//! server (`api_server.approvals`, also `platforms.api_server.approvals`). `custom_providers`
//! entries are typed in `custom_providers.rs`.
//!
//! Python accepts any key under these sections; the keys it reads are fields here (those only
//! Python uses are kept as `Value` and not interpreted), so `keys.rs` can tell a typo from a
//! Python key and answer it with "did you mean". `platforms.<name>` is not closed: Python's
//! platform sections carry per-platform keys we do not list.

use std::collections::BTreeMap;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::custom_providers::CustomProvider;
use super::file::{num, text};

/// `providers.<name>`: Python Hermes' keyed custom providers (an entry with a base_url becomes
/// a provider-table row, as `custom_providers` entries do) and our `api_keys` pool. The keys are
/// Python's `_KNOWN_KEYS` (hermes_cli/config.py) with its camelCase aliases.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ProviderFile {
    /// Ours: more keys for the provider's credential pool.
    pub api_keys: Option<Vec<String>>,
    #[serde(deserialize_with = "text")]
    pub name: Option<String>,
    #[serde(
        alias = "url",
        alias = "api",
        alias = "baseUrl",
        deserialize_with = "text"
    )]
    pub base_url: Option<String>,
    #[serde(alias = "apiKey", deserialize_with = "text")]
    pub api_key: Option<String>,
    #[serde(
        alias = "api_key_env",
        alias = "keyEnv",
        alias = "apiKeyEnv",
        deserialize_with = "text"
    )]
    pub key_env: Option<String>,
    #[serde(alias = "apiMode", alias = "transport", deserialize_with = "text")]
    pub api_mode: Option<String>,
    #[serde(
        alias = "default_model",
        alias = "defaultModel",
        deserialize_with = "text"
    )]
    pub model: Option<String>,
    pub extra_headers: Option<BTreeMap<String, String>>,
    #[serde(deserialize_with = "num")]
    pub request_timeout_seconds: Option<f64>,
    // Read by Python Hermes only: accepted as written.
    pub provider: Option<Value>,
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
}

impl ProviderFile {
    /// The entry as a `custom_providers` row (Python's `providers_dict_to_custom_providers`),
    /// when it defines an endpoint; `key` is its name under `providers:`.
    pub fn as_custom(&self, key: &str) -> Option<CustomProvider> {
        let base_url = self.base_url.clone()?;
        Some(CustomProvider {
            name: self.name.clone().unwrap_or_else(|| key.to_string()),
            base_url,
            api_key: self.api_key.clone(),
            key_env: self.key_env.clone(),
            api_mode: self.api_mode.clone(),
            model: self.model.clone(),
            extra_headers: self.extra_headers.clone().unwrap_or_default(),
            request_timeout_seconds: self.request_timeout_seconds,
            ..CustomProvider::default()
        })
    }
}

/// One entry of `fallback_providers` (or the legacy `fallback_model`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FallbackFile {
    #[serde(deserialize_with = "text")]
    pub provider: Option<String>,
    #[serde(deserialize_with = "text")]
    pub model: Option<String>,
    #[serde(deserialize_with = "text")]
    pub base_url: Option<String>,
    #[serde(deserialize_with = "text")]
    pub api_key: Option<String>,
    /// The variable holding the key (Python reads both spellings).
    #[serde(alias = "api_key_env", deserialize_with = "text")]
    pub key_env: Option<String>,
    // Read by Python only.
    pub api_mode: Option<Value>,
    pub extra_body: Option<Value>,
    pub models: Option<Value>,
    pub name: Option<Value>,
    pub provider_key: Option<Value>,
}

/// `fallback_model:` — Python Hermes takes one entry or a list. Read through the document's
/// own map / sequence access, so a misspelt key inside is still seen by `keys.rs`.
pub fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FallbackFile>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<FallbackFile>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a fallback entry (provider, model, ...) or a list of them")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Ok(vec![FallbackFile::deserialize(
                MapAccessDeserializer::new(map),
            )?])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::<FallbackFile>::deserialize(SeqAccessDeserializer::new(seq))
        }
    }
    d.deserialize_any(V)
}

/// How a credential pool picks the next key (`credential_pool_strategies.<provider>`).
pub const POOL_STRATEGIES: &[&str] = &["fill_first", "round_robin", "least_used", "random"];

/// `credential_pool_strategies:` — provider → one of [`POOL_STRATEGIES`]; anything else is an
/// error naming the closest strategy.
pub fn strategies<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let map = Option::<BTreeMap<String, String>>::deserialize(d)?.unwrap_or_default();
    for (provider, strategy) in &map {
        if !POOL_STRATEGIES.contains(&strategy.as_str()) {
            let hint = super::keys::closest(strategy, POOL_STRATEGIES)
                .map(|s| format!("did you mean `{s}`?"))
                .unwrap_or_else(|| format!("use one of {}", POOL_STRATEGIES.join(", ")));
            return Err(serde::de::Error::custom(format!(
                "`{strategy}` for {provider} is not a pool strategy ({hint})"
            )));
        }
    }
    Ok(map)
}

/// `api_server:` (ours) and `platforms.api_server:` — only the approval switch is read here.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ApiServerApprovals {
    /// `allow` lets API-server runs approve dangerous commands (default deny).
    pub approvals: Option<Value>,
}

/// `platforms.<name>` (Python Hermes' per-platform settings): what Python's `PlatformConfig`
/// reads, plus the API server's approval switch.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PlatformFile {
    pub approvals: Option<Value>,
    pub enabled: Option<Value>,
    pub token: Option<Value>,
    pub api_key: Option<Value>,
    pub home_channel: Option<Value>,
    pub reply_to_mode: Option<Value>,
    pub gateway_restart_notification: Option<Value>,
    pub typing_indicator: Option<Value>,
    pub typing_status_text: Option<Value>,
    pub channel_overrides: Option<Value>,
    pub extra: Option<Value>,
}

/// The sections above as they sit in `ConfigFile`.
pub type Providers = BTreeMap<String, ProviderFile>;
pub type Platforms = BTreeMap<String, PlatformFile>;

/// Sections whose every key is listed here (Python's included): any other key under them is a
/// typo, although Python's own table calls them open. `parent` is the key's parent path.
pub(super) fn closed(parent: &[String]) -> bool {
    matches!(
        parent
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["providers", _]
            | ["fallback_providers", _]
            | ["fallback_model"]
            | ["fallback_model", _]
            | ["custom_providers", _]
    )
}

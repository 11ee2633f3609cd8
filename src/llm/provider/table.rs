//! The provider table: every provider hermes can reach by name, as data. Built-in rows live in
//! `BUILTIN`; another file may add one with `register_provider!`; config.yaml's
//! `custom_providers:` (and Python's keyed `providers:` form) adds the user's. Everything
//! name-dependent is derived from the rows: whether a key is required, the environment
//! auto-detection order, the local servers probed, the "nothing configured" help and the
//! pooled-key variables (`<KEY>_2` … `<KEY>_9`).

use std::time::Duration;

use crate::config::custom_providers::{self, CustomProvider, CustomProvidersError};
use crate::llm::provider::WireApi;

/// How a provider is picked when nothing names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Detect {
    /// Only when named (`--provider`, `model.provider`).
    Never,
    /// When its key variable (or, with `env_base_means_custom`, its base-URL variable) is set;
    /// lower orders are tried first.
    Env(u16),
    /// A local server probed at its default URL; lower orders win among those that answer.
    Local(u16),
}

/// A row as written in code (`BUILTIN`, `register_provider!`).
#[derive(Debug, Clone, Copy)]
pub struct ProviderSpec {
    pub name: &'static str,
    /// Other spellings accepted for the name.
    pub aliases: &'static [&'static str],
    /// Who it is, for help texts ("OpenRouter", "Ollama").
    pub label: &'static str,
    /// Default base URL; empty when the user must give one.
    pub base_url: &'static str,
    pub key_env: Option<&'static str>,
    /// A variable that overrides the base URL.
    pub base_env: Option<&'static str>,
    pub key_required: bool,
    pub detect: Detect,
    /// A set base-URL variable makes this an unnamed OpenAI-compatible endpoint (`custom`).
    pub env_base_means_custom: bool,
    /// `None`: detected from the name and base URL.
    pub wire_api: Option<WireApi>,
}

/// One provider of the table (owned: rows from config.yaml have run-time names).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRow {
    pub name: String,
    pub aliases: Vec<String>,
    pub label: String,
    pub base_url: String,
    pub key_env: Option<String>,
    pub base_env: Option<String>,
    /// A key written in config.yaml (`custom_providers[].api_key`).
    pub api_key: Option<String>,
    pub key_required: bool,
    pub detect: Detect,
    pub env_base_means_custom: bool,
    pub wire_api: Option<WireApi>,
    /// The model used when none is given (`custom_providers[].model`).
    pub default_model: Option<String>,
    pub headers: Vec<(String, String)>,
    pub request_timeout: Option<Duration>,
}

impl From<&ProviderSpec> for ProviderRow {
    fn from(s: &ProviderSpec) -> Self {
        ProviderRow {
            name: s.name.to_string(),
            aliases: s.aliases.iter().map(|a| a.to_string()).collect(),
            label: s.label.to_string(),
            base_url: s.base_url.to_string(),
            key_env: s.key_env.map(str::to_string),
            base_env: s.base_env.map(str::to_string),
            api_key: None,
            key_required: s.key_required,
            detect: s.detect,
            env_base_means_custom: s.env_base_means_custom,
            wire_api: s.wire_api,
            default_model: None,
            headers: Vec::new(),
            request_timeout: None,
        }
    }
}

impl ProviderRow {
    /// The variables holding more keys for its credential pool: `<KEY>_2` … `<KEY>_9` of its
    /// own key variable (none when it has no key variable).
    pub fn pooled_key_vars(&self) -> Vec<String> {
        self.key_env
            .as_deref()
            .map(pooled_key_vars)
            .unwrap_or_default()
    }
}

/// `<KEY>_2` … `<KEY>_9`: where a credential pool finds more keys for the variable `key_env`.
pub fn pooled_key_vars(key_env: &str) -> Vec<String> {
    (2..=9).map(|n| format!("{key_env}_{n}")).collect()
}

/// A row added from another file with `register_provider!` (collected by `inventory`).
pub struct ProviderRegistration {
    pub spec: ProviderSpec,
}

inventory::collect!(ProviderRegistration);

/// Adds a provider row from the file that needs it: `register_provider!(ProviderSpec { .. });`.
#[macro_export]
macro_rules! register_provider {
    ($spec:expr) => {
        inventory::submit! {
            $crate::llm::provider::table::ProviderRegistration { spec: $spec }
        }
    };
}

const fn spec(name: &'static str, label: &'static str, base_url: &'static str) -> ProviderSpec {
    ProviderSpec {
        name,
        aliases: &[],
        label,
        base_url,
        key_env: None,
        base_env: None,
        key_required: false,
        detect: Detect::Never,
        env_base_means_custom: false,
        wire_api: None,
    }
}

/// The built-in rows. Names follow Python Hermes.
pub const BUILTIN: &[ProviderSpec] = &[
    ProviderSpec {
        key_env: Some("OPENAI_API_KEY"),
        base_env: Some("OPENAI_BASE_URL"),
        key_required: true,
        detect: Detect::Env(10),
        env_base_means_custom: true,
        ..spec(
            "openai",
            "OpenAI; add OPENAI_BASE_URL for any OpenAI-compatible server",
            "https://api.openai.com/v1",
        )
    },
    ProviderSpec {
        key_env: Some("OPENROUTER_API_KEY"),
        key_required: true,
        detect: Detect::Env(20),
        ..spec("openrouter", "OpenRouter", "https://openrouter.ai/api/v1")
    },
    ProviderSpec {
        aliases: &["claude"],
        key_env: Some("ANTHROPIC_API_KEY"),
        base_env: Some("ANTHROPIC_BASE_URL"),
        key_required: true,
        detect: Detect::Env(30),
        wire_api: Some(WireApi::AnthropicMessages),
        ..spec("anthropic", "Anthropic", "https://api.anthropic.com/v1")
    },
    ProviderSpec {
        aliases: &["openai-compatible", "local"],
        key_env: Some("CUSTOM_API_KEY"),
        base_env: Some("CUSTOM_BASE_URL"),
        ..spec("custom", "any OpenAI-compatible server", "")
    },
    ProviderSpec {
        base_env: Some("OLLAMA_BASE_URL"),
        detect: Detect::Local(10),
        ..spec("ollama", "Ollama", "http://127.0.0.1:11434/v1")
    },
    ProviderSpec {
        aliases: &["llama.cpp", "llama-cpp"],
        detect: Detect::Local(20),
        ..spec("llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1")
    },
    ProviderSpec {
        detect: Detect::Local(30),
        ..spec("vllm", "vLLM", "http://127.0.0.1:8000/v1")
    },
];

/// Every provider reachable under one config: built-in, registered and `custom_providers` rows.
#[derive(Debug, Clone)]
pub struct ProviderTable {
    rows: Vec<ProviderRow>,
}

impl ProviderTable {
    /// Built-in and `register_provider!` rows.
    pub fn builtin() -> Self {
        let mut rows: Vec<ProviderRow> = BUILTIN.iter().map(ProviderRow::from).collect();
        for reg in inventory::iter::<ProviderRegistration> {
            if !rows.iter().any(|r| r.name == reg.spec.name) {
                rows.push(ProviderRow::from(&reg.spec));
            }
        }
        ProviderTable { rows }
    }

    /// The built-in rows plus the `custom_providers:` of config.yaml.
    pub fn for_config(config: &crate::config::Config) -> Result<Self, CustomProvidersError> {
        let mut table = Self::builtin();
        // `custom_providers:` entries, then `providers:` entries that define an endpoint
        // (Python Hermes' newer keyed form); a name already taken keeps its first entry.
        let mut customs = config.file.custom_providers.clone();
        for (key, entry) in &config.file.providers {
            if let Some(custom) = entry.as_custom(key)
                && !customs.iter().any(|c| c.slug() == custom.slug())
            {
                customs.push(custom);
            }
        }
        custom_providers::validate(&customs)?;
        for (i, custom) in customs.into_iter().enumerate() {
            if let Some(mode) = custom.api_mode.as_deref()
                && WireApi::parse(mode).is_none()
            {
                return Err(CustomProvidersError::Entry {
                    index: i + 1,
                    message: format!(
                        "`{}` has api_mode `{mode}`, which this build does not speak; use chat_completions or anthropic_messages",
                        custom.name
                    ),
                });
            }
            table.add_custom(custom);
        }
        Ok(table)
    }

    /// A `custom_providers` entry as a row named `custom:<slug>` (also selectable as `<slug>`,
    /// unless a built-in provider has that name: Python Hermes keeps the built-in then).
    fn add_custom(&mut self, c: CustomProvider) {
        let slug = c.slug();
        let taken = self.find(&slug).is_some();
        let row = ProviderRow {
            name: format!("custom:{slug}"),
            aliases: if taken { Vec::new() } else { vec![slug] },
            label: c.name.trim().to_string(),
            base_url: c.base_url.trim().trim_end_matches('/').to_string(),
            key_required: c.key_env.is_some() && c.api_key.is_none(),
            key_env: c.key_env.filter(|v| !v.trim().is_empty()),
            base_env: None,
            api_key: c.api_key.filter(|k| !k.is_empty()),
            detect: Detect::Never,
            env_base_means_custom: false,
            wire_api: c.api_mode.as_deref().and_then(WireApi::parse),
            default_model: c.model.filter(|m| !m.is_empty()),
            headers: c.extra_headers.into_iter().collect(),
            request_timeout: c
                .request_timeout_seconds
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64),
        };
        self.rows.push(row);
    }

    /// The row a (case-insensitive) name or alias selects.
    pub fn find(&self, name: &str) -> Option<&ProviderRow> {
        let wanted = name.trim().to_lowercase();
        let wanted = wanted.as_str();
        self.rows.iter().find(|r| r.name == wanted).or_else(|| {
            self.rows
                .iter()
                .find(|r| r.aliases.iter().any(|a| a == wanted))
        })
    }

    pub fn rows(&self) -> &[ProviderRow] {
        &self.rows
    }

    /// Names for "use one of" errors, in table order.
    pub fn names(&self) -> Vec<&str> {
        self.rows.iter().map(|r| r.name.as_str()).collect()
    }

    /// Rows picked from the environment, in the order they are tried.
    pub fn env_detected(&self) -> Vec<&ProviderRow> {
        self.ordered(|d| matches!(d, Detect::Env(_)))
    }

    /// Local servers probed when nothing else is configured, in order of preference.
    pub fn local_probes(&self) -> Vec<&ProviderRow> {
        self.ordered(|d| matches!(d, Detect::Local(_)))
    }

    fn ordered(&self, keep: impl Fn(Detect) -> bool) -> Vec<&ProviderRow> {
        let mut rows: Vec<&ProviderRow> = self.rows.iter().filter(|r| keep(r.detect)).collect();
        rows.sort_by_key(|r| r.detect);
        rows
    }

    /// The "no LLM provider is configured" help, one line per way to configure one.
    pub fn nothing_configured_help(&self, config_path: &str) -> String {
        let mut lines = vec![
            "no LLM provider is configured. Set one of:".to_string(),
            "  --provider custom --base-url URL -m MODEL   (or CUSTOM_BASE_URL=URL with --provider custom)".to_string(),
        ];
        for row in self.env_detected() {
            if let Some(var) = &row.key_env {
                lines.push(format!("  {:<27} ({})", format!("{var}=..."), row.label));
            }
        }
        let custom: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.name.starts_with("custom:"))
            .map(|r| r.name.as_str())
            .collect();
        if !custom.is_empty() {
            lines.push(format!(
                "  --provider NAME             (your custom_providers: {})",
                custom.join(", ")
            ));
        }
        lines.push(format!(
            "  model: {{provider: custom, base_url: URL, default: MODEL}}   in {config_path}"
        ));
        let locals: Vec<String> = self
            .local_probes()
            .iter()
            .map(|r| format!("{} on :{}", r.label, port_of(&r.base_url)))
            .collect();
        if !locals.is_empty() {
            lines.push(format!("or start a local server ({}).", locals.join(", ")));
        }
        lines.join("\n")
    }
}

fn port_of(url: &str) -> &str {
    url.split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|host| host.rsplit_once(':'))
        .map_or("", |(_, port)| port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_order_and_help_come_from_the_rows() {
        let t = ProviderTable::builtin();
        let env: Vec<&str> = t.env_detected().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(env, ["openai", "openrouter", "anthropic"]);
        let local: Vec<&str> = t.local_probes().iter().map(|r| r.name.as_str()).collect();
        // `lmstudio` is registered by cli/setup/wizard.rs with `register_provider!`.
        assert_eq!(local, ["ollama", "llamacpp", "vllm", "lmstudio"]);
        let help = t.nothing_configured_help("/h/config.yaml");
        for needle in [
            "OPENROUTER_API_KEY=...",
            "ANTHROPIC_API_KEY=...",
            "Ollama on :11434",
            "vLLM on :8000",
            "/h/config.yaml",
        ] {
            assert!(help.contains(needle), "{needle} missing from\n{help}");
        }
    }

    #[test]
    fn names_aliases_and_pooled_keys() {
        let t = ProviderTable::builtin();
        assert_eq!(t.find("Claude").unwrap().name, "anthropic");
        assert_eq!(t.find("llama.cpp").unwrap().name, "llamacpp");
        assert!(t.find("acme").is_none());
        let vars = t.find("openrouter").unwrap().pooled_key_vars();
        assert_eq!(
            vars.first().map(String::as_str),
            Some("OPENROUTER_API_KEY_2")
        );
        assert_eq!(vars.len(), 8);
        assert!(t.find("vllm").unwrap().pooled_key_vars().is_empty());
    }

    #[test]
    fn custom_rows_join_under_their_slug() {
        let mut t = ProviderTable::builtin();
        t.add_custom(CustomProvider {
            name: "My Gateway".into(),
            base_url: "http://gw:1/v1/".into(),
            key_env: Some("GW_KEY".into()),
            model: Some("m1".into()),
            ..Default::default()
        });
        t.add_custom(CustomProvider {
            name: "openai".into(),
            base_url: "http://proxy/v1".into(),
            ..Default::default()
        });
        let row = t.find("my-gateway").unwrap();
        assert_eq!(row.name, "custom:my-gateway");
        assert_eq!(row.base_url, "http://gw:1/v1");
        assert!(row.key_required);
        assert_eq!(row.pooled_key_vars()[0], "GW_KEY_2");
        assert_eq!(
            t.find("custom:my-gateway").unwrap().name,
            "custom:my-gateway"
        );
        // A built-in name stays the built-in; the custom row is reached by its full name.
        assert_eq!(t.find("openai").unwrap().name, "openai");
        assert_eq!(t.find("custom:openai").unwrap().base_url, "http://proxy/v1");
        assert!(t.nothing_configured_help("c").contains("custom:my-gateway"));
    }
}

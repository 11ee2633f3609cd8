//! `ConfigFile`: config.yaml as typed serde structs, parsed once at load. Its fields *are* the
//! list of keys hermes (Rust) reads: a key not among them is either Python Hermes' (accepted,
//! reported as not supported yet) or a typo (an error) — see `keys.rs`.
//!
//! Every field is optional or defaults, so a missing or `null` section means "defaults". Numbers
//! and booleans are read leniently (`"180"`, `yes`), as Python Hermes does, since `${VAR}`
//! expansion and hand edits leave them as strings. Another subsystem's section is a typed struct
//! in its own `src/config/<name>.rs` and one field line here.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{
    ToolsetDef, auxiliary, budget, checkpoints, delegation, gateway, mcp, memory, security,
};
use super::{custom_providers, providers, skills, terminal, tools};

/// The whole document. Opaque (`Value`) fields are sections read elsewhere that are not typed
/// yet; their keys are not checked here.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ConfigFile {
    /// A model name or a mapping (`provider`, `default`, `base_url`, `api_key`, `api_mode`,
    /// `context_length`); read by `Config::apply`.
    pub model: Option<Value>,
    #[serde(deserialize_with = "or_default")]
    pub agent: AgentFile,
    pub toolsets: Option<Vec<String>>,
    #[serde(deserialize_with = "or_default")]
    pub terminal: terminal::TerminalFile,
    #[serde(deserialize_with = "or_default")]
    pub approvals: ApprovalsFile,
    pub command_allowlist: Option<Vec<String>>,
    pub command_denylist: Option<Vec<String>>,
    pub custom_toolsets: Option<BTreeMap<String, ToolsetDef>>,
    #[serde(deserialize_with = "or_default")]
    pub tool_output: ToolOutputFile,
    #[serde(deserialize_with = "num")]
    pub file_read_max_chars: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub context_file_max_chars: Option<usize>,
    #[serde(deserialize_with = "or_default")]
    pub security: security::SecurityFile,
    #[serde(deserialize_with = "or_default")]
    pub checkpoints: checkpoints::CheckpointsFile,
    #[serde(deserialize_with = "or_default")]
    pub delegation: delegation::DelegationFile,
    #[serde(deserialize_with = "or_default")]
    pub memory: memory::MemoryFile,
    #[serde(deserialize_with = "or_default")]
    pub skills: skills::SkillsFile,
    #[serde(deserialize_with = "or_default")]
    pub gateway: gateway::GatewayFile,
    /// MCP servers (Python Hermes format); used by the MCP client.
    #[serde(deserialize_with = "or_default")]
    pub mcp_servers: BTreeMap<String, mcp::McpServerConfig>,
    /// Seconds `tool_search`/`tool_call` wait for an MCP server still connecting (Python's
    /// key, default 1.5); start-up never waits.
    #[serde(deserialize_with = "num")]
    pub mcp_discovery_timeout: Option<f64>,
    /// `mcp:` (`auto_reload_on_config_change`).
    #[serde(deserialize_with = "or_default")]
    pub mcp: mcp::McpSection,
    #[serde(deserialize_with = "or_default")]
    pub auxiliary: auxiliary::AuxiliaryFile,
    #[serde(deserialize_with = "or_default")]
    pub compression: CompressionFile,
    #[serde(deserialize_with = "or_default")]
    pub tool_loop_guardrails: LoopGuardFile,
    #[serde(deserialize_with = "or_default")]
    pub prompt_caching: PromptCachingFile,
    /// Gateway knobs Python Hermes keeps at the top level (also accepted under `gateway:`).
    #[serde(deserialize_with = "num")]
    pub max_live_sessions: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub max_concurrent_sessions: Option<usize>,
    #[serde(deserialize_with = "flag")]
    pub group_sessions_per_user: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub require_mention: Option<bool>,
    pub unauthorized_dm_behavior: Option<String>,
    /// `budget:` (ours): prices and spend caps (`agent/spend.rs`).
    #[serde(deserialize_with = "or_default")]
    pub budget: budget::BudgetFile,
    /// `tools.tool_search`, applied by `tools/deferred.rs`.
    #[serde(deserialize_with = "or_default")]
    pub tools: tools::ToolsFile,
    /// The provider paths (`providers.rs`, `custom_providers.rs`).
    #[serde(deserialize_with = "or_default")]
    pub providers: providers::Providers,
    #[serde(deserialize_with = "providers::one_or_many")]
    pub fallback_providers: Vec<providers::FallbackFile>,
    #[serde(deserialize_with = "providers::one_or_many")]
    pub fallback_model: Vec<providers::FallbackFile>,
    #[serde(deserialize_with = "providers::strategies")]
    pub credential_pool_strategies: BTreeMap<String, String>,
    #[serde(deserialize_with = "or_default")]
    pub custom_providers: Vec<custom_providers::CustomProvider>,
    /// `api_server.approvals` / `platforms.api_server.approvals` (approval policy).
    #[serde(deserialize_with = "or_default")]
    pub api_server: providers::ApiServerApprovals,
    #[serde(deserialize_with = "or_default")]
    pub platforms: providers::Platforms,
    /// Boundary keys the user chose although they equal Python Hermes's default (ours;
    /// `python_defaults.rs`).
    pub hermes_explicit: Option<Vec<String>>,
    /// Python Hermes' schema version; kept, not interpreted.
    #[serde(rename = "_config_version")]
    pub config_version: Option<Value>,
}

/// `agent:` (the model-call limits are in `model_limits.rs`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgentFile {
    #[serde(deserialize_with = "num")]
    pub max_turns: Option<u32>,
    #[serde(deserialize_with = "num")]
    pub api_max_retries: Option<u32>,
    #[serde(deserialize_with = "num")]
    pub request_timeout: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub stream_idle_timeout: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_answer_mb: Option<f64>,
    /// Toolsets the agent does not get (Python Hermes' key; `hermes tools disable`).
    pub disabled_toolsets: Option<Vec<String>>,
    /// Single tools the agent does not get (ours; `hermes tools disable NAME`).
    pub disabled_tools: Option<Vec<String>>,
}

/// `approvals:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ApprovalsFile {
    /// `manual`, `smart` or `off` (a bare `off` reaches us as `false`).
    pub mode: Option<Value>,
    #[serde(deserialize_with = "num")]
    pub timeout: Option<u64>,
    pub deny: Option<Vec<String>>,
    /// `deny` (default) or `approve`: what cron jobs may run.
    #[serde(deserialize_with = "text")]
    pub cron_mode: Option<String>,
}

/// `tool_output:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ToolOutputFile {
    #[serde(deserialize_with = "num")]
    pub max_bytes: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub max_lines: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub max_line_length: Option<usize>,
}

/// `compression:` (context compaction).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CompressionFile {
    #[serde(deserialize_with = "flag")]
    pub enabled: Option<bool>,
    #[serde(deserialize_with = "num")]
    pub threshold: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub target_ratio: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub protect_first_n: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub protect_last_n: Option<f64>,
}

/// `tool_loop_guardrails:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LoopGuardFile {
    #[serde(deserialize_with = "flag")]
    pub warnings_enabled: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub hard_stop_enabled: Option<bool>,
    #[serde(deserialize_with = "or_default")]
    pub warn_after: LoopThresholdsFile,
    #[serde(deserialize_with = "or_default")]
    pub hard_stop_after: LoopThresholdsFile,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LoopThresholdsFile {
    #[serde(deserialize_with = "num")]
    pub exact_failure: Option<u32>,
    #[serde(deserialize_with = "num")]
    pub same_tool_failure: Option<u32>,
    #[serde(deserialize_with = "num")]
    pub idempotent_no_progress: Option<u32>,
}

/// `prompt_caching:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PromptCachingFile {
    /// `5m` (default) or `1h`.
    #[serde(deserialize_with = "text")]
    pub cache_ttl: Option<String>,
}

/// Our keys directly under `parent` (a dotted path; map entries such as a server name are
/// written `*`), for "did you mean".
pub(super) fn our_fields(parent: &str) -> &'static [&'static str] {
    use super::keys::struct_fields as f;
    match parent {
        "" => f::<ConfigFile>(),
        "agent" => f::<AgentFile>(),
        "terminal" => f::<terminal::TerminalFile>(),
        "approvals" => f::<ApprovalsFile>(),
        "tool_output" => f::<ToolOutputFile>(),
        "security" => f::<security::SecurityFile>(),
        "checkpoints" => f::<checkpoints::CheckpointsFile>(),
        "delegation" => f::<delegation::DelegationFile>(),
        "memory" => f::<memory::MemoryFile>(),
        "skills" => f::<skills::SkillsFile>(),
        "gateway" => f::<gateway::GatewayFile>(),
        "gateway.api_server" => f::<gateway::ApiServerFile>(),
        "auxiliary" => f::<auxiliary::AuxiliaryFile>(),
        "compression" => f::<CompressionFile>(),
        "tool_loop_guardrails" => f::<LoopGuardFile>(),
        "tool_loop_guardrails.warn_after" | "tool_loop_guardrails.hard_stop_after" => {
            f::<LoopThresholdsFile>()
        }
        "prompt_caching" => f::<PromptCachingFile>(),
        "tools" => f::<tools::ToolsFile>(),
        "tools.tool_search" => f::<tools::ToolSearchFile>(),
        "budget" => f::<budget::BudgetFile>(),
        p if p.starts_with("budget.prices.") => f::<budget::PriceFile>(),
        p if p.starts_with("auxiliary.") => f::<auxiliary::AuxTask>(),
        "api_server" => f::<providers::ApiServerApprovals>(),
        "fallback_model" => f::<providers::FallbackFile>(),
        p if one_below(p, "providers") => f::<providers::ProviderFile>(),
        p if one_below(p, "platforms") => f::<providers::PlatformFile>(),
        p if one_below(p, "fallback_providers") || one_below(p, "fallback_model") => {
            f::<providers::FallbackFile>()
        }
        p if one_below(p, "custom_providers") => f::<custom_providers::CustomProvider>(),
        _ => &[],
    }
}

/// Whether `path` is `section.<one entry>` (a map key or a list index).
fn one_below(path: &str, section: &str) -> bool {
    path.strip_prefix(section)
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|entry| !entry.is_empty() && !entry.contains('.'))
}

/// `null` (a section written with nothing under it) means the defaults.
pub fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A number, also when written as a string (`"180"`, or `${VAR}` expanded).
pub fn num<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + FromStr,
{
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => s
            .trim()
            .parse::<T>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected a number, found `{s}`"))),
        Some(v @ Value::Number(_)) => T::deserialize(v)
            .map(Some)
            .map_err(|e| D::Error::custom(format!("{e}"))),
        Some(other) => Err(D::Error::custom(format!(
            "expected a number, found {}",
            super::kind_of(&other)
        ))),
    }
}

/// A boolean, also written `yes`/`no`, `on`/`off` or as a string.
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Ok(Some(true)),
            "false" | "no" | "off" | "0" => Ok(Some(false)),
            "" => Ok(None),
            _ => Err(D::Error::custom(format!(
                "expected true or false, found `{s}`"
            ))),
        },
        Some(other) => Err(D::Error::custom(format!(
            "expected true or false, found {}",
            super::kind_of(&other)
        ))),
    }
}

/// A string that may be left empty (`''` in Python Hermes' defaults means "not set").
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
        Some(other) => Err(D::Error::custom(format!(
            "expected a string, found {}",
            super::kind_of(&other)
        ))),
    }
}

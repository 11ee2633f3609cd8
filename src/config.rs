//! `Config`: config.yaml (Python Hermes keys where they apply) + `.env`, with `${VAR}` expansion.
//!
//! Loading is strict about what we own and tolerant about what Python Hermes owns: a top-level key
//! or a key inside `agent`, `terminal` or `approvals` that neither program knows is an error that
//! names the key and the file (a typo must not be silently ignored); sections only Python Hermes
//! uses are accepted and left alone, so an existing `~/.hermes` keeps working.

pub mod checkpoints;
pub mod custom_providers;
pub mod delegation;
pub mod home;
pub mod model_limits;
pub mod security;
pub mod terminal;

pub use home::HermesHome;
pub use security::SecurityConfig;

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not valid YAML: {message}\nfix the file or move it away to start from defaults"
    )]
    Syntax { path: PathBuf, message: String },
    #[error("{path}: unknown key `{key}`{hint}")]
    UnknownKey {
        path: PathBuf,
        key: String,
        hint: String,
    },
    #[error("{path}: key `{key}` has the wrong type: {message}")]
    Type {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How dangerous terminal commands are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Ask the user (once / session / always / deny); deny on timeout or when no one can answer.
    Manual,
    /// Python Hermes' default: the auxiliary model (`auxiliary.approval`) reviews dangerous and
    /// cannot-verify commands first; ESCALATE or any failure falls back to manual.
    Smart,
    /// Never ask (the hardline floor still applies).
    Off,
}

/// The `model:` key: a bare model name or a mapping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelConfig {
    pub provider: Option<String>,
    pub default: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub api_mode: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub max_turns: u32,
    pub api_max_retries: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TerminalConfig {
    /// Default foreground timeout in seconds.
    pub timeout: u64,
    pub cwd: String,
    /// Backend, limits, network, environment (`config/terminal.rs`).
    pub exec: terminal::ExecSettings,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalsConfig {
    pub mode: ApprovalMode,
    /// Seconds to wait for the user's answer before denying.
    pub timeout: u64,
    /// Extra deny patterns (regexes) checked before any bypass.
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutputConfig {
    pub max_bytes: usize,
    pub max_lines: usize,
    pub max_line_length: usize,
}

/// A user-defined toolset (`custom_toolsets:` in config.yaml).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsetDef {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub includes: Vec<String>,
}

/// Environment seen by hermes: `$HERMES_HOME/.env` overlaid by the process environment.
/// Kept out of the process environment itself so tests never need to mutate it.
#[derive(Clone, Default, PartialEq)]
pub struct EnvVars(BTreeMap<String, String>);

impl EnvVars {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
    /// Every variable (for finding the secret ones to redact).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }
    /// Reads `.env` (if present) and then the process environment, which wins.
    pub fn load(env_file: &Path) -> Result<Self, ConfigError> {
        let mut vars = BTreeMap::new();
        match dotenvy::from_path_iter(env_file) {
            Ok(iter) => {
                for item in iter {
                    let (k, v) = item.map_err(|e| ConfigError::Invalid {
                        path: env_file.to_path_buf(),
                        message: format!("cannot parse: {e}"),
                    })?;
                    vars.insert(k, v);
                }
            }
            Err(dotenvy::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(ConfigError::Invalid {
                    path: env_file.to_path_buf(),
                    message: format!("cannot parse: {e}"),
                });
            }
        }
        for (k, v) in std::env::vars_os() {
            if let (Ok(k), Ok(v)) = (k.into_string(), v.into_string()) {
                vars.insert(k, v);
            }
        }
        Ok(EnvVars(vars))
    }
}

impl fmt::Debug for EnvVars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EnvVars({} vars)", self.0.len())
    }
}

/// Everything hermes reads from `$HERMES_HOME`, loaded once and handed down (inside `Services`).
#[derive(Debug, Clone)]
pub struct Config {
    pub home: HermesHome,
    pub model: ModelConfig,
    pub agent: AgentConfig,
    pub toolsets: Vec<String>,
    pub terminal: TerminalConfig,
    pub approvals: ApprovalsConfig,
    pub command_allowlist: Vec<String>,
    /// Rules that refuse a command in every mode (like `approvals.deny`).
    pub command_denylist: Vec<String>,
    pub custom_toolsets: BTreeMap<String, ToolsetDef>,
    pub tool_output: ToolOutputConfig,
    pub file_read_max_chars: usize,
    pub context_file_max_chars: Option<usize>,
    pub env: EnvVars,
    /// Timeouts and answer cap of one model call (`agent.request_timeout`, ...).
    pub model_limits: model_limits::ModelLimits,
    pub security: SecurityConfig,
    pub checkpoints: checkpoints::CheckpointsConfig,
    /// The whole document after `${VAR}` expansion, for later subsystems' sections.
    pub raw: Value,
}

impl Config {
    /// Defaults for a home with no config.yaml, with the given environment.
    pub fn defaults(home: HermesHome, env: EnvVars) -> Self {
        Config {
            home,
            model: ModelConfig::default(),
            agent: AgentConfig {
                max_turns: 90,
                api_max_retries: 3,
            },
            toolsets: vec!["hermes-cli".to_string()],
            terminal: TerminalConfig {
                timeout: 180,
                cwd: ".".to_string(),
                exec: terminal::ExecSettings::default(),
            },
            approvals: ApprovalsConfig {
                mode: ApprovalMode::Manual,
                timeout: 60,
                deny: Vec::new(),
            },
            command_allowlist: Vec::new(),
            command_denylist: Vec::new(),
            custom_toolsets: BTreeMap::new(),
            tool_output: ToolOutputConfig {
                max_bytes: 50_000,
                max_lines: 2_000,
                max_line_length: 2_000,
            },
            file_read_max_chars: 100_000,
            context_file_max_chars: None,
            env,
            model_limits: model_limits::ModelLimits::default(),
            security: SecurityConfig::default(),
            checkpoints: checkpoints::CheckpointsConfig::default(),
            raw: Value::Null,
        }
    }

    /// Loads `.env` and `config.yaml` from `home`. A missing config.yaml means defaults.
    pub fn load(home: &HermesHome) -> Result<Self, ConfigError> {
        let env = EnvVars::load(&home.env_path())?;
        let path = home.config_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(ConfigError::Read { path, source: e }),
        };
        Self::from_yaml(home.clone(), env, &text, &path)
    }

    /// Parses config text (what `load` does after reading the files).
    pub fn from_yaml(
        home: HermesHome,
        env: EnvVars,
        text: &str,
        path: &Path,
    ) -> Result<Self, ConfigError> {
        let mut config = Config::defaults(home, env);
        if text.trim().is_empty() {
            return Ok(config);
        }
        let mut doc: Value = serde_saphyr::from_str(text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if doc.is_null() {
            return Ok(config);
        }
        let Value::Object(map) = &mut doc else {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: "the top level must be a mapping of keys (like `model: ...`)".into(),
            });
        };
        expand_env_in_map(map, &config.env);
        check_known_keys(map, path)?;
        apply(&mut config, map, path)?;
        config.raw = doc;
        Ok(config)
    }
}

fn apply(
    config: &mut Config,
    map: &serde_json::Map<String, Value>,
    path: &Path,
) -> Result<(), ConfigError> {
    let type_err = |key: &str, message: String| ConfigError::Type {
        path: path.to_path_buf(),
        key: key.to_string(),
        message,
    };
    if let Some(model) = map.get("model") {
        config.model = match model {
            Value::Null => ModelConfig::default(),
            Value::String(s) if s.is_empty() => ModelConfig::default(),
            Value::String(s) => ModelConfig {
                default: Some(s.clone()),
                ..ModelConfig::default()
            },
            Value::Object(m) => {
                let s = |k: &str| -> Result<Option<String>, ConfigError> {
                    match m.get(k) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(v)) if v.is_empty() => Ok(None),
                        Some(Value::String(v)) => Ok(Some(v.clone())),
                        Some(other) => Err(type_err(
                            &format!("model.{k}"),
                            format!("expected a string, found {}", kind_of(other)),
                        )),
                    }
                };
                ModelConfig {
                    provider: s("provider")?,
                    default: s("default")?.or(s("model")?),
                    base_url: s("base_url")?,
                    api_key: s("api_key")?,
                    api_mode: s("api_mode")?,
                }
            }
            other => {
                return Err(type_err(
                    "model",
                    format!(
                        "expected a model name or a mapping, found {}",
                        kind_of(other)
                    ),
                ));
            }
        };
    }
    if let Some(agent) = section(map, "agent", path)? {
        if let Some(v) = typed::<u32>(agent, "agent", "max_turns", path)? {
            if v == 0 {
                return Err(type_err("agent.max_turns", "must be at least 1".into()));
            }
            config.agent.max_turns = v;
        }
        if let Some(v) = typed::<u32>(agent, "agent", "api_max_retries", path)? {
            config.agent.api_max_retries = v;
        }
        config.model_limits = model_limits::ModelLimits::from_agent_section(agent, path)?;
    }
    if let Some(v) = typed_top::<Vec<String>>(map, "toolsets", path)? {
        config.toolsets = v;
    }
    if let Some(terminal) = section(map, "terminal", path)? {
        if let Some(v) = typed::<u64>(terminal, "terminal", "timeout", path)? {
            config.terminal.timeout = v;
        }
        if let Some(v) = typed::<String>(terminal, "terminal", "cwd", path)? {
            config.terminal.cwd = v;
        }
        terminal::apply(&mut config.terminal.exec, terminal, path)?;
    }
    if let Some(approvals) = section(map, "approvals", path)? {
        if let Some(mode) = approvals.get("mode") {
            config.approvals.mode = match mode {
                // YAML 1.1 readers (PyYAML) turn a bare `off` into false.
                Value::Bool(false) => ApprovalMode::Off,
                Value::Bool(true) => ApprovalMode::Manual,
                Value::String(s) => match s.to_ascii_lowercase().as_str() {
                    "manual" => ApprovalMode::Manual,
                    "smart" => ApprovalMode::Smart,
                    "off" | "false" | "no" => ApprovalMode::Off,
                    other => {
                        return Err(type_err(
                            "approvals.mode",
                            format!("`{other}` is not one of manual, smart, off"),
                        ));
                    }
                },
                Value::Null => ApprovalMode::Manual,
                other => {
                    return Err(type_err(
                        "approvals.mode",
                        format!("expected manual, smart or off, found {}", kind_of(other)),
                    ));
                }
            };
        }
        if let Some(v) = typed::<u64>(approvals, "approvals", "timeout", path)? {
            config.approvals.timeout = v;
        }
        if let Some(v) = typed::<Vec<String>>(approvals, "approvals", "deny", path)? {
            config.approvals.deny = v;
        }
    }
    if let Some(v) = typed_top::<Vec<String>>(map, "command_denylist", path)? {
        config.command_denylist = v;
    }
    if let Some(v) = typed_top::<Vec<String>>(map, "command_allowlist", path)? {
        config.command_allowlist = v;
    }
    if let Some(v) = typed_top::<BTreeMap<String, ToolsetDef>>(map, "custom_toolsets", path)? {
        config.custom_toolsets = v;
    }
    if let Some(out) = section(map, "tool_output", path)? {
        if let Some(v) = typed::<usize>(out, "tool_output", "max_bytes", path)? {
            config.tool_output.max_bytes = v;
        }
        if let Some(v) = typed::<usize>(out, "tool_output", "max_lines", path)? {
            config.tool_output.max_lines = v;
        }
        if let Some(v) = typed::<usize>(out, "tool_output", "max_line_length", path)? {
            config.tool_output.max_line_length = v;
        }
    }
    if let Some(v) = typed_top::<usize>(map, "file_read_max_chars", path)? {
        config.file_read_max_chars = v;
    }
    if let Some(v) = typed_top::<usize>(map, "context_file_max_chars", path)? {
        config.context_file_max_chars = Some(v);
    }
    config.security = security::parse(map, &config.env, path)?;
    config.checkpoints = checkpoints::parse(map, path)?;
    Ok(())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn section<'a>(
    map: &'a serde_json::Map<String, Value>,
    key: &str,
    path: &Path,
) -> Result<Option<&'a serde_json::Map<String, Value>>, ConfigError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(ConfigError::Type {
            path: path.to_path_buf(),
            key: key.to_string(),
            message: format!("expected a mapping, found {}", kind_of(other)),
        }),
    }
}

fn typed_top<T: serde::de::DeserializeOwned>(
    map: &serde_json::Map<String, Value>,
    key: &str,
    path: &Path,
) -> Result<Option<T>, ConfigError> {
    decode(map.get(key), key, path)
}

fn typed<T: serde::de::DeserializeOwned>(
    map: &serde_json::Map<String, Value>,
    section: &str,
    key: &str,
    path: &Path,
) -> Result<Option<T>, ConfigError> {
    decode(map.get(key), &format!("{section}.{key}"), path)
}

fn decode<T: serde::de::DeserializeOwned>(
    value: Option<&Value>,
    key: &str,
    path: &Path,
) -> Result<Option<T>, ConfigError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    // Numbers written as strings after `${VAR}` expansion ("180") are accepted.
    let value = match value {
        Value::String(s) if s.parse::<i64>().is_ok() => {
            serde_json::from_str::<Value>(s).unwrap_or_else(|_| value.clone())
        }
        _ => value.clone(),
    };
    serde_path_to_error::deserialize::<_, T>(value)
        .map(Some)
        .map_err(|e| {
            let inner = e.path().to_string();
            let key = if inner == "." || inner.is_empty() {
                key.to_string()
            } else {
                format!("{key}.{inner}")
            };
            ConfigError::Type {
                path: path.to_path_buf(),
                key,
                message: e.into_inner().to_string(),
            }
        })
}

/// Top-level keys known to Python Hermes 0.19 or to us. Unknown ones are typos.
const KNOWN_TOP: &[&str] = &[
    "_config_version",
    "model",
    "providers",
    "fallback_providers",
    "credential_pool_strategies",
    "toolsets",
    "max_concurrent_sessions",
    "max_live_sessions",
    "context_file_max_chars",
    "file_read_max_chars",
    "mcp_discovery_timeout",
    "prefill_messages_file",
    "honcho",
    "timezone",
    "whatsapp",
    "command_allowlist",
    "command_denylist",
    "api_server",
    "quick_commands",
    "platform_hints",
    "hooks",
    "hooks_auto_accept",
    "personalities",
    "paste_collapse_threshold",
    "paste_collapse_char_threshold",
    "custom_providers",
    "fallback_model",
    "mcp_servers",
    "image_gen",
    "video_gen",
    "plugins",
    "smart_model_routing",
    "platform_toolsets",
    "known_plugin_toolsets",
    "session_reset",
    "group_sessions_per_user",
    "thread_sessions_per_user",
    "stt_echo_transcripts",
    "reset_triggers",
    "always_log_local",
    "filter_silence_narration",
    "multiplex_profiles",
    "profile_routes",
    "platforms",
    "require_mention",
    "unauthorized_dm_behavior",
    "signal",
    "agent",
    "terminal",
    "compression",
    "memory",
    "skills",
    "curator",
    "delegation",
    "approvals",
    "security",
    "auxiliary",
    "tool_output",
    "tool_loop_guardrails",
    "checkpoints",
    "prompt_caching",
    "context",
    "code_execution",
    "tools",
    "sessions",
    "cron",
    "streaming",
    "gateway",
    "display",
    "web",
    "browser",
    "tts",
    "stt",
    "voice",
    "human_delay",
    "goals",
    "moa",
    "slack",
    "discord",
    "telegram",
    "mattermost",
    "matrix",
    "logging",
    "model_catalog",
    "lsp",
    "x_search",
    "secrets",
    "updates",
    "onboarding",
    "dashboard",
    "privacy",
    "network",
    "kanban",
    "openrouter",
    "bedrock",
    "vertex",
    "desktop",
    "computer_use",
    // hermes (Rust) additions
    "custom_toolsets",
    "budget",
];

const KNOWN_AGENT: &[&str] = &[
    "max_turns",
    "gateway_timeout",
    "api_max_retries",
    "tool_use_enforcement",
    "intent_ack_continuation",
    "task_completion_guidance",
    "parallel_tool_call_guidance",
    "environment_probe",
    "coding_context",
    "verify_guidance",
    "max_verify_nudges",
    "verify_on_stop",
    "gateway_timeout_warning",
    "clarify_timeout",
    "gateway_notify_interval",
    "image_input_mode",
    "disabled_toolsets",
    "reasoning_overrides",
    "local_stream_stale_timeout",
    "reasoning_effort",
    "service_tier",
    "max_tokens",
    "request_timeout",
    "stream_idle_timeout",
    "max_answer_mb",
];

const KNOWN_TERMINAL: &[&str] = &[
    "backend",
    "modal_mode",
    "cwd",
    "timeout",
    "env_passthrough",
    "home_mode",
    "docker_image",
    "modal_image",
    "daytona_image",
    "singularity_image",
    "container_cpu",
    "container_memory",
    "container_disk",
    "container_persistent",
    "docker_volumes",
    "docker_mount_cwd_to_workspace",
    "docker_network",
    "docker_run_as_host_user",
    "persistent_shell",
    "ssh_host",
    "ssh_user",
    "ssh_port",
    "ssh_key",
    "lifetime_seconds",
    // hermes (Rust) additions
    "network",
    "max_processes",
    "max_memory_mb",
    "max_file_size_mb",
    "writable_paths",
];

const KNOWN_APPROVALS: &[&str] = &[
    "mode",
    "timeout",
    "cron_mode",
    "deny",
    "mcp_reload_confirm",
    "destructive_slash_confirm",
];

const KNOWN_TOOL_OUTPUT: &[&str] = &["max_bytes", "max_lines", "max_line_length"];

fn check_known_keys(map: &serde_json::Map<String, Value>, path: &Path) -> Result<(), ConfigError> {
    check_keys(map, "", KNOWN_TOP, path)?;
    for (name, known) in [
        ("agent", KNOWN_AGENT),
        ("terminal", KNOWN_TERMINAL),
        ("approvals", KNOWN_APPROVALS),
        ("tool_output", KNOWN_TOOL_OUTPUT),
    ] {
        if let Some(Value::Object(sub)) = map.get(name) {
            check_keys(sub, name, known, path)?;
        }
    }
    Ok(())
}

fn check_keys(
    map: &serde_json::Map<String, Value>,
    prefix: &str,
    known: &[&str],
    path: &Path,
) -> Result<(), ConfigError> {
    for key in map.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let hint = closest(key, known)
            .map(|k| format!(" (did you mean `{k}`?)"))
            .unwrap_or_else(|| " (remove it, or check the spelling)".to_string());
        return Err(ConfigError::UnknownKey {
            path: path.to_path_buf(),
            key: full,
            hint,
        });
    }
    Ok(())
}

fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn expand_env_in_map(map: &mut serde_json::Map<String, Value>, env: &EnvVars) {
    for v in map.values_mut() {
        expand_env(v, env);
    }
}

fn expand_env(value: &mut Value, env: &EnvVars) {
    match value {
        Value::String(s) if s.contains("${") => *s = expand_vars(s, env),
        Value::Array(items) => items.iter_mut().for_each(|i| expand_env(i, env)),
        Value::Object(map) => expand_env_in_map(map, env),
        _ => {}
    }
}

/// Replaces `${NAME}` with the variable's value; unset variables are left as written, so the
/// user sees what was missing instead of an empty string.
pub fn expand_vars(text: &str, env: &EnvVars) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                match env.get(name) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 3 + end]),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Rewrites `command_allowlist` in config.yaml, keeping every other key. Written atomically.
pub fn persist_command_allowlist(path: &Path, allowlist: &[String]) -> Result<(), ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source: e,
            });
        }
    };
    let mut doc: Value = if text.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(&text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?
    };
    if doc.is_null() {
        doc = Value::Object(Default::default());
    }
    let Value::Object(map) = &mut doc else {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: "the top level must be a mapping".into(),
        });
    };
    map.insert(
        "command_allowlist".to_string(),
        Value::Array(allowlist.iter().cloned().map(Value::String).collect()),
    );
    let out = serde_saphyr::to_string(&doc).map_err(|e| ConfigError::Invalid {
        path: path.to_path_buf(),
        message: format!("cannot serialise: {e}"),
    })?;
    crate::util::atomic_write(path, out.as_bytes()).map_err(|e| ConfigError::Write {
        path: path.to_path_buf(),
        source: e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut env = EnvVars::default();
        env.set("MY_MODEL", "llama3");
        Config::from_yaml(
            HermesHome::new("/tmp/h"),
            env,
            text,
            Path::new("/tmp/h/config.yaml"),
        )
    }

    #[test]
    fn empty_is_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.agent.max_turns, 90);
        assert_eq!(c.toolsets, vec!["hermes-cli"]);
        assert_eq!(c.approvals.mode, ApprovalMode::Manual);
    }

    #[test]
    fn python_keys_are_read() {
        let c = parse(
            "model:\n  provider: custom\n  default: ${MY_MODEL}\n  base_url: http://x/v1\nagent:\n  max_turns: 12\n  verify_guidance: true\nterminal:\n  timeout: 30\napprovals:\n  mode: off\ncommand_allowlist: [\"ls *\"]\ndisplay:\n  skin: default\n",
        )
        .unwrap();
        assert_eq!(c.model.default.as_deref(), Some("llama3"));
        assert_eq!(c.model.provider.as_deref(), Some("custom"));
        assert_eq!(c.agent.max_turns, 12);
        assert_eq!(c.terminal.timeout, 30);
        assert_eq!(c.approvals.mode, ApprovalMode::Off);
        assert_eq!(c.command_allowlist, vec!["ls *"]);
    }

    #[test]
    fn bare_model_string() {
        let c = parse("model: gpt-4o\n").unwrap();
        assert_eq!(c.model.default.as_deref(), Some("gpt-4o"));
    }

    #[test]
    fn unknown_key_is_named() {
        let e = parse("agent:\n  max_turn: 3\n").unwrap_err().to_string();
        assert!(e.contains("agent.max_turn"), "{e}");
        assert!(e.contains("max_turns"), "{e}");
        assert!(e.contains("config.yaml"), "{e}");
        let e = parse("modle: x\n").unwrap_err().to_string();
        assert!(e.contains("`modle`"), "{e}");
    }

    #[test]
    fn ill_typed_key_is_named() {
        let e = parse("agent:\n  max_turns: lots\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("agent.max_turns"), "{e}");
        let e = parse("toolsets: 5\n").unwrap_err().to_string();
        assert!(e.contains("toolsets"), "{e}");
        let e = parse("approvals:\n  mode: sometimes\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("approvals.mode"), "{e}");
    }

    #[test]
    fn not_yaml_is_a_syntax_error() {
        let e = parse("model: [unclosed\n  - : :\n").unwrap_err();
        assert!(matches!(e, ConfigError::Syntax { .. }), "{e}");
        let e = parse("- just\n- a list\n").unwrap_err().to_string();
        assert!(e.contains("mapping"), "{e}");
    }

    #[test]
    fn unset_vars_stay_visible() {
        let env = EnvVars::default();
        assert_eq!(expand_vars("a ${NOPE} b", &env), "a ${NOPE} b");
        assert_eq!(expand_vars("${", &env), "${");
    }
}

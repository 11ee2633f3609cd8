//! `Config`: config.yaml (Python Hermes keys where they apply) + `.env`, with `${VAR}` expansion.
//!
//! The document is parsed once into typed sections (`file::ConfigFile`). Loading is strict about
//! what we own and tolerant about what Python Hermes owns: a key neither program knows is an
//! error that names the file, the key and the closest known key (a typo must not be silently
//! ignored); a key only Python Hermes uses is accepted and listed by `unsupported_keys()` (one
//! warning line, `hermes doctor`), so a config.yaml written by Python Hermes 0.19 loads as it is.

pub mod auxiliary;
pub mod budget;
pub mod checkpoints;
pub mod custom_providers;
pub mod delegation;
pub mod env_file;
pub mod file;
pub mod gateway;
pub mod home;
mod keys;
pub mod mcp;
pub mod memory;
pub mod model_limits;
pub mod profiles;
pub mod providers;
pub mod python_defaults;
mod python_keys;
pub mod security;
pub mod skills;
pub mod terminal;
pub mod tools;
pub mod yaml_edit;

pub use home::HermesHome;
pub use keys::closest as closest_key;
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
    /// The model's context window in tokens (`model.context_length`), when configured.
    pub context_length: Option<u64>,
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
    pub delegation: delegation::DelegationConfig,
    /// The typed document (every section as written), parsed once at load.
    pub file: file::ConfigFile,
    /// Keys of the file only Python Hermes uses, in document order (`unsupported_keys`).
    unsupported: Vec<String>,
    /// Python Hermes defaults set aside in a file it wrote (`python_defaults.rs`).
    python_set_aside: Vec<String>,
    /// The whole document after `${VAR}` expansion (sections not typed yet read it).
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
            delegation: delegation::DelegationConfig::default(),
            file: file::ConfigFile::default(),
            unsupported: Vec::new(),
            python_set_aside: Vec::new(),
            raw: Value::Null,
        }
    }

    /// Keys of config.yaml that Python Hermes knows and hermes does not use yet (dotted paths,
    /// in document order). Empty for a file without any.
    pub fn unsupported_keys(&self) -> &[String] {
        &self.unsupported
    }

    /// Tools switched off by `agent.disabled_toolsets` (Python Hermes' key; toolsets resolved
    /// through `registry`) and `agent.disabled_tools` (ours): `hermes tools disable`.
    pub fn disabled_tools(
        &self,
        registry: &crate::tools::ToolRegistry,
    ) -> std::collections::BTreeSet<String> {
        let agent = &self.file.agent;
        let mut out: std::collections::BTreeSet<String> =
            agent.disabled_tools.iter().flatten().cloned().collect();
        for set in agent.disabled_toolsets.iter().flatten() {
            match registry.resolve_toolsets(std::slice::from_ref(set), &self.custom_toolsets) {
                Ok(tools) => out.extend(tools),
                Err(e) => {
                    tracing::warn!(toolset = %set, error = %e, "agent.disabled_toolsets names an unknown toolset")
                }
            }
        }
        out
    }

    /// The one warning line for `unsupported_keys`, if there are any.
    pub fn unsupported_warning(&self) -> Option<String> {
        (!self.unsupported.is_empty()).then(|| {
            format!(
                "config.yaml: not supported yet: {}",
                self.unsupported.join(", ")
            )
        })
    }

    /// The one stderr line for Python Hermes defaults treated as unset (`python_defaults.rs`).
    pub fn python_defaults_warning(&self) -> Option<String> {
        python_defaults::warning(&self.python_set_aside)
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
        let mut classifier = keys::Classifier::default();
        let parsed: Result<file::ConfigFile, _> =
            serde_path_to_error::deserialize(serde_ignored::Deserializer::new(&doc, &mut |p| {
                classifier.ignored(p)
            }));
        let mut parsed = parsed.map_err(|e| ConfigError::Type {
            path: path.to_path_buf(),
            key: e.path().to_string(),
            message: e.into_inner().to_string(),
        })?;
        config.unsupported = classifier.finish(&doc, path)?;
        // Typed MCP keys the client does not act on yet (OAuth, sampling).
        for (name, server) in &config.file.mcp_servers {
            config.unsupported.extend(server.unsupported_keys(name));
        }
        config.python_set_aside = python_defaults::set_aside(&mut parsed, &doc, path)?;
        apply(&mut config, &parsed, path)?;
        config.file = parsed;
        config.raw = doc;
        Ok(config)
    }
}

fn apply(config: &mut Config, f: &file::ConfigFile, path: &Path) -> Result<(), ConfigError> {
    let type_err = |key: &str, message: String| ConfigError::Type {
        path: path.to_path_buf(),
        key: key.to_string(),
        message,
    };
    if let Some(model) = &f.model {
        config.model = model_config(model, path)?;
    }
    if let Some(v) = f.agent.max_turns {
        if v == 0 {
            return Err(type_err("agent.max_turns", "must be at least 1".into()));
        }
        config.agent.max_turns = v;
    }
    if let Some(v) = f.agent.api_max_retries {
        config.agent.api_max_retries = v;
    }
    config.model_limits = model_limits::ModelLimits::from_agent(&f.agent, path)?;
    if let Some(v) = &f.toolsets {
        config.toolsets = v.clone();
    }
    if let Some(v) = f.terminal.timeout {
        config.terminal.timeout = v;
    }
    if let Some(v) = &f.terminal.cwd {
        config.terminal.cwd = v.clone();
    }
    terminal::apply(&mut config.terminal.exec, &f.terminal, path)?;
    if let Some(mode) = &f.approvals.mode {
        config.approvals.mode = approval_mode(mode).map_err(|m| type_err("approvals.mode", m))?;
    }
    if let Some(v) = f.approvals.timeout {
        config.approvals.timeout = v;
    }
    if let Some(v) = &f.approvals.deny {
        config.approvals.deny = v.clone();
    }
    if let Some(v) = &f.command_denylist {
        config.command_denylist = v.clone();
    }
    if let Some(v) = &f.command_allowlist {
        config.command_allowlist = v.clone();
    }
    if let Some(v) = &f.custom_toolsets {
        config.custom_toolsets = v.clone();
    }
    let out = &mut config.tool_output;
    out.max_bytes = f.tool_output.max_bytes.unwrap_or(out.max_bytes);
    out.max_lines = f.tool_output.max_lines.unwrap_or(out.max_lines);
    out.max_line_length = f.tool_output.max_line_length.unwrap_or(out.max_line_length);
    if let Some(v) = f.file_read_max_chars {
        config.file_read_max_chars = v;
    }
    if f.context_file_max_chars.is_some() {
        config.context_file_max_chars = f.context_file_max_chars;
    }
    config.security = security::parse(&f.security, &config.env, path)?;
    config.checkpoints = f.checkpoints.resolve();
    config.delegation = f.delegation.resolve(path)?;
    Ok(())
}

/// The `model:` key: a bare model name or a mapping.
fn model_config(model: &Value, path: &Path) -> Result<ModelConfig, ConfigError> {
    let type_err = |key: &str, message: String| ConfigError::Type {
        path: path.to_path_buf(),
        key: key.to_string(),
        message,
    };
    Ok(match model {
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
                context_length: file::num::<_, u64>(
                    m.get("context_length").cloned().unwrap_or(Value::Null),
                )
                .map_err(|e| type_err("model.context_length", e.to_string()))?,
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
    })
}

fn approval_mode(mode: &Value) -> Result<ApprovalMode, String> {
    Ok(match mode {
        // YAML 1.1 readers (PyYAML) turn a bare `off` into false.
        Value::Bool(false) => ApprovalMode::Off,
        Value::Bool(true) => ApprovalMode::Manual,
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "manual" => ApprovalMode::Manual,
            "smart" => ApprovalMode::Smart,
            "off" | "false" | "no" => ApprovalMode::Off,
            other => return Err(format!("`{other}` is not one of manual, smart, off")),
        },
        Value::Null => ApprovalMode::Manual,
        other => {
            return Err(format!(
                "expected manual, smart or off, found {}",
                kind_of(other)
            ));
        }
    })
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
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

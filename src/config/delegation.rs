//! The `delegation:` section of config.yaml (Python Hermes names): what `delegate_task` children
//! get. Read once at load: an unknown key or a bad value is an error naming it.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::file::{flag, num, text};

/// Tools a delegated child never gets: it must not recurse (unless the depth allows), ask the
/// user, write the user's memory, message people, schedule jobs or run arbitrary code.
pub const BLOCKED_TOOLS: &[&str] = &[
    "delegate_task",
    "clarify",
    "memory",
    "send_message",
    "cronjob",
    "execute_code",
];

#[derive(Debug, Clone, PartialEq)]
pub struct DelegationConfig {
    /// Iteration budget of each child (`max_iterations`, default 50).
    pub max_iterations: u32,
    /// How deep children may nest (`max_depth`, Python's `max_spawn_depth`; default 1: the
    /// user's agent delegates, its children do not).
    pub max_depth: u32,
    /// Children of one batch running at once (`max_concurrent_children`, default 3).
    pub max_concurrent_children: usize,
    /// Wall-clock limit per child (`child_timeout_seconds`; 0 = none, the default).
    pub child_timeout: Option<Duration>,
    /// A child whose model is silent this long is stopped (`stall_timeout_seconds`, default
    /// 300; 0 = never).
    pub stall_timeout: Option<Duration>,
    /// `approvals: inherit` lets a child of a `--yolo` parent run dangerous commands; by
    /// default (`deny`) a child's dangerous commands are refused — a child never asks.
    pub inherit_approvals: bool,
    /// Longest summary returned per child (`max_summary_chars`, default 24,000).
    pub max_summary_chars: usize,
    /// Children get the parent's MCP toolsets (`mcp-<server>`) besides the toolsets a task
    /// names (`inherit_mcp_toolsets`, default true, as in Python Hermes).
    pub inherit_mcp_toolsets: bool,
}

impl Default for DelegationConfig {
    fn default() -> Self {
        DelegationConfig {
            max_iterations: 50,
            max_depth: 1,
            max_concurrent_children: 3,
            child_timeout: None,
            stall_timeout: Some(Duration::from_secs(300)),
            inherit_approvals: false,
            max_summary_chars: 24_000,
            inherit_mcp_toolsets: true,
        }
    }
}

/// `delegation:` as written in config.yaml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DelegationFile {
    #[serde(deserialize_with = "num")]
    pub max_iterations: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub max_depth: Option<u64>,
    /// Python Hermes' name for `max_depth`.
    #[serde(deserialize_with = "num")]
    pub max_spawn_depth: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub max_concurrent_children: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub child_timeout_seconds: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub stall_timeout_seconds: Option<f64>,
    #[serde(deserialize_with = "num")]
    pub max_summary_chars: Option<u64>,
    /// `deny` (default) or `inherit`.
    #[serde(deserialize_with = "text")]
    pub approvals: Option<String>,
    /// `true` lets children's dangerous commands run (approval policy).
    #[serde(deserialize_with = "flag")]
    pub subagent_auto_approve: Option<bool>,
    #[serde(deserialize_with = "flag")]
    pub inherit_mcp_toolsets: Option<bool>,
}

impl DelegationFile {
    /// The settings, defaults where a key is absent; a value out of range is an error.
    pub fn resolve(&self, path: &Path) -> Result<DelegationConfig, ConfigError> {
        let mut c = DelegationConfig::default();
        let bad = |key: &str, message: String| ConfigError::Type {
            path: path.to_path_buf(),
            key: format!("delegation.{key}"),
            message,
        };
        let seconds = |key: &str, v: Option<f64>| -> Result<Option<f64>, ConfigError> {
            match v {
                Some(s) if !s.is_finite() || s < 0.0 => Err(bad(
                    key,
                    format!("{s} is not a number of seconds (0 = none)"),
                )),
                other => Ok(other),
            }
        };
        if let Some(n) = self.max_iterations {
            c.max_iterations = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        }
        if let Some(n) = self.max_depth.or(self.max_spawn_depth) {
            c.max_depth = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        }
        if let Some(n) = self.max_concurrent_children {
            c.max_concurrent_children = usize::try_from(n.max(1)).unwrap_or(usize::MAX);
        }
        if let Some(s) = seconds("child_timeout_seconds", self.child_timeout_seconds)? {
            c.child_timeout = (s > 0.0).then(|| Duration::from_secs_f64(s));
        }
        if let Some(s) = seconds("stall_timeout_seconds", self.stall_timeout_seconds)? {
            c.stall_timeout = (s > 0.0).then(|| Duration::from_secs_f64(s));
        }
        if let Some(n) = self.max_summary_chars {
            c.max_summary_chars = usize::try_from(n.max(200)).unwrap_or(usize::MAX);
        }
        if let Some(inherit) = self.inherit_mcp_toolsets {
            c.inherit_mcp_toolsets = inherit;
        }
        match self.approvals.as_deref() {
            None | Some("deny") => c.inherit_approvals = false,
            Some("inherit") => c.inherit_approvals = true,
            Some(other) => {
                return Err(bad(
                    "approvals",
                    format!("`{other}` is not one of deny, inherit"),
                ));
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, EnvVars, HermesHome};

    fn parse(text: &str) -> Result<DelegationConfig, ConfigError> {
        let c = Config::from_yaml(
            HermesHome::new("/h"),
            EnvVars::default(),
            text,
            Path::new("/h/config.yaml"),
        )?;
        Ok(c.delegation)
    }

    #[test]
    fn defaults_python_names_and_bad_values() {
        assert_eq!(parse("").unwrap(), DelegationConfig::default());
        let c = parse(
            "delegation:\n  max_iterations: 7\n  max_spawn_depth: 2\n  max_concurrent_children: '0'\n  child_timeout_seconds: 1.5\n  stall_timeout_seconds: 0\n  approvals: inherit\n",
        )
        .unwrap();
        assert_eq!(c.max_iterations, 7);
        assert_eq!(c.max_depth, 2);
        assert_eq!(c.max_concurrent_children, 1, "floor 1");
        assert_eq!(c.child_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(c.stall_timeout, None);
        assert!(c.inherit_approvals);
        for bad in [
            "delegation:\n  max_iterations: lots\n",
            "delegation:\n  child_timeout_seconds: -1\n",
            "delegation:\n  approvals: yes\n",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("delegation."), "{e}");
        }
        let e = parse("delegation:\n  max_iteration: 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("delegation.max_iteration") && e.contains("max_iterations"),
            "{e}"
        );
    }
}

//! The `delegation:` section of config.yaml (Python Hermes names): what `delegate_task` children
//! get. A bad value is logged and the default used — a typo must not stop the agent.

use std::time::Duration;

use serde_json::Value;

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
        }
    }
}

impl DelegationConfig {
    pub fn from_raw(raw: &Value) -> Self {
        let mut c = DelegationConfig::default();
        let Some(section) = raw.get("delegation").filter(|v| v.is_object()) else {
            return c;
        };
        let get = |k: &str| section.get(k).filter(|v| !v.is_null());
        if let Some(n) = get("max_iterations").and_then(|v| count(v, "max_iterations")) {
            c.max_iterations = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        }
        if let Some(n) = get("max_depth")
            .or_else(|| get("max_spawn_depth"))
            .and_then(|v| count(v, "max_depth"))
        {
            c.max_depth = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        }
        if let Some(n) =
            get("max_concurrent_children").and_then(|v| count(v, "max_concurrent_children"))
        {
            c.max_concurrent_children = usize::try_from(n.max(1)).unwrap_or(usize::MAX);
        }
        if let Some(s) =
            get("child_timeout_seconds").and_then(|v| seconds(v, "child_timeout_seconds"))
        {
            c.child_timeout = (s > 0.0).then(|| Duration::from_secs_f64(s));
        }
        if let Some(s) =
            get("stall_timeout_seconds").and_then(|v| seconds(v, "stall_timeout_seconds"))
        {
            c.stall_timeout = (s > 0.0).then(|| Duration::from_secs_f64(s));
        }
        if let Some(n) = get("max_summary_chars").and_then(|v| count(v, "max_summary_chars")) {
            c.max_summary_chars = usize::try_from(n.max(200)).unwrap_or(usize::MAX);
        }
        match get("approvals").and_then(Value::as_str).map(str::trim) {
            None => {}
            Some("inherit") => c.inherit_approvals = true,
            Some("deny") => c.inherit_approvals = false,
            Some(other) => tracing::warn!(
                value = other,
                "delegation.approvals in config.yaml must be `deny` or `inherit`; using deny"
            ),
        }
        c
    }
}

fn count(v: &Value, key: &str) -> Option<u64> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    if n.is_none() {
        tracing::warn!(key = %format!("delegation.{key}"), value = %v, "not a whole number in config.yaml; using the default");
    }
    n
}

fn seconds(v: &Value, key: &str) -> Option<f64> {
    let s = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(t) => t.trim().parse().ok(),
        _ => None,
    }
    .filter(|s: &f64| s.is_finite() && *s >= 0.0);
    if s.is_none() {
        tracing::warn!(key = %format!("delegation.{key}"), value = %v, "not a number of seconds in config.yaml; using the default");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_python_names_and_bad_values() {
        assert_eq!(
            DelegationConfig::from_raw(&serde_json::json!({})),
            DelegationConfig::default()
        );
        let c = DelegationConfig::from_raw(&serde_json::json!({"delegation": {
            "max_iterations": 7, "max_spawn_depth": 2, "max_concurrent_children": "0",
            "child_timeout_seconds": 1.5, "stall_timeout_seconds": 0, "approvals": "inherit"
        }}));
        assert_eq!(c.max_iterations, 7);
        assert_eq!(c.max_depth, 2);
        assert_eq!(c.max_concurrent_children, 1, "floor 1");
        assert_eq!(c.child_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(c.stall_timeout, None);
        assert!(c.inherit_approvals);
        let bad = DelegationConfig::from_raw(&serde_json::json!({"delegation": {
            "max_iterations": "lots", "child_timeout_seconds": -1, "approvals": "yes"
        }}));
        assert_eq!(bad, DelegationConfig::default());
    }
}

//! The `memory:` section of config.yaml, read leniently from `Config::raw` (Python Hermes writes
//! numbers as numbers, people sometimes write them as strings; a bad value falls back to the
//! default with a log line rather than refusing to start).

use std::time::Duration;

use serde_json::Value;

use crate::config::Config;

/// Defaults follow Python Hermes 0.19 (reference §2.2, §7).
pub const DEFAULT_MEMORY_CHAR_LIMIT: usize = 2_200;
pub const DEFAULT_USER_CHAR_LIMIT: usize = 1_375;
pub const DEFAULT_NUDGE_INTERVAL: u32 = 10;
/// Our own: how long an external provider may take to recall before the turn goes on without
/// it. Short, because the user is waiting (Python waits up to 8 s).
pub const DEFAULT_PREFETCH_TIMEOUT: Duration = Duration::from_millis(1_500);

#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// `memory.memory_enabled`: MEMORY.md in the prompt and writable.
    pub memory_enabled: bool,
    /// `memory.user_profile_enabled`: USER.md in the prompt and writable.
    pub user_profile_enabled: bool,
    pub memory_char_limit: usize,
    pub user_char_limit: usize,
    /// User turns without a memory write before a background review; 0 turns it off.
    pub nudge_interval: u32,
    /// `memory.provider`: the external provider's name (`local` is the one we ship).
    pub provider: Option<String>,
    /// `memory.prefetch_timeout` (seconds, may be fractional).
    pub prefetch_timeout: Duration,
    /// `memory.recall_limit`: most past messages the local provider recalls per turn.
    pub recall_limit: usize,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            memory_enabled: true,
            user_profile_enabled: true,
            memory_char_limit: DEFAULT_MEMORY_CHAR_LIMIT,
            user_char_limit: DEFAULT_USER_CHAR_LIMIT,
            nudge_interval: DEFAULT_NUDGE_INTERVAL,
            provider: None,
            prefetch_timeout: DEFAULT_PREFETCH_TIMEOUT,
            recall_limit: 3,
        }
    }
}

impl MemorySettings {
    pub fn from_config(config: &Config) -> Self {
        let mut s = MemorySettings::default();
        let Some(section) = config.raw.get("memory").filter(|v| v.is_object()) else {
            return s;
        };
        let get = |k: &str| section.get(k).filter(|v| !v.is_null());
        if let Some(v) = get("memory_enabled") {
            s.memory_enabled = as_bool(v, "memory.memory_enabled", s.memory_enabled);
        }
        if let Some(v) = get("user_profile_enabled") {
            s.user_profile_enabled =
                as_bool(v, "memory.user_profile_enabled", s.user_profile_enabled);
        }
        if let Some(v) = get("memory_char_limit") {
            s.memory_char_limit = as_count(v, "memory.memory_char_limit", s.memory_char_limit);
        }
        if let Some(v) = get("user_char_limit") {
            s.user_char_limit = as_count(v, "memory.user_char_limit", s.user_char_limit);
        }
        if let Some(v) = get("nudge_interval") {
            let n = as_count(v, "memory.nudge_interval", s.nudge_interval as usize);
            s.nudge_interval = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(Value::String(name)) = get("provider") {
            let name = name.trim();
            if !name.is_empty() {
                s.provider = Some(name.to_string());
            }
        }
        if let Some(v) = get("prefetch_timeout") {
            let secs = match v {
                Value::Number(n) => n.as_f64(),
                Value::String(t) => t.trim().parse::<f64>().ok(),
                _ => None,
            };
            match secs.filter(|s| s.is_finite() && *s >= 0.0 && *s <= 60.0) {
                Some(secs) => s.prefetch_timeout = Duration::from_secs_f64(secs),
                None => warn_bad("memory.prefetch_timeout", v),
            }
        }
        if let Some(v) = get("recall_limit") {
            s.recall_limit = as_count(v, "memory.recall_limit", s.recall_limit).clamp(1, 10);
        }
        s
    }

    /// True when neither file is in use.
    pub fn all_disabled(&self) -> bool {
        !self.memory_enabled && !self.user_profile_enabled
    }
}

fn warn_bad(key: &str, v: &Value) {
    tracing::warn!(key, value = %v, "ignoring an invalid value in config.yaml; using the default");
}

fn as_bool(v: &Value, key: &str, default: bool) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => true,
            "false" | "no" | "off" | "0" => false,
            _ => {
                warn_bad(key, v);
                default
            }
        },
        _ => {
            warn_bad(key, v);
            default
        }
    }
}

fn as_count(v: &Value, key: &str, default: usize) -> usize {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().replace(['_', ','], "").parse::<u64>().ok(),
        _ => None,
    };
    match n.and_then(|n| usize::try_from(n).ok()) {
        Some(n) => n,
        None => {
            warn_bad(key, v);
            default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    fn load(yaml: &str) -> MemorySettings {
        let home = tempfile::tempdir().unwrap();
        let cfg = Config::from_yaml(
            HermesHome::new(home.path()),
            EnvVars::default(),
            yaml,
            std::path::Path::new("config.yaml"),
        )
        .unwrap();
        MemorySettings::from_config(&cfg)
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(load(""), MemorySettings::default());
        let s = load(
            "memory:\n  memory_char_limit: 100\n  user_char_limit: '50'\n  nudge_interval: 0\n  provider: local\n  prefetch_timeout: 0.25\n  user_profile_enabled: false\n",
        );
        assert_eq!(s.memory_char_limit, 100);
        assert_eq!(s.user_char_limit, 50);
        assert_eq!(s.nudge_interval, 0);
        assert_eq!(s.provider.as_deref(), Some("local"));
        assert_eq!(s.prefetch_timeout, Duration::from_millis(250));
        assert!(s.memory_enabled && !s.user_profile_enabled);
    }

    #[test]
    fn bad_values_fall_back() {
        let s = load(
            "memory:\n  memory_char_limit: lots\n  prefetch_timeout: -3\n  memory_enabled: maybe\n  provider: ''\n",
        );
        assert_eq!(s.memory_char_limit, DEFAULT_MEMORY_CHAR_LIMIT);
        assert_eq!(s.prefetch_timeout, DEFAULT_PREFETCH_TIMEOUT);
        assert!(s.memory_enabled);
        assert_eq!(s.provider, None);
    }
}

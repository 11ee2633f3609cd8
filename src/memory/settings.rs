//! Memory settings from the typed `memory:` section of config.yaml (`config/memory.rs`): Python
//! Hermes' defaults, plus our prefetch timeout and recall limit.

use std::time::Duration;

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
    /// From the typed `memory:` section (types were checked at load); out-of-range values are
    /// clamped or fall back to the default with a log line.
    pub fn from_config(config: &Config) -> Self {
        let d = MemorySettings::default();
        let f = &config.file.memory;
        let prefetch_timeout = match f.prefetch_timeout {
            None => d.prefetch_timeout,
            Some(secs) if secs.is_finite() && (0.0..=60.0).contains(&secs) => {
                Duration::from_secs_f64(secs)
            }
            Some(secs) => {
                tracing::warn!(
                    key = "memory.prefetch_timeout",
                    value = secs,
                    "must be 0 to 60 seconds; using the default"
                );
                d.prefetch_timeout
            }
        };
        MemorySettings {
            memory_enabled: f.memory_enabled.unwrap_or(d.memory_enabled),
            user_profile_enabled: f.user_profile_enabled.unwrap_or(d.user_profile_enabled),
            memory_char_limit: f.memory_char_limit.unwrap_or(d.memory_char_limit),
            user_char_limit: f.user_char_limit.unwrap_or(d.user_char_limit),
            nudge_interval: f.nudge_interval.unwrap_or(d.nudge_interval),
            provider: f.provider.clone(),
            prefetch_timeout,
            recall_limit: f.recall_limit.map_or(d.recall_limit, |n| n.clamp(1, 10)),
        }
    }

    /// True when neither file is in use.
    pub fn all_disabled(&self) -> bool {
        !self.memory_enabled && !self.user_profile_enabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    fn try_load(yaml: &str) -> Result<MemorySettings, crate::config::ConfigError> {
        let home = tempfile::tempdir().unwrap();
        let cfg = Config::from_yaml(
            HermesHome::new(home.path()),
            EnvVars::default(),
            yaml,
            std::path::Path::new("config.yaml"),
        )?;
        Ok(MemorySettings::from_config(&cfg))
    }

    fn load(yaml: &str) -> MemorySettings {
        try_load(yaml).unwrap()
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
    fn bad_values_are_refused_or_fall_back() {
        for bad in [
            "memory:\n  memory_char_limit: lots\n",
            "memory:\n  memory_enabled: maybe\n",
        ] {
            let e = try_load(bad).unwrap_err().to_string();
            assert!(e.contains("memory."), "{e}");
        }
        let s = load("memory:\n  prefetch_timeout: -3\n  provider: ''\n");
        assert_eq!(s.prefetch_timeout, DEFAULT_PREFETCH_TIMEOUT);
        assert_eq!(s.provider, None);
    }
}

//! The `checkpoints:` section of config.yaml (Python Hermes names; `max_files` is ours).
//! Unlike Python Hermes, checkpoints are on by default: a file change made by the model can
//! always be rolled back.

use serde::Deserialize;

use super::file::{flag, num};

#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointsConfig {
    pub enabled: bool,
    /// Checkpoints kept per working tree.
    pub max_snapshots: usize,
    /// Files larger than this are not checkpointed.
    pub max_file_size_mb: u64,
    /// Trees holding more than this are not checkpointed.
    pub max_total_size_mb: u64,
    /// Trees with more files than this are not checkpointed.
    pub max_files: usize,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        CheckpointsConfig {
            enabled: true,
            max_snapshots: 20,
            max_file_size_mb: 10,
            max_total_size_mb: 500,
            max_files: 50_000,
        }
    }
}

/// `checkpoints:` as written in config.yaml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CheckpointsFile {
    #[serde(deserialize_with = "flag")]
    pub enabled: Option<bool>,
    #[serde(deserialize_with = "num")]
    pub max_snapshots: Option<usize>,
    #[serde(deserialize_with = "num")]
    pub max_file_size_mb: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub max_total_size_mb: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub max_files: Option<usize>,
}

impl CheckpointsFile {
    /// The settings, defaults where a key is absent.
    pub fn resolve(&self) -> CheckpointsConfig {
        let d = CheckpointsConfig::default();
        CheckpointsConfig {
            enabled: self.enabled.unwrap_or(d.enabled),
            max_snapshots: self.max_snapshots.unwrap_or(d.max_snapshots),
            max_file_size_mb: self.max_file_size_mb.unwrap_or(d.max_file_size_mb),
            max_total_size_mb: self.max_total_size_mb.unwrap_or(d.max_total_size_mb),
            max_files: self.max_files.unwrap_or(d.max_files),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ConfigError, EnvVars, HermesHome};
    use std::path::Path;

    fn parse_text(text: &str) -> Result<CheckpointsConfig, ConfigError> {
        let c = Config::from_yaml(
            HermesHome::new("/h"),
            EnvVars::default(),
            text,
            Path::new("/h/config.yaml"),
        )?;
        Ok(c.checkpoints)
    }

    #[test]
    fn defaults_values_and_errors() {
        assert_eq!(parse_text("").unwrap(), CheckpointsConfig::default());
        let c =
            parse_text("checkpoints:\n  enabled: false\n  max_snapshots: 5\n  retention_days: 7\n")
                .unwrap();
        assert!(!c.enabled);
        assert_eq!(c.max_snapshots, 5);
        let e = parse_text("checkpoints:\n  max_snapshot: 5\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_snapshots"), "{e}");
        let e = parse_text("checkpoints:\n  max_files: many\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("checkpoints.max_files"), "{e}");
    }
}

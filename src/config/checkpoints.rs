//! The `checkpoints:` section of config.yaml (Python Hermes names; `max_files` is ours).
//! Unlike Python Hermes, checkpoints are on by default: a file change made by the model can
//! always be rolled back.

use std::path::Path;

use serde_json::Value;

use super::ConfigError;

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

const KNOWN_CHECKPOINTS: &[&str] = &[
    "enabled",
    "max_snapshots",
    "max_total_size_mb",
    "max_file_size_mb",
    "auto_prune",
    "retention_days",
    "delete_orphans",
    "min_interval_hours",
    // hermes (Rust)
    "max_files",
];

/// Reads `checkpoints:` from the top-level mapping (absent → defaults).
pub fn parse(
    map: &serde_json::Map<String, Value>,
    path: &Path,
) -> Result<CheckpointsConfig, ConfigError> {
    let mut out = CheckpointsConfig::default();
    let Some(section) = super::section(map, "checkpoints", path)? else {
        return Ok(out);
    };
    super::check_keys(section, "checkpoints", KNOWN_CHECKPOINTS, path)?;
    if let Some(v) = super::typed::<bool>(section, "checkpoints", "enabled", path)? {
        out.enabled = v;
    }
    if let Some(v) = super::typed::<usize>(section, "checkpoints", "max_snapshots", path)? {
        out.max_snapshots = v;
    }
    if let Some(v) = super::typed::<u64>(section, "checkpoints", "max_file_size_mb", path)? {
        out.max_file_size_mb = v;
    }
    if let Some(v) = super::typed::<u64>(section, "checkpoints", "max_total_size_mb", path)? {
        out.max_total_size_mb = v;
    }
    if let Some(v) = super::typed::<usize>(section, "checkpoints", "max_files", path)? {
        out.max_files = v;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<CheckpointsConfig, ConfigError> {
        let Value::Object(map) = serde_saphyr::from_str(text).unwrap() else {
            panic!()
        };
        parse(&map, Path::new("/h/config.yaml"))
    }

    #[test]
    fn defaults_values_and_errors() {
        assert_eq!(parse_text("x: 1").unwrap(), CheckpointsConfig::default());
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

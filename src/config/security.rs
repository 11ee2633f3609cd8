//! The `security:` section of config.yaml as far as hermes (Rust) reads it: secret redaction and
//! the user's additions to the protected paths. (Other keys Python Hermes knows there are
//! reported as not supported yet by the loader.)

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::file::flag;
use super::{ConfigError, EnvVars};

#[derive(Debug, Clone, PartialEq)]
pub struct SecurityConfig {
    /// Redact secrets from everything persisted, sent, exported or logged (default true).
    pub redact_secrets: bool,
    /// Extra paths the file tools may neither read nor write (absolute or `~/…`).
    pub protected_paths: Vec<PathBuf>,
    /// Secrets files (a project's `.env`, keys, `.npmrc`; `security::secret_files`) the file
    /// tools may read after all: files or directories (absolute or `~/…`).
    pub readable_paths: Vec<PathBuf>,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            redact_secrets: true,
            protected_paths: Vec::new(),
            readable_paths: Vec::new(),
        }
    }
}

/// `security:` as written in config.yaml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SecurityFile {
    #[serde(deserialize_with = "flag")]
    pub redact_secrets: Option<bool>,
    pub protected_paths: Option<Vec<String>>,
    pub readable_paths: Option<Vec<String>>,
}

/// Reads `security:` (absent → defaults).
pub fn parse(
    file: &SecurityFile,
    env: &EnvVars,
    path: &Path,
) -> Result<SecurityConfig, ConfigError> {
    let mut out = SecurityConfig::default();
    if let Some(b) = file.redact_secrets {
        out.redact_secrets = b;
    }
    for s in file.readable_paths.iter().flatten() {
        out.readable_paths
            .push(absolute_path(s, env).ok_or_else(|| ConfigError::Type {
                path: path.to_path_buf(),
                key: "security.readable_paths".into(),
                message: format!("`{s}` is not absolute; write it as /full/path or ~/path"),
            })?);
    }
    for s in file.protected_paths.iter().flatten() {
        out.protected_paths
            .push(absolute_path(s, env).ok_or_else(|| ConfigError::Type {
                path: path.to_path_buf(),
                key: "security.protected_paths".into(),
                message: format!("`{s}` is not absolute; write it as /full/path or ~/path"),
            })?);
    }
    Ok(out)
}

fn absolute_path(s: &str, env: &EnvVars) -> Option<PathBuf> {
    let s = s.trim();
    if s == "~" || s.starts_with("~/") {
        let home = env.get("HOME")?;
        return Some(PathBuf::from(home).join(s.trim_start_matches('~').trim_start_matches('/')));
    }
    let p = PathBuf::from(s);
    p.is_absolute().then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<SecurityConfig, ConfigError> {
        let mut env = EnvVars::default();
        env.set("HOME", "/home/u");
        let c = crate::config::Config::from_yaml(
            crate::config::HermesHome::new("/h"),
            env,
            text,
            Path::new("/h/config.yaml"),
        )?;
        Ok(c.security)
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(parse_text("").unwrap(), SecurityConfig::default());
        let c = parse_text(
            "security:\n  redact_secrets: false\n  tirith_enabled: true\n  protected_paths: [/srv/prod, ~/notes]\n  readable_paths: [~/proj/.env]\n",
        )
        .unwrap();
        assert!(!c.redact_secrets);
        assert_eq!(
            c.protected_paths,
            vec![PathBuf::from("/srv/prod"), PathBuf::from("/home/u/notes")]
        );
        assert_eq!(c.readable_paths, vec![PathBuf::from("/home/u/proj/.env")]);
    }

    #[test]
    fn bad_values_are_named() {
        let e = parse_text("security:\n  protected_paths: [relative/x]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("security.protected_paths") && e.contains("relative/x"),
            "{e}"
        );
        let e = parse_text("security:\n  redact_secret: true\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("redact_secrets"), "{e}");
        let e = parse_text("security:\n  redact_secrets: 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("security.redact_secrets"), "{e}");
    }
}

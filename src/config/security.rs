//! The `security:` section of config.yaml as far as hermes (Rust) reads it: secret redaction and
//! the user's additions to the protected paths. Other keys Python Hermes knows there are
//! accepted and left alone; an unknown key is a typo and an error.

use std::path::{Path, PathBuf};

use serde_json::Value;

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

const KNOWN_SECURITY: &[&str] = &[
    "allow_private_urls",
    "redact_secrets",
    "tirith_enabled",
    "tirith_path",
    "tirith_timeout",
    "tirith_fail_open",
    "website_blocklist",
    "allow_lazy_installs",
    // hermes (Rust)
    "protected_paths",
    "readable_paths",
];

/// Reads `security:` from the top-level mapping (absent → defaults).
pub fn parse(
    map: &serde_json::Map<String, Value>,
    env: &EnvVars,
    path: &Path,
) -> Result<SecurityConfig, ConfigError> {
    let mut out = SecurityConfig::default();
    let section = match map.get("security") {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(ConfigError::Type {
                path: path.to_path_buf(),
                key: "security".into(),
                message: "expected a mapping".into(),
            });
        }
    };
    super::check_keys(section, "security", KNOWN_SECURITY, path)?;
    let type_err = |key: &str, message: String| ConfigError::Type {
        path: path.to_path_buf(),
        key: format!("security.{key}"),
        message,
    };
    match section.get("redact_secrets") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.redact_secrets = *b,
        Some(Value::String(s)) if matches!(s.as_str(), "true" | "false") => {
            out.redact_secrets = s == "true";
        }
        Some(_) => return Err(type_err("redact_secrets", "expected true or false".into())),
    }
    out.protected_paths = path_list(section, "protected_paths", env, &type_err)?;
    out.readable_paths = path_list(section, "readable_paths", env, &type_err)?;
    Ok(out)
}

/// A list of absolute (or `~/`) paths under `security.<key>`.
fn path_list(
    section: &serde_json::Map<String, Value>,
    key: &str,
    env: &EnvVars,
    type_err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<PathBuf>, ConfigError> {
    let items = match section.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(type_err(key, "expected a list of paths".into())),
    };
    let mut out = Vec::new();
    for item in items {
        let Value::String(s) = item else {
            return Err(type_err(key, "expected a list of paths (strings)".into()));
        };
        out.push(absolute_path(s, env).ok_or_else(|| {
            type_err(
                key,
                format!("`{s}` is not absolute; write it as /full/path or ~/path"),
            )
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
        let doc: Value = serde_saphyr::from_str(text).unwrap();
        let Value::Object(map) = doc else { panic!() };
        let mut env = EnvVars::default();
        env.set("HOME", "/home/u");
        parse(&map, &env, Path::new("/h/config.yaml"))
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(parse_text("x: 1").unwrap(), SecurityConfig::default());
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

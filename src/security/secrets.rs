//! Which loaded values are secrets: the exact strings the `Redactor` hides wherever they show
//! up. Sources: the environment hermes sees (process env overlaid on `$HERMES_HOME/.env`),
//! `auth.json` (credential pools, OAuth tokens) and config.yaml (keys such as `api_key`).
//!
//! A value counts when its name says secret (`*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …)
//! and the value itself could be one: at least `MIN_SECRET_LEN` characters, not a path, and not
//! a plain short word (`HERMES_AUTH_MODE=disabled` must not blank out "disabled" everywhere).

use serde_json::Value;

use crate::config::Config;
use crate::security::redact::MIN_SECRET_LEN;

/// Name fragments (upper case) that mark a variable or key as secret.
const SECRET_NAME_PARTS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "PRIVATE",
    "COOKIE",
    "SESSION",
    "AUTH",
    "SIGNATURE",
    "WEBHOOK",
];

/// Name endings that mark a locator, not a secret (`SSH_AUTH_SOCK`, `GIT_SSH_KEY_PATH`).
const NOT_SECRET_SUFFIXES: &[&str] = &["_SOCK", "_PATH", "_FILE", "_DIR", "_MODE", "_TYPE"];

/// Whether a variable or key called `name` holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    SECRET_NAME_PARTS.iter().any(|p| upper.contains(p))
        && !NOT_SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// Whether `value` could be a secret (rather than a path, a flag or a plain word).
pub fn could_be_secret(value: &str) -> bool {
    let v = value.trim();
    if v.len() < MIN_SECRET_LEN || v.starts_with('/') || v.starts_with('~') {
        return false;
    }
    if matches!(
        v.to_ascii_lowercase().as_str(),
        "true" | "false" | "disabled" | "enabled" | "required" | "optional"
    ) {
        return false;
    }
    // Tokens and generated passwords mix character classes or are long.
    let plain_word = v.chars().all(|c| c.is_ascii_lowercase()) && v.len() < 16;
    !plain_word
}

/// Every secret value this config has loaded.
pub fn collect(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in config.env.iter() {
        if is_secret_name(name) && could_be_secret(value) {
            out.push(value.to_string());
        }
    }
    if let Some(key) = config.model.api_key.as_deref()
        && could_be_secret(key)
    {
        out.push(key.to_string());
    }
    walk(&config.raw, None, &mut out);
    let auth = config.home.root().join("auth.json");
    match std::fs::read_to_string(&auth) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(doc) => walk(&doc, None, &mut out),
            Err(e) => {
                tracing::warn!(path = %auth.display(), error = %e, "auth.json is not JSON; its values are redacted by shape only")
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(path = %auth.display(), error = %e, "cannot read auth.json; its values are redacted by shape only")
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Collects string values under secret-named keys, at any depth.
fn walk(value: &Value, key: Option<&str>, out: &mut Vec<String>) {
    match value {
        Value::String(s) if key.is_some_and(is_secret_name) && could_be_secret(s) => {
            out.push(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, key, out)),
        Value::Object(map) => {
            for (k, v) in map {
                walk(v, Some(k), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    #[test]
    fn names_and_values() {
        for name in [
            "OPENAI_API_KEY",
            "TELEGRAM_BOT_TOKEN",
            "API_SERVER_KEY",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "DB_PASSWORD",
            "refresh_token",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "SSH_AUTH_SOCK", "GIT_SSH_KEY_PATH", "LANG"] {
            assert!(!is_secret_name(name), "{name}");
        }
        assert!(could_be_secret("sk-abc123456"));
        assert!(could_be_secret("correcthorsebatterystaple"));
        for v in ["short", "disabled", "/home/u/.ssh/id", "abcdefgh"] {
            assert!(!could_be_secret(v), "{v}");
        }
    }

    #[test]
    fn collects_env_config_and_auth_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"credential_pool": {"openai": [{"id": "a1", "api_key": "sk-pool-key-0001", "label": "primary"}]},
               "providers": {"nous": {"access_token": "oauth-token-XYZ-123"}}}"#,
        )
        .unwrap();
        let mut env = EnvVars::default();
        env.set("OPENAI_API_KEY", "sk-env-key-0002");
        env.set("HOME", "/home/u");
        env.set("HERMES_AUTH_MODE", "disabled");
        let mut config = Config::defaults(HermesHome::new(dir.path()), env);
        config.raw = serde_json::json!({
            "model": {"api_key": "cfg-key-0003-abc", "default": "gpt-4o-mini-2024"},
            "platforms": {"telegram": {"token": "123456789:AAcfgTokenValue"}}
        });
        let found = collect(&config);
        for want in [
            "sk-pool-key-0001",
            "oauth-token-XYZ-123",
            "sk-env-key-0002",
            "cfg-key-0003-abc",
            "123456789:AAcfgTokenValue",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} missing: {found:?}");
        }
        for not in ["/home/u", "disabled", "gpt-4o-mini-2024", "primary", "a1"] {
            assert!(!found.iter().any(|f| f == not), "{not} collected");
        }
    }
}

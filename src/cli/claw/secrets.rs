//! Provider keys: found in the OpenClaw home (`models.providers.*.apiKey` as a string, a
//! `${VAR}` template or an `{source: env, id}` reference; the home's `.env`; the config's `env`
//! and `env.vars`; `agents/main/agent/auth-profiles.json`), mapped to the variables Hermes
//! reads, and merged into `$HERMES_HOME/.env` (mode 0600) only with `--migrate-secrets`.
//! Values never leave this file except into `.env`: the report names keys only.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::Value;

use super::source::OpenClawHome;

/// Variables copied over by name from the OpenClaw `.env` / config `env` (Python Hermes's list).
const ENV_KEYS: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ELEVENLABS_API_KEY",
    "TELEGRAM_BOT_TOKEN",
    "DEEPSEEK_API_KEY",
    "GEMINI_API_KEY",
    "ZAI_API_KEY",
    "MINIMAX_API_KEY",
];

/// Hermes variable → value, plus notes on keys that exist but cannot be read here.
#[derive(Debug, Default)]
pub struct FoundKeys {
    pub keys: BTreeMap<String, String>,
    pub unreadable: Vec<String>,
}

/// Every provider key the OpenClaw home holds, under the variable Hermes reads it from. The
/// first source wins: the config's providers, then `.env`, then the config's `env`, then auth
/// profiles.
pub fn collect(home: &OpenClawHome) -> FoundKeys {
    let mut found = FoundKeys::default();
    if let Some(providers) = home
        .config
        .pointer("/models/providers")
        .and_then(Value::as_object)
    {
        for (name, cfg) in providers {
            let raw = cfg.get("apiKey");
            let Some(key) = raw.and_then(|v| resolve(v, home)) else {
                if let Some(source) = raw
                    .and_then(|v| v.get("source"))
                    .and_then(Value::as_str)
                    .filter(|s| *s == "file" || *s == "exec")
                {
                    found.unreadable.push(format!(
                        "provider `{name}` keeps its key in a {source}-backed secret reference, which cannot be read here; add it with `hermes setup` or to $HERMES_HOME/.env"
                    ));
                }
                continue;
            };
            let base = cfg.get("baseUrl").and_then(Value::as_str).unwrap_or("");
            let api = cfg.get("api").and_then(Value::as_str).unwrap_or("");
            if let Some(var) = variable_for(name, base, api) {
                found.keys.entry(var.to_string()).or_insert(key);
            }
        }
    }
    for var in ENV_KEYS {
        if let Some(v) = home.env_value(var) {
            found
                .keys
                .entry(var.to_string())
                .or_insert_with(|| v.trim().to_string());
        }
    }
    if let Some(env) = home.config.get("env") {
        for table in [Some(env), env.get("vars")].into_iter().flatten() {
            for var in ENV_KEYS {
                if let Some(v) = table.get(*var).and_then(Value::as_str).map(str::trim)
                    && !v.is_empty()
                {
                    found
                        .keys
                        .entry(var.to_string())
                        .or_insert_with(|| v.to_string());
                }
            }
        }
    }
    auth_profiles(home, &mut found);
    found
}

/// `apiKey` as a literal, a `${VAR}` template or `{source: "env", id: VAR}` (resolved against
/// the OpenClaw `.env`).
fn resolve(value: &Value, home: &OpenClawHome) -> Option<String> {
    match value {
        Value::String(s) => {
            let s = s.trim();
            match s.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
                Some(var) => home.env_value(var).map(|v| v.trim().to_string()),
                None => (!s.is_empty()).then(|| s.to_string()),
            }
        }
        Value::Object(o) if o.get("source").and_then(Value::as_str) == Some("env") => o
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| home.env_value(id))
            .map(|v| v.trim().to_string()),
        _ => None,
    }
}

/// The Hermes variable for an OpenClaw provider entry: by base URL, then wire API, then name.
fn variable_for(name: &str, base_url: &str, api: &str) -> Option<&'static str> {
    let base = base_url.to_ascii_lowercase();
    let name = name.to_ascii_lowercase();
    if base.contains("openrouter") {
        Some("OPENROUTER_API_KEY")
    } else if base.contains("openai.com") {
        Some("OPENAI_API_KEY")
    } else if base.contains("anthropic") || api == "anthropic-messages" {
        Some("ANTHROPIC_API_KEY")
    } else if name == "openrouter" {
        Some("OPENROUTER_API_KEY")
    } else if name.contains("openai") {
        Some("OPENAI_API_KEY")
    } else if name.contains("anthropic") {
        Some("ANTHROPIC_API_KEY")
    } else {
        None
    }
}

fn auth_profiles(home: &OpenClawHome, found: &mut FoundKeys) {
    let path = home.root.join("agents/main/agent/auth-profiles.json");
    let Some(doc) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    else {
        return;
    };
    let profiles = doc
        .get("profiles")
        .filter(|p| p.is_object())
        .unwrap_or(&doc);
    let Some(profiles) = profiles.as_object() else {
        return;
    };
    for (name, profile) in profiles {
        let key = profile
            .get("key")
            .or_else(|| profile.get("apiKey"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|k| !k.is_empty());
        if let (Some(key), Some(var)) = (key, variable_for(name, "", "")) {
            found
                .keys
                .entry(var.to_string())
                .or_insert_with(|| key.to_string());
        }
    }
}

/// What merging into `.env` would do, per variable.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EnvMerge {
    pub added: Vec<String>,
    pub same: Vec<String>,
    pub conflicting: Vec<String>,
}

/// Plans (and with `write`, performs) merging `keys` into the `.env` at `path`: a variable
/// already set to the same value is left alone, one set to another value is replaced only with
/// `overwrite`. The file is rewritten atomically with mode 0600 and its other lines kept.
pub fn merge_env(
    path: &Path,
    keys: &BTreeMap<String, String>,
    overwrite: bool,
    write: bool,
) -> std::io::Result<EnvMerge> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let current: BTreeMap<String, String> = dotenvy::from_read_iter(text.as_bytes())
        .filter_map(Result::ok)
        .collect();
    let mut merge = EnvMerge::default();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (var, value) in keys {
        match current.get(var) {
            Some(v) if v == value => merge.same.push(var.clone()),
            Some(_) if !overwrite => merge.conflicting.push(var.clone()),
            Some(_) => {
                // Comment out the old line rather than delete it: the user can see what changed.
                for line in lines.iter_mut() {
                    let t = line.trim_start();
                    let t = t.strip_prefix("export ").unwrap_or(t);
                    if t.strip_prefix(var.as_str())
                        .is_some_and(|rest| rest.trim_start().starts_with('='))
                    {
                        *line = format!("# replaced by hermes claw migrate: {var}=…");
                    }
                }
                lines.push(format!("{var}={}", quote(value)));
                merge.added.push(var.clone());
            }
            None => {
                lines.push(format!("{var}={}", quote(value)));
                merge.added.push(var.clone());
            }
        }
    }
    if write && !merge.added.is_empty() {
        let mut body = lines.join("\n");
        body.push('\n');
        write_private(path, body.as_bytes())?;
    }
    Ok(merge)
}

/// A value as dotenv reads it back unchanged: bare when plain, else double-quoted with escapes.
fn quote(value: &str) -> String {
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:+=@".contains(c));
    if plain && !value.is_empty() {
        value.to_string()
    } else {
        let escaped = value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('$', "\\$");
        format!("\"{escaped}\"")
    }
}

/// Temp file created 0600 in the same directory, fsync, rename: the keys are never readable by
/// others, not even for a moment, and a crash leaves the old file or the new one.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".env.tmp-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_read_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        std::fs::write(&path, "# mine\nOTHER=1\nOPENAI_API_KEY=old\n").unwrap();
        let keys: BTreeMap<String, String> = [
            ("OPENAI_API_KEY".to_string(), "sk-new".to_string()),
            ("ZAI_API_KEY".to_string(), "a b\"$c#".to_string()),
        ]
        .into();
        let plan = merge_env(&path, &keys, false, true).unwrap();
        assert_eq!(plan.conflicting, ["OPENAI_API_KEY"]);
        assert_eq!(plan.added, ["ZAI_API_KEY"]);
        let back: BTreeMap<String, String> = dotenvy::from_path_iter(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back["ZAI_API_KEY"], "a b\"$c#");
        assert_eq!(back["OPENAI_API_KEY"], "old");
        assert_eq!(back["OTHER"], "1");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = merge_env(&path, &keys, true, true).unwrap();
        assert_eq!(again.added, ["OPENAI_API_KEY"]);
        assert_eq!(again.same, ["ZAI_API_KEY"]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("=old"), "{text}");
    }
}

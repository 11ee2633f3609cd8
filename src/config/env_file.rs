//! Writing one variable into `$HERMES_HOME/.env` (`hermes config set OPENAI_API_KEY …`, as
//! Python Hermes routes key-shaped names there): the variable's line is replaced or appended,
//! every other line kept, the file written atomically with mode 0600.

use std::path::Path;

/// Whether `hermes config set KEY` means a `.env` variable rather than a config.yaml key
/// (Python Hermes' `_is_env_config_key`: no dot, and an API key, token or SSH setting name).
pub fn is_env_key(key: &str) -> bool {
    if key.contains('.') {
        return false;
    }
    let upper = key.to_ascii_uppercase();
    const NAMED: &[&str] = &[
        "VOICE_TOOLS_OPENAI_KEY",
        "FIRECRAWL_API_URL",
        "FIRECRAWL_GATEWAY_URL",
        "TOOL_GATEWAY_DOMAIN",
        "TOOL_GATEWAY_SCHEME",
        "BROWSERBASE_PROJECT_ID",
        "FAL_KEY",
        "SUDO_PASSWORD",
    ];
    NAMED.contains(&upper.as_str())
        || upper.ends_with("_API_KEY")
        || upper.ends_with("_TOKEN")
        || upper.starts_with("TERMINAL_SSH")
}

/// `value` as dotenv writes it: bare when safe, else double-quoted with `\` and `"` escaped.
fn quoted(value: &str) -> String {
    let bare = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+,=".contains(c));
    if bare {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// Sets `key=value` in the `.env` file at `path` (created if missing).
pub fn set_var(path: &Path, key: &str, value: &str) -> std::io::Result<()> {
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{key}` is not a variable name (letters, digits and `_`)"),
        ));
    }
    if value.contains(['\n', '\r']) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a .env value cannot span lines",
        ));
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let line = format!("{key}={}", quoted(value));
    let defines = |l: &str| {
        let l = l.trim_start();
        let l = l.strip_prefix("export ").unwrap_or(l).trim_start();
        l.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let mut replaced = false;
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        if defines(l) {
            if !replaced {
                out.push(line.clone());
                replaced = true;
            }
        } else {
            out.push(l.to_string());
        }
    }
    if !replaced {
        out.push(line);
    }
    let mut body = out.join("\n");
    body.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::util::atomic_write(path, body.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_keys_are_recognised() {
        assert!(is_env_key("OPENAI_API_KEY") && is_env_key("telegram_bot_token"));
        assert!(is_env_key("TERMINAL_SSH_HOST"));
        assert!(!is_env_key("agent.max_turns") && !is_env_key("timezone"));
    }

    #[test]
    fn set_replaces_or_appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        std::fs::write(
            &path,
            "# keys\nA=1\nexport OPENAI_API_KEY=old\nOPENAI_API_KEY=dup\n",
        )
        .unwrap();
        set_var(&path, "OPENAI_API_KEY", "sk-new value\"x").unwrap();
        set_var(&path, "B_TOKEN", "t0k").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "# keys\nA=1\nOPENAI_API_KEY=\"sk-new value\\\"x\"\nB_TOKEN=t0k\n"
        );
        let vars: Vec<(String, String)> = dotenvy::from_path_iter(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(vars.contains(&("OPENAI_API_KEY".into(), "sk-new value\"x".into())));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        assert!(set_var(&path, "BAD NAME", "x").is_err());
        assert!(set_var(&path, "K_TOKEN", "a\nb").is_err());
    }
}

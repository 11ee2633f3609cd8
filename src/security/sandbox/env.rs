//! The scrubbed environment every command gets, whatever the backend: an allow-list of harmless
//! variables plus the names the user listed in `terminal.env_passthrough`. Provider, platform and
//! API-server keys and anything named like a secret never pass unless listed by name.

use crate::config::Config;

/// Exact names always passed (when hermes has them).
const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
    "EDITOR",
    "VISUAL",
    "HOSTNAME",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "VIRTUAL_ENV",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
];

/// Prefixes always passed (locale categories).
const ALLOWED_PREFIXES: &[&str] = &["LC_"];

/// Name fragments that mark a secret: such a variable passes only when listed by name.
const SECRET_MARKS: &[&str] = &[
    "_TOKEN",
    "_KEY",
    "_SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "API_KEY",
    "AUTH",
];

/// Whether `name` looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKS.iter().any(|m| upper.contains(m))
        || upper.ends_with("KEY")
        || upper.ends_with("TOKEN")
        || upper.ends_with("SECRET")
}

fn allowed(name: &str) -> bool {
    (ALLOWED.contains(&name) || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p)))
        && !looks_secret(name)
}

/// The variables a command runs with: `process` (hermes's environment) filtered by the allow-list,
/// plus every `terminal.env_passthrough` name found in the process environment or `.env`.
pub fn scrubbed(
    config: &Config,
    process: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let passthrough = &config.terminal.exec.env_passthrough;
    let mut out: Vec<(String, String)> = process
        .into_iter()
        .filter(|(k, _)| allowed(k) || passthrough.contains(k))
        .collect();
    for name in passthrough {
        if !out.iter().any(|(k, _)| k == name)
            && let Some(v) = config.env.get(name)
        {
            out.push((name.clone(), v.to_string()));
        }
    }
    // Pagers would wait for a keypress that never comes.
    out.retain(|(k, _)| k != "PAGER" && k != "GIT_PAGER");
    out.push(("PAGER".into(), "cat".into()));
    out.push(("GIT_PAGER".into(), "cat".into()));
    out.sort();
    out
}

/// Applies `scrubbed` to a command about to be spawned: clears what it inherited first.
pub fn apply(config: &Config, cmd: &mut tokio::process::Command) {
    cmd.env_clear();
    cmd.envs(scrubbed(config, std::env::vars()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    fn config(passthrough: &[&str], dotenv: &[(&str, &str)]) -> Config {
        let mut env = EnvVars::default();
        for (k, v) in dotenv {
            env.set(*k, *v);
        }
        let mut c = Config::defaults(HermesHome::new("/nonexistent-home"), env);
        c.terminal.exec.env_passthrough = passthrough.iter().map(|s| s.to_string()).collect();
        c
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn secrets_and_unknown_variables_are_dropped() {
        let env = scrubbed(
            &config(&[], &[]),
            vars(&[
                ("PATH", "/bin"),
                ("HOME", "/h"),
                ("LC_ALL", "C"),
                ("OPENAI_API_KEY", "sk-1"),
                ("TELEGRAM_BOT_TOKEN", "123:abc"),
                ("GITHUB_TOKEN", "ghp_x"),
                ("API_SERVER_KEY", "k"),
                ("DB_PASSWORD", "p"),
                ("AWS_SECRET_ACCESS_KEY", "a"),
                ("SSH_AUTH_SOCK", "/tmp/agent"),
                ("RANDOM_THING", "x"),
            ]),
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["GIT_PAGER", "HOME", "LC_ALL", "PAGER", "PATH"]);
    }

    #[test]
    fn passthrough_names_pass_even_when_secret_looking_also_from_dotenv() {
        let env = scrubbed(
            &config(
                &["GITHUB_TOKEN", "NPM_TOKEN"],
                &[("NPM_TOKEN", "from-dotenv")],
            ),
            vars(&[("GITHUB_TOKEN", "ghp_x"), ("OPENAI_API_KEY", "sk-1")]),
        );
        assert!(env.contains(&("GITHUB_TOKEN".into(), "ghp_x".into())));
        assert!(env.contains(&("NPM_TOKEN".into(), "from-dotenv".into())));
        assert!(!env.iter().any(|(k, _)| k == "OPENAI_API_KEY"));
    }
}

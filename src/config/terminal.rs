//! The `terminal:` keys that say *where and how* commands run: the backend (local, sandbox, docker,
//! ssh), resource limits, network, writable paths and the environment passthrough list.
//! (`terminal.timeout` and `terminal.cwd` stay in `TerminalConfig` itself.)

use std::path::{Path, PathBuf};

use serde_json::Value;

use serde::Deserialize;

use super::file::num;
use super::{ConfigError, kind_of};

/// `terminal.backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// Not set: the sandbox where it works, else local with a one-time warning.
    Auto,
    Local,
    Sandbox,
    Docker,
    Ssh,
}

impl BackendChoice {
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Local => "local",
            BackendChoice::Sandbox => "sandbox",
            BackendChoice::Docker => "docker",
            BackendChoice::Ssh => "ssh",
        }
    }
}

/// Where `terminal.backend: ssh` sends commands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SshSettings {
    pub host: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub key: Option<PathBuf>,
}

/// How commands are executed (see `security::sandbox`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSettings {
    pub backend: BackendChoice,
    /// Processes (and threads) one command may have at once.
    pub max_processes: u64,
    /// Memory one command may use, in MiB (0 = no limit).
    pub max_memory_mb: u64,
    /// Largest file one command may write, in MiB (0 = no limit).
    pub max_file_size_mb: u64,
    /// `terminal.network: on|off` (sandbox and docker; off = no network at all).
    pub network: bool,
    /// Extra writable paths inside the sandbox (besides the working directory and /tmp).
    pub writable_paths: Vec<PathBuf>,
    /// Variables passed to commands besides the built-in allow-list (exact names).
    pub env_passthrough: Vec<String>,
    pub docker_image: String,
    pub ssh: SshSettings,
}

impl Default for ExecSettings {
    fn default() -> Self {
        ExecSettings {
            backend: BackendChoice::Auto,
            max_processes: 512,
            max_memory_mb: 4096,
            max_file_size_mb: 1024,
            network: true,
            writable_paths: Vec::new(),
            env_passthrough: Vec::new(),
            docker_image: "debian:stable-slim".to_string(),
            ssh: SshSettings::default(),
        }
    }
}

/// `terminal:` as written in config.yaml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TerminalFile {
    #[serde(deserialize_with = "num")]
    pub timeout: Option<u64>,
    pub cwd: Option<String>,
    pub backend: Option<String>,
    #[serde(deserialize_with = "num")]
    pub max_processes: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub max_memory_mb: Option<u64>,
    #[serde(deserialize_with = "num")]
    pub max_file_size_mb: Option<u64>,
    /// `on`/`off` (YAML 1.1 readers turn a bare `on`/`off` into booleans).
    pub network: Option<Value>,
    pub writable_paths: Option<Vec<String>>,
    pub env_passthrough: Option<Vec<String>>,
    pub docker_image: Option<String>,
    pub ssh_host: Option<String>,
    pub ssh_user: Option<String>,
    #[serde(deserialize_with = "num")]
    pub ssh_port: Option<u16>,
    pub ssh_key: Option<String>,
}

/// Reads the execution keys of the `terminal:` section into `exec`.
pub(super) fn apply(
    exec: &mut ExecSettings,
    terminal: &TerminalFile,
    path: &Path,
) -> Result<(), ConfigError> {
    let invalid = |key: &str, message: String| ConfigError::Type {
        path: path.to_path_buf(),
        key: format!("terminal.{key}"),
        message,
    };
    if let Some(v) = &terminal.backend {
        exec.backend = match v.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => BackendChoice::Auto,
            "local" => BackendChoice::Local,
            "sandbox" => BackendChoice::Sandbox,
            "docker" => BackendChoice::Docker,
            "ssh" => BackendChoice::Ssh,
            other => {
                return Err(invalid(
                    "backend",
                    format!("`{other}` is not one of local, sandbox, docker, ssh"),
                ));
            }
        };
    }
    if let Some(v) = terminal.max_processes {
        if v < 8 {
            return Err(invalid(
                "max_processes",
                format!("{v} is too few for a shell pipeline; use at least 8"),
            ));
        }
        exec.max_processes = v;
    }
    if let Some(v) = terminal.max_memory_mb {
        exec.max_memory_mb = v;
    }
    if let Some(v) = terminal.max_file_size_mb {
        exec.max_file_size_mb = v;
    }
    if let Some(v) = &terminal.network {
        exec.network = match v {
            Value::Null => true,
            Value::Bool(b) => *b,
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" => true,
                "off" | "false" | "no" | "none" => false,
                other => {
                    return Err(invalid("network", format!("`{other}` is not on or off")));
                }
            },
            other => {
                return Err(invalid(
                    "network",
                    format!("expected on or off, found {}", kind_of(other)),
                ));
            }
        };
    }
    if let Some(v) = &terminal.writable_paths {
        exec.writable_paths = v.iter().map(|p| expand_home(p)).collect();
    }
    if let Some(v) = &terminal.env_passthrough {
        exec.env_passthrough = v.clone();
    }
    if let Some(v) = &terminal.docker_image
        && !v.trim().is_empty()
    {
        exec.docker_image = v.trim().to_string();
    }
    let nonempty = |v: &Option<String>| v.clone().filter(|h| !h.trim().is_empty());
    exec.ssh.host = nonempty(&terminal.ssh_host).or(exec.ssh.host.take());
    exec.ssh.user = nonempty(&terminal.ssh_user).or(exec.ssh.user.take());
    if let Some(v) = terminal.ssh_port {
        exec.ssh.port = Some(v);
    }
    if let Some(v) = nonempty(&terminal.ssh_key) {
        exec.ssh.key = Some(expand_home(&v));
    }
    Ok(())
}

fn expand_home(p: &str) -> PathBuf {
    if (p == "~" || p.starts_with("~/"))
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(p.trim_start_matches('~').trim_start_matches('/'));
    }
    PathBuf::from(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<ExecSettings, ConfigError> {
        let file: TerminalFile = serde_saphyr::from_str(yaml).unwrap();
        let mut exec = ExecSettings::default();
        apply(&mut exec, &file, Path::new("config.yaml"))?;
        Ok(exec)
    }

    #[test]
    fn reads_backend_limits_network_and_lists() {
        let e = parse(
            "backend: sandbox\nmax_processes: 64\nnetwork: off\nwritable_paths: [/srv/data]\nenv_passthrough: [MY_TOKEN]\nssh_host: box\nssh_port: 2222\n",
        )
        .unwrap();
        assert_eq!(e.backend, BackendChoice::Sandbox);
        assert_eq!(e.max_processes, 64);
        assert!(!e.network);
        assert_eq!(e.writable_paths, [PathBuf::from("/srv/data")]);
        assert_eq!(e.env_passthrough, ["MY_TOKEN"]);
        assert_eq!(e.ssh.host.as_deref(), Some("box"));
        assert_eq!(e.ssh.port, Some(2222));
        assert!(parse("network: false\n").is_ok_and(|e| !e.network));
        assert!(parse("network: on\n").is_ok_and(|e| e.network));
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = parse("backend: vm\n").unwrap_err().to_string();
        assert!(
            err.contains("terminal.backend") && err.contains("vm"),
            "{err}"
        );
        let err = parse("max_processes: 2\n").unwrap_err().to_string();
        assert!(err.contains("terminal.max_processes"), "{err}");
        let err = parse("network: maybe\n").unwrap_err().to_string();
        assert!(err.contains("terminal.network"), "{err}");
    }
}

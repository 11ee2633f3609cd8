//! The `docker` backend: one container per session from `terminal.docker_image`, started on the
//! first command (the working directory mounted at the same path), with the command limits as
//! container limits (`--pids-limit`, `--memory`, `--ulimit fsize`) and `--network none` when
//! `terminal.network: off`.
//!
//! CPU time: `docker exec` has no `--ulimit`, and a container-wide `--ulimit cpu` is fixed when
//! the container starts while each command has its own timeout. So each exec'd shell first runs
//! `ulimit -t <timeout>` (RLIMIT_CPU, soft and hard, as the local backend sets it), and the
//! container gets `--ulimit cpu` at the longest foreground timeout as a ceiling no command can
//! raise (root in a container has no CAP_SYS_RESOURCE). `--cpus` is not used: it caps the rate,
//! not the total, and the timeout already bounds the wall time. Commands run with `docker exec`; the container is removed when the
//! session's `SessionContainer` is dropped (session end, hermes exit). A hermes that was SIGKILLed
//! cannot remove its container: containers are labelled with the owner's pid and those of dead
//! owners are removed before the next container starts.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::config::Config;

use super::{Request, SandboxError};

const OWNER_LABEL: &str = "hermes.owner";

/// The session's container, if one was started.
#[derive(Debug, Default)]
pub struct SessionContainer {
    running: tokio::sync::Mutex<Option<(PathBuf, String)>>,
    /// Name to remove on drop (kept outside the async mutex so `Drop` needs no runtime).
    started: std::sync::Mutex<Option<(PathBuf, String)>>,
}

impl SessionContainer {
    /// The docker binary and the container name, starting the container on first use.
    pub async fn ensure(
        &self,
        config: &Config,
        cwd: &Path,
    ) -> Result<(PathBuf, String), SandboxError> {
        let mut running = self.running.lock().await;
        if let Some(r) = running.as_ref() {
            return Ok(r.clone());
        }
        let docker = crate::tools::terminal::find_on_path("docker").ok_or_else(|| {
            SandboxError::Docker(
                "the docker client is not installed (set terminal.backend to sandbox or local)"
                    .into(),
            )
        })?;
        remove_orphans(&docker).await;
        let name = format!(
            "hermes-{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        );
        let out = tokio::process::Command::new(&docker)
            .args(run_args(config, &name, cwd))
            .env_clear()
            .envs(client_env())
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| SandboxError::Docker(format!("cannot run {}: {e}", docker.display())))?;
        if !out.status.success() {
            return Err(SandboxError::Docker(format!(
                "cannot start a container from image `{}`: {}",
                config.terminal.exec.docker_image,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        tracing::info!(container = %name, image = %config.terminal.exec.docker_image, "started session container");
        let entry = (docker, name);
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(entry.clone());
        *running = Some(entry.clone());
        Ok(entry)
    }
}

impl Drop for SessionContainer {
    fn drop(&mut self) {
        let started = self
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((docker, name)) = started {
            let _ = std::process::Command::new(docker)
                .args(["rm", "-f", &name])
                .envs(client_env())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            tracing::info!(container = %name, "removed session container");
        }
    }
}

/// `docker run` arguments for a session container.
fn run_args(config: &Config, name: &str, cwd: &Path) -> Vec<String> {
    let s = &config.terminal.exec;
    let cwd = cwd.display().to_string();
    let mut a: Vec<String> = vec![
        "run".into(),
        "-d".into(),
        "--rm".into(),
        "--name".into(),
        name.into(),
        "--label".into(),
        format!("{OWNER_LABEL}={}", std::process::id()),
        "--pids-limit".into(),
        s.max_processes.to_string(),
        "--security-opt".into(),
        "no-new-privileges".into(),
        "-v".into(),
        format!("{cwd}:{cwd}"),
        "-w".into(),
        cwd,
    ];
    if s.max_memory_mb > 0 {
        a.push("--memory".into());
        a.push(format!("{}m", s.max_memory_mb));
    }
    if s.max_file_size_mb > 0 {
        a.push("--ulimit".into());
        a.push(format!(
            "fsize={}",
            s.max_file_size_mb.saturating_mul(1024 * 1024)
        ));
    }
    // The ceiling for every process in the container (see the module doc).
    let cpu = crate::tools::terminal::MAX_TIMEOUT_SECS;
    a.push("--ulimit".into());
    a.push(format!("cpu={cpu}:{}", cpu + 5));
    if !s.network {
        a.push("--network".into());
        a.push("none".into());
    }
    a.push(s.docker_image.clone());
    // The container's init only waits; commands come through `docker exec`.
    a.extend(["sleep".into(), "2147483647".into()]);
    a
}

/// `docker exec` arguments for one command.
pub fn exec_args(config: &Config, container: &str, req: &Request<'_>) -> Vec<String> {
    // Only the mounted working directory exists in the container.
    let workdir = if req.workdir.starts_with(req.cwd) {
        req.workdir
    } else {
        req.cwd
    };
    let mut a: Vec<String> = vec!["exec".into(), "-w".into(), workdir.display().to_string()];
    // The container has its own PATH and HOME; only what the user passes through goes in.
    for (k, v) in super::env::scrubbed(config, std::env::vars()) {
        if config.terminal.exec.env_passthrough.contains(&k) || k == "PAGER" || k == "GIT_PAGER" {
            a.push("-e".into());
            a.push(format!("{k}={v}"));
        }
    }
    // CPU time ≤ the timeout, like RLIMIT_CPU for local commands (see the module doc); on its
    // own line so the command is parsed exactly as given.
    let script = format!(
        "ulimit -t {} 2>/dev/null\n{}",
        req.timeout.as_secs().max(1),
        req.command
    );
    a.extend([container.to_string(), "sh".into(), "-c".into(), script]);
    a
}

/// The docker client's own environment (where the daemon is); never reaches the container.
pub fn client_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| {
            matches!(
                k.as_str(),
                "PATH"
                    | "HOME"
                    | "DOCKER_HOST"
                    | "DOCKER_CONFIG"
                    | "DOCKER_CONTEXT"
                    | "DOCKER_CERT_PATH"
                    | "DOCKER_TLS_VERIFY"
            )
        })
        .collect()
}

/// Kills every process in the container but its init (a stopped or timed-out command).
pub async fn kill_processes(docker: &Path, container: &str) {
    let _ = tokio::process::Command::new(docker)
        .args(["exec", container, "kill", "-9", "-1"])
        .env_clear()
        .envs(client_env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
}

/// Removes containers whose owning hermes died without removing them.
async fn remove_orphans(docker: &Path) {
    let Ok(out) = tokio::process::Command::new(docker)
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label={OWNER_LABEL}"),
            "--format",
            &format!("{{{{.Names}}}} {{{{.Label \"{OWNER_LABEL}\"}}}}"),
        ])
        .env_clear()
        .envs(client_env())
        .stdin(Stdio::null())
        .output()
        .await
    else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((name, owner)) = line.split_once(' ') else {
            continue;
        };
        let alive = owner
            .trim()
            .parse::<u32>()
            .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            tracing::warn!(container = %name, "removing a container left by a hermes that died");
            let _ = tokio::process::Command::new(docker)
                .args(["rm", "-f", name])
                .env_clear()
                .envs(client_env())
                .stdin(Stdio::null())
                .output()
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    #[test]
    fn run_args_carry_the_limits_mount_and_network() {
        let mut c = Config::defaults(HermesHome::new("/h"), EnvVars::default());
        c.terminal.exec.network = false;
        c.terminal.exec.max_processes = 64;
        c.terminal.exec.docker_image = "img:1".into();
        let a = run_args(&c, "hermes-1-x", Path::new("/work/p")).join(" ");
        assert!(a.contains("--pids-limit 64"), "{a}");
        assert!(a.contains("-v /work/p:/work/p -w /work/p"), "{a}");
        assert!(a.contains("--network none"), "{a}");
        assert!(a.contains("--memory 4096m"), "{a}");
        assert!(a.contains(" img:1 sleep"), "{a}");
        assert!(a.contains("--ulimit cpu=600:605"), "{a}");
        let req = Request {
            shell: Path::new("/bin/sh"),
            command: "echo hi",
            cwd: Path::new("/work/p"),
            workdir: Path::new("/work/p"),
            timeout: std::time::Duration::from_secs(42),
        };
        let e = exec_args(&c, "ctr", &req);
        assert_eq!(e.last().unwrap(), "ulimit -t 42 2>/dev/null\necho hi");
    }
}

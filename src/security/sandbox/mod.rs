//! Where and how a `terminal` command runs: `terminal.backend: local | sandbox | docker | ssh`.
//!
//! Every backend gives each command its own process group, a scrubbed environment (`env`) and
//! resource limits (`limits`); `detect` probes what the machine allows and says once what does
//! not apply. The `sandbox` backend (the default where it works) wraps the shell in bubblewrap
//! (`bwrap`), `docker` runs it in a per-session container, `ssh` on another host.
//!
//! Why bubblewrap and not landlock + seccomp from Rust: landlock restricts file access but cannot
//! give a private `/tmp`, a pid namespace (the one thing that reliably kills a command's whole
//! tree when hermes is SIGKILLed: its init dies and takes the namespace with it) or an empty
//! network namespace, and it needs kernel ≥ 5.13 with the LSM enabled, which many containers and
//! older distributions lack; its network rules (TCP only, ≥ 6.7) leave UDP and Unix sockets
//! open. bwrap does all of it with plain namespaces, is one small packaged binary (Flatpak's),
//! costs ~2–3 ms per command, and fails visibly when the kernel refuses namespaces — then the
//! default falls back to `local` with a warning.

pub mod bwrap;
pub mod detect;
pub mod docker;
pub mod env;
pub mod limits;
pub mod ssh;
pub mod supervise;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;

pub use detect::{Backend, Machine};
pub use docker::SessionContainer;

use crate::security::protected::ProtectedPaths;

/// Per-session terminal state: the session's container and its protected-path list (built on
/// the first sandboxed command).
#[derive(Debug, Default)]
pub struct SessionTerminal {
    pub container: SessionContainer,
    protected: std::sync::OnceLock<ProtectedPaths>,
    cgroups: std::sync::Arc<limits::CgroupPool>,
}

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{0}")]
    Unavailable(String),
    #[error("docker: {0}")]
    Docker(String),
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub shell: &'a Path,
    pub command: &'a str,
    /// The session's working directory (writable in the sandbox, mounted in docker).
    pub cwd: &'a Path,
    /// Where the command starts.
    pub workdir: &'a Path,
    pub timeout: Duration,
}

/// A command ready to spawn (stdio still to be set by the caller), with what must happen when
/// it is stopped early.
pub struct Launch {
    pub command: tokio::process::Command,
    pub backend: Backend,
    /// Give the command a stdin pipe and hold it open while it runs (ssh: the remote side
    /// kills the command when it closes).
    pub keep_stdin_open: bool,
    limits: Option<limits::CommandLimits>,
    abort: Option<Abort>,
}

enum Abort {
    /// Kill every process in the session's container except its init.
    Docker { docker: PathBuf, container: String },
}

impl Launch {
    /// Kills whatever the command left running beyond its process group (cgroup members, the
    /// processes inside a container). The process group itself is the caller's to signal.
    pub async fn kill_all(&self) {
        if let Some(l) = &self.limits {
            l.kill_all();
        }
        if let Some(Abort::Docker { docker, container }) = &self.abort {
            docker::kill_processes(docker, container).await;
        }
    }
}

/// Prepares `req` for the configured backend.
pub async fn launch(
    config: &Config,
    session: &SessionTerminal,
    req: &Request<'_>,
) -> Result<Launch, SandboxError> {
    let settings = &config.terminal.exec;
    let machine = detect::machine();
    let backend = detect::resolve(settings, machine).map_err(SandboxError::Unavailable)?;
    detect::warn_once(&detect::gaps(settings, machine, backend));
    match backend {
        Backend::Local | Backend::Sandbox => {
            let limits = limits::CommandLimits::new(
                &machine.limits,
                settings,
                req.timeout,
                &session.cgroups,
            );
            let mut cmd = match (&machine.bwrap, backend) {
                (Ok(bwrap), Backend::Sandbox) => {
                    let mut c = tokio::process::Command::new(bwrap);
                    c.args(bwrap::args(&layout(config, session, req)));
                    c.arg("--").arg(req.shell);
                    c
                }
                _ => {
                    let mut c = tokio::process::Command::new(req.shell);
                    c.current_dir(req.workdir);
                    c
                }
            };
            cmd.arg("-c").arg(req.command);
            env::apply(config, &mut cmd);
            limits.install(&mut cmd);
            // The sandbox dies with hermes by itself (--die-with-parent, pid namespace); a local
            // command's tree needs the supervisor for that. Last: it forks.
            if backend == Backend::Local {
                supervise::install(&mut cmd);
            }
            Ok(Launch {
                command: cmd,
                backend,
                keep_stdin_open: false,
                limits: Some(limits),
                abort: None,
            })
        }
        Backend::Docker => {
            let (docker, container) = session.container.ensure(config, req.cwd).await?;
            let mut cmd = tokio::process::Command::new(&docker);
            cmd.args(docker::exec_args(config, &container, req));
            cmd.env_clear();
            cmd.envs(docker::client_env());
            Ok(Launch {
                command: cmd,
                backend,
                keep_stdin_open: false,
                limits: None,
                abort: Some(Abort::Docker { docker, container }),
            })
        }
        Backend::Ssh => {
            let mut cmd = tokio::process::Command::new("ssh");
            cmd.args(ssh::args(config, req).map_err(SandboxError::Unavailable)?);
            cmd.env_clear();
            cmd.envs(ssh::client_env());
            Ok(Launch {
                command: cmd,
                backend,
                keep_stdin_open: true,
                limits: None,
                abort: None,
            })
        }
    }
}

/// The sandbox's mounts for one request.
fn layout(config: &Config, session: &SessionTerminal, req: &Request<'_>) -> bwrap::Layout {
    let writable = config.terminal.exec.writable_paths.clone();
    let mut all_writable = writable.clone();
    all_writable.push(req.cwd.to_path_buf());
    let list = session
        .protected
        .get_or_init(|| ProtectedPaths::for_config(config));
    bwrap::Layout {
        cwd: req.cwd.to_path_buf(),
        workdir: req.workdir.to_path_buf(),
        writable,
        protected: protected_mounts(list, &all_writable),
        network: config.terminal.exec.network,
    }
}

/// The protected paths (`security::protected`, the list the file tools use) as sandbox mounts:
/// every unreadable path hidden; unwritable paths bound read-only again where they lie inside a
/// writable directory (elsewhere the whole file system is read-only already, and re-binding an
/// ancestor of the working directory would cover its writable bind).
fn protected_mounts(
    list: &ProtectedPaths,
    writable: &[PathBuf],
) -> Vec<(PathBuf, bwrap::Exposure)> {
    let inside_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    // The sandbox's /tmp is a fresh tmpfs: host paths there are not visible anyway.
    let visible = |p: &Path| !p.starts_with("/tmp") || inside_writable(p);
    let mut out: Vec<(PathBuf, bwrap::Exposure)> = list
        .no_write
        .iter()
        .filter(|p| inside_writable(p))
        .map(|p| (p.clone(), bwrap::Exposure::ReadOnly))
        .collect();
    out.extend(
        list.no_read
            .iter()
            .filter(|p| visible(p))
            .map(|p| (p.clone(), bwrap::Exposure::Hidden)),
    );
    out
}

/// What `hermes doctor` shows about command execution.
pub fn report(config: &Config) -> Vec<(String, String)> {
    let settings = &config.terminal.exec;
    let machine = detect::machine();
    let mut rows = Vec::new();
    let backend = match detect::resolve(settings, machine) {
        Ok(b) => {
            rows.push((
                "backend".into(),
                format!(
                    "{} (terminal.backend: {})",
                    b.name(),
                    settings.backend.name()
                ),
            ));
            Some(b)
        }
        Err(why) => {
            rows.push(("backend".into(), format!("unusable: {why}")));
            None
        }
    };
    rows.push((
        "sandbox".into(),
        match &machine.bwrap {
            Ok(p) => format!("available ({})", p.display()),
            Err(why) => format!("unavailable: {why}"),
        },
    ));
    match backend {
        Some(Backend::Local | Backend::Sandbox) => {
            for line in limits::describe(&machine.limits, settings) {
                rows.push(("limit".into(), line));
            }
        }
        Some(Backend::Docker) => rows.push((
            "limit".into(),
            "the container's --pids-limit, --memory, --ulimit fsize/cpu, and CPU time ≤ the command's timeout (ulimit -t per exec)"
                .into(),
        )),
        Some(Backend::Ssh) => rows.push((
            "limit".into(),
            "ulimit on the remote shell (processes, file size, CPU time)".into(),
        )),
        None => {}
    }
    if let Some(b) = backend {
        for gap in detect::gaps(settings, machine, b) {
            rows.push(("not applied".into(), gap));
        }
        if matches!(b, Backend::Sandbox | Backend::Docker) {
            rows.push((
                "network".into(),
                if settings.network { "on" } else { "off" }.into(),
            ));
        }
    }
    rows.push((
        "environment".into(),
        format!(
            "scrubbed (allow-list + {} passthrough name(s))",
            settings.env_passthrough.len()
        ),
    ));
    rows
}

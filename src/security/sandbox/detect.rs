//! What this machine allows (bubblewrap, cgroups, docker), probed once per process, the backend
//! that follows from `terminal.backend`, and the one-time warning when something cannot apply.
//!
//! These are facts about the machine, not per-`Services` state, so they are cached in process
//! statics: two `Services` in one process share the same kernel.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::terminal::{BackendChoice, ExecSettings};

use super::limits::{self, Facilities};

/// The backend commands actually run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Local,
    Sandbox,
    Docker,
    Ssh,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Local => "local",
            Backend::Sandbox => "sandbox",
            Backend::Docker => "docker",
            Backend::Ssh => "ssh",
        }
    }
}

/// Probed facts.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `Ok(path of bwrap)` or why the sandbox cannot run here.
    pub bwrap: Result<PathBuf, String>,
    pub limits: Facilities,
}

static MACHINE: OnceLock<Machine> = OnceLock::new();
static WARNED: AtomicBool = AtomicBool::new(false);

/// The machine's facts (probed on first use: ~10 ms, once per process).
pub fn machine() -> &'static Machine {
    MACHINE.get_or_init(|| {
        let limits = Facilities::probe();
        limits::sweep_orphans(&limits);
        Machine {
            bwrap: probe_bwrap(),
            limits,
        }
    })
}

fn probe_bwrap() -> Result<PathBuf, String> {
    let Some(path) = crate::tools::terminal::find_on_path("bwrap") else {
        return Err(
            "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
                .into(),
        );
    };
    let out = std::process::Command::new(&path)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
            "--die-with-parent",
            "--cap-drop",
            "ALL",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(path),
        Ok(o) => Err(format!(
            "bwrap cannot create namespaces here ({}); the kernel or container refuses them",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}", path.display())),
    }
}

/// The backend `settings` selects on this machine, or why the chosen one cannot run.
pub fn resolve(settings: &ExecSettings, m: &Machine) -> Result<Backend, String> {
    match settings.backend {
        BackendChoice::Local => Ok(Backend::Local),
        BackendChoice::Docker => Ok(Backend::Docker),
        BackendChoice::Ssh => match &settings.ssh.host {
            Some(_) => Ok(Backend::Ssh),
            None => Err("terminal.backend is ssh but terminal.ssh_host is not set".into()),
        },
        BackendChoice::Sandbox => match &m.bwrap {
            Ok(_) => Ok(Backend::Sandbox),
            Err(why) => Err(format!(
                "terminal.backend is sandbox but {why}; install it, or set terminal.backend: local to run commands unsandboxed"
            )),
        },
        BackendChoice::Auto => Ok(if m.bwrap.is_ok() {
            Backend::Sandbox
        } else {
            Backend::Local
        }),
    }
}

/// Everything that does not apply as configured, one line each (empty when all holds).
pub fn gaps(settings: &ExecSettings, m: &Machine, backend: Backend) -> Vec<String> {
    let mut out = Vec::new();
    if settings.backend == BackendChoice::Auto
        && backend == Backend::Local
        && let Err(why) = &m.bwrap
    {
        out.push(format!("commands run unsandboxed (local): {why}"));
    }
    if matches!(backend, Backend::Local | Backend::Sandbox) {
        out.extend(limits::missing(&m.limits, settings));
    }
    if backend == Backend::Local && !settings.network {
        out.push("terminal.network: off needs the sandbox or docker backend; local commands keep the network".into());
    }
    out
}

/// Logs and prints (stderr, once per process) what does not apply.
pub fn warn_once(gaps: &[String]) {
    if gaps.is_empty() || WARNED.swap(true, Ordering::SeqCst) {
        return;
    }
    for gap in gaps {
        tracing::warn!(%gap, "terminal limit not applied");
    }
    eprintln!("hermes: warning: {} (see `hermes doctor`)", gaps.join("; "));
}

//! Resource limits for one command, whatever the backend: a process cap, memory, CPU time and
//! file size.
//!
//! The process cap is a `pids` cgroup when one is writable (it binds root too, and a cgroup kill
//! reaches processes that left the process group); otherwise `RLIMIT_NPROC`, which counts every
//! process of the user and does not bind root at all — then the cap is reported as missing.
//! Memory is a `memory` cgroup when writable, else `RLIMIT_DATA`. CPU time (`RLIMIT_CPU`, the
//! foreground timeout) and file size (`RLIMIT_FSIZE`) are plain rlimits and always apply.
//!
//! `HERMES_TERMINAL_CGROUPS=off` in hermes's environment makes it use no cgroup at all (what a
//! machine without a writable one does; the tests use it).
//!
//! Each command's cgroups are created under hermes's own cgroup (never moving anything out of the
//! hierarchy hermes was put in), named `hermes-<pid>-<n>`; a leftover of a hermes that died
//! (SIGKILL) is found by its dead pid and its processes killed at the next start.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::config::terminal::ExecSettings;

/// A cgroup controller hierarchy hermes may create children in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// hermes's own cgroup directory in this hierarchy.
    pub dir: PathBuf,
    /// cgroup v2 (`cgroup.kill` exists; one directory holds every controller).
    pub v2: bool,
}

/// What this machine lets hermes limit (probed once, see `detect`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facilities {
    pub pids: Option<Hierarchy>,
    pub memory: Option<Hierarchy>,
    pub root: bool,
}

impl Facilities {
    /// Looks at /proc/self/cgroup and /proc/self/mountinfo and tries to create (and remove) a
    /// child cgroup in each candidate hierarchy.
    pub fn probe() -> Facilities {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if std::env::var_os("HERMES_TERMINAL_CGROUPS").is_some_and(|v| v == "off") {
            return Facilities {
                pids: None,
                memory: None,
                root,
            };
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Facilities {
            pids: find_hierarchy(&own, &mounts, "pids", "pids.max"),
            memory: find_hierarchy(&own, &mounts, "memory", "memory.limit_in_bytes")
                .or_else(|| find_hierarchy(&own, &mounts, "memory", "memory.max")),
            root,
        }
    }
}

/// hermes's own directory in the hierarchy that has `controller`, if a child made there gets
/// `limit_file` (that is, the controller is really available to children).
fn find_hierarchy(
    own: &str,
    mounts: &str,
    controller: &str,
    limit_file: &str,
) -> Option<Hierarchy> {
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, rel) = (parts.next()?, parts.next()?, parts.next()?);
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == controller) {
            continue;
        }
        let Some(mount) = mount_point(mounts, v2, controllers) else {
            continue;
        };
        let rel = rel.trim().trim_start_matches('/');
        let dir = if rel.is_empty() {
            mount
        } else {
            mount.join(rel)
        };
        let probe = dir.join(format!("hermes-probe-{}", std::process::id()));
        if std::fs::create_dir(&probe).is_err() {
            continue;
        }
        let usable = probe.join(limit_file).exists();
        let _ = std::fs::remove_dir(&probe);
        if usable {
            return Some(Hierarchy { dir, v2 });
        }
    }
    None
}

/// Mount point of the cgroup v2 hierarchy, or of the v1 hierarchy with exactly `controllers`.
fn mount_point(mountinfo: &str, v2: bool, controllers: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut fields = right.split_whitespace();
        let fstype = fields.next()?;
        let options = fields.nth(1).unwrap_or("");
        let mount = left.split_whitespace().nth(4)?;
        let matches = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && {
                let opts: Vec<&str> = options.split(',').collect();
                controllers.split(',').all(|c| opts.contains(&c))
            }
        };
        matches.then(|| PathBuf::from(mount))
    })
}

/// Empty command cgroups kept for the session's next command: creating and removing a cgroup
/// takes a kernel-wide lock and costs milliseconds on a busy machine. Dropping the pool (the
/// session ends) removes them.
#[derive(Debug, Default)]
pub struct CgroupPool {
    idle: std::sync::Mutex<Vec<PathBuf>>,
}

impl CgroupPool {
    fn take(&self, parent: &Path) -> Option<PathBuf> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let at = idle.iter().position(|d| d.parent() == Some(parent))?;
        Some(idle.swap_remove(at))
    }

    fn give_back(&self, dir: PathBuf) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(dir);
    }
}

impl Drop for CgroupPool {
    fn drop(&mut self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        for dir in idle {
            kill_cgroup(&dir);
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// The limits one command gets, with the cgroups it runs in. Dropping it kills what is left in
/// the cgroups and hands them back to the session's pool.
#[derive(Debug)]
pub struct CommandLimits {
    pool: std::sync::Arc<CgroupPool>,
    groups: Vec<PathBuf>,
    /// `cgroup.procs` of each group, opened before the fork: the child joins by writing "0".
    join: Vec<std::fs::File>,
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
}

/// Why a limit does not apply on this machine (for the warning and `hermes doctor`).
pub fn missing(f: &Facilities, settings: &ExecSettings) -> Vec<String> {
    let mut out = Vec::new();
    if f.pids.is_none() && f.root {
        out.push(format!(
            "process limit ({}) not enforced: no writable pids cgroup, and RLIMIT_NPROC does not bind root",
            settings.max_processes
        ));
    }
    if f.memory.is_none() && settings.max_memory_mb > 0 {
        out.push(
            "memory limit is per process (RLIMIT_DATA): no writable memory cgroup for a per-command total"
                .into(),
        );
    }
    out
}

/// One line per limit that applies, for `hermes doctor`.
pub fn describe(f: &Facilities, settings: &ExecSettings) -> Vec<String> {
    let mut out = Vec::new();
    match (&f.pids, f.root) {
        (Some(h), _) => out.push(format!(
            "processes ≤ {} (pids cgroup under {})",
            settings.max_processes,
            h.dir.display()
        )),
        (None, false) => out.push(format!(
            "processes ≤ {} more for this user (RLIMIT_NPROC)",
            settings.max_processes
        )),
        (None, true) => {}
    }
    if settings.max_memory_mb > 0 {
        match &f.memory {
            Some(h) => out.push(format!(
                "memory ≤ {} MiB per command (memory cgroup under {})",
                settings.max_memory_mb,
                h.dir.display()
            )),
            None => out.push(format!(
                "memory ≤ {} MiB per process (RLIMIT_DATA)",
                settings.max_memory_mb
            )),
        }
    }
    out.push("CPU time ≤ the command's timeout (RLIMIT_CPU)".into());
    if settings.max_file_size_mb > 0 {
        out.push(format!(
            "file size ≤ {} MiB (RLIMIT_FSIZE)",
            settings.max_file_size_mb
        ));
    }
    out
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl CommandLimits {
    /// Creates the cgroups for one command. A cgroup that cannot be made falls back to rlimits;
    /// the reason was already reported by `detect`.
    pub fn new(
        f: &Facilities,
        settings: &ExecSettings,
        cpu: Duration,
        pool: &std::sync::Arc<CgroupPool>,
    ) -> CommandLimits {
        let mut limits = CommandLimits {
            pool: pool.clone(),
            groups: Vec::new(),
            join: Vec::new(),
            rlimits: Vec::new(),
        };
        let name = format!(
            "hermes-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let pids_ok = f.pids.as_ref().is_some_and(|h| {
            limits.add_group(h, &name, "pids.max", &settings.max_processes.to_string())
        });
        if !pids_ok && !f.root {
            let running = user_process_count();
            limits
                .rlimits
                .push((libc::RLIMIT_NPROC, running + settings.max_processes));
        }
        if settings.max_memory_mb > 0 {
            let bytes = settings.max_memory_mb.saturating_mul(1024 * 1024);
            let mem_ok = f.memory.as_ref().is_some_and(|h| {
                let file = if h.v2 {
                    "memory.max"
                } else {
                    "memory.limit_in_bytes"
                };
                // One v2 directory holds both controllers: reuse it when already made.
                if h.v2 && limits.groups.iter().any(|g| g.starts_with(&h.dir)) {
                    let dir = h.dir.join(&name);
                    return std::fs::write(dir.join(file), bytes.to_string()).is_ok();
                }
                limits.add_group(h, &name, file, &bytes.to_string())
            });
            if !mem_ok {
                limits.rlimits.push((libc::RLIMIT_DATA, bytes));
            }
        }
        let cpu_secs = cpu.as_secs().max(1);
        limits.rlimits.push((libc::RLIMIT_CPU, cpu_secs));
        if settings.max_file_size_mb > 0 {
            limits.rlimits.push((
                libc::RLIMIT_FSIZE,
                settings.max_file_size_mb.saturating_mul(1024 * 1024),
            ));
        }
        limits
    }

    fn add_group(&mut self, h: &Hierarchy, name: &str, file: &str, value: &str) -> bool {
        let dir = match self.pool.take(&h.dir) {
            Some(dir) => dir,
            None => {
                let dir = h.dir.join(name);
                if std::fs::create_dir(&dir).is_err() {
                    return false;
                }
                dir
            }
        };
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"));
        match (std::fs::write(dir.join(file), value), procs) {
            (Ok(()), Ok(procs)) => {
                self.groups.push(dir);
                self.join.push(procs);
                true
            }
            _ => {
                let _ = std::fs::remove_dir(&dir);
                false
            }
        }
    }

    /// Whether a cgroup holds the command (then `kill_all` reaches every descendant).
    pub fn has_cgroup(&self) -> bool {
        !self.groups.is_empty()
    }

    /// Runs in the forked child before exec: joins the cgroups and sets the rlimits.
    /// Only async-signal-safe calls (write, setrlimit, prctl).
    pub fn install(&self, cmd: &mut tokio::process::Command) {
        let fds: Vec<i32> = self.join.iter().map(AsRawFd::as_raw_fd).collect();
        let rlimits = self.rlimits.clone();
        // SAFETY: the closure only makes async-signal-safe system calls on values prepared
        // before the fork (no allocation, no locks).
        unsafe {
            cmd.pre_exec(move || {
                for fd in &fds {
                    if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for (resource, value) in &rlimits {
                    let mut soft = *value;
                    let mut hard = *value;
                    if *resource == libc::RLIMIT_CPU {
                        // SIGXCPU at the soft limit, SIGKILL a little later.
                        hard = value.saturating_add(5);
                    }
                    let mut current = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    if libc::getrlimit(*resource, &mut current) == 0
                        && current.rlim_max != libc::RLIM_INFINITY
                    {
                        // Never ask for more than the hard limit already set (EPERM otherwise).
                        hard = hard.min(current.rlim_max);
                        soft = soft.min(hard);
                    }
                    let lim = libc::rlimit {
                        rlim_cur: soft,
                        rlim_max: hard,
                    };
                    if libc::setrlimit(*resource, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // The command must not outlive hermes (SIGKILL of hermes included).
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                Ok(())
            });
        }
    }

    /// Kills every process in the command's cgroups (those that left its process group too).
    pub fn kill_all(&self) {
        for dir in &self.groups {
            kill_cgroup(dir);
        }
    }
}

impl Drop for CommandLimits {
    /// The command is over: what it left running goes with it (as in the sandbox, whose pid
    /// namespace ends with the shell) — moving it out of the cgroup would lift its limits, and a
    /// leftover directory would block the removal of the cgroup hermes itself runs in.
    fn drop(&mut self) {
        for dir in self.groups.drain(..) {
            if kill_cgroup(&dir) {
                self.pool.give_back(dir);
            } else if let Err(e) = std::fs::remove_dir(&dir) {
                tracing::warn!(cgroup = %dir.display(), error = %e, "cannot remove a command's cgroup");
            }
        }
    }
}

/// SIGKILL to everything in a cgroup, repeated while new processes appear (a fork bomb races).
/// Returns whether the cgroup is empty now.
fn kill_cgroup(dir: &Path) -> bool {
    let procs = || -> Vec<i32> {
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    };
    let mut use_kill_file = true;
    for _ in 0..200 {
        let pids = procs();
        if pids.is_empty() {
            return true;
        }
        // cgroup v2 kills the whole tree at once; v1 needs one kill(2) per process.
        if use_kill_file {
            use_kill_file = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.kill"))
                .and_then(|mut f| f.write_all(b"1"))
                .is_ok();
        }
        if !use_kill_file {
            for pid in pids.into_iter().filter(|p| *p > 1) {
                // SAFETY: kill(2) on a pid read from our own command's cgroup.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    procs().is_empty()
}

/// Kills and removes cgroups left by a hermes that died (its pid in the name is gone).
pub fn sweep_orphans(f: &Facilities) {
    for h in [&f.pids, &f.memory].into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(&h.dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(owner) = name
                .to_str()
                .and_then(|n| n.strip_prefix("hermes-"))
                .and_then(|n| n.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            if Path::new(&format!("/proc/{owner}")).exists() {
                continue;
            }
            tracing::warn!(cgroup = %entry.path().display(), "killing commands left by a hermes that died");
            kill_cgroup(&entry.path());
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Processes owned by this user now (what RLIMIT_NPROC counts against).
fn user_process_count() -> u64 {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                })
                .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
                .count() as u64
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_v1_and_v2_mount_points() {
        let info = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                    40 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                    41 31 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_point(info, false, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            mount_point(info, true, ""),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(mount_point(info, false, "memory"), None);
    }

    #[test]
    fn the_report_names_what_is_missing_for_root() {
        let settings = ExecSettings::default();
        let none = Facilities {
            pids: None,
            memory: None,
            root: true,
        };
        let gaps = missing(&none, &settings);
        assert!(
            gaps[0].contains("RLIMIT_NPROC does not bind root"),
            "{gaps:?}"
        );
        let user = Facilities {
            root: false,
            ..none
        };
        assert!(describe(&user, &settings)[0].contains("RLIMIT_NPROC"));
    }
}

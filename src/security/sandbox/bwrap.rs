//! The `sandbox` backend's command line: bubblewrap (`bwrap`) around the shell.
//!
//! Layout inside: the whole file system read-only; `/dev` and `/proc` fresh; `/tmp` a private
//! tmpfs; the session's working directory and `terminal.writable_paths` writable; on top of
//! those, the protected paths (credentials, hermes's control files) bound read-only again and
//! the secret files (`.env`, `auth.json`, private keys) replaced by an empty file so they cannot
//! be read. All capabilities are dropped (as root, bwrap would otherwise keep them and a command
//! could simply remount `/` read-write), the command gets its own pid namespace (when its shell
//! exits or bwrap dies, everything in it dies), its own session (no TIOCSTI into the user's
//! terminal) and, with `terminal.network: off`, an empty network namespace.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How a protected path is shown to a sandboxed command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Visible, not writable.
    ReadOnly,
    /// Not readable: an empty file (or empty directory) stands in its place.
    Hidden,
}

/// What the sandbox is built from.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The session's working directory (writable).
    pub cwd: PathBuf,
    /// Where the command starts (inside or outside `cwd`).
    pub workdir: PathBuf,
    pub writable: Vec<PathBuf>,
    pub protected: Vec<(PathBuf, Exposure)>,
    pub network: bool,
}

/// `bwrap` arguments up to (not including) the command to run.
pub fn args(layout: &Layout) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::with_capacity(32);
    let mut push = |items: &[&std::ffi::OsStr]| a.extend(items.iter().map(|s| s.to_os_string()));
    push(&[
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--tmpfs".as_ref(),
        "/tmp".as_ref(),
    ]);
    let mut writable: Vec<&Path> = vec![layout.cwd.as_path()];
    writable.extend(layout.writable.iter().map(PathBuf::as_path));
    for dir in writable {
        // A path that does not exist cannot be bound; `/` writable would undo everything.
        if dir.exists() && dir != Path::new("/") {
            push(&["--bind".as_ref(), dir.as_os_str(), dir.as_os_str()]);
        }
    }
    for (path, exposure) in &layout.protected {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            // Bind the target: a symlink cannot be a mount point.
            if let Ok(target) = std::fs::canonicalize(path) {
                push_protected(&mut push, &target, *exposure);
            }
            continue;
        }
        push_protected(&mut push, path, *exposure);
    }
    push(&[
        // Each namespace and mount costs: IPC and UTS namespaces (SysV queues, hostname) are left
        // shared, they protect little and cost ~1.5 ms each on a busy machine.
        "--unshare-pid".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
    ]);
    if !layout.network {
        push(&["--unshare-net".as_ref()]);
    }
    push(&["--chdir".as_ref(), layout.workdir.as_os_str()]);
    a
}

fn push_protected(push: &mut impl FnMut(&[&std::ffi::OsStr]), path: &Path, exposure: Exposure) {
    match exposure {
        Exposure::ReadOnly => push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]),
        Exposure::Hidden if path.is_dir() => push(&[
            "--tmpfs".as_ref(),
            path.as_os_str(),
            "--remount-ro".as_ref(),
            path.as_os_str(),
        ]),
        Exposure::Hidden => push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), path.as_os_str()]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(a: &[OsString]) -> String {
        a.iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn protected_paths_are_mounted_after_the_writable_ones() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().to_path_buf();
        let secret = cwd.join(".env");
        std::fs::write(&secret, "K=v").unwrap();
        let ssh = cwd.join(".ssh");
        std::fs::create_dir(&ssh).unwrap();
        let layout = Layout {
            cwd: cwd.clone(),
            workdir: cwd.clone(),
            writable: vec![PathBuf::from("/nonexistent-writable"), PathBuf::from("/")],
            protected: vec![
                (secret.clone(), Exposure::Hidden),
                (ssh.clone(), Exposure::ReadOnly),
                (cwd.join("missing"), Exposure::Hidden),
            ],
            network: false,
        };
        let s = joined(&args(&layout));
        let bind = s.find(&format!("--bind {0} {0}", cwd.display())).unwrap();
        let hide = s
            .find(&format!("--ro-bind /dev/null {}", secret.display()))
            .unwrap();
        let ro = s
            .find(&format!("--ro-bind {0} {0}", ssh.display()))
            .unwrap();
        assert!(bind < hide && bind < ro, "{s}");
        assert!(!s.contains("nonexistent") && !s.contains("missing"), "{s}");
        assert!(!s.contains("--bind / /"), "{s}");
        assert!(
            s.contains("--unshare-net") && s.contains("--cap-drop ALL"),
            "{s}"
        );
    }
}

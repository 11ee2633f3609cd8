//! An exclusive advisory lock (`flock`) on a lock file beside the memory files, so two hermes
//! processes (the CLI and the gateway) never interleave a read-modify-write of MEMORY.md.
//!
//! The lock file is separate from the data file because writes replace the data file by rename:
//! a lock on the old inode would not exclude a writer that opened the new one.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Held until dropped (closing the file releases the lock).
pub struct FileLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open the lock file {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "another hermes process has held {path} for over {waited:?}; try again, or remove the file if no hermes is running"
    )]
    Timeout { path: PathBuf, waited: Duration },
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl FileLock {
    /// Takes the lock on `path` (created if missing), waiting up to `timeout`.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<Self, LockError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|source| LockError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        let started = Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            // SAFETY: `flock` only reads the descriptor, which `file` keeps open for this call.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(FileLock { _file: file });
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(code) if code == libc::EWOULDBLOCK || code == libc::EINTR => {}
                _ => {
                    return Err(LockError::Lock {
                        path: path.to_path_buf(),
                        source: err,
                    });
                }
            }
            if started.elapsed() >= timeout {
                return Err(LockError::Timeout {
                    path: path.to_path_buf(),
                    waited: timeout,
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_waits_then_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = FileLock::acquire(&path, Duration::from_secs(1)).unwrap();
        // flock locks belong to the open file description, so a second open in the same
        // process contends like another process would.
        let err = FileLock::acquire(&path, Duration::from_millis(50))
            .err()
            .unwrap();
        assert!(matches!(err, LockError::Timeout { .. }), "{err}");
        drop(held);
        assert!(FileLock::acquire(&path, Duration::from_millis(50)).is_ok());
    }
}

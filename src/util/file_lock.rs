//! An exclusive advisory lock (`flock`) on a lock file beside a data file, with a timeout, so two
//! hermes processes (the CLI and the gateway) never interleave a read-modify-write of MEMORY.md,
//! auth.json or skills/.usage.json, and a stuck holder cannot hang a writer forever.
//!
//! The lock file is separate from the data file because writes replace the data file by rename:
//! a lock on the old inode would not exclude a writer that opened the new one.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    #[error(
        "cannot wait for the lock on {path}: no thread could be started ({source}); the system is out of threads or processes, try again when fewer programs run"
    )]
    NoThread {
        path: PathBuf,
        source: std::io::Error,
    },
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
        // Uncontended: take it at once.
        match try_lock(&file) {
            Ok(true) => return Ok(FileLock { _file: file }),
            Ok(false) => {}
            Err(source) => {
                return Err(LockError::Lock {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        // Contended: wait in the kernel (woken when the holder releases; polling with sleeps
        // lets a holder that re-locks in a loop starve us) on a helper thread, so the wait can
        // be bounded. The helper holds a duplicate of the descriptor; if we give up, it drops
        // its copy once it gets the lock, and with ours gone too the lock is released.
        let waiter = file.try_clone().map_err(|source| LockError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        // `thread::spawn` panics when the system is out of threads; this says so instead.
        let spawned = std::thread::Builder::new()
            .name("flock-wait".into())
            .spawn(move || {
                let result = loop {
                    // SAFETY: `flock` only reads the descriptor, which `waiter` keeps open.
                    let rc = unsafe { libc::flock(waiter.as_raw_fd(), libc::LOCK_EX) };
                    if rc == 0 {
                        break Ok(());
                    }
                    let err = std::io::Error::last_os_error();
                    if err.raw_os_error() != Some(libc::EINTR) {
                        break Err(err);
                    }
                };
                let _ = tx.send(result.map(|()| waiter));
            });
        if let Err(source) = spawned {
            return Err(LockError::NoThread {
                path: path.to_path_buf(),
                source,
            });
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(held)) => {
                drop(file);
                Ok(FileLock { _file: held })
            }
            Ok(Err(source)) => Err(LockError::Lock {
                path: path.to_path_buf(),
                source,
            }),
            Err(_) => Err(LockError::Timeout {
                path: path.to_path_buf(),
                waited: timeout,
            }),
        }
    }
}

/// `Ok(true)` when the lock was taken, `Ok(false)` when someone else holds it.
fn try_lock(file: &File) -> std::io::Result<bool> {
    loop {
        // SAFETY: `flock` only reads the descriptor, which `file` keeps open for this call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(code) if code == libc::EWOULDBLOCK => return Ok(false),
            Some(code) if code == libc::EINTR => continue,
            _ => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiter_gets_the_lock_when_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = FileLock::acquire(&path, Duration::from_secs(1)).unwrap();
        let p2 = path.clone();
        let t = std::thread::spawn(move || FileLock::acquire(&p2, Duration::from_secs(5)).is_ok());
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert!(t.join().unwrap());
    }

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

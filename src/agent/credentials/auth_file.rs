//! `AuthFile`: `$HERMES_HOME/auth.json` read once per process and re-read only when the file
//! changes (its modification time or size differs from the copy we hold). Agents start and
//! rotate keys many times a day; without this every start read and parsed the file again.
//! `Services` holds one; writes go through the pool's `persist` (under the file lock), which
//! changes the stamp, so the next reader picks them up.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::{Value, json};

use super::CredentialError;

/// What identifies one version of the file on disk (`None`: no file).
type Stamp = Option<(Option<SystemTime>, u64)>;

#[derive(Debug)]
pub struct AuthFile {
    path: PathBuf,
    cached: Mutex<Option<(Stamp, Arc<Value>)>>,
    reads: AtomicU64,
}

impl AuthFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AuthFile {
            path: path.into(),
            cached: Mutex::new(None),
            reads: AtomicU64::new(0),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parsed file (`{}` when missing or empty). One `stat` per call; the file itself is
    /// read only when it changed since the last read.
    pub fn document(&self) -> Result<Arc<Value>, CredentialError> {
        let stamp = stamp(&self.path);
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, doc)) = cached.as_ref()
            && *seen == stamp
        {
            return Ok(doc.clone());
        }
        let doc = match stamp {
            None => Arc::new(json!({})),
            Some(_) => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                Arc::new(read_auth(&self.path)?)
            }
        };
        *cached = Some((stamp, doc.clone()));
        Ok(doc)
    }

    /// How many times the file was actually read (for tests and diagnostics).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len()))
}

pub(super) fn read_auth(path: &Path) -> Result<Value, CredentialError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(json!({})),
        Ok(text) => serde_json::from_str(&text).map_err(|e| CredentialError::Read {
            path: path.to_path_buf(),
            message: format!("not valid JSON ({e}); fix or remove the file"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(CredentialError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_once_and_again_only_after_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let file = AuthFile::new(&path);
        assert_eq!(*file.document().unwrap(), json!({}));
        assert_eq!(file.reads(), 0, "a missing file is not read");
        std::fs::write(&path, r#"{"credential_pool":{"x":[]}}"#).unwrap();
        for _ in 0..5 {
            assert!(file.document().unwrap()["credential_pool"]["x"].is_array());
        }
        assert_eq!(file.reads(), 1, "unchanged file is read once");
        // A change of size is seen even within the same mtime tick.
        std::fs::write(&path, r#"{"credential_pool":{"x":[],"y":[]}}"#).unwrap();
        assert!(file.document().unwrap()["credential_pool"]["y"].is_array());
        assert_eq!(file.reads(), 2);
        std::fs::write(&path, "not json").unwrap();
        let err = file.document().unwrap_err().to_string();
        assert!(
            err.contains("not valid JSON") && err.contains("auth.json"),
            "{err}"
        );
    }
}

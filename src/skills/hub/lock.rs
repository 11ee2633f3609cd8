//! `skills/.hub/lock.json`: which skills came from a hub, from where, at which commit, with what
//! verdict, and each file's hash. The format is Python Hermes's `HubLockFile`
//! (`{"version": 1, "installed": {NAME: {source, identifier, trust_level, scan_verdict,
//! content_hash, install_path, files, metadata, scan_provenance, installed_at, updated_at}}}`);
//! we add `commit` and `file_hashes`, and keep every field we do not know, so a lock written by
//! either program reads back in the other without loss.
//!
//! Writes happen under a file lock (read-modify-write across processes) and replace the file
//! atomically. A lock.json that is not valid JSON is an error, never silently reset: it is the
//! only record of what the hub installed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::HubError;
use crate::util::file_lock::FileLock;

const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The whole lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockFile {
    #[serde(default = "version_one")]
    pub version: u32,
    #[serde(default)]
    pub installed: BTreeMap<String, LockEntry>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn version_one() -> u32 {
    1
}

impl Default for LockFile {
    fn default() -> Self {
        LockFile {
            version: 1,
            installed: BTreeMap::new(),
            extra: Map::new(),
        }
    }
}

/// One installed skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockEntry {
    pub source: String,
    pub identifier: String,
    pub trust_level: String,
    pub scan_verdict: String,
    pub content_hash: String,
    /// Relative to `skills/` (`category/name` or `name`).
    pub install_path: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default = "empty_object")]
    pub metadata: Value,
    #[serde(default = "empty_object")]
    pub scan_provenance: Value,
    #[serde(default)]
    pub installed_at: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub file_hashes: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Now, as Python's `datetime.now(timezone.utc).isoformat()` writes it.
pub fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

impl LockFile {
    /// Reads `path`; a missing file is an empty lock.
    pub fn load(path: &Path) -> Result<LockFile, HubError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::default()),
            Err(e) => return Err(HubError::io("read", path, e)),
        };
        if text.trim().is_empty() {
            return Ok(LockFile::default());
        }
        serde_json::from_str(&text).map_err(|e| {
            HubError::Lock(format!(
                "{} is not a valid hub lock file ({e}); it records what the hub installed, so it was left as it is: fix it or move it away",
                path.display()
            ))
        })
    }

    /// Writes `path` atomically (2-space indented JSON and a newline, as Python writes it).
    pub fn save(&self, path: &Path) -> Result<(), HubError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| HubError::io("create", dir, e))?;
        }
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| HubError::Lock(format!("cannot serialise the hub lock: {e}")))?;
        text.push('\n');
        crate::util::atomic_write(path, text.as_bytes()).map_err(|e| HubError::io("write", path, e))
    }

    /// Read-modify-write under the lock file `lock.json.lock`.
    pub fn update<T>(path: &Path, change: impl FnOnce(&mut LockFile) -> T) -> Result<T, HubError> {
        let guard_path = path.with_extension("json.lock");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| HubError::io("create", dir, e))?;
        }
        let _guard = FileLock::acquire(&guard_path, LOCK_TIMEOUT)
            .map_err(|e| HubError::Lock(format!("the hub lock is busy: {e}")))?;
        let mut lock = LockFile::load(path)?;
        let out = change(&mut lock);
        lock.save(path)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYTHON_LOCK: &str = r#"{
  "version": 1,
  "installed": {
    "pdf": {
      "source": "github",
      "identifier": "anthropics/skills/skills/pdf",
      "trust_level": "trusted",
      "scan_verdict": "safe",
      "content_hash": "sha256:0123456789abcdef",
      "install_path": "documents/pdf",
      "files": ["SKILL.md", "scripts/fill.py"],
      "metadata": {"repo": "anthropics/skills"},
      "scan_provenance": {"scanner": "skills-guard"},
      "installed_at": "2026-01-02T03:04:05.123456+00:00",
      "updated_at": "2026-01-02T03:04:05.123456+00:00",
      "future_field": [1, 2]
    }
  },
  "something_else": true
}
"#;

    #[test]
    fn a_python_lock_round_trips_without_loss() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock.json");
        std::fs::write(&path, PYTHON_LOCK).unwrap();
        let lock = LockFile::load(&path).unwrap();
        assert_eq!(lock.installed["pdf"].install_path, "documents/pdf");
        lock.save(&path).unwrap();
        let again: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let original: Value = serde_json::from_str(PYTHON_LOCK).unwrap();
        assert_eq!(again, original);
    }

    #[test]
    fn a_broken_lock_is_an_error_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock.json");
        std::fs::write(&path, "{not json").unwrap();
        let e = LockFile::update(&path, |_| ()).unwrap_err().to_string();
        assert!(e.contains("not a valid hub lock"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
        assert!(
            LockFile::load(&dir.path().join("missing.json"))
                .unwrap()
                .installed
                .is_empty()
        );
    }
}

//! The file tools' last step, the I/O itself: where a checked file's text is read from and where
//! new text is written. The disk by default (each tool's own code: streaming reads, atomic
//! writes); an editor session (ACP) may route it to the editor, so unsaved buffers are read and
//! edits land in the editor. Only the I/O moves: the path policy (`file_path::check`), the edit
//! question and the turn's checkpoint have all run before a backend is called, so a backend
//! never sees a path the policy refused.

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

/// Where file text comes from and goes to, other than the disk.
#[async_trait::async_trait]
pub trait FileBackend: Send + Sync {
    /// What the model is told the text came from or went to ("the editor").
    fn name(&self) -> &str;
    /// Whether reads go through this backend (otherwise the disk is read).
    fn reads(&self) -> bool;
    /// Whether writes go through this backend (otherwise the disk is written).
    fn writes(&self) -> bool;
    /// The whole text of the checked file `path`; the error says why not.
    async fn read_text(&self, path: &Path) -> Result<String, String>;
    /// Replaces the whole text of the checked file `path`.
    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String>;
}

/// A session's backend; empty means the disk.
#[derive(Default)]
pub struct FileBackendSlot(RwLock<Option<Arc<dyn FileBackend>>>);

impl std::fmt::Debug for FileBackendSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.current().map(|b| b.name().to_string());
        f.debug_tuple("FileBackendSlot").field(&name).finish()
    }
}

impl FileBackendSlot {
    /// Routes the session's file I/O through `backend` (`None`: back to the disk).
    pub fn set(&self, backend: Option<Arc<dyn FileBackend>>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = backend;
    }

    fn current(&self) -> Option<Arc<dyn FileBackend>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The backend reads go through, if not the disk.
    pub fn reader(&self) -> Option<Arc<dyn FileBackend>> {
        self.current().filter(|b| b.reads())
    }

    /// The backend writes go through, if not the disk.
    pub fn writer(&self) -> Option<Arc<dyn FileBackend>> {
        self.current().filter(|b| b.writes())
    }

    /// The backend a read-modify-write (`patch`) goes through: only one that does both, so an
    /// edit never reads one copy of a file and writes the other.
    pub fn editor(&self) -> Option<Arc<dyn FileBackend>> {
        self.current().filter(|b| b.reads() && b.writes())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::tools::test_support::env;

    /// Buffers in memory; records every path it was asked about.
    #[derive(Default)]
    struct Buffers {
        files: Mutex<HashMap<PathBuf, String>>,
        touched: Mutex<Vec<PathBuf>>,
    }

    #[async_trait::async_trait]
    impl FileBackend for Buffers {
        fn name(&self) -> &str {
            "the test editor"
        }
        fn reads(&self) -> bool {
            true
        }
        fn writes(&self) -> bool {
            true
        }
        async fn read_text(&self, path: &Path) -> Result<String, String> {
            self.touched.lock().unwrap().push(path.to_path_buf());
            self.files
                .lock()
                .unwrap()
                .get(path)
                .cloned()
                .ok_or_else(|| "no such buffer".to_string())
        }
        async fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
            self.touched.lock().unwrap().push(path.to_path_buf());
            self.files
                .lock()
                .unwrap()
                .insert(path.to_path_buf(), content.to_string());
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_tools_read_and_write_through_the_backend_after_the_path_policy() {
        let t = env();
        let disk = t.write("a.txt", "on disk\n");
        let real = std::fs::canonicalize(&disk).unwrap();
        let buffers = Arc::new(Buffers::default());
        buffers
            .files
            .lock()
            .unwrap()
            .insert(real.clone(), "unsaved edit\n".into());
        t.ctx.scratch.files.set(Some(buffers.clone()));

        let read = t.ok("read_file", json!({"path": "a.txt"})).await;
        assert!(read.contains("1|unsaved edit"), "{read}");
        t.ok(
            "patch",
            json!({"path": "a.txt", "old_string": "unsaved", "new_string": "saved"}),
        )
        .await;
        t.ok("write_file", json!({"path": "b.txt", "content": "new\n"}))
            .await;
        assert_eq!(std::fs::read_to_string(&disk).unwrap(), "on disk\n");
        assert!(!t.path("b.txt").exists(), "the write went to the disk");
        let files = buffers.files.lock().unwrap().clone();
        assert_eq!(files[&real], "saved edit\n");

        // Refused paths never reach the backend.
        let before = buffers.touched.lock().unwrap().len();
        t.write(".env", "KEY=1\n");
        t.err("read_file", json!({"path": ".env"})).await;
        let config = t.dir.path().join("home/config.yaml");
        t.err("write_file", json!({"path": config, "content": "x"}))
            .await;
        assert_eq!(buffers.touched.lock().unwrap().len(), before);

        // Back to the disk.
        t.ctx.scratch.files.set(None);
        let read = t.ok("read_file", json!({"path": "a.txt"})).await;
        assert!(read.contains("1|on disk"), "{read}");
    }
}

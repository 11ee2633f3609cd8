//! `HermesHome`: where `$HERMES_HOME` is and the names of everything inside it.

use std::io;
use std::path::{Path, PathBuf};

/// The agent's home directory (`$HERMES_HOME`, default `~/.hermes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HermesHome {
    root: PathBuf,
}

impl HermesHome {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        HermesHome { root: root.into() }
    }

    /// `$HERMES_HOME` if set and non-empty, else `$HOME/.hermes`.
    pub fn from_env() -> Result<Self, io::Error> {
        if let Some(dir) = std::env::var_os("HERMES_HOME").filter(|v| !v.is_empty()) {
            return Ok(Self::new(dir));
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(Self::new(PathBuf::from(home).join(".hermes"))),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "neither HERMES_HOME nor HOME is set; set HERMES_HOME to the directory hermes should use",
            )),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }
    pub fn env_path(&self) -> PathBuf {
        self.root.join(".env")
    }
    pub fn soul_path(&self) -> PathBuf {
        self.root.join("SOUL.md")
    }
    pub fn state_db(&self) -> PathBuf {
        self.root.join("state.db")
    }
    pub fn memories_dir(&self) -> PathBuf {
        self.root.join("memories")
    }
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }
    pub fn hooks_dir(&self) -> PathBuf {
        self.root.join("hooks")
    }
    pub fn cron_dir(&self) -> PathBuf {
        self.root.join("cron")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    pub fn prompts_dir(&self) -> PathBuf {
        self.root.join("prompts")
    }
    /// Oversized tool results are spilled here (`cache/tool-results/<call id>.txt`).
    pub fn tool_results_dir(&self) -> PathBuf {
        self.root.join("cache").join("tool-results")
    }
    pub fn history_path(&self) -> PathBuf {
        self.root.join(".repl_history")
    }

    /// Creates the layout of a fresh home (as Python Hermes does) without touching existing files.
    pub fn ensure_layout(&self) -> io::Result<()> {
        for dir in [
            self.root.clone(),
            self.memories_dir(),
            self.skills_dir(),
            self.skills_dir().join(".hub"),
            self.hooks_dir(),
            self.cron_dir(),
            self.logs_dir(),
            self.root.join("sessions"),
            self.tool_results_dir(),
        ] {
            std::fs::create_dir_all(&dir).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot create {}: {e} (is HERMES_HOME writable?)",
                        dir.display()
                    ),
                )
            })?;
        }
        Ok(())
    }
}

//! Checkpoints: before the first file change of a turn (write_file, patch, or a terminal
//! command that is not clearly read-only) the working tree is snapshotted into a shadow git
//! repository under `$HERMES_HOME/checkpoints/` (see `store.rs`); `/rollback [N]` and
//! `hermes checkpoints list|restore|prune` put a chosen checkpoint's files back.
//!
//! `Checkpointer` is the per-session handle the tools use: it remembers which trees were
//! already snapshotted this turn and runs libgit2 on the blocking pool.

pub mod pack;
mod snapshot;
mod stat_cache;
pub mod store;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use store::{Checkpoint, Restored, ShadowRepo, Snapshot};

use crate::config::Config;
use crate::config::checkpoints::CheckpointsConfig;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint store: {0}")]
    Git(#[from] git2::Error),
    #[error("checkpoint store: {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("there is no checkpoint {number}; {available} exist (see `hermes checkpoints list`)")]
    NoSuchCheckpoint { number: usize, available: usize },
    #[error("no checkpoints for {0}; hermes takes one before the first file change of a turn")]
    NoCheckpoints(PathBuf),
    #[error("refused to restore: {0}")]
    Unsafe(String),
}

impl CheckpointError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        CheckpointError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Size limits of one snapshot.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_files: usize,
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
}

impl From<&CheckpointsConfig> for Limits {
    fn from(c: &CheckpointsConfig) -> Self {
        Limits {
            max_files: c.max_files,
            max_file_bytes: c.max_file_size_mb.saturating_mul(1024 * 1024),
            max_total_bytes: c.max_total_size_mb.saturating_mul(1024 * 1024),
        }
    }
}

/// The per-session checkpoint taker.
#[derive(Debug)]
pub struct Checkpointer {
    dir: PathBuf,
    settings: CheckpointsConfig,
    turn: Mutex<TurnState>,
}

#[derive(Debug, Default)]
struct TurnState {
    label: String,
    /// Work trees already snapshotted this turn.
    done: BTreeSet<PathBuf>,
}

impl Checkpointer {
    pub fn for_config(config: &Config) -> Self {
        Checkpointer {
            dir: config.home.root().join("checkpoints"),
            settings: config.checkpoints.clone(),
            turn: Mutex::new(TurnState::default()),
        }
    }

    /// Starts a turn: the next change snapshots again. `label` is the user's message.
    pub fn begin_turn(&self, label: &str) {
        if let Ok(mut t) = self.turn.lock() {
            t.label = label.to_string();
            t.done.clear();
        }
    }

    /// Called before a file tool changes `path`: snapshots the tree it belongs to (once per
    /// turn). Returns a note for the tool result when the snapshot could not be taken.
    pub async fn before_change(&self, cwd: &Path, path: &Path) -> Option<String> {
        let root = root_for(cwd, path)?;
        self.snapshot_once(root).await
    }

    /// Called before a terminal command: snapshots `cwd` unless the command is clearly
    /// read-only (a conservative rule: anything it does not know changes files).
    pub async fn before_command(&self, cwd: &Path, command: &str) -> Option<String> {
        if is_clearly_read_only(command) {
            return None;
        }
        let root = std::fs::canonicalize(cwd).ok()?;
        self.snapshot_once(root).await
    }

    async fn snapshot_once(&self, root: PathBuf) -> Option<String> {
        if !self.settings.enabled {
            return None;
        }
        let label = {
            let mut t = self.turn.lock().ok()?;
            if !t.done.insert(root.clone()) {
                return None;
            }
            t.label.clone()
        };
        let (dir, limits, keep) = (
            self.dir.clone(),
            Limits::from(&self.settings),
            self.settings.max_snapshots,
        );
        let work = root.clone();
        let outcome =
            tokio::task::spawn_blocking(move || take(&dir, &work, &label, &limits, keep)).await;
        match outcome {
            Ok(Ok(Snapshot::Skipped(reason))) => {
                tracing::warn!(root = %root.display(), %reason, "checkpoint skipped");
                Some(format!(
                    "[no checkpoint taken: {reason}; /rollback cannot undo this change]"
                ))
            }
            Ok(Ok(done)) => {
                tracing::debug!(root = %root.display(), ?done, "checkpoint");
                None
            }
            Ok(Err(e)) => {
                tracing::warn!(root = %root.display(), error = %e, "checkpoint failed");
                Some(format!(
                    "[no checkpoint taken: {e}; /rollback cannot undo this change]"
                ))
            }
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint task failed");
                None
            }
        }
    }
}

/// Snapshot + automatic compaction when far past `keep`.
fn take(
    dir: &Path,
    root: &Path,
    label: &str,
    limits: &Limits,
    keep: usize,
) -> Result<Snapshot, CheckpointError> {
    let Some(repo) = ShadowRepo::open(dir, root, true)? else {
        return Ok(Snapshot::Skipped(
            "the checkpoint store cannot be created".into(),
        ));
    };
    let outcome = repo.snapshot(label, limits)?;
    // Compacting rewrites the store: do it in batches, not on every turn.
    if keep > 0 && repo.list()?.len() > keep + 10 {
        repo.compact(dir, keep)?;
    }
    Ok(outcome)
}

/// The tree a change to `path` belongs to: the working directory when the path is inside it,
/// else the nearest enclosing git repository, else the file's directory.
pub fn root_for(cwd: &Path, path: &Path) -> Option<PathBuf> {
    let cwd = std::fs::canonicalize(cwd).ok()?;
    if path.starts_with(&cwd) {
        return Some(cwd);
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    let parent = path.parent()?;
    // Outside any project and where nothing exists yet: nothing to protect.
    std::fs::canonicalize(parent).ok()
}

/// Commands known not to change files (each part of a pipeline or list must be one, with no
/// output redirection). Everything else counts as changing files.
pub fn is_clearly_read_only(command: &str) -> bool {
    const READ_ONLY: &[&str] = &[
        "ls",
        "cat",
        "head",
        "tail",
        "grep",
        "rg",
        "egrep",
        "fgrep",
        "wc",
        "pwd",
        "echo",
        "printf",
        "which",
        "type",
        "env",
        "printenv",
        "ps",
        "df",
        "du",
        "file",
        "stat",
        "tree",
        "date",
        "whoami",
        "id",
        "uname",
        "hostname",
        "less",
        "more",
        "sort",
        "uniq",
        "cut",
        "tr",
        "diff",
        "cmp",
        "true",
        "false",
        "test",
        "[",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "md5sum",
        "sha256sum",
        "sha1sum",
        "nproc",
        "free",
        "uptime",
        "jq",
        "column",
        "nl",
    ];
    const GIT_READ_ONLY: &[&str] = &[
        "status",
        "log",
        "diff",
        "show",
        "branch",
        "rev-parse",
        "ls-files",
        "blame",
        "remote",
        "describe",
        "shortlog",
        "grep",
    ];
    if command.contains('>')
        || command.contains('`')
        || command.contains("$(")
        || command.contains('\n')
    {
        return false;
    }
    let parts = command
        .split(['|', ';', '&'])
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let mut any = false;
    for part in parts {
        any = true;
        let mut words = part.split_whitespace();
        let Some(first) = words.next() else {
            return false;
        };
        let ok = if first == "git" {
            words.next().is_some_and(|sub| GIT_READ_ONLY.contains(&sub))
        } else if first == "sed" {
            !part.contains(" -i")
        } else {
            READ_ONLY.contains(&first)
        };
        if !ok {
            return false;
        }
    }
    any
}

/// The checkpoints of `workdir`, newest first.
pub fn list(config: &Config, workdir: &Path) -> Result<Vec<Checkpoint>, CheckpointError> {
    let root = resolved(workdir)?;
    match ShadowRepo::open(&config.home.root().join("checkpoints"), &root, false)? {
        Some(repo) => repo.list(),
        None => Ok(Vec::new()),
    }
}

/// Restores checkpoint `number` (1 = newest) of `workdir`.
pub fn restore(
    config: &Config,
    workdir: &Path,
    number: usize,
) -> Result<Restored, CheckpointError> {
    let root = resolved(workdir)?;
    let Some(repo) = ShadowRepo::open(&config.home.root().join("checkpoints"), &root, false)?
    else {
        return Err(CheckpointError::NoCheckpoints(root));
    };
    repo.restore(number, &Limits::from(&config.checkpoints))
}

/// What `prune` did.
#[derive(Debug, Default, PartialEq)]
pub struct Pruned {
    /// Stores whose working directory no longer exists.
    pub orphans_removed: usize,
    /// Checkpoints dropped past `checkpoints.max_snapshots`.
    pub dropped: usize,
}

/// Removes stores of vanished directories and keeps `max_snapshots` per store.
pub fn prune(config: &Config) -> Result<Pruned, CheckpointError> {
    let dir = config.home.root().join("checkpoints");
    let mut out = Pruned::default();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    for entry in entries.flatten() {
        let shadow = entry.path();
        if !shadow.is_dir() || shadow.extension().is_some() {
            continue;
        }
        match store::workdir_of(&shadow) {
            Some(w) if w.is_dir() => {
                if let Some(repo) = ShadowRepo::open(&dir, &w, false)? {
                    out.dropped += repo.compact(&dir, config.checkpoints.max_snapshots.max(1))?;
                }
            }
            _ => {
                std::fs::remove_dir_all(&shadow).map_err(|e| CheckpointError::io(&shadow, e))?;
                out.orphans_removed += 1;
            }
        }
    }
    Ok(out)
}

fn resolved(workdir: &Path) -> Result<PathBuf, CheckpointError> {
    std::fs::canonicalize(workdir).map_err(|e| CheckpointError::io(workdir, e))
}

/// One line per change, for `/rollback` and `hermes checkpoints restore`.
pub fn describe(restored: &Restored, number: usize) -> String {
    let mut out = format!("Restored checkpoint {number}: ");
    if restored.written.is_empty() && restored.removed.is_empty() {
        out.push_str("the files already match it; nothing changed.");
        return out;
    }
    out.push_str(&format!(
        "{} file(s) restored, {} removed.",
        restored.written.len(),
        restored.removed.len()
    ));
    for f in &restored.written {
        out.push_str(&format!("\n  restored {f}"));
    }
    for f in &restored.removed {
        out.push_str(&format!("\n  removed  {f} (created after the checkpoint)"));
    }
    if restored.undo.is_some() {
        out.push_str("\nThe state before this restore is checkpoint 1 now (restore it to undo).");
    }
    out
}

#[cfg(test)]
#[path = "checkpoints_tests.rs"]
mod tests;

//! The built-in memory: `memories/MEMORY.md` (target `memory`, the agent's notes) and
//! `memories/USER.md` (target `user`, who the user is), in Python Hermes' format: entries joined
//! by `\n§\n`, limits counted in characters of the joined text.
//!
//! Every write takes the target's lock file, re-reads the file under the lock, applies the
//! operations to what is on disk *now*, and replaces the file atomically, so two processes never
//! lose each other's entries. Content is threat-scanned (strict scope) before anything is locked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use crate::memory::edit::{self, MemoryOp};
use crate::memory::lock::{FileLock, LockError};
use crate::memory::scan::{self, LoadedSecrets};
use crate::memory::settings::MemorySettings;

/// Separates entries on disk and in the prompt.
pub const ENTRY_DELIMITER: &str = "\n§\n";
/// How long a write waits for another process's lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// The rule above and below a block's title (46 × U+2550, as Python Hermes renders it).
const RULE: &str = "══════════════════════════════════════════════";

/// Which memory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    Memory,
    User,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Memory, Target::User];

    pub fn as_str(self) -> &'static str {
        match self {
            Target::Memory => "memory",
            Target::User => "user",
        }
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Target::Memory => "MEMORY.md",
            Target::User => "USER.md",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Target::Memory => "MEMORY (your personal notes)",
            Target::User => "USER PROFILE (who the user is)",
        }
    }

    /// `memory` / `user` (also `MEMORY.md`, `USER.md`, any case).
    pub fn parse(text: &str) -> Option<Target> {
        match text.trim().to_ascii_lowercase().as_str() {
            "memory" | "memory.md" | "notes" => Some(Target::Memory),
            "user" | "user.md" | "profile" | "user_profile" => Some(Target::User),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Lock(#[from] LockError),
    #[error(
        "the {0} store is disabled in config.yaml (memory.{key}); nothing was written",
        key = if *.0 == "memory" { "memory_enabled" } else { "user_profile_enabled" }
    )]
    Disabled(&'static str),
    /// An operation was refused; the text is written for the model (usage, entries, next step).
    #[error("{0}")]
    Rejected(String),
}

/// The outcome of a successful write.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub target: Target,
    pub entries: Vec<String>,
    pub usage: Usage,
    /// What happened, e.g. "Added 1 entry." or "Entry already exists (no duplicate added)."
    pub message: String,
    /// False when nothing needed writing (a duplicate add).
    pub changed: bool,
    /// Set when the file on disk was not in the usual format and a copy was kept.
    pub backup: Option<PathBuf>,
}

/// Characters used against the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub chars: usize,
    pub limit: usize,
}

impl Usage {
    pub fn percent(&self) -> usize {
        if self.limit == 0 {
            return 100;
        }
        self.chars * 100 / self.limit
    }
}

impl std::fmt::Display for Usage {
    /// `42% — 924/2,200 chars`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}% — {}/{} chars",
            self.percent(),
            thousands(self.chars),
            thousands(self.limit)
        )
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Splits file text into entries: trimmed, empty ones dropped, duplicates dropped (first wins).
pub fn parse_entries(text: &str) -> Vec<String> {
    let text = text.replace("\r\n", "\n");
    let mut out: Vec<String> = Vec::new();
    for part in text.split(ENTRY_DELIMITER) {
        let entry = part.trim();
        if !entry.is_empty() && !out.iter().any(|e| e == entry) {
            out.push(entry.to_string());
        }
    }
    out
}

pub fn join_entries(entries: &[String]) -> String {
    entries.join(ENTRY_DELIMITER)
}

/// Characters counted against the limit for `entries`.
pub fn char_count(entries: &[String]) -> usize {
    join_entries(entries).chars().count()
}

/// The two memory files of one home.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    dir: PathBuf,
    settings: MemorySettings,
    /// Values memory refuses to store (the loaded API keys and tokens).
    secrets: LoadedSecrets,
}

impl MemoryStore {
    pub fn new(dir: impl Into<PathBuf>, settings: MemorySettings) -> Self {
        MemoryStore {
            dir: dir.into(),
            settings,
            secrets: LoadedSecrets::default(),
        }
    }

    pub fn from_config(config: &Config) -> Self {
        Self::new(
            config.home.memories_dir(),
            MemorySettings::from_config(config),
        )
        .with_secrets(LoadedSecrets::from_config(config))
    }

    /// The same store, refusing entries that contain any of `secrets`.
    pub fn with_secrets(mut self, secrets: LoadedSecrets) -> Self {
        self.secrets = secrets;
        self
    }

    pub fn settings(&self) -> &MemorySettings {
        &self.settings
    }

    pub fn path(&self, target: Target) -> PathBuf {
        self.dir.join(target.file_name())
    }

    fn lock_path(&self, target: Target) -> PathBuf {
        self.dir.join(format!("{}.lock", target.file_name()))
    }

    pub fn enabled(&self, target: Target) -> bool {
        match target {
            Target::Memory => self.settings.memory_enabled,
            Target::User => self.settings.user_profile_enabled,
        }
    }

    pub fn limit(&self, target: Target) -> usize {
        match target {
            Target::Memory => self.settings.memory_char_limit,
            Target::User => self.settings.user_char_limit,
        }
    }

    pub fn usage(&self, target: Target, entries: &[String]) -> Usage {
        Usage {
            chars: char_count(entries),
            limit: self.limit(target),
        }
    }

    /// The entries on disk now (a missing file has none). Readers need no lock: writers replace
    /// the file by rename, so a read sees the old or the new file whole.
    pub fn read(&self, target: Target) -> Result<Vec<String>, MemoryError> {
        read_text(&self.path(target)).map(|t| parse_entries(&t))
    }

    /// Applies `ops` in order to the file as it is on disk, all or nothing. The limit is checked
    /// on the final result only, so a batch may remove before it adds.
    pub fn apply(&self, target: Target, ops: &[MemoryOp]) -> Result<Applied, MemoryError> {
        if !self.enabled(target) {
            return Err(MemoryError::Disabled(target.as_str()));
        }
        if ops.is_empty() {
            return Err(MemoryError::Rejected(
                "no operation given: use action add, replace or remove (or a non-empty operations list)".into(),
            ));
        }
        // Refuse threats before touching anything, so the file is never even locked for them.
        for (i, op) in ops.iter().enumerate() {
            if let Some(content) = op.content() {
                self.check_content(content)
                    .map_err(|msg| batch_error(ops.len(), i, msg))?;
            }
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| MemoryError::Io {
            op: "create",
            path: self.dir.clone(),
            source,
        })?;
        let _lock = FileLock::acquire(&self.lock_path(target), LOCK_TIMEOUT)?;
        let path = self.path(target);
        let raw = read_text(&path)?;
        let before = parse_entries(&raw);
        let mut entries = before.clone();
        let mut messages = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let msg = edit::apply_op(&mut entries, op).map_err(|msg| {
                let listing = edit::listing(&before);
                batch_error(
                    ops.len(),
                    i,
                    format!(
                        "{msg}\nCurrent {} entries ({}):\n{listing}",
                        target.as_str(),
                        self.usage(target, &before)
                    ),
                )
            })?;
            messages.push(msg);
        }
        let usage = self.usage(target, &entries);
        let message = if ops.len() == 1 {
            messages.pop().unwrap_or_default()
        } else {
            format!("Applied {} operations: {}", ops.len(), messages.join(" "))
        };
        if entries == before {
            return Ok(Applied {
                target,
                entries,
                usage,
                message,
                changed: false,
                backup: None,
            });
        }
        let old_chars = char_count(&before);
        if usage.chars > usage.limit && usage.chars > old_chars {
            return Err(MemoryError::Rejected(format!(
                "Over the {} limit: the result would be {} characters, the limit is {} (now {}). Nothing was written. \
                 Consolidate first: merge related entries with replace, or remove stale ones (by text or [index]), \
                 then add again — a batch `operations` list can do it in one call.\nCurrent entries:\n{}",
                target.as_str(),
                usage.chars,
                usage.limit,
                self.usage(target, &before),
                edit::listing(&before)
            )));
        }
        let backup = if !raw.trim().is_empty()
            && raw.replace("\r\n", "\n").trim() != join_entries(&before)
        {
            // Hand-edited into another shape: keep the original before rewriting it.
            let bak = self.dir.join(format!("{}.bak", target.file_name()));
            std::fs::write(&bak, raw.as_bytes()).map_err(|source| MemoryError::Io {
                op: "back up",
                path: bak.clone(),
                source,
            })?;
            Some(bak)
        } else {
            None
        };
        crate::util::atomic_write(&path, join_entries(&entries).as_bytes()).map_err(|source| {
            MemoryError::Io {
                op: "write",
                path: path.clone(),
                source,
            }
        })?;
        Ok(Applied {
            target,
            entries,
            usage,
            message,
            changed: true,
            backup,
        })
    }

    /// The system-prompt block for `target`, or `None` when it is disabled or empty. Entries that
    /// match a threat pattern are replaced by a notice (the file keeps them for the user to see).
    pub fn render_block(&self, target: Target) -> Option<String> {
        if !self.enabled(target) {
            return None;
        }
        let entries = match self.read(target) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "memory file unreadable; left out of the prompt");
                return None;
            }
        };
        if entries.is_empty() {
            return None;
        }
        let usage = self.usage(target, &entries);
        // A hand-edited file far over its limit must not flood every prompt: entries are shown
        // in order while they fit in twice the limit, the rest are counted.
        let budget = usage.limit.saturating_mul(2);
        let mut used = 0usize;
        let fitting: Vec<&String> = entries
            .iter()
            .take_while(|e| {
                used += e.chars().count() + ENTRY_DELIMITER.chars().count();
                used <= budget + ENTRY_DELIMITER.chars().count()
            })
            .collect();
        let left_out = entries.len() - fitting.len();
        let mut shown: Vec<String> = fitting
            .into_iter()
            .map(|e| scan::blocked_notice(e, target.file_name()).unwrap_or_else(|| e.clone()))
            .collect();
        if left_out > 0 {
            shown.push(format!(
                "[{left_out} more entries of {} are over the limit and not shown; consolidate them with the memory tool.]",
                target.file_name()
            ));
        }
        Some(format!(
            "{RULE}\n{} [{usage}]\n{RULE}\n{}",
            target.title(),
            join_entries(&shown)
        ))
    }

    /// Replaces the whole file with `text` (what a person wrote in an editor), provided the file
    /// still holds `expected` — otherwise someone else wrote meanwhile and nothing is changed.
    /// Every entry is threat-scanned; the limit is enforced like for the tool.
    pub fn replace_all(
        &self,
        target: Target,
        expected: &str,
        text: &str,
    ) -> Result<Applied, MemoryError> {
        if !self.enabled(target) {
            return Err(MemoryError::Disabled(target.as_str()));
        }
        let entries = parse_entries(text);
        for (i, entry) in entries.iter().enumerate() {
            self.check_content(entry)
                .map_err(|msg| MemoryError::Rejected(format!("entry {}: {msg}", i + 1)))?;
        }
        let usage = self.usage(target, &entries);
        if usage.chars > usage.limit {
            return Err(MemoryError::Rejected(format!(
                "{} would hold {} characters, over its limit of {}; shorten or merge entries",
                target.file_name(),
                usage.chars,
                usage.limit
            )));
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| MemoryError::Io {
            op: "create",
            path: self.dir.clone(),
            source,
        })?;
        let _lock = FileLock::acquire(&self.lock_path(target), LOCK_TIMEOUT)?;
        let path = self.path(target);
        if read_text(&path)? != expected {
            return Err(MemoryError::Rejected(format!(
                "{} changed while it was being edited (the agent or another process wrote to it); nothing was saved",
                path.display()
            )));
        }
        crate::util::atomic_write(&path, join_entries(&entries).as_bytes()).map_err(|source| {
            MemoryError::Io {
                op: "write",
                path: path.clone(),
                source,
            }
        })?;
        Ok(Applied {
            target,
            message: match entries.len() {
                1 => "Saved (1 entry).".to_string(),
                n => format!("Saved ({n} entries)."),
            },
            entries,
            usage,
            changed: true,
            backup: None,
        })
    }

    /// The raw text of `target`'s file ("" when missing).
    pub fn read_raw(&self, target: Target) -> Result<String, MemoryError> {
        read_text(&self.path(target))
    }

    /// Why `content` may not be stored, in the words the model sees.
    pub fn check_content(&self, content: &str) -> Result<(), String> {
        match scan::refusal(content, &self.secrets) {
            Some(msg) => Err(msg),
            None => Ok(()),
        }
    }

    /// Both blocks as they go into a new session's system prompt.
    pub fn prompt_block(&self) -> Option<String> {
        let blocks: Vec<String> = Target::ALL
            .iter()
            .filter_map(|t| self.render_block(*t))
            .collect();
        (!blocks.is_empty()).then(|| blocks.join("\n\n"))
    }
}

fn batch_error(total: usize, index: usize, msg: String) -> MemoryError {
    if total > 1 {
        MemoryError::Rejected(format!(
            "operation {} of {total} failed, so none were applied: {msg}",
            index + 1
        ))
    } else {
        MemoryError::Rejected(msg)
    }
}

fn read_text(path: &Path) -> Result<String, MemoryError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(MemoryError::Io {
            op: "read",
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;

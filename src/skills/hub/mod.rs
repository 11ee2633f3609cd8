//! The skills hub: bringing in skills written by others, safely and reversibly.
//!
//! Sources (`source` parses identifiers; `git` reads repositories through git2; `index` reads
//! `/.well-known/skills/index.json` over HTTP; `taps` is the user's list of trusted repositories)
//! produce a `Bundle` — files in memory, already checked (`bundle`: no symlinks, no `..`, nothing
//! outside the support folders, nothing oversized). `install` runs the pipeline quarantine →
//! guard scan → policy by trust → confirmation → atomic rename into `skills/` → `lock.json` →
//! audit line, with a journal so a crash between the steps is repaired at the next start
//! (`recover`). `keep` checks, updates, uninstalls, diffs and resets installed skills;
//! `search` answers queries over cached listings.
//!
//! Everything lives under `skills/.hub/` in Python Hermes's layout: `lock.json`, `taps.json`,
//! `audit.log`, `quarantine/`, `index-cache/`, plus `repos/` (bare git mirrors) and `originals/`
//! (the pristine copy of each installed skill, for `diff` and `reset`).

pub mod bundle;
pub mod git;
pub mod index;
pub mod install;
pub mod keep;
pub mod listing_cache;
pub mod lock;
pub mod search;
pub mod source;
pub mod taps;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use crate::skills::guard::Finding;

pub use bundle::Bundle;
pub use install::{Installed, Prepared, install, prepare, recover};
pub use lock::{LockEntry, LockFile};
pub use source::{SkillMeta, SourceRef, Trust};

/// How long a cached listing (a tap's skills, an index) is used before it is fetched again
/// (Python Hermes's `INDEX_CACHE_TTL`).
pub const LISTING_TTL: Duration = Duration::from_secs(3600);

/// Why a hub operation failed. Every message says what happened, to what, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("git: cannot {what} {target}: {message}")]
    Git {
        what: &'static str,
        target: String,
        message: String,
    },
    #[error("cannot fetch {url}: {message}")]
    Http { url: String, message: String },
    #[error("`{0}` is not a skill identifier I can read: {1}")]
    BadIdentifier(String, String),
    #[error("{0}")]
    NotFound(String),
    /// The skill's files break a rule (symlink, traversal, oversized, bad SKILL.md).
    #[error("refused `{name}`: {reason}")]
    BadBundle { name: String, reason: String },
    /// The install policy blocks this trust × verdict.
    #[error("refused `{name}` ({trust} source, verdict {verdict}): {reason}")]
    Blocked {
        name: String,
        trust: String,
        verdict: String,
        reason: String,
        findings: Vec<Finding>,
    },
    #[error(
        "a skill named `{name}` already exists at {}; choose another with --name, or replace it with --force",
        path.display()
    )]
    Clash { name: String, path: PathBuf },
    #[error("not installed: {0}")]
    Declined(String),
    #[error("{0}")]
    Lock(String),
    #[error("{0}")]
    Refused(String),
}

impl HubError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> HubError {
        HubError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where the hub keeps its state, and the switches it reads from the environment.
#[derive(Debug, Clone)]
pub struct Hub {
    skills_dir: PathBuf,
    /// The well-known public repositories are searched unless `HERMES_SKILLS_DEFAULT_TAPS=0`
    /// (tests and offline machines turn them off).
    pub default_taps: bool,
    /// Debug builds only: `HERMES_TEST_HUB_CRASH=after-quarantine|after-move` aborts the process
    /// at that point of an install, for the crash-recovery tests.
    crash_at: Option<String>,
    /// A cached listing older than this is fetched again (`HERMES_SKILLS_HUB_TTL` seconds,
    /// default [`LISTING_TTL`]; 0 fetches on every search).
    pub ttl: Duration,
}

impl Hub {
    pub fn from_config(config: &Config) -> Hub {
        let mut hub = Hub::new(config.home.skills_dir());
        hub.default_taps = !matches!(
            config.env.get("HERMES_SKILLS_DEFAULT_TAPS"),
            Some("0" | "false" | "no" | "off")
        );
        if let Some(secs) = config
            .env
            .get("HERMES_SKILLS_HUB_TTL")
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            hub.ttl = Duration::from_secs(secs);
        }
        if cfg!(debug_assertions) {
            hub.crash_at = config.env.get("HERMES_TEST_HUB_CRASH").map(str::to_string);
        }
        hub
    }

    pub fn new(skills_dir: impl Into<PathBuf>) -> Hub {
        Hub {
            skills_dir: skills_dir.into(),
            default_taps: true,
            crash_at: None,
            ttl: LISTING_TTL,
        }
    }

    pub fn skills_dir(&self) -> &Path {
        &self.skills_dir
    }
    pub fn hub_dir(&self) -> PathBuf {
        self.skills_dir.join(".hub")
    }
    pub fn lock_path(&self) -> PathBuf {
        self.hub_dir().join("lock.json")
    }
    pub fn taps_path(&self) -> PathBuf {
        self.hub_dir().join("taps.json")
    }
    pub fn audit_path(&self) -> PathBuf {
        self.hub_dir().join("audit.log")
    }
    pub fn quarantine_dir(&self) -> PathBuf {
        self.hub_dir().join("quarantine")
    }
    pub fn cache_dir(&self) -> PathBuf {
        self.hub_dir().join("index-cache")
    }
    pub fn repos_dir(&self) -> PathBuf {
        self.hub_dir().join("repos")
    }
    pub fn originals_dir(&self) -> PathBuf {
        self.hub_dir().join("originals")
    }

    /// Creates `.hub/` and its folders (and the `.ignore` that keeps search tools out of
    /// unvetted content, as Python Hermes does).
    pub fn ensure_dirs(&self) -> Result<(), HubError> {
        for dir in [self.quarantine_dir(), self.cache_dir(), self.repos_dir()] {
            std::fs::create_dir_all(&dir).map_err(|e| HubError::io("create", &dir, e))?;
        }
        let ignore = self.hub_dir().join(".ignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "# Exclude hub internals from search tools\n*\n");
        }
        Ok(())
    }

    /// Aborts here when a test asked for a crash at `point` (debug builds only).
    pub(crate) fn crash_point(&self, point: &str) {
        if cfg!(debug_assertions) && self.crash_at.as_deref() == Some(point) {
            eprintln!("test crash at {point}");
            std::process::abort();
        }
    }

    /// Appends one line to `audit.log` in Python Hermes's format:
    /// `TIMESTAMP ACTION NAME SOURCE:TRUST VERDICT [EXTRA]`. An audit failure is logged, never
    /// fatal (the change itself already happened and is recorded in lock.json).
    pub fn audit(
        &self,
        action: &str,
        name: &str,
        source: &str,
        trust: &str,
        verdict: &str,
        extra: &str,
    ) {
        use std::io::Write;
        let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
        let mut line = format!("{stamp} {action} {name} {source}:{trust} {verdict}");
        if !extra.is_empty() {
            line.push(' ');
            line.push_str(extra);
        }
        line.push('\n');
        let path = self.audit_path();
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot append to the hub audit log");
        }
    }
}

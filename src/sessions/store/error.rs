//! `StoreError`: what can go wrong with state.db, phrased so the user knows what to do.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "cannot create the directory {dir} for state.db: {source}; make it writable or point HERMES_HOME elsewhere"
    )]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "cannot open {path}: {detail}; check that the path is a file and that it and its directory are readable and writable"
    )]
    CannotOpen { path: PathBuf, detail: String },

    #[error(
        "{path} is read-only ({detail}); hermes needs write access to the file and to its directory (for the -wal and -shm files): fix the permissions or point HERMES_HOME at a writable directory"
    )]
    ReadOnly { path: PathBuf, detail: String },

    #[error(
        "{path} is locked by another process (most likely another hermes or Python Hermes instance) and stayed locked for {waited:?} while trying to {op}; close or wait for the other process, then try again"
    )]
    Locked {
        path: PathBuf,
        op: &'static str,
        waited: Duration,
    },

    #[error(
        "{path} is not a readable SQLite database ({detail}); move it aside (a fresh one is created on the next start) or restore a backup"
    )]
    Corrupt { path: PathBuf, detail: String },

    #[error("the disk holding {path} is full; free some space and try again")]
    DiskFull { path: PathBuf },

    #[error("session `{0}` does not exist in state.db")]
    SessionNotFound(String),

    #[error("title `{title}` is already used by session {session}; choose another title")]
    TitleInUse { title: String, session: String },

    #[error("cannot use that title: {0}")]
    BadTitle(String),

    #[error(
        "a state.db task stopped before it finished ({0}); nothing after that step was saved — see the log and retry"
    )]
    Task(String),

    #[error("state.db {path}: failed to {op}: {source}")]
    Sqlite {
        path: PathBuf,
        op: &'static str,
        source: rusqlite::Error,
    },
}

/// A foreign-key violation: the referenced session does not exist.
pub(super) fn is_foreign_key_error(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::Sqlite { source: rusqlite::Error::SqliteFailure(f, _), .. }
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    )
}

/// Maps a SQLite failure to the variant that tells the user what to do.
pub(super) fn classify(
    path: &Path,
    waited: Duration,
    op: &'static str,
    e: rusqlite::Error,
) -> StoreError {
    let path = path.to_path_buf();
    let code = e.sqlite_error_code();
    let detail = e.to_string();
    match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Locked { path, op, waited }
        }
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly { path, detail },
        Some(ErrorCode::CannotOpen) => StoreError::CannotOpen { path, detail },
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt { path, detail }
        }
        Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
        _ => StoreError::Sqlite {
            path,
            op,
            source: e,
        },
    }
}

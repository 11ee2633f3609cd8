//! The ONE way a file tool turns a path from the model into a file: `resolve_path` (and
//! `prepare_write`, which adds the turn's checkpoint). In order it:
//! 1. refuses an empty path or a NUL byte;
//! 2. expands `~` and joins a relative path to the working directory;
//! 3. resolves symlinks of the nearest existing ancestor and `..`, and refuses protected paths
//!    (`security::protected`: control files, credentials, secrets) whatever `--yolo` says;
//! 4. checks what the access needs: an existing regular file to read or edit (a missing one
//!    gets "did you mean", a directory gets a listing, a device or pipe is refused), a file
//!    path (not a directory, under a directory) to write, an existing file or directory to
//!    search.
//!
//! A new file tool calls this and gets every rule for free; none of the rules live in a tool.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::tools::file_common::{self, BINARY_SNIFF_BYTES};
use crate::tools::registry::{ToolContext, ToolError};

/// What the tool is about to do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read an existing regular file.
    Read,
    /// Read and rewrite an existing regular file (`patch`).
    Edit,
    /// Create or replace a file.
    Write,
    /// Walk a file or a directory and read what is in it.
    Search,
}

/// A checked path.
#[derive(Debug, Clone)]
pub struct FilePath {
    /// As the model wrote it (for messages).
    pub shown: String,
    /// Where the file really is (symlinks followed): read and write this.
    pub resolved: PathBuf,
    /// Metadata of `resolved` when it exists.
    pub meta: Option<Metadata>,
}

/// Checks `given` for `access` (blocking: call it on the blocking pool, as the tools do).
pub fn resolve_path(ctx: &ToolContext, given: &str, access: Access) -> Result<FilePath, ToolError> {
    if given.trim().is_empty() {
        return Err(ToolError::Respond(match access {
            Access::Write => "path is empty; give the file to write".into(),
            _ => "path is empty; give a file path".into(),
        }));
    }
    let joined = ctx.resolve(given);
    let protected = &ctx.shield.protected;
    let checked = match access {
        Access::Read | Access::Search => protected.check_read(&joined, given),
        Access::Write => protected.check_write(&joined, given),
        Access::Edit => protected
            .check_read(&joined, given)
            .and_then(|_| protected.check_write(&joined, given)),
    };
    let resolved = checked.map_err(|refusal| {
        tracing::warn!(path = given, %refusal, "file tool refused a protected path");
        ToolError::Respond(refusal.to_string())
    })?;
    let meta = std::fs::metadata(&resolved).ok();
    let path = FilePath {
        shown: given.to_string(),
        resolved,
        meta,
    };
    match access {
        Access::Read | Access::Edit => path.require_regular_file(access),
        Access::Write => path.require_writable_location(),
        Access::Search => match &path.meta {
            Some(_) => Ok(path),
            None => Err(ToolError::Respond(file_common::missing_path_message(
                &path.resolved,
                &path.shown,
            ))),
        },
    }
}

impl FilePath {
    fn require_regular_file(self, access: Access) -> Result<Self, ToolError> {
        let shown = &self.shown;
        let Some(meta) = &self.meta else {
            let mut msg = file_common::missing_path_message(&self.resolved, shown);
            if access == Access::Edit {
                msg.push_str("; to create a new file use write_file");
            }
            return Err(ToolError::Respond(msg));
        };
        if meta.is_dir() {
            let what = match access {
                Access::Edit => "patch edits one file",
                _ => "read one of its files, or use search_files with target=files to list it",
            };
            return Err(ToolError::Respond(file_common::directory_message(
                &self.resolved,
                shown,
                what,
            )));
        }
        if !meta.is_file() {
            // Devices and FIFOs can block forever or never end.
            return Err(ToolError::Respond(format!(
                "{shown} is not a regular file (a device, pipe or socket); the file tools only handle regular files"
            )));
        }
        Ok(self)
    }

    fn require_writable_location(self) -> Result<Self, ToolError> {
        let shown = &self.shown;
        if self.meta.as_ref().is_some_and(Metadata::is_dir) {
            return Err(ToolError::Respond(format!(
                "{shown} is an existing directory; write_file needs a file path (e.g. {shown}/name.ext)"
            )));
        }
        if let Some(parent) = self.resolved.parent()
            && parent.exists()
            && !parent.is_dir()
        {
            return Err(ToolError::Respond(format!(
                "cannot write {shown}: {} is a file, not a directory",
                parent.display()
            )));
        }
        Ok(self)
    }

    /// Whether the file existed when it was checked.
    pub fn existed(&self) -> bool {
        self.meta.is_some()
    }

    /// Opens the checked file for reading and reads its first bytes; refuses binary files
    /// (`what_instead` says what to do). The final component is opened without following a
    /// symlink, so a link swapped in after the check cannot redirect the read.
    pub fn open_text(&self, what_instead: &str) -> Result<(File, Vec<u8>), ToolError> {
        let io_err = |e: std::io::Error| {
            ToolError::Respond(file_common::io_message("read", &self.shown, &e))
        };
        let mut file = open_nofollow(&self.resolved).map_err(io_err)?;
        let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
        (&mut file)
            .take(BINARY_SNIFF_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(io_err)?;
        if file_common::looks_binary(&head) {
            let size = self.meta.as_ref().map_or(0, Metadata::len);
            return Err(ToolError::Respond(format!(
                "{} is a binary file ({size} bytes); {what_instead}",
                self.shown
            )));
        }
        Ok((file, head))
    }
}

/// Opens `path` for reading; a symlink as the last component is refused (ELOOP).
pub fn open_nofollow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Resolves a path the tool will write (on the blocking pool), then takes the turn's
/// checkpoint of the tree it is in before the first change of the turn. The second value is
/// a note for the tool result when no checkpoint could be taken.
pub async fn prepare_write(
    ctx: &ToolContext,
    given: &str,
    access: Access,
) -> Result<(FilePath, Option<String>), ToolError> {
    let (c, g) = (ctx.clone(), given.to_string());
    let path = file_common::blocking(move || resolve_path(&c, &g, access)).await?;
    let note = ctx
        .checkpoints
        .before_change(&ctx.cwd, &path.resolved)
        .await;
    Ok((path, note))
}

/// Appends a checkpoint note (if any) to a successful result.
pub fn with_note(
    result: Result<String, ToolError>,
    note: Option<String>,
) -> Result<String, ToolError> {
    match (result, note) {
        (Ok(text), Some(note)) => Ok(format!("{text}\n{note}")),
        (other, _) => other,
    }
}

#[cfg(test)]
#[path = "file_path_tests.rs"]
mod tests;

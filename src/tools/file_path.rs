//! THE path policy: the one function every tool (and every skill action) sends a path from the
//! model through before touching the file it names. `resolve_path` is the file tools' door
//! (`prepare_write` adds the turn's checkpoint), `resolve_in` the door for paths that must stay
//! inside a directory (a skill's files). Both run `check`, which in order:
//! 1. refuses an empty path or a NUL byte;
//! 2. places it: expands `~` and joins a relative path to the working directory, or — inside a
//!    directory — refuses an absolute path or a `..` component (traversal) and joins it there;
//! 3. resolves symlinks of the nearest existing ancestor and `..`; inside a directory the result
//!    must still be under it (a symlink pointing out is refused);
//! 4. refuses protected paths (`security::protected`: control files, credentials, secrets files)
//!    whatever `--yolo` says — inside a directory whose door the caller is (`skill_manage` for
//!    skills), the rules of the kinds it owns are the caller's, every other rule still holds;
//! 5. checks what the access needs: an existing regular file to read or edit (a missing one
//!    gets "did you mean", a directory gets a listing, a device or pipe is refused), a file
//!    path (not a directory, under a directory) to write, an existing file or directory to
//!    search; `FilePath::open_text` then refuses binary files.
//!
//! A new tool calls `resolve_path` (or `resolve_in`) and gets every rule for free; none of the
//! rules live in a tool. `within` is step 2–3 alone, for code acting for the user rather than
//! the model (`/rollback` restoring into the work tree, `hermes skills view`).

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::security::protected::{Kind, ProtectedPaths};
use crate::tools::file_common::{self, BINARY_SNIFF_BYTES};
use crate::tools::registry::{ToolContext, ToolError, expand_tilde};
use crate::util::real_path;

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

/// Where a path may point.
#[derive(Debug, Clone, Copy)]
pub enum Place<'a> {
    /// Anywhere the protected paths allow: `~` expanded, relative to this working directory.
    Anywhere { cwd: &'a Path },
    /// Only inside this directory (relative, no `..`, symlinks resolved and still inside).
    Within(&'a Path),
    /// Inside this directory, for the tool that is its door for the rules of these kinds
    /// (`skill_manage`: `Skills` and the `HermesHome` catch-all): those rules do not apply
    /// where they cover the directory, every other rule does.
    Door(&'a Path, &'a [Kind]),
}

/// Why the policy refused a path; every message says what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    /// Empty, a NUL byte, absolute or `..` where the path must stay inside a directory.
    #[error("{0}")]
    Invalid(String),
    /// Resolves (through a symlink) outside the directory it must stay in.
    #[error("{0}")]
    Escapes(String),
    /// A protected path (`security::protected`).
    #[error("{0}")]
    Protected(String),
    /// Nothing there (with "did you mean").
    #[error("{0}")]
    Missing(String),
    /// There, but not what the access needs: a directory, a device, a pipe, a binary file.
    #[error("{0}")]
    Unsuitable(String),
    /// Checked, but the file could not be opened or read.
    #[error("{0}")]
    Unreadable(String),
}

impl From<PathRefusal> for ToolError {
    fn from(refusal: PathRefusal) -> Self {
        ToolError::Respond(refusal.to_string())
    }
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

/// The file tools' door: checks `given` for `access` (blocking: call it on the blocking pool,
/// as the tools do).
pub fn resolve_path(ctx: &ToolContext, given: &str, access: Access) -> Result<FilePath, ToolError> {
    let place = Place::Anywhere { cwd: &ctx.cwd };
    Ok(check(&ctx.shield.protected, place, given, access)?)
}

/// The door for a path that must stay inside `place`'s directory (a skill's files).
pub fn resolve_in(
    protected: &ProtectedPaths,
    place: Place<'_>,
    given: &str,
    access: Access,
) -> Result<FilePath, PathRefusal> {
    check(protected, place, given, access)
}

/// THE policy (see the module header for the steps, in order).
pub fn check(
    protected: &ProtectedPaths,
    place: Place<'_>,
    given: &str,
    access: Access,
) -> Result<FilePath, PathRefusal> {
    if given.trim().is_empty() {
        return Err(PathRefusal::Invalid(match access {
            Access::Write => "path is empty; give the file to write".into(),
            _ => "path is empty; give a file path".into(),
        }));
    }
    let (joined, door) = match place {
        Place::Anywhere { cwd } => (cwd.join(expand_tilde(given)), None),
        Place::Within(base) => (within(base, given)?, None),
        Place::Door(base, owns) => (within(base, given)?, Some((base, owns))),
    };
    let checked = match access {
        Access::Read | Access::Search => protected.check_read(&joined, given),
        Access::Write => protected.check_write_in(door, &joined, given),
        Access::Edit => protected
            .check_read(&joined, given)
            .and_then(|_| protected.check_write_in(door, &joined, given)),
    };
    let resolved = checked.map_err(|refusal| {
        tracing::warn!(path = given, %refusal, "a tool was refused a protected path");
        PathRefusal::Protected(refusal.to_string())
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
            None => Err(PathRefusal::Missing(file_common::missing_path_message(
                &path.resolved,
                &path.shown,
            ))),
        },
    }
}

/// Step 2 without the file system: `given` is a path relative to a directory that cannot
/// climb out of it lexically (not empty, no NUL byte, not absolute, no `..` component). For
/// callers that must refuse a path before the directory exists (the hub checks a skill's file
/// list before downloading it); [`within`] adds the symlink resolution.
pub fn check_relative(given: &str) -> Result<(), PathRefusal> {
    let invalid = |why: String| Err(PathRefusal::Invalid(why));
    if given.is_empty() {
        return invalid("the path is empty; give a path relative to the directory".into());
    }
    if given.contains('\0') {
        return invalid("the path contains a NUL byte; remove it".into());
    }
    for component in Path::new(given).components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {
                return invalid(format!(
                    "`{given}` is absolute; give a path relative to the directory"
                ));
            }
            Component::ParentDir => {
                return invalid(format!(
                    "`{given}` contains a `..` component; paths may not climb out of the directory"
                ));
            }
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    Ok(())
}

/// Steps 2–3 for a path that must stay inside `base` (which must exist): refuses an absolute
/// path, a `..` component or a NUL byte, then resolves symlinks and requires the result under
/// the resolved `base`. Returns the resolved path (it need not exist yet).
pub fn within(base: &Path, given: &str) -> Result<PathBuf, PathRefusal> {
    if base.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(PathRefusal::Invalid(
            "the path contains a NUL byte; remove it".into(),
        ));
    }
    check_relative(given)?;
    let unresolvable = |path: &Path, e: std::io::Error| {
        PathRefusal::Invalid(format!("cannot resolve {}: {e}", path.display()))
    };
    let resolved_base = std::fs::canonicalize(base).map_err(|e| unresolvable(base, e))?;
    let resolved = real_path::resolve(&resolved_base.join(given))
        .map_err(|e| unresolvable(Path::new(given), e))?;
    if resolved.starts_with(&resolved_base) {
        Ok(resolved)
    } else {
        Err(PathRefusal::Escapes(format!(
            "{given} resolves to {}, which is outside {}; paths (and the symlinks they go through) must stay inside it",
            resolved.display(),
            resolved_base.display()
        )))
    }
}

/// Whether the already resolved `path` stays inside `base` once its own symlinks are followed
/// (for walks listing a directory's files).
pub fn stays_within(base: &Path, path: &Path) -> bool {
    let (Ok(base), Ok(real)) = (std::fs::canonicalize(base), real_path::resolve(path)) else {
        return false;
    };
    real.starts_with(base)
}

impl FilePath {
    fn require_regular_file(self, access: Access) -> Result<Self, PathRefusal> {
        let shown = &self.shown;
        let Some(meta) = &self.meta else {
            let mut msg = file_common::missing_path_message(&self.resolved, shown);
            if access == Access::Edit {
                msg.push_str("; to create a new file use write_file");
            }
            return Err(PathRefusal::Missing(msg));
        };
        if meta.is_dir() {
            let what = match access {
                Access::Edit => "patch edits one file",
                _ => "read one of its files, or use search_files with target=files to list it",
            };
            return Err(PathRefusal::Unsuitable(file_common::directory_message(
                &self.resolved,
                shown,
                what,
            )));
        }
        if !meta.is_file() {
            // Devices and FIFOs can block forever or never end.
            return Err(PathRefusal::Unsuitable(format!(
                "{shown} is not a regular file (a device, pipe or socket); the file tools only handle regular files"
            )));
        }
        Ok(self)
    }

    fn require_writable_location(self) -> Result<Self, PathRefusal> {
        let shown = &self.shown;
        if self.meta.as_ref().is_some_and(Metadata::is_dir) {
            return Err(PathRefusal::Unsuitable(format!(
                "{shown} is an existing directory; write_file needs a file path (e.g. {shown}/name.ext)"
            )));
        }
        if let Some(parent) = self.resolved.parent()
            && parent.exists()
            && !parent.is_dir()
        {
            return Err(PathRefusal::Unsuitable(format!(
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
    pub fn open_text(&self, what_instead: &str) -> Result<(File, Vec<u8>), PathRefusal> {
        let io_err = |e: std::io::Error| {
            PathRefusal::Unreadable(file_common::io_message("read", &self.shown, &e))
        };
        let mut file = open_nofollow(&self.resolved).map_err(io_err)?;
        let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
        (&mut file)
            .take(BINARY_SNIFF_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(io_err)?;
        if file_common::looks_binary(&head) {
            let size = self.meta.as_ref().map_or(0, Metadata::len);
            return Err(PathRefusal::Unsuitable(format!(
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

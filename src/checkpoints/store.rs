//! One shadow git repository per working tree, under `$HERMES_HOME/checkpoints/<hash>/`:
//! open, list, restore and compact; taking a snapshot is `snapshot.rs`. The repository's work
//! tree is the user's directory, but its git directory is ours: the user's own `.git` is never
//! opened or written, and the user's `.gitignore` files are honoured.
//!
//! Everything here is blocking (libgit2, file I/O): callers run it off the async runtime.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, RepositoryInitOptions};

use crate::checkpoints::pack::{self, Kind, PackWriter};
use crate::checkpoints::{CheckpointError, Limits, stat_cache};
use crate::tools::file_path;

/// File in the shadow directory naming the work tree it belongs to.
const WORKDIR_FILE: &str = "hermes-workdir";

/// A checkpoint as listed: 1 is the newest.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub number: usize,
    pub id: String,
    /// Unix seconds.
    pub time: i64,
    /// The first line of the commit message (the turn it was taken for).
    pub label: String,
    /// Later lines: what was skipped.
    pub notes: Vec<String>,
}

/// What a snapshot did.
#[derive(Debug, Clone, PartialEq)]
pub enum Snapshot {
    Taken {
        id: String,
        files: usize,
        notes: Vec<String>,
    },
    /// The tree is the same as the newest checkpoint's.
    Unchanged,
    /// Too large to snapshot (the reason says which limit).
    Skipped(String),
}

/// What a restore changed, as paths relative to the work tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restored {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    /// The checkpoint of the state before the restore (restore it to undo the restore).
    pub undo: Option<String>,
}

/// The shadow repository of one work tree.
pub struct ShadowRepo {
    repo: Repository,
    workdir: PathBuf,
}

/// `$HERMES_HOME/checkpoints/<first 16 hex of md5(resolved workdir)>`.
pub fn shadow_dir(checkpoints_dir: &Path, workdir: &Path) -> PathBuf {
    use md5::{Digest, Md5};
    let digest = Md5::digest(workdir.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    checkpoints_dir.join(hex)
}

impl ShadowRepo {
    /// Opens the shadow repository of `workdir` (resolved), creating it when `create`.
    pub fn open(
        checkpoints_dir: &Path,
        workdir: &Path,
        create: bool,
    ) -> Result<Option<Self>, CheckpointError> {
        let dir = shadow_dir(checkpoints_dir, workdir);
        let repo = if dir.join("HEAD").exists() {
            Repository::open_bare(&dir)?
        } else if create {
            std::fs::create_dir_all(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
            let mut opts = RepositoryInitOptions::new();
            opts.bare(true).external_template(false);
            let repo = Repository::init_opts(&dir, &opts)?;
            std::fs::write(
                dir.join(WORKDIR_FILE),
                workdir.as_os_str().as_encoded_bytes(),
            )
            .map_err(|e| CheckpointError::io(&dir, e))?;
            repo
        } else {
            return Ok(None);
        };
        // The work tree is set on this handle only; nothing is written into the user's tree.
        repo.set_workdir(workdir, false)?;
        Ok(Some(ShadowRepo {
            repo,
            workdir: workdir.to_path_buf(),
        }))
    }

    /// Records the work tree as a new checkpoint (nothing new when it did not change).
    pub fn snapshot(&self, label: &str, limits: &Limits) -> Result<Snapshot, CheckpointError> {
        crate::checkpoints::snapshot::take(&self.repo, &self.workdir, label, limits)
    }

    /// Checkpoints, newest first (numbered from 1).
    pub fn list(&self) -> Result<Vec<Checkpoint>, CheckpointError> {
        let Ok(head) = self.repo.head() else {
            return Ok(Vec::new());
        };
        let mut walk = self.repo.revwalk()?;
        walk.push(head.peel_to_commit()?.id())?;
        let mut out = Vec::new();
        for (i, id) in walk.enumerate() {
            let commit = self.repo.find_commit(id?)?;
            let message = commit.message().unwrap_or("").to_string();
            let mut lines = message.lines();
            out.push(Checkpoint {
                number: i + 1,
                id: commit.id().to_string(),
                time: commit.time().seconds(),
                label: lines.next().unwrap_or("").to_string(),
                notes: lines.map(str::to_string).collect(),
            });
        }
        Ok(out)
    }

    /// Puts the files of checkpoint `number` back: files changed or deleted since are
    /// rewritten, files created since are removed. Files the checkpoints never held (ignored,
    /// too large) are left alone. The current state is checkpointed first, so this can be undone.
    pub fn restore(&self, number: usize, limits: &Limits) -> Result<Restored, CheckpointError> {
        let list = self.list()?;
        let Some(target) = list.iter().find(|c| c.number == number) else {
            return Err(CheckpointError::NoSuchCheckpoint {
                number,
                available: list.len(),
            });
        };
        let target_id = Oid::from_str(&target.id)?;
        let undo = match self.snapshot(&format!("before restoring checkpoint {number}"), limits)? {
            Snapshot::Taken { id, .. } => Some(id),
            _ => None,
        };
        let current = self.repo.head()?.peel_to_tree()?;
        let target_tree = self.repo.find_commit(target_id)?.tree()?;
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&current), Some(&target_tree), None)?;
        let mut out = Restored {
            undo,
            ..Default::default()
        };
        for delta in diff.deltas() {
            let new = delta.new_file();
            let old = delta.old_file();
            match delta.status() {
                git2::Delta::Deleted => {
                    let Some(rel) = old.path() else { continue };
                    let path = self.inside(rel)?;
                    match std::fs::remove_file(&path) {
                        Ok(()) => out.removed.push(rel.display().to_string()),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(CheckpointError::io(&path, e)),
                    }
                }
                _ => {
                    let Some(rel) = new.path() else { continue };
                    let path = self.inside(rel)?;
                    self.write_blob(new.id(), new.mode(), &path)?;
                    out.written.push(rel.display().to_string());
                }
            }
        }
        remove_empty_parents(&self.workdir, &out.removed);
        Ok(out)
    }

    /// The absolute path of `rel` in the work tree; refused if a symlink planted since would
    /// carry the write outside it.
    fn inside(&self, rel: &Path) -> Result<PathBuf, CheckpointError> {
        let given = rel.to_string_lossy();
        file_path::within(&self.workdir, &given).map_err(|e| CheckpointError::Unsafe(e.to_string()))
    }

    fn write_blob(
        &self,
        id: Oid,
        mode: git2::FileMode,
        path: &Path,
    ) -> Result<(), CheckpointError> {
        let blob = self.repo.find_blob(id)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| CheckpointError::io(parent, e))?;
        }
        if mode == git2::FileMode::Link {
            let target = PathBuf::from(String::from_utf8_lossy(blob.content()).into_owned());
            let _ = std::fs::remove_file(path);
            return std::os::unix::fs::symlink(target, path)
                .map_err(|e| CheckpointError::io(path, e));
        }
        // A symlink in the way is replaced, not written through.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            let _ = std::fs::remove_file(path);
        }
        crate::util::atomic_write(path, blob.content())
            .map_err(|e| CheckpointError::io(path, e))?;
        use std::os::unix::fs::PermissionsExt;
        let bits = if mode == git2::FileMode::BlobExecutable {
            0o755
        } else {
            0o644
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits))
            .map_err(|e| CheckpointError::io(path, e))
    }

    /// Keeps the newest `keep` checkpoints: they are copied into a fresh repository (only the
    /// objects they reach) that replaces this one. Returns how many were dropped.
    pub fn compact(self, checkpoints_dir: &Path, keep: usize) -> Result<usize, CheckpointError> {
        let list = self.list()?;
        if list.len() <= keep {
            return Ok(0);
        }
        let dir = shadow_dir(checkpoints_dir, &self.workdir);
        let fresh_dir = dir.with_extension("compacting");
        let _ = std::fs::remove_dir_all(&fresh_dir);
        let mut opts = RepositoryInitOptions::new();
        opts.bare(true).external_template(false);
        self.copy_newest(&fresh_dir, &list[..keep], &opts)?;
        std::fs::write(
            fresh_dir.join(WORKDIR_FILE),
            self.workdir.as_os_str().as_encoded_bytes(),
        )
        .map_err(|e| CheckpointError::io(&fresh_dir, e))?;
        // The newest tree is kept, so its stat cache stays valid.
        let _ = std::fs::copy(dir.join(stat_cache::FILE), fresh_dir.join(stat_cache::FILE));
        drop(self);
        let old = dir.with_extension("old");
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(&dir, &old).map_err(|e| CheckpointError::io(&dir, e))?;
        std::fs::rename(&fresh_dir, &dir).map_err(|e| CheckpointError::io(&dir, e))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(list.len() - keep)
    }

    /// Builds a fresh repository at `fresh_dir` holding `kept` (newest first) and what they reach.
    fn copy_newest(
        &self,
        fresh_dir: &Path,
        kept: &[Checkpoint],
        opts: &RepositoryInitOptions,
    ) -> Result<(), CheckpointError> {
        let fresh = Repository::init_opts(fresh_dir, opts)?;
        let src = self.repo.odb()?;
        // Every tree and blob the kept checkpoints reach, as one pack.
        let objects = fresh_dir.join("objects");
        let io = |e| CheckpointError::io(&objects, e);
        let mut pack = PackWriter::create(&objects).map_err(io)?;
        let mut copied = BTreeSet::new();
        for cp in kept {
            let commit = self.repo.find_commit(Oid::from_str(&cp.id)?)?;
            copy_tree(&self.repo, &src, &mut pack, commit.tree_id(), &mut copied)?;
        }
        pack.finish().map_err(io)?;
        fresh.odb()?.refresh()?;
        let mut parent: Option<Oid> = None;
        for cp in kept.iter().rev() {
            let commit = self.repo.find_commit(Oid::from_str(&cp.id)?)?;
            let tree = fresh.find_tree(commit.tree_id())?;
            let parents: Vec<git2::Commit> = parent
                .iter()
                .filter_map(|p| fresh.find_commit(*p).ok())
                .collect();
            let refs: Vec<&git2::Commit> = parents.iter().collect();
            let id = fresh.commit(
                None,
                &commit.author(),
                &commit.committer(),
                commit.message().unwrap_or(""),
                &tree,
                &refs,
            )?;
            parent = Some(id);
        }
        if let Some(head) = parent {
            fresh.reference("refs/heads/master", head, true, "compact")?;
            fresh.set_head("refs/heads/master")?;
        }
        Ok(())
    }
}

fn copy_tree(
    repo: &Repository,
    src: &git2::Odb,
    pack: &mut PackWriter,
    tree_id: Oid,
    copied: &mut BTreeSet<Oid>,
) -> Result<(), CheckpointError> {
    let mut copy = |id: Oid, kind: Kind| -> Result<(), CheckpointError> {
        let obj = src.read(id)?;
        pack::pack_object(kind, obj.data())
            .and_then(|o| pack.add(&o))
            .map_err(|e| CheckpointError::io(repo.path(), e))
    };
    if !copied.insert(tree_id) {
        return Ok(());
    }
    copy(tree_id, Kind::Tree)?;
    let tree = repo.find_tree(tree_id)?;
    let mut subtrees = Vec::new();
    for entry in tree.iter() {
        match entry.kind() {
            Some(git2::ObjectType::Tree) => subtrees.push(entry.id()),
            Some(git2::ObjectType::Blob) if copied.insert(entry.id()) => {
                copy(entry.id(), Kind::Blob)?
            }
            _ => {}
        }
    }
    for sub in subtrees {
        copy_tree(repo, src, pack, sub, copied)?;
    }
    Ok(())
}

/// The work tree a shadow directory belongs to.
pub fn workdir_of(shadow: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = std::fs::read(shadow.join(WORKDIR_FILE)).ok()?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
}

pub(super) fn one_line(label: &str) -> String {
    let line = label.lines().next().unwrap_or("").trim();
    let cut = crate::util::truncate_chars(line, 72);
    if cut.is_empty() {
        "checkpoint".to_string()
    } else {
        cut.to_string()
    }
}

/// Directories left empty by removed files are removed too (deepest first), never the root.
fn remove_empty_parents(root: &Path, removed: &[String]) {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for rel in removed {
        let mut p = Path::new(rel).parent();
        while let Some(dir) = p.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(dir.to_path_buf());
            p = dir.parent();
        }
    }
    for dir in dirs.iter().rev() {
        let _ = std::fs::remove_dir(root.join(dir));
    }
}

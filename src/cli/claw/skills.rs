//! Importing OpenClaw skills into `skills/openclaw-imports/<name>` through the skills guard.
//! Each skill is copied (symlinks kept as symlinks, never followed) into a staging directory
//! beside the Hermes home's skills, the *copy* is scanned — what is scanned is what gets
//! installed — and the install policy for a trusted source decides: a dangerous skill is refused
//! with its findings, anything else is moved into place with one rename.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::skills::SkillStore;
use crate::skills::guard::{self, Decision, Trust, Verdict};

use super::report::{Report, Status};
use super::source::OpenClawHome;

/// The category every imported skill lands in (Python Hermes's name).
pub const CATEGORY: &str = "openclaw-imports";
const CATEGORY_DESCRIPTION: &str = "Skills migrated from an OpenClaw workspace.\n";
/// A skill bigger than this is not copied at all (a skill is a few text files).
const MAX_FILES: usize = 200;
const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Where OpenClaw keeps skills: the workspace's own, the managed ones, and the project-level
/// and personal `.agents/skills` trees Python Hermes also imports.
pub fn source_dirs(home: &OpenClawHome, user_home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(w) = &home.workspace {
        dirs.push(w.join("skills"));
        dirs.push(w.join(".agents/skills"));
    }
    dirs.push(home.root.join("skills"));
    if let Some(h) = user_home {
        dirs.push(h.join(".agents/skills"));
    }
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

pub struct SkillImport<'a> {
    pub config: &'a Config,
    pub execute: bool,
    pub overwrite: bool,
    /// Where staging copies go (on the same file system as the skills directory).
    pub staging: PathBuf,
}

impl SkillImport<'_> {
    pub fn run(&self, dirs: &[PathBuf], report: &mut Report) {
        let dest_root = self.config.home.skills_dir().join(CATEGORY);
        let store = SkillStore::from_config(self.config);
        let mut seen = std::collections::BTreeSet::new();
        let mut any = false;
        for dir in dirs {
            let Ok(read) = std::fs::read_dir(dir) else {
                report.add(
                    Status::Failed,
                    format!("skills in {}", dir.display()),
                    "cannot list this directory",
                );
                continue;
            };
            let mut skills: Vec<PathBuf> = read
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("SKILL.md").is_file())
                .collect();
            skills.sort();
            for src in skills {
                let name = src
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // The workspace's skill wins over a managed one of the same name (OpenClaw's
                // precedence), so a later one is not a conflict with our own earlier import.
                if !seen.insert(name.clone()) {
                    continue;
                }
                any = true;
                self.one(&src, &name, &dest_root, &store, report);
            }
        }
        if !any {
            report.add(Status::Skipped, "skills", "no OpenClaw skills found");
        } else if self.execute && !dest_root.join("DESCRIPTION.md").exists() {
            let _ = std::fs::write(dest_root.join("DESCRIPTION.md"), CATEGORY_DESCRIPTION);
        }
    }

    fn one(
        &self,
        src: &Path,
        name: &str,
        dest_root: &Path,
        store: &SkillStore,
        report: &mut Report,
    ) {
        let what = format!("skill {name}");
        if let Err(why) = crate::skills::skill::validate_name("skill", name) {
            report.add(Status::Skipped, what, why);
            return;
        }
        let dest = dest_root.join(name);
        let shown_dest = format!("skills/{CATEGORY}/{name}");
        if let Some(other) = store.find(name)
            && !other.dir.starts_with(dest_root)
        {
            report.add(
                Status::Skipped,
                what,
                format!(
                    "a skill named `{name}` already exists at {}; rename one of them and re-run",
                    other.dir.display()
                ),
            );
            return;
        }
        if dest.exists() {
            match same_tree(src, &dest) {
                Ok(true) => {
                    report.add(Status::Unchanged, what, format!("already at {shown_dest}"));
                    return;
                }
                _ if !self.overwrite => {
                    report.add(Status::Conflict, what, format!("{shown_dest} differs"));
                    return;
                }
                _ => {}
            }
        }
        if let Err(why) = check_size(src) {
            report.add(Status::Refused, what, why);
            return;
        }
        if !self.execute {
            // A dry run scans the source itself: nothing is copied.
            match judge(src) {
                Ok(note) => report.add(Status::Imported, what, format!("→ {shown_dest}{note}")),
                Err(why) => report.add(Status::Refused, what, why),
            }
            return;
        }
        match self.install(src, name, &dest) {
            Ok(note) => report.add(Status::Imported, what, format!("→ {shown_dest}{note}")),
            Err(Outcome::Refused(why)) => report.add(Status::Refused, what, why),
            Err(Outcome::Failed(why)) => report.add(Status::Failed, what, why),
        }
    }

    /// Copy into staging, scan the copy, and move it into place (an existing version is moved
    /// to the migration's backup directory first).
    fn install(&self, src: &Path, name: &str, dest: &Path) -> Result<String, Outcome> {
        let stage_dir = self.staging.join(format!(
            ".staging-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let staged = stage_dir.join(name);
        let result = (|| {
            copy_tree(src, &staged)
                .map_err(|e| Outcome::Failed(format!("cannot copy {}: {e}", src.display())))?;
            let note = judge(&staged).map_err(Outcome::Refused)?;
            let parent = dest.parent().unwrap_or(dest);
            std::fs::create_dir_all(parent)
                .map_err(|e| Outcome::Failed(format!("cannot create {}: {e}", parent.display())))?;
            if dest.exists() {
                let backup = self.staging.join("backups/skills").join(name);
                let _ = std::fs::remove_dir_all(&backup);
                std::fs::create_dir_all(backup.parent().unwrap_or(&self.staging))
                    .and_then(|()| std::fs::rename(dest, &backup))
                    .map_err(|e| {
                        Outcome::Failed(format!(
                            "cannot move the old {} aside: {e}",
                            dest.display()
                        ))
                    })?;
            }
            std::fs::rename(&staged, dest).map_err(|e| {
                Outcome::Failed(format!("cannot move into {}: {e}", dest.display()))
            })?;
            Ok(note)
        })();
        let _ = std::fs::remove_dir_all(&stage_dir);
        result
    }
}

enum Outcome {
    Refused(String),
    Failed(String),
}

/// The guard's verdict under the policy for a trusted source (the user's own skills): dangerous
/// is refused with its findings; caution passes with a note.
fn judge(dir: &Path) -> Result<String, String> {
    let findings = guard::scan_dir(dir);
    let verdict = guard::verdict(&findings);
    match guard::policy(Trust::Trusted, verdict) {
        Decision::Allow if verdict == Verdict::Safe => Ok(String::new()),
        Decision::Allow => Ok(format!(
            " (the skills guard says caution: {})",
            guard::describe(&findings)
        )),
        Decision::Block | Decision::Ask => Err(format!(
            "refused by the skills guard ({verdict:?}): {}",
            guard::describe(&findings)
        )),
    }
}

fn check_size(src: &Path) -> Result<(), String> {
    let (mut files, mut bytes) = (0usize, 0u64);
    for entry in walkdir::WalkDir::new(src).follow_links(false) {
        let entry = entry.map_err(|e| format!("cannot read part of the skill: {e}"))?;
        if entry.file_type().is_file() {
            files += 1;
            bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
        if files > MAX_FILES || bytes > MAX_BYTES {
            return Err(format!(
                "too large to import (more than {MAX_FILES} files or {} MB); a skill is a few text files — copy what you need by hand",
                MAX_BYTES / (1024 * 1024)
            ));
        }
    }
    Ok(())
}

/// Copies a directory tree; symlinks are recreated as symlinks (never followed), `.git` is left
/// out.
fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(src)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
    {
        let entry = entry.map_err(std::io::Error::other)?;
        let rel = entry.path().strip_prefix(src).unwrap_or(entry.path());
        let target = dst.join(rel);
        let kind = entry.file_type();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// True when both trees hold the same files with the same bytes (and the same symlinks).
fn same_tree(a: &Path, b: &Path) -> std::io::Result<bool> {
    let list = |root: &Path| -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
        let mut out = Vec::new();
        for entry in walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
        {
            let entry = entry.map_err(std::io::Error::other)?;
            let rel = entry
                .path()
                .strip_prefix(root)
                .unwrap_or(entry.path())
                .to_path_buf();
            if entry.file_type().is_symlink() {
                let to = std::fs::read_link(entry.path())?;
                out.push((rel, to.to_string_lossy().as_bytes().to_vec()));
            } else if entry.file_type().is_file() {
                out.push((rel, std::fs::read(entry.path())?));
            }
        }
        Ok(out)
    };
    Ok(list(a)? == list(b)?)
}

//! A fetched skill in memory (`Bundle`) and the structural rules every file must pass before
//! anything is written: a relative path without `..`, inside `SKILL.md`'s folder, in one of the
//! support folders (or a LICENSE/README beside SKILL.md), no symlinks or submodules, no file over
//! `MAX_FILE_BYTES`, a valid SKILL.md frontmatter. Sources report every problem they meet; the
//! bundle is refused with all of them listed.
//!
//! Also the content hashes: `content_hash` is Python Hermes's (`sha256:` + 16 hex over sorted
//! `path \0 bytes`), `file_hashes` the per-file SHA-256 that `list-modified` compares.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::HubError;
use super::source::{SourceRef, Trust};
use crate::skills::skill;
use crate::tools::file_path;

/// The largest file a hub skill may hold.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most a hub skill may hold in total.
pub const MAX_TOTAL_BYTES: u64 = 8 * 1024 * 1024;
/// The most files a hub skill may hold.
pub const MAX_FILES: usize = 200;
/// Folders a skill's files may live in (Python Hermes's `_ALLOWED_SUPPORT_DIRS`).
pub const SUPPORT_DIRS: &[&str] = &["references", "templates", "scripts", "assets", "examples"];
/// Files that may sit beside SKILL.md (upstream skills ship their licence with them).
const ROOT_FILE_PREFIXES: &[&str] = &["license", "licence", "readme", "notice", "changelog"];

/// A skill's files, fetched and checked, not yet written anywhere.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub source: SourceRef,
    pub trust: Trust,
    /// The commit the files were read at (git sources).
    pub commit: Option<String>,
    /// Relative path (`/`-separated) → bytes.
    pub files: BTreeMap<String, Vec<u8>>,
    total: u64,
    problems: Vec<String>,
}

/// Checks one relative path from a source: the reason it is refused, if it is.
///
/// The escape rules (empty, NUL, absolute, `..`) are the one path policy's
/// (`tools::file_path::check_relative`; the directory does not exist yet when a source lists
/// its files, so the resolving `within` runs again at write time). On top of them a hub path
/// must be in canonical form — no backslash, no empty or `.` component — because it is also
/// the key of the bundle's file map and of the lock's per-file hashes: `a/./b` and `a/b` would
/// be two keys for one file on disk.
pub fn check_path(rel: &str) -> Result<(), String> {
    file_path::check_relative(rel).map_err(|e| format!("`{rel}` is refused: {e}"))?;
    let parts: Vec<&str> = rel.split('/').collect();
    if rel.contains('\\') || parts.iter().any(|p| p.is_empty() || *p == ".") {
        return Err(format!(
            "`{rel}` is not in canonical form (a backslash, an empty or `.` component); use plain `dir/file` paths"
        ));
    }
    match parts.as_slice() {
        ["SKILL.md"] => Ok(()),
        [file]
            if ROOT_FILE_PREFIXES
                .iter()
                .any(|p| file.to_ascii_lowercase().starts_with(p)) =>
        {
            Ok(())
        }
        [dir, _, ..] if SUPPORT_DIRS.contains(dir) => Ok(()),
        _ => Err(format!(
            "`{rel}` is outside the skill's folders: files go in {} (or SKILL.md, LICENSE, README)",
            SUPPORT_DIRS.join("/, ") + "/"
        )),
    }
}

impl Bundle {
    pub fn new(source: SourceRef, trust: Trust, commit: Option<String>) -> Bundle {
        Bundle {
            source,
            trust,
            commit,
            files: BTreeMap::new(),
            total: 0,
            problems: Vec::new(),
        }
    }

    /// Records a reason to refuse the bundle (symlink, submodule, unreadable file ...).
    pub fn refuse(&mut self, reason: String) {
        self.problems.push(reason);
    }

    /// Checks a file's path and declared size before its bytes are read: false when refused
    /// (the reason is recorded), so a source never downloads what will be refused.
    pub fn admit(&mut self, rel: &str, size: u64) -> bool {
        if let Err(reason) = check_path(rel) {
            self.problems.push(reason);
            return false;
        }
        if size > MAX_FILE_BYTES {
            self.problems.push(format!(
                "`{rel}` is {size} bytes; hub skill files may be at most {MAX_FILE_BYTES}"
            ));
            return false;
        }
        if self.files.len() >= MAX_FILES {
            self.problems.push(format!(
                "more than {MAX_FILES} files; a skill should be small"
            ));
            return false;
        }
        if self.total + size > MAX_TOTAL_BYTES {
            self.problems.push(format!(
                "more than {MAX_TOTAL_BYTES} bytes in total (at `{rel}`)"
            ));
            return false;
        }
        true
    }

    /// Adds a file (checked again: the size a source announced may not be what it sent).
    pub fn add(&mut self, rel: &str, bytes: Vec<u8>) {
        if self.admit(rel, bytes.len() as u64) {
            self.total += bytes.len() as u64;
            self.files.insert(rel.to_string(), bytes);
        }
    }

    /// The bundle, or every reason it is refused. SKILL.md must exist and parse strictly.
    pub fn finish(self) -> Result<Bundle, HubError> {
        let mut problems = self.problems.clone();
        match self.files.get("SKILL.md") {
            None if problems.is_empty() => problems.push(format!(
                "there is no SKILL.md at {} (is the path inside the repository right?)",
                self.source.identifier()
            )),
            None => {}
            Some(bytes) => match std::str::from_utf8(bytes) {
                Err(_) => problems.push("SKILL.md is not valid UTF-8".into()),
                Ok(text) => {
                    if let Err(e) = skill::parse_strict(text) {
                        problems.push(format!("SKILL.md: {e}"));
                    }
                }
            },
        }
        if problems.is_empty() {
            return Ok(self);
        }
        Err(HubError::BadBundle {
            name: self.source.identifier(),
            reason: problems.join("; "),
        })
    }

    /// The bundle so far, or the problems already found (checked before any download).
    pub fn finish_paths(self) -> Result<Bundle, HubError> {
        if self.problems.is_empty() {
            return Ok(self);
        }
        Err(HubError::BadBundle {
            name: self.source.identifier(),
            reason: self.problems.join("; "),
        })
    }

    /// The `name` of SKILL.md's frontmatter, when it is a valid skill name.
    pub fn frontmatter_name(&self) -> Option<String> {
        let text = std::str::from_utf8(self.files.get("SKILL.md")?).ok()?;
        let name = skill::parse_lenient(text).ok()?.frontmatter.name?;
        skill::validate_name("skill", &name).ok().map(|_| name)
    }

    pub fn content_hash(&self) -> String {
        content_hash(&self.files)
    }

    pub fn file_hashes(&self) -> BTreeMap<String, String> {
        file_hashes(&self.files)
    }

    /// Writes every file under `dir` (which must not exist yet).
    pub fn write_to(&self, dir: &Path) -> Result<(), HubError> {
        write_files(&self.files, dir)
    }
}

/// Writes `files` under a new directory `dir`. Each path goes through the one path policy
/// (`tools::file_path::within`) again: a symlink planted under `dir` between the check and the
/// write cannot carry a file out of it.
pub fn write_files(files: &BTreeMap<String, Vec<u8>>, dir: &Path) -> Result<(), HubError> {
    std::fs::create_dir_all(dir).map_err(|e| HubError::io("create", dir, e))?;
    for (rel, bytes) in files {
        let path = file_path::within(dir, rel)
            .map_err(|e| HubError::Refused(format!("cannot write `{rel}`: {e}")))?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| HubError::io("create", parent, e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| HubError::io("write", &path, e))?;
    }
    Ok(())
}

/// Python Hermes's `content_hash`: SHA-256 over sorted `path \0 bytes`, first 16 hex digits.
pub fn content_hash(files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut h = Sha256::new();
    for (rel, bytes) in files {
        h.update(rel.as_bytes());
        h.update([0u8]);
        h.update(bytes);
    }
    let hex = hex(&h.finalize());
    format!("sha256:{}", &hex[..16])
}

/// SHA-256 of each file.
pub fn file_hashes(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(rel, bytes)| {
            (
                rel.clone(),
                format!("sha256:{}", hex(&Sha256::digest(bytes))),
            )
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The files of an installed skill on disk (for local-edit checks). Symlinks and unreadable
/// entries are listed with empty content marked by the `Err` side.
pub fn read_dir_files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, HubError> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry =
            entry.map_err(|e| HubError::io("read", dir, std::io::Error::other(e.to_string())))?;
        if entry.path_is_symlink() || !entry.file_type().is_file() {
            if entry.path_is_symlink() {
                let rel = rel_of(dir, entry.path());
                files.insert(rel, b"<symlink>".to_vec());
            }
            continue;
        }
        let bytes =
            std::fs::read(entry.path()).map_err(|e| HubError::io("read", entry.path(), e))?;
        files.insert(rel_of(dir, entry.path()), bytes);
    }
    Ok(files)
}

fn rel_of(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> SourceRef {
        SourceRef::parse("owner/repo/skills/x").unwrap()
    }

    #[test]
    fn paths_outside_the_folders_or_escaping_are_refused() {
        for ok in [
            "SKILL.md",
            "LICENSE.txt",
            "references/a.md",
            "scripts/sub/run.sh",
        ] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "../x",
            "references/../../x",
            "/etc/passwd",
            "notes.txt",
            "bin/tool",
            "references",
            "a//b",
            "scripts/./x",
            "",
            "references/a\0.md",
            "references\\a.md",
        ] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_writer_does_not_follow_a_planted_symlink_out() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, outside) = (tmp.path().join("q"), tmp.path().join("outside"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("references")).unwrap();
        let files = BTreeMap::from([("references/a.md".to_string(), b"x".to_vec())]);
        let err = write_files(&files, &dir).unwrap_err().to_string();
        assert!(
            err.contains("references/a.md") && err.contains("outside"),
            "{err}"
        );
        assert!(!outside.join("a.md").exists());
    }

    #[test]
    fn hashes_match_python_hermes() {
        let mut files = BTreeMap::new();
        files.insert("SKILL.md".to_string(), b"hi".to_vec());
        // Python: "sha256:" + hashlib.sha256(b"SKILL.md\x00hi").hexdigest()[:16]
        assert_eq!(content_hash(&files), "sha256:d8b823976453f508");
    }

    #[test]
    fn a_bad_frontmatter_and_oversized_files_are_all_reported() {
        let mut b = Bundle::new(source(), Trust::Community, None);
        b.add("SKILL.md", b"no frontmatter here".to_vec());
        assert!(!b.admit("assets/big.bin", MAX_FILE_BYTES + 1));
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains("frontmatter") && e.contains("bytes"), "{e}");
        let mut b = Bundle::new(source(), Trust::Community, None);
        b.add(
            "SKILL.md",
            b"---\nname: x\ndescription: d\n---\nbody\n".to_vec(),
        );
        assert_eq!(
            b.clone().finish().unwrap().frontmatter_name().as_deref(),
            Some("x")
        );
    }
}

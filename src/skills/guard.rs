//! The skills guard: what is specific to skills on top of the shared scanner
//! (`security::scan`, origin `Skill`): walking a skill directory so that nothing can hide from
//! the scan, the structure checks, and the install policy per trust level (reference §9.5).
//!
//! A directory scan cannot be fooled by how it is called or what files are named:
//! - the directory is resolved first, so a relative and an absolute path give the same verdict,
//!   and a symlink is resolved from where it lives; one that leaves the skill is critical;
//! - every regular file is scanned whatever its extension (`.zsh`, `.ps1`, `.bat`, no
//!   extension …) unless its first bytes show binary data (a NUL byte);
//! - a file that is not valid UTF-8 is scanned lossily and flagged (bytes a viewer may hide);
//! - a file larger than `MAX_SCAN_BYTES` is scanned up to there and flagged high, so a payload
//!   parked past the cap makes the skill at least `caution`.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::security::scan::{self, Origin};
pub use crate::security::scan::{Category, Level as Verdict, Severity};

pub const SCANNER_VERSION: &str = "skills-guard-v2";
const MAX_FILES: usize = 50;
/// Files above this are unusual in a skill (noted, still scanned).
const LARGE_FILE_BYTES: u64 = 256 * 1024;
const MAX_TOTAL_BYTES: u64 = 1024 * 1024;
/// A file is scanned up to this many bytes; past it, the rest is unseen (flagged high).
pub const MAX_SCAN_BYTES: u64 = 8 * 1024 * 1024;
/// How far into a file to look for a NUL byte (binary data).
const SNIFF_BYTES: usize = 8 * 1024;
const SUSPICIOUS_EXTENSIONS: &[&str] = &[
    "exe", "dll", "so", "dylib", "bin", "dat", "com", "msi", "dmg", "app", "deb", "rpm",
];

/// One thing the guard found, with the file it is in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub id: String,
    pub category: Category,
    pub severity: Severity,
    /// Path relative to the skill directory (or the name given to `scan_text`).
    pub file: String,
    /// 1-based; 0 when the finding is about the whole file.
    pub line: usize,
    pub description: String,
    /// The matched text (normalised, ≤ 80 characters) or the character's code; "" for structure.
    pub matched: String,
}

impl Finding {
    fn structure(id: &str, severity: Severity, file: &str, description: String) -> Finding {
        Finding {
            id: id.to_string(),
            category: Category::Structure,
            severity,
            file: file.to_string(),
            line: 0,
            description,
            matched: String::new(),
        }
    }
}

/// Who vouches for a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    Builtin,
    Trusted,
    Community,
    AgentCreated,
}

/// What to do with a skill of a given trust and verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Block,
    /// Only with the user's confirmation.
    Ask,
}

/// Scans one text (a SKILL.md or a supporting file) and reports findings with line numbers.
pub fn scan_text(file: &str, text: &str) -> Vec<Finding> {
    scan::scan(text, Origin::Skill)
        .findings
        .into_iter()
        .map(|f| Finding {
            id: f.id,
            category: f.category,
            severity: f.severity,
            file: file.to_string(),
            line: f.line,
            description: f.description,
            matched: f.matched,
        })
        .collect()
}

/// Scans a whole skill directory: every file's text plus the structure checks. A directory that
/// cannot be resolved gives one critical finding (nothing unscanned passes as safe).
pub fn scan_dir(dir: &Path) -> Vec<Finding> {
    let root = match std::fs::canonicalize(dir) {
        Ok(root) => root,
        Err(e) => {
            return vec![Finding::structure(
                "unreadable",
                Severity::Critical,
                "",
                format!("cannot resolve {}: {e}", dir.display()),
            )];
        }
    };
    let mut findings = Vec::new();
    let mut files = 0usize;
    let mut total = 0u64;
    for entry in walkdir::WalkDir::new(&root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
    {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let file = e
                    .path()
                    .and_then(|p| p.strip_prefix(&root).ok())
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                findings.push(Finding::structure(
                    "unreadable",
                    Severity::High,
                    &file,
                    format!("cannot read this part of the skill: {e}"),
                ));
                continue;
            }
        };
        let rel = entry
            .path()
            .strip_prefix(&root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        if entry.path_is_symlink() {
            findings.push(symlink_finding(&root, entry.path(), &rel));
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        files += 1;
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        total += size;
        findings.extend(scan_file(entry.path(), &rel, size));
    }
    if files > MAX_FILES {
        findings.push(Finding::structure(
            "too_many_files",
            Severity::Medium,
            "",
            format!("{files} files; a skill should have at most {MAX_FILES}"),
        ));
    }
    if total > MAX_TOTAL_BYTES {
        findings.push(Finding::structure(
            "too_large",
            Severity::Medium,
            "",
            format!("{total} bytes in total; a skill should stay under {MAX_TOTAL_BYTES}"),
        ));
    }
    findings
}

/// `scan_dir` for many skills, spread over the machine's cores; results in the order given.
pub fn scan_dirs(dirs: &[PathBuf]) -> Vec<Vec<Finding>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(dirs.len().max(1));
    if threads <= 1 {
        return dirs.iter().map(|d| scan_dir(d)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Vec<Finding>>> = vec![None; dirs.len()];
    let done: Vec<Vec<(usize, Vec<Finding>)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(dir) = dirs.get(i) else { break };
                        mine.push((i, scan_dir(dir)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    for (i, findings) in done.into_iter().flatten() {
        results[i] = Some(findings);
    }
    // A worker that panicked left its skills unscanned: scan those here, so nothing passes
    // unscanned as safe.
    results
        .into_iter()
        .zip(dirs)
        .map(|(found, dir)| found.unwrap_or_else(|| scan_dir(dir)))
        .collect()
}

/// A symlink is resolved from the directory it lives in; leaving the skill is critical.
fn symlink_finding(root: &Path, link: &Path, rel: &str) -> Finding {
    match std::fs::canonicalize(link) {
        Ok(target) if target.starts_with(root) => Finding::structure(
            "symlink",
            Severity::Medium,
            rel,
            "symlink inside the skill".into(),
        ),
        Ok(target) => Finding {
            id: "symlink_escape".into(),
            category: Category::Traversal,
            severity: Severity::Critical,
            file: rel.to_string(),
            line: 0,
            description: format!(
                "symlink pointing outside the skill directory (to {})",
                target.display()
            ),
            matched: String::new(),
        },
        Err(_) => Finding {
            id: "symlink_dangling".into(),
            category: Category::Traversal,
            severity: Severity::High,
            file: rel.to_string(),
            line: 0,
            description: format!(
                "symlink to {} which does not resolve here (it may resolve elsewhere)",
                std::fs::read_link(link)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default()
            ),
            matched: String::new(),
        },
    }
}

/// Reads up to `MAX_SCAN_BYTES` of one file and scans it unless it is binary.
fn scan_file(path: &Path, rel: &str, size: u64) -> Vec<Finding> {
    let mut findings = Vec::new();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if SUSPICIOUS_EXTENSIONS.contains(&ext.as_str()) {
        findings.push(Finding::structure(
            "suspicious_binary",
            Severity::High,
            rel,
            format!("executable or binary file type .{ext}"),
        ));
    }
    if size > LARGE_FILE_BYTES {
        findings.push(Finding::structure(
            "large_file",
            Severity::Medium,
            rel,
            format!("{size} bytes; skill files are usually under {LARGE_FILE_BYTES}"),
        ));
    }
    let mut bytes = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|f| f.take(MAX_SCAN_BYTES).read_to_end(&mut bytes));
    if let Err(e) = read {
        findings.push(Finding::structure(
            "unreadable",
            Severity::High,
            rel,
            format!("cannot read the file, so it was not scanned: {e}"),
        ));
        return findings;
    }
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        // Binary data (images, archives): not text the model reads.
        return findings;
    }
    if size > MAX_SCAN_BYTES {
        findings.push(Finding::structure(
            "file_too_large_to_scan",
            Severity::High,
            rel,
            format!("{size} bytes; only the first {MAX_SCAN_BYTES} were scanned"),
        ));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            // A multi-byte character cut by the read cap is not an encoding problem.
            let cut_by_cap = size > MAX_SCAN_BYTES && e.utf8_error().error_len().is_none();
            let bytes = e.into_bytes();
            if !cut_by_cap {
                findings.push(Finding::structure(
                    "invalid_utf8",
                    Severity::High,
                    rel,
                    "not valid UTF-8: scanned with the bad bytes replaced; editors may show such bytes differently".into(),
                ));
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
    };
    findings.extend(scan_text(rel, &text));
    findings
}

/// Any critical finding → dangerous; any high → caution; otherwise safe.
pub fn verdict(findings: &[Finding]) -> Verdict {
    Verdict::of(findings.iter().map(|f| f.severity).max())
}

/// Resolves `dir` and checks that it is a skill directory (holds a SKILL.md file).
pub fn skill_dir(dir: &Path) -> Option<PathBuf> {
    let root = std::fs::canonicalize(dir).ok()?;
    root.join("SKILL.md").is_file().then_some(root)
}

/// The install policy table (safe / caution / dangerous per trust level).
pub fn policy(trust: Trust, verdict: Verdict) -> Decision {
    use Decision::*;
    match (trust, verdict) {
        (Trust::Builtin, _) => Allow,
        (Trust::Trusted, Verdict::Dangerous) => Block,
        (Trust::Trusted, _) => Allow,
        (Trust::Community, Verdict::Safe) => Allow,
        (Trust::Community, _) => Block,
        (Trust::AgentCreated, Verdict::Dangerous) => Ask,
        (Trust::AgentCreated, _) => Allow,
    }
}

/// A short, model-readable list of findings.
pub fn describe(findings: &[Finding]) -> String {
    findings
        .iter()
        .filter(|f| f.severity >= Severity::High)
        .take(12)
        .map(|f| {
            let at = if f.line > 0 {
                format!("{}:{}", f.file, f.line)
            } else {
                f.file.clone()
            };
            format!(
                "{} ({:?}, {}) at {at}: {}",
                f.id,
                f.severity,
                f.category.name(),
                f.description
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;

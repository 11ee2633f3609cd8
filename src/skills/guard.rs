//! The skills guard: scans a skill (or a text about to be written into one) for threats —
//! the categorized pattern table in `guard_patterns.rs`, invisible unicode, and structure checks
//! (file count and size caps, binaries, symlinks) — and turns the findings into a verdict and an
//! install decision per trust level (reference §9.5).

use std::path::Path;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Serialize;

use crate::memory::scan::{INVISIBLE_CHARS, Scope};
use crate::skills::guard_patterns::{PATTERNS, PatternDef};

pub const SCANNER_VERSION: &str = "skills-guard-v1";
const MAX_FILES: usize = 50;
const MAX_FILE_BYTES: u64 = 256 * 1024;
const MAX_TOTAL_BYTES: u64 = 1024 * 1024;
/// The same finding is reported at most this many times per file.
const MAX_HITS_PER_PATTERN: usize = 5;
const SUSPICIOUS_EXTENSIONS: &[&str] = &[
    "exe", "dll", "so", "dylib", "bin", "dat", "com", "msi", "dmg", "app", "deb", "rpm",
];
const SCANNABLE_EXTENSIONS: &[&str] = &[
    "md", "txt", "py", "sh", "bash", "js", "ts", "rb", "pl", "php", "r", "jl", "yaml", "yml",
    "json", "toml", "ini", "cfg", "conf", "xml", "html", "css", "tex",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Exfiltration,
    Injection,
    Destructive,
    Persistence,
    Network,
    Obfuscation,
    Execution,
    Traversal,
    Mining,
    SupplyChain,
    PrivilegeEscalation,
    CredentialExposure,
    /// File-layout findings (too many or too large files, binaries, symlinks).
    Structure,
}

/// One thing the guard found.
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Safe,
    Caution,
    Dangerous,
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

struct Compiled {
    set: Option<RegexSet>,
    each: Vec<Option<Regex>>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let build = |p: &PatternDef| {
        RegexBuilder::new(p.regex)
            .case_insensitive(true)
            .multi_line(true)
            .build()
            .map_err(|e| tracing::error!(id = p.id, error = %e, "guard pattern does not compile"))
            .ok()
    };
    let each: Vec<Option<Regex>> = PATTERNS.iter().map(build).collect();
    // The set holds only patterns that compiled, so one bad row cannot disable the guard.
    let set = RegexSetBuilder::new(
        PATTERNS
            .iter()
            .zip(&each)
            .map(|(p, r)| if r.is_some() { p.regex } else { "[^\\s\\S]" }),
    )
    .case_insensitive(true)
    .multi_line(true)
    .build()
    .ok();
    Compiled { set, each }
});

/// Scans one text (a SKILL.md or a supporting file) and reports findings with line numbers.
pub fn scan_text(file: &str, text: &str) -> Vec<Finding> {
    let compiled = &*COMPILED;
    let mut findings = Vec::new();
    let matched: Vec<usize> = match &compiled.set {
        Some(set) => set.matches(text).into_iter().collect(),
        None => (0..PATTERNS.len()).collect(),
    };
    for i in matched {
        let (Some(re), def) = (&compiled.each[i], &PATTERNS[i]) else {
            continue;
        };
        let mut last_line = 0;
        let mut hits = 0;
        for m in re.find_iter(text) {
            let line = line_of(text, m.start());
            if line == last_line {
                continue;
            }
            last_line = line;
            findings.push(Finding {
                id: def.id.to_string(),
                category: def.category,
                severity: def.severity,
                file: file.to_string(),
                line,
                description: def.description.to_string(),
            });
            hits += 1;
            if hits >= MAX_HITS_PER_PATTERN {
                break;
            }
        }
    }
    for (c, line) in invisible_unicode(text) {
        findings.push(Finding {
            id: format!("invisible_unicode_U+{:04X}", c as u32),
            category: Category::Injection,
            severity: Severity::High,
            file: file.to_string(),
            line,
            description: format!(
                "invisible unicode character U+{:04X} (can hide instructions)",
                c as u32
            ),
        });
    }
    let shared = shared_findings(file, text, &findings);
    findings.extend(shared);
    findings.sort_by_key(|f| (f.line, std::cmp::Reverse(f.severity)));
    findings
}

/// Invisible characters with their 1-based line (each character reported once). The character
/// list is the shared scanner's (`memory::scan`), so memory and skills agree on what is hidden.
pub fn invisible_unicode(text: &str) -> Vec<(char, usize)> {
    let mut out: Vec<(char, usize)> = Vec::new();
    // A BOM at the very start is an encoding mark, not hidden text.
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut line = 1;
    for c in body.chars() {
        if c == '\n' {
            line += 1;
        } else if INVISIBLE_CHARS.contains(&c) && !out.iter().any(|(seen, _)| *seen == c) {
            out.push((c, line));
        }
    }
    out
}

/// The shared scanner's patterns for the `all` scope and the ids of our table that cover the
/// same threat. The shared scanner normalises text first (NFKC, invisible characters removed),
/// so it adds a finding only when an obfuscated spelling slipped past our table.
const SHARED_EQUIVALENTS: &[(&str, &str)] = &[
    ("prompt_injection", "prompt_injection_ignore"),
    ("exfil_curl", "env_exfil_curl"),
    ("exfil_wget", "env_exfil_wget"),
    ("read_secrets", "read_secrets_file"),
];

fn shared_findings(file: &str, text: &str, ours: &[Finding]) -> Vec<Finding> {
    crate::memory::scan::scan_patterns(text, Scope::All)
        .into_iter()
        .filter_map(|f| {
            let equivalent = SHARED_EQUIVALENTS
                .iter()
                .find(|(shared, _)| *shared == f.id)
                .map(|(_, ours)| *ours)
                .unwrap_or(f.id.as_str());
            if ours.iter().any(|o| o.id == equivalent || o.id == f.id) {
                return None;
            }
            let category = if f.id.contains("exfil") || f.id.contains("secret") {
                Category::Exfiltration
            } else {
                Category::Injection
            };
            let lower = text.to_lowercase();
            let line = lower
                .find(&f.matched.to_lowercase())
                .map(|i| line_of(&lower, i))
                .unwrap_or(0);
            Some(Finding {
                id: f.id.clone(),
                category,
                severity: Severity::Critical,
                file: file.to_string(),
                line,
                description: format!("{} (obfuscated spelling)", f.description),
            })
        })
        .collect()
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Scans a whole skill directory: every scannable file's text plus the structure checks.
pub fn scan_dir(dir: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    let structure = |id: &str, severity, file: String, description: String| Finding {
        id: id.to_string(),
        category: Category::Structure,
        severity,
        file,
        line: 0,
        description,
    };
    let mut files = 0usize;
    let mut total = 0u64;
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
        .flatten()
    {
        let rel = entry
            .path()
            .strip_prefix(dir)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        if entry.path_is_symlink() {
            let escapes = crate::security::paths::ensure_within(dir, entry.path()).is_err();
            findings.push(if escapes {
                Finding {
                    id: "symlink_escape".into(),
                    category: Category::Traversal,
                    severity: Severity::Critical,
                    file: rel,
                    line: 0,
                    description: "symlink pointing outside the skill directory".into(),
                }
            } else {
                structure(
                    "symlink",
                    Severity::Medium,
                    rel,
                    "symlink inside the skill".into(),
                )
            });
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        files += 1;
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        total += size;
        let ext = entry
            .path()
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if SUSPICIOUS_EXTENSIONS.contains(&ext.as_str()) {
            findings.push(structure(
                "suspicious_binary",
                Severity::High,
                rel.clone(),
                format!("executable or binary file type .{ext}"),
            ));
        }
        if size > MAX_FILE_BYTES {
            findings.push(structure(
                "file_too_large",
                Severity::Medium,
                rel.clone(),
                format!("{size} bytes; files above {MAX_FILE_BYTES} bytes are not scanned"),
            ));
            continue;
        }
        let scannable = SCANNABLE_EXTENSIONS.contains(&ext.as_str())
            || entry.file_name() == "SKILL.md"
            || ext.is_empty();
        if scannable && let Ok(bytes) = std::fs::read(entry.path()) {
            match String::from_utf8(bytes) {
                Ok(text) => findings.extend(scan_text(&rel, &text)),
                Err(_) if !ext.is_empty() => findings.push(structure(
                    "binary_content",
                    Severity::Medium,
                    rel,
                    "a text file type holding binary data".into(),
                )),
                Err(_) => {}
            }
        }
    }
    if files > MAX_FILES {
        findings.push(structure(
            "too_many_files",
            Severity::Medium,
            String::new(),
            format!("{files} files; a skill should have at most {MAX_FILES}"),
        ));
    }
    if total > MAX_TOTAL_BYTES {
        findings.push(structure(
            "too_large",
            Severity::Medium,
            String::new(),
            format!("{total} bytes in total; the limit is {MAX_TOTAL_BYTES}"),
        ));
    }
    findings
}

/// Any critical finding → dangerous; any high → caution; otherwise safe.
pub fn verdict(findings: &[Finding]) -> Verdict {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Critical) => Verdict::Dangerous,
        Some(Severity::High) => Verdict::Caution,
        _ => Verdict::Safe,
    }
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
                serde_json::to_value(f.category)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                f.description
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;

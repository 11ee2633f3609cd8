//! Skill identifiers and search results: what a user, the agent or `lock.json` names a hub skill
//! by, parsed into a `SourceRef` (a git repository + sub-path + ref, or an entry of an HTTP skill
//! index), and the `SkillMeta` a listing or search returns (Python Hermes's field names).
//!
//! Identifier forms (all round-trip through `SourceRef::identifier`):
//! - `owner/repo/path/to/skill[@REF]` — a GitHub repository (Python Hermes's `github` source);
//! - `URL-or-path[#sub/path][@REF]` — any repository git2 can clone: `https://…`, `file://…`, a
//!   local path (made absolute, so the lock entry works from any directory);
//! - `well-known:https://host/.well-known/skills/NAME` — an entry of an HTTP skill index.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::HubError;
pub use crate::skills::guard::Trust;

/// Repositories Python Hermes trusts (`skills_guard.TRUSTED_REPOS`).
pub const TRUSTED_REPOS: &[&str] = &[
    "openai/skills",
    "anthropics/skills",
    "huggingface/skills",
    "NVIDIA/skills",
];

/// The lower-case word for a trust level, as lock.json and the audit log write it.
pub fn trust_name(trust: Trust) -> &'static str {
    match trust {
        Trust::Builtin => "builtin",
        Trust::Trusted => "trusted",
        Trust::Community => "community",
        Trust::AgentCreated => "agent-created",
    }
}

/// The trust level for a word read back from lock.json (unknown words are community).
pub fn trust_from(name: &str) -> Trust {
    match name {
        "builtin" => Trust::Builtin,
        "trusted" => Trust::Trusted,
        "agent-created" => Trust::AgentCreated,
        _ => Trust::Community,
    }
}

/// One skill a source offers (Python Hermes's `SkillMeta`, same JSON field names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillMeta {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `github`, `git` or `well-known`.
    pub source: String,
    pub identifier: String,
    pub trust_level: String,
    #[serde(default)]
    pub repo: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub extra: Value,
}

/// Where a skill's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    Git {
        /// What git2 clones: an https/file URL or an absolute path.
        url: String,
        /// The skill's folder inside the repository ("" = the root).
        subpath: String,
        /// A branch, tag or commit; `None` = the default branch.
        rev: Option<String>,
        /// `owner/repo` when the repository is on GitHub (identifier in Python's form).
        github: Option<String>,
    },
    WellKnown {
        /// `https://host/.well-known/skills` (no trailing slash).
        base_url: String,
        name: String,
    },
}

fn bad(id: &str, why: &str) -> HubError {
    HubError::BadIdentifier(id.to_string(), why.to_string())
}

/// True for identifiers that name a URL or a filesystem path rather than `owner/repo/...`.
fn is_location(id: &str) -> bool {
    id.contains("://")
        || id.starts_with('/')
        || id.starts_with("./")
        || id.starts_with("../")
        || id.starts_with("~/")
        || id == "."
}

fn valid_segment(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits `path@rev` at the last `@` when what follows looks like a ref (no `/`).
fn split_rev(text: &str) -> (&str, Option<&str>) {
    match text.rsplit_once('@') {
        Some((head, rev)) if !rev.is_empty() && !rev.contains('/') => (head, Some(rev)),
        _ => (text, None),
    }
}

/// Normalises a sub-path inside a repository: relative, `/`-separated, no `..`.
pub fn clean_subpath(id: &str, sub: &str) -> Result<String, HubError> {
    let parts: Vec<&str> = sub
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.iter().any(|p| *p == ".." || p.contains('\\')) {
        return Err(bad(
            id,
            "the path inside the repository may not contain `..`",
        ));
    }
    Ok(parts.join("/"))
}

impl SourceRef {
    /// Parses an identifier. A bare name (no `/`) is not an identifier: the caller looks it up
    /// in the listings (`search::resolve_name`).
    pub fn parse(id: &str) -> Result<SourceRef, HubError> {
        let id = id.trim();
        if let Some(rest) = id.strip_prefix("well-known:") {
            return Self::parse_well_known(id, rest);
        }
        if (id.starts_with("http://") || id.starts_with("https://"))
            && id.contains("/.well-known/skills/")
        {
            return Self::parse_well_known(id, id);
        }
        if is_location(id) {
            let (location, fragment) = match id.split_once('#') {
                Some((l, f)) => (l, Some(f)),
                None => (id, None),
            };
            let (subpath, rev) = match fragment {
                Some(f) => split_rev(f),
                None => ("", None),
            };
            let url = if location.contains("://") {
                location.to_string()
            } else {
                absolute_path(location)
            };
            return Ok(SourceRef::Git {
                url,
                subpath: clean_subpath(id, subpath)?,
                rev: rev.map(str::to_string),
                github: None,
            });
        }
        let (path, rev) = split_rev(id);
        let mut parts = path.splitn(3, '/');
        let (Some(owner), Some(repo)) = (parts.next(), parts.next()) else {
            return Err(bad(
                id,
                "give owner/repo/path/to/skill, a git URL or path (URL#sub/path@ref), or well-known:URL",
            ));
        };
        if !valid_segment(owner) || !valid_segment(repo) {
            return Err(bad(
                id,
                "owner and repository names use letters, digits, `-`, `_` and `.`",
            ));
        }
        let repo_name = repo.trim_end_matches(".git");
        Ok(SourceRef::Git {
            url: format!("https://github.com/{owner}/{repo_name}.git"),
            subpath: clean_subpath(id, parts.next().unwrap_or(""))?,
            rev: rev.map(str::to_string),
            github: Some(format!("{owner}/{repo_name}")),
        })
    }

    fn parse_well_known(id: &str, url: &str) -> Result<SourceRef, HubError> {
        let url = url.split('#').next().unwrap_or(url);
        let Some((host, rest)) = url.split_once("/.well-known/skills/") else {
            return Err(bad(
                id,
                "a well-known identifier is https://HOST/.well-known/skills/NAME",
            ));
        };
        let name = rest.trim_end_matches("/SKILL.md").trim_matches('/');
        if name.is_empty() || name.contains('/') || name == ".." {
            return Err(bad(
                id,
                "the skill name after /.well-known/skills/ is missing or has a `/`",
            ));
        }
        Ok(SourceRef::WellKnown {
            base_url: format!("{host}/.well-known/skills"),
            name: name.to_string(),
        })
    }

    /// The canonical identifier (what lock.json records and `parse` reads back).
    pub fn identifier(&self) -> String {
        match self {
            SourceRef::Git {
                url,
                subpath,
                rev,
                github,
            } => {
                let rev = rev.as_ref().map(|r| format!("@{r}")).unwrap_or_default();
                match github {
                    Some(repo) if subpath.is_empty() => format!("{repo}{rev}"),
                    Some(repo) => format!("{repo}/{subpath}{rev}"),
                    None if subpath.is_empty() && rev.is_empty() => url.clone(),
                    None => format!("{url}#{subpath}{rev}"),
                }
            }
            SourceRef::WellKnown { base_url, name } => format!("well-known:{base_url}/{name}"),
        }
    }

    /// The source id Python Hermes records: `github`, `git` or `well-known`.
    pub fn source_id(&self) -> &'static str {
        match self {
            SourceRef::Git {
                github: Some(_), ..
            } => "github",
            SourceRef::Git { .. } => "git",
            SourceRef::WellKnown { .. } => "well-known",
        }
    }

    /// The repository or index this skill comes from (what a tap names).
    pub fn origin(&self) -> String {
        match self {
            SourceRef::Git {
                github: Some(repo), ..
            } => repo.clone(),
            SourceRef::Git { url, .. } => url.clone(),
            SourceRef::WellKnown { base_url, .. } => format!("{base_url}/index.json"),
        }
    }

    /// The last path segment: the name a skill gets when its SKILL.md does not say.
    pub fn default_name(&self) -> String {
        match self {
            SourceRef::Git { subpath, url, .. } => subpath
                .rsplit('/')
                .find(|s| !s.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| {
                    url.trim_end_matches('/')
                        .trim_end_matches(".git")
                        .rsplit(['/', ':'])
                        .next()
                        .unwrap_or("skill")
                        .to_string()
                }),
            SourceRef::WellKnown { name, .. } => name.clone(),
        }
    }
}

/// A local path made absolute (with `~` expanded) and without a trailing slash.
fn absolute_path(location: &str) -> String {
    let expanded = match location.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| Path::new(&h).join(rest))
            .unwrap_or_else(|| Path::new(location).to_path_buf()),
        None => Path::new(location).to_path_buf(),
    };
    let absolute = std::fs::canonicalize(&expanded).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(&expanded))
            .unwrap_or(expanded)
    });
    absolute.to_string_lossy().trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_round_trip() {
        for id in [
            "anthropics/skills/skills/pdf",
            "anthropics/skills/skills/pdf@v1.2",
            "openai/skills",
            "file:///tmp/repo#skills/pdf@v1",
            "https://example.com/team/skills.git#tools/lint",
            "well-known:https://example.com/.well-known/skills/pdf",
        ] {
            let parsed = SourceRef::parse(id).unwrap();
            assert_eq!(parsed.identifier(), id, "{parsed:?}");
            assert_eq!(SourceRef::parse(&parsed.identifier()).unwrap(), parsed);
        }
    }

    #[test]
    fn github_and_local_forms() {
        let r = SourceRef::parse("anthropics/skills/skills/pdf@main").unwrap();
        assert_eq!(r.source_id(), "github");
        assert_eq!(r.default_name(), "pdf");
        let SourceRef::Git { url, rev, .. } = &r else {
            panic!()
        };
        assert_eq!(url, "https://github.com/anthropics/skills.git");
        assert_eq!(rev.as_deref(), Some("main"));
        let dir = tempfile::tempdir().unwrap();
        let r = SourceRef::parse(&format!("{}#a/b", dir.path().display())).unwrap();
        assert_eq!(r.source_id(), "git");
        assert_eq!(r.default_name(), "b");
    }

    #[test]
    fn traversal_and_junk_are_refused() {
        assert!(SourceRef::parse("/tmp/repo#../etc").is_err());
        assert!(SourceRef::parse("owner/repo/../../x").is_err());
        assert!(SourceRef::parse("pdf").is_err());
        assert!(SourceRef::parse("well-known:https://h/.well-known/skills/").is_err());
        assert!(SourceRef::parse("well-known:https://h/.well-known/skills/a/b").is_err());
    }
}

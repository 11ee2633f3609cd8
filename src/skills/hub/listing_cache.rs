//! A git tap's listing as cached under `skills/.hub/index-cache/tap_<md5>.json`: what a search
//! reads on every call, so it is kept small and read without detours.
//!
//! What is per tap (repository URL, GitHub name, commit) is written once, and each skill is a
//! four-element array `[name, description, subpath, tags]`; the file is decoded straight into
//! these types (not into a generic JSON tree first). Identifier, source and trust are derived
//! when the listing is read, so a tap the user trusts later is trusted in cached results too.
//! A file in another layout (an older hermes) is treated as absent: the tap is fetched again.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::source::{SkillMeta, SourceRef, Trust, trust_name};

/// Bumped when the layout changes.
const FORMAT: u32 = 2;

/// One skill of a listing: name, description, path inside the repository, tags.
pub type Entry = (String, String, String, Vec<String>);

/// A git tap's skills at one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    format: u32,
    /// What git2 clones.
    pub url: String,
    /// `owner/repo` on GitHub.
    pub github: Option<String>,
    /// The commit listed (short form).
    pub commit: String,
    pub skills: Vec<Entry>,
}

impl Listing {
    pub fn new(url: String, github: Option<String>, commit: String, skills: Vec<Entry>) -> Self {
        Listing {
            format: FORMAT,
            url,
            github,
            commit,
            skills,
        }
    }

    /// The listing in `path` and its age; `None` when absent, unreadable or in another layout.
    pub fn read(path: &Path) -> Option<(Listing, Duration)> {
        let age = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or_default();
        let bytes = std::fs::read(path).ok()?;
        let listing: Listing = serde_json::from_slice(&bytes)
            .map_err(|e| tracing::info!(path = %path.display(), error = %e, "tap listing cache unreadable; fetching again"))
            .ok()?;
        (listing.format == FORMAT).then_some((listing, age))
    }

    /// Writes the listing to `path` (atomically). A failure is logged: the next search fetches.
    pub fn write(&self, path: &Path) {
        let written = serde_json::to_vec(self)
            .map_err(std::io::Error::other)
            .and_then(|bytes| crate::util::atomic_write(path, &bytes));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot cache a tap listing");
        }
    }

    /// The source of the skill at `subpath`.
    pub fn source(&self, subpath: &str) -> SourceRef {
        SourceRef::Git {
            url: self.url.clone(),
            subpath: subpath.to_string(),
            rev: None,
            github: self.github.clone(),
        }
    }

    /// Skill `i` as the hub's `SkillMeta` (Python Hermes's field names), with `trust`.
    pub fn meta(&self, i: usize, trust: Trust) -> SkillMeta {
        let (name, description, subpath, tags) = &self.skills[i];
        let source = self.source(subpath);
        SkillMeta {
            name: if name.is_empty() {
                source.default_name()
            } else {
                name.clone()
            },
            description: description.clone(),
            source: source.source_id().to_string(),
            identifier: source.identifier(),
            trust_level: trust_name(trust).to_string(),
            repo: Some(self.github.clone().unwrap_or_else(|| self.url.clone())),
            path: Some(subpath.clone()),
            tags: tags.clone(),
            extra: json!({"commit": self.commit}),
        }
    }

    /// Every skill as the hub's `SkillMeta`.
    pub fn metas(&self, trust: Trust) -> Vec<SkillMeta> {
        (0..self.skills.len())
            .map(|i| self.meta(i, trust))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_layouts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tap.json");
        let listing = Listing::new(
            "/srv/skills.git".into(),
            None,
            "abc123".into(),
            vec![(
                "pdf-tools".into(),
                "Fill \"forms\"".into(),
                "skills/pdf".into(),
                vec!["pdf".into()],
            )],
        );
        listing.write(&path);
        let (back, _) = Listing::read(&path).unwrap();
        assert_eq!(back, listing);
        let metas = back.metas(Trust::Trusted);
        assert_eq!(metas[0].identifier, "/srv/skills.git#skills/pdf");
        assert_eq!(metas[0].trust_level, "trusted");
        assert_eq!(metas[0].source, "git");
        assert_eq!(metas[0].extra["commit"], "abc123");
        // The previous layout (one object per skill) is not read: fetched again instead.
        std::fs::write(&path, r#"{"tap":"x","path":"","skills":[{"name":"a"}]}"#).unwrap();
        assert!(Listing::read(&path).is_none());
        std::fs::write(&path, "not json").unwrap();
        assert!(Listing::read(&path).is_none());
    }
}

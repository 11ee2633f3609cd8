//! Taps: the repositories (and HTTP skill indexes) the hub searches. `skills/.hub/taps.json` is
//! Python Hermes's file (`{"taps": [{"repo", "path"}]}`); a tap's `repo` is `owner/repo` (GitHub),
//! any git URL or path, or an index URL (`…/.well-known/skills/index.json`). We add
//! `removed_defaults`, so a user can drop one of the well-known default taps.
//!
//! Trust: a source the user configured as a tap is `trusted`; the default taps are trusted when
//! Python Hermes trusts them (`TRUSTED_REPOS`); everything else is `community`. Default taps are
//! left out when `HERMES_SKILLS_DEFAULT_TAPS=0` (tests, offline machines).
//!
//! A tap's listing (its skills' names, descriptions, paths) is cached under `index-cache/`
//! (`listing_cache`) and fetched again after the TTL.

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use super::listing_cache::Listing;
use super::source::{SkillMeta, SourceRef, TRUSTED_REPOS, Trust};
use super::{Hub, HubError, git, index};

/// Python Hermes's `GitHubSource.DEFAULT_TAPS`.
pub const DEFAULT_TAPS: &[(&str, &str)] = &[
    ("openai/skills", "skills/.curated/"),
    ("openai/skills", "skills/.system/"),
    ("anthropics/skills", "skills/"),
    ("huggingface/skills", "skills/"),
    ("NVIDIA/skills", "skills/"),
    ("garrytan/gstack", ""),
];

/// One tap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tap {
    pub repo: String,
    #[serde(default)]
    pub path: String,
    /// One of the built-in defaults (not stored in taps.json).
    #[serde(skip)]
    pub default: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TapsDoc {
    #[serde(default)]
    taps: Vec<Tap>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    removed_defaults: Vec<String>,
    #[serde(flatten)]
    extra: serde_json::Map<String, serde_json::Value>,
}

/// What a tap points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TapKind {
    Git { url: String, github: Option<String> },
    Index { index_url: String },
}

impl Tap {
    pub fn kind(&self) -> TapKind {
        let repo = self.repo.trim();
        if (repo.starts_with("http://") || repo.starts_with("https://"))
            && (repo.ends_with("/index.json") || repo.contains("/.well-known/skills"))
        {
            return TapKind::Index {
                index_url: index::index_url_for(repo),
            };
        }
        match SourceRef::parse(repo) {
            Ok(SourceRef::Git { url, github, .. }) => TapKind::Git { url, github },
            _ => TapKind::Git {
                url: repo.to_string(),
                github: None,
            },
        }
    }
}

fn load_doc(hub: &Hub) -> Result<TapsDoc, HubError> {
    let path = hub.taps_path();
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Ok(TapsDoc::default()),
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            HubError::Lock(format!(
                "{} is not valid ({e}); fix it or move it away",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TapsDoc::default()),
        Err(e) => Err(HubError::io("read", &path, e)),
    }
}

fn save_doc(hub: &Hub, doc: &TapsDoc) -> Result<(), HubError> {
    hub.ensure_dirs()?;
    let path = hub.taps_path();
    let mut text = serde_json::to_string_pretty(doc)
        .map_err(|e| HubError::Lock(format!("cannot serialise taps: {e}")))?;
    text.push('\n');
    crate::util::atomic_write(&path, text.as_bytes()).map_err(|e| HubError::io("write", &path, e))
}

/// The taps the user added (taps.json).
pub fn user_taps(hub: &Hub) -> Result<Vec<Tap>, HubError> {
    Ok(load_doc(hub)?.taps)
}

/// Every tap searched: the defaults still wanted, then the user's.
pub fn all(hub: &Hub) -> Result<Vec<Tap>, HubError> {
    let doc = load_doc(hub)?;
    let mut taps = Vec::new();
    if hub.default_taps {
        taps.extend(
            DEFAULT_TAPS
                .iter()
                .filter(|(repo, _)| !doc.removed_defaults.iter().any(|r| r == repo))
                .map(|(repo, path)| Tap {
                    repo: repo.to_string(),
                    path: path.to_string(),
                    default: true,
                }),
        );
    }
    taps.extend(doc.taps);
    Ok(taps)
}

/// A tap's `repo` as stored: `owner/repo`, a URL, or an absolute path.
fn normalise(repo: &str) -> String {
    let repo = repo.trim().trim_end_matches('/');
    match SourceRef::parse(repo) {
        Ok(SourceRef::Git {
            url, github: None, ..
        }) if !repo.contains("://") => url,
        _ => repo.to_string(),
    }
}

/// Adds a tap; false when it was already there.
pub fn add(hub: &Hub, repo: &str, path: &str) -> Result<bool, HubError> {
    let repo = normalise(repo);
    let tap = Tap {
        repo: repo.clone(),
        path: path.to_string(),
        default: false,
    };
    if let TapKind::Git { github: None, url } = tap.kind()
        && !url.contains("://")
        && !std::path::Path::new(&url).exists()
    {
        return Err(HubError::NotFound(format!(
            "{url} does not exist; give owner/repo, a git URL, a repository path or an index URL"
        )));
    }
    let mut doc = load_doc(hub)?;
    let was_removed_default = doc.removed_defaults.contains(&repo);
    doc.removed_defaults.retain(|r| *r != repo);
    if doc.taps.iter().any(|t| t.repo == repo && t.path == path) {
        return Ok(false);
    }
    if !(was_removed_default && DEFAULT_TAPS.iter().any(|(r, p)| *r == repo && *p == path)) {
        doc.taps.push(tap);
    }
    save_doc(hub, &doc)?;
    Ok(true)
}

/// Removes a tap (a default one is remembered as removed); false when there was none.
pub fn remove(hub: &Hub, repo: &str) -> Result<bool, HubError> {
    let repo = normalise(repo);
    let mut doc = load_doc(hub)?;
    let before = doc.taps.len();
    doc.taps.retain(|t| t.repo != repo);
    let mut removed = doc.taps.len() != before;
    if DEFAULT_TAPS.iter().any(|(r, _)| *r == repo) && !doc.removed_defaults.contains(&repo) {
        doc.removed_defaults.push(repo);
        removed = true;
    }
    if removed {
        save_doc(hub, &doc)?;
    }
    Ok(removed)
}

/// Does `source` come from `tap` (the same repository or index)?
fn offers_source(tap: &Tap, source: &SourceRef) -> bool {
    let is = |origin: &str| match tap.kind() {
        TapKind::Git { url, github } => github.as_deref() == Some(origin) || url == origin,
        TapKind::Index { index_url } => index_url == origin,
    };
    is(&source.origin()) || matches!(source, SourceRef::Git { url, .. } if is(url))
}

/// How much a source is trusted (see the module header).
pub fn trust_for(hub: &Hub, source: &SourceRef) -> Trust {
    let user = user_taps(hub).unwrap_or_default();
    match source {
        SourceRef::Git {
            github: Some(repo), ..
        } if TRUSTED_REPOS.contains(&repo.as_str()) => Trust::Trusted,
        _ if user.iter().any(|t| offers_source(t, source)) => Trust::Trusted,
        _ => Trust::Community,
    }
}

/// The installed hub skills (lock.json names) whose source is the tap `repo`. Removing a tap
/// leaves them installed; `check` and `update` keep reading their recorded source, which is no
/// longer a configured tap (so no longer `trusted` by that right).
pub fn installed_from(hub: &Hub, repo: &str) -> Vec<String> {
    let tap = Tap {
        repo: normalise(repo),
        path: String::new(),
        default: false,
    };
    let Ok(lock) = super::LockFile::load(&hub.lock_path()) else {
        return Vec::new();
    };
    lock.installed
        .iter()
        .filter(|(_, e)| SourceRef::parse(&e.identifier).is_ok_and(|s| offers_source(&tap, &s)))
        .map(|(name, _)| name.clone())
        .collect()
}

fn cache_path(hub: &Hub, tap: &Tap) -> std::path::PathBuf {
    let digest = Md5::digest(format!("{}\n{}", tap.repo, tap.path).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hub.cache_dir().join(format!("tap_{hex}.json"))
}

/// What one tap offers: a git tap's compact listing (the hub's `SkillMeta` is built only for
/// the entries a caller keeps), or an index's entries.
pub enum Offer {
    Git { listing: Listing, trust: Trust },
    Metas(Vec<SkillMeta>),
}

impl Offer {
    pub fn len(&self) -> usize {
        match self {
            Offer::Git { listing, .. } => listing.skills.len(),
            Offer::Metas(metas) => metas.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Name, description and tags of entry `i` (what a search matches against).
    pub fn summary(&self, i: usize) -> (std::borrow::Cow<'_, str>, &str, &[String]) {
        match self {
            Offer::Git { listing, .. } => {
                let (name, description, subpath, tags) = &listing.skills[i];
                let name = if name.is_empty() {
                    listing.source(subpath).default_name().into()
                } else {
                    name.as_str().into()
                };
                (name, description, tags)
            }
            Offer::Metas(metas) => {
                let m = &metas[i];
                (m.name.as_str().into(), &m.description, &m.tags)
            }
        }
    }

    /// Entry `i` as the hub's `SkillMeta`.
    pub fn meta(&self, i: usize) -> SkillMeta {
        match self {
            Offer::Git { listing, trust } => listing.meta(i, *trust),
            Offer::Metas(metas) => metas[i].clone(),
        }
    }

    pub fn into_metas(self) -> Vec<SkillMeta> {
        match self {
            Offer::Git { listing, trust } => listing.metas(trust),
            Offer::Metas(metas) => metas,
        }
    }
}

/// The skills a tap offers: from the cache when fresh, else fetched (a failed fetch falls back
/// to a stale cache).
pub fn listing(hub: &Hub, tap: &Tap, refresh: bool) -> Result<Vec<SkillMeta>, HubError> {
    offer(hub, tap, refresh).map(Offer::into_metas)
}

/// [`listing`] without building every entry.
pub fn offer(hub: &Hub, tap: &Tap, refresh: bool) -> Result<Offer, HubError> {
    if let TapKind::Index { index_url } = tap.kind() {
        let trust = if tap.default {
            Trust::Community
        } else {
            Trust::Trusted
        };
        return Ok(Offer::Metas(
            index::load(hub, &index_url, refresh)?.listing(trust),
        ));
    }
    let cache = cache_path(hub, tap);
    // Trust is the same for every skill of a repository (it depends on the origin only).
    let offer = |listing: Listing| {
        let trust = trust_for(hub, &listing.source(""));
        Offer::Git { listing, trust }
    };
    let cached = if refresh { None } else { Listing::read(&cache) };
    let cached = match cached {
        Some((listing, age)) if age <= hub.ttl => return Ok(offer(listing)),
        other => other,
    };
    match fetch_listing(hub, tap) {
        Ok(listing) => {
            listing.write(&cache);
            Ok(offer(listing))
        }
        Err(e) => match cached.or_else(|| Listing::read(&cache)) {
            Some((listing, _)) => {
                tracing::warn!(tap = %tap.repo, error = %e, "using a stale tap listing");
                Ok(offer(listing))
            }
            None => Err(e),
        },
    }
}

fn fetch_listing(hub: &Hub, tap: &Tap) -> Result<Listing, HubError> {
    let TapKind::Git { url, github } = tap.kind() else {
        return Ok(Listing::new(String::new(), None, String::new(), Vec::new()));
    };
    let mirror = git::mirror(hub, &url, true)?;
    let commit = mirror.resolve(None)?;
    let base = tap.path.trim_matches('/');
    let found = mirror.list_skills(&commit, base)?;
    let skills = found
        .into_iter()
        .map(|(subpath, text)| {
            let (name, description, tags) = git::summary(&text).unwrap_or_default();
            (name.unwrap_or_default(), description, subpath, tags)
        })
        .collect();
    Ok(Listing::new(url, github, git::short(commit.id()), skills))
}

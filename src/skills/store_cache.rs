//! The store's parse cache: parsed SKILL.md frontmatter by path, reused while the file's size
//! and mtime are unchanged — in memory for the life of a `SkillStore` (and its clones), and, for
//! the home store, on disk in `skills/.hub/store-index.json` so that a new process does not
//! re-parse every SKILL.md before its first model request. The file keeps only what a scan
//! reads (`Summary`: name, description, platforms, conditional display), so it stays small and
//! quick to decode (a new process reads all of it); a parse from the file therefore carries
//! only those fields, and `SkillInfo::frontmatter` reads the rest from SKILL.md.
//!
//! Why `.hub/`: Python Hermes never looks for skills under `.hub` (it is in its excluded
//! directories) and keeps its own hub files there under other names, so the file is invisible
//! to it and shared by every hermes process of the home.
//!
//! The file also keeps the scanner's verdicts on descriptions (`verdict`: by SHA-256 of the
//! text), so a new process does not compile the scanner's rule set — the largest single cost
//! before the first model request — to re-check descriptions already checked. Verdicts are
//! trusted only from the same binary (`build`: the executable's size and mtime): a new build may
//! carry new rules, and then every description is scanned again.
//!
//! Correctness before speed:
//! - an entry is used only when path, size and mtime (nanoseconds) all match;
//! - a file modified less than `RACY_SECS` before it was parsed is "racy" (a second edit in the
//!   same mtime tick, with the same size, would be invisible): it is re-parsed on every lookup
//!   and never written to disk, like git's racily-clean index entries;
//! - entries a full scan did not see (deleted skills) are dropped before the file is written;
//! - a file that cannot be read or decoded is logged and rebuilt, never an error; a file from
//!   another format version or hermes version is ignored (the parser may have changed).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::skills::skill::{Frontmatter, SkillDoc};
use crate::util::path_key::{PathKey, PathMap, path_bytes};

/// The persistent index, relative to the skills directory.
pub const INDEX_FILE: &str = ".hub/store-index.json";
/// Bumped when the entry layout changes.
const FORMAT: u32 = 2;
/// A file changed this recently before its parse may change again unseen in the same tick.
const RACY_SECS: u64 = 2;

/// The parse of one SKILL.md: the frontmatter (the body is not kept: `SkillInfo::content`
/// reads the file) or why it is unusable.
pub type Parsed = Result<Arc<SkillDoc>, String>;

#[derive(Debug, Clone)]
struct Entry {
    mtime_ns: Option<u128>,
    len: u64,
    /// Safe to reuse on an equal (len, mtime): the file was older than `RACY_SECS` when parsed.
    settled: bool,
    parsed: Parsed,
    /// The last scan generation that met the file (see `ParseCache::begin_scan`).
    seen: u64,
}

/// What the cache file holds.
#[derive(Serialize, Deserialize)]
struct OnDisk {
    format: u32,
    hermes: String,
    entries: Vec<DiskEntry>,
    #[serde(default)]
    dirs: Vec<DiskDir>,
    /// The binary that wrote `verdicts` (see [`build_id`]); empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    build: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    verdicts: Vec<DiskVerdict>,
}

/// The scanner's verdict on one description: withheld with a reason, or safe.
#[derive(Serialize, Deserialize)]
struct DiskVerdict {
    /// Hex SHA-256 of the description text.
    sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    withheld: Option<String>,
}

/// A directory's subdirectories (and symlinks, which may point at one) at one mtime.
#[derive(Serialize, Deserialize)]
struct DiskDir {
    path: PathBuf,
    mtime_ns: u128,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subdirs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    links: Vec<String>,
}

/// The entries of a directory a scan descends into: subdirectory names and symlink names
/// (a symlink is checked each time: its target can change without the directory changing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirListing {
    pub subdirs: Vec<String>,
    pub links: Vec<String>,
}

#[derive(Debug, Clone)]
struct DirEntry {
    mtime_ns: Option<u128>,
    settled: bool,
    listing: Arc<DirListing>,
    seen: u64,
}

#[derive(Serialize, Deserialize)]
struct DiskEntry {
    path: PathBuf,
    len: u64,
    mtime_ns: u128,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What the store's scan reads from a frontmatter: the list and the prompt index (name,
/// description), the platform filter and conditional display. The rest (tags, requirements,
/// metadata) is read from the file by whoever needs it (`SkillInfo::frontmatter`).
#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct Summary {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    platforms: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    requires_toolsets: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fallback_for_toolsets: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    requires_tools: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fallback_for_tools: Vec<String>,
}

/// `fm` reduced to what the store keeps (the same whether parsed now or read from the file).
pub fn summary_only(fm: &Frontmatter) -> Frontmatter {
    Summary::of(fm).into_frontmatter()
}

impl Summary {
    fn of(fm: &Frontmatter) -> Summary {
        Summary {
            name: fm.name.clone(),
            description: fm.description.clone(),
            platforms: fm.platforms.clone(),
            requires_toolsets: fm.requires_toolsets.clone(),
            fallback_for_toolsets: fm.fallback_for_toolsets.clone(),
            requires_tools: fm.requires_tools.clone(),
            fallback_for_tools: fm.fallback_for_tools.clone(),
        }
    }

    fn into_frontmatter(self) -> Frontmatter {
        Frontmatter {
            name: self.name,
            description: self.description,
            platforms: self.platforms,
            requires_toolsets: self.requires_toolsets,
            fallback_for_toolsets: self.fallback_for_toolsets,
            requires_tools: self.requires_tools,
            fallback_for_tools: self.fallback_for_tools,
            ..Frontmatter::default()
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: PathMap<Entry>,
    /// Directory listings by path, reused while the directory's mtime is unchanged (adding,
    /// removing or renaming an entry changes it), so an unchanged tree is not read again.
    dirs: PathMap<DirEntry>,
    /// Scans started so far: an entry met by a scan carries its generation, and a finished
    /// scan drops what neither it nor a later scan met (deleted skills).
    generation: u64,
    /// The persistent file, for the home store; `None` keeps the cache in memory only.
    file: Option<PathBuf>,
    /// The file has been read (once per cache).
    loaded: bool,
    /// Something changed since the file was read or written.
    dirty: bool,
    /// Scanner verdicts by SHA-256 of the text: `None` safe, `Some(reason)` withheld.
    verdicts: HashMap<[u8; 32], Option<String>>,
    /// Verdicts asked for by this process (the others are dropped when the table outgrows
    /// the skills it could be about).
    used_verdicts: HashSet<[u8; 32]>,
    /// This binary's identity, when the file is persistent and it can be read.
    build: Option<String>,
}

/// Parsed SKILL.md files by path; shared by a store and its clones.
#[derive(Debug, Clone, Default)]
pub struct ParseCache {
    inner: Arc<Mutex<Inner>>,
}

fn mtime_ns(meta: &std::fs::Metadata) -> Option<u128> {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
}

/// True when the file was modified at least `RACY_SECS` before `now`.
fn settled(mtime_ns: Option<u128>, now: SystemTime) -> bool {
    let Some(mtime) = mtime_ns else { return false };
    let Ok(now) = now.duration_since(UNIX_EPOCH) else {
        return false;
    };
    mtime + Duration::from_secs(RACY_SECS).as_nanos() <= now.as_nanos()
}

impl ParseCache {
    /// A cache that persists in `file` (read on first use, written by `finish_scan`).
    pub fn persistent(file: PathBuf) -> ParseCache {
        let cache = ParseCache::default();
        cache.lock().file = Some(file);
        cache
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The parse of `path`, from the cache when size and mtime match, else from `parse`.
    pub fn get_or_parse(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
        parse: impl FnOnce() -> Parsed,
    ) -> Parsed {
        let mtime = mtime_ns(meta);
        let len = meta.len();
        {
            let mut inner = self.lock();
            inner.load_once();
            let generation = inner.generation;
            if let Some(hit) = inner.entries.get_mut(path_bytes(path))
                && hit.settled
                && hit.mtime_ns == mtime
                && hit.len == len
            {
                hit.seen = generation;
                return hit.parsed.clone();
            }
        }
        let parsed = parse();
        let mut inner = self.lock();
        let settled = settled(mtime, SystemTime::now());
        let unchanged = inner
            .entries
            .get(path_bytes(path))
            .is_some_and(|old| old.mtime_ns == mtime && old.len == len && old.settled == settled);
        if !unchanged {
            inner.dirty = true;
        }
        let seen = inner.generation;
        inner.entries.insert(
            PathKey::from(path),
            Entry {
                mtime_ns: mtime,
                len,
                settled,
                parsed: parsed.clone(),
                seen,
            },
        );
        parsed
    }

    /// The cached listing of `dir` (whose own metadata, not following a symlink, is `meta`)
    /// when its mtime still matches.
    pub fn cached_dir(&self, dir: &Path, meta: &std::fs::Metadata) -> Option<Arc<DirListing>> {
        let mtime = mtime_ns(meta);
        let mut inner = self.lock();
        inner.load_once();
        let generation = inner.generation;
        let hit = inner
            .dirs
            .get_mut(path_bytes(dir))
            .filter(|hit| hit.settled && hit.mtime_ns == mtime)?;
        hit.seen = generation;
        Some(hit.listing.clone())
    }

    /// Records the listing of `dir` just read (names must be UTF-8: the file is JSON).
    pub fn remember_dir(&self, dir: &Path, meta: &std::fs::Metadata, listing: DirListing) {
        let mtime = mtime_ns(meta);
        let settled = settled(mtime, SystemTime::now());
        let mut inner = self.lock();
        let unchanged = inner.dirs.get(path_bytes(dir)).is_some_and(|old| {
            old.mtime_ns == mtime && old.settled == settled && *old.listing == listing
        });
        if !unchanged {
            inner.dirty = true;
        }
        let seen = inner.generation;
        inner.dirs.insert(
            PathKey::from(dir),
            DirEntry {
                mtime_ns: mtime,
                settled,
                listing: Arc::new(listing),
                seen,
            },
        );
    }

    /// The scanner's verdict on `text` (`None`: it may be shown), remembered by the text's
    /// SHA-256; `scan` runs only for a text not seen before (by this binary).
    pub fn verdict(&self, text: &str, scan: impl FnOnce() -> Option<String>) -> Option<String> {
        let key = verdict_key(text);
        {
            let mut inner = self.lock();
            inner.load_once();
            inner.used_verdicts.insert(key);
            if let Some(hit) = inner.verdicts.get(&key) {
                return hit.clone();
            }
        }
        let verdict = scan();
        let mut inner = self.lock();
        inner.verdicts.insert(key, verdict.clone());
        if inner.build.is_some() {
            inner.dirty = true;
        }
        verdict
    }

    /// Starts a full scan: what the scan meets from now on is marked with the returned
    /// generation, for `finish_scan`.
    pub fn begin_scan(&self) -> u64 {
        let mut inner = self.lock();
        inner.load_once();
        inner.generation += 1;
        inner.generation
    }

    /// After the full scan that `begin_scan` returned `generation` for: forgets the files and
    /// directories neither it nor a scan started since met (`save` then writes the file).
    pub fn finish_scan(&self, generation: u64) {
        let mut inner = self.lock();
        let before = inner.entries.len() + inner.dirs.len();
        inner.entries.retain(|_, e| e.seen >= generation);
        inner.dirs.retain(|_, d| d.seen >= generation);
        if inner.entries.len() + inner.dirs.len() != before {
            inner.dirty = true;
        }
    }

    /// Writes the file if anything changed since it was read or written (new verdicts after
    /// the system prompt's index was rendered). A failure is logged, never an error.
    pub fn save(&self) {
        let (file, bytes) = {
            let mut inner = self.lock();
            let Some(file) = inner.file.clone() else {
                return;
            };
            if !inner.dirty {
                return;
            }
            inner.dirty = false;
            (file, inner.encode())
        };
        let Some(bytes) = bytes else { return };
        let write = file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::util::atomic_write(&file, &bytes));
        if let Err(e) = write {
            tracing::warn!(path = %file.display(), error = %e, "cannot save the skill index cache; the next process parses the skills again");
        }
    }
}

impl Inner {
    /// Reads the persistent file once. Unreadable or foreign → start empty (logged).
    fn load_once(&mut self) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        if self.file.is_none() {
            return;
        }
        self.build = build_id();
        let Some(file) = &self.file else { return };
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                tracing::warn!(path = %file.display(), error = %e, "cannot read the skill index cache; rebuilding it");
                self.dirty = true;
                return;
            }
        };
        let disk: OnDisk = match serde_json::from_slice(&bytes) {
            Ok(disk) => disk,
            Err(e) => {
                tracing::warn!(path = %file.display(), error = %e, "the skill index cache is corrupt; rebuilding it");
                self.dirty = true;
                return;
            }
        };
        if disk.format != FORMAT || disk.hermes != env!("CARGO_PKG_VERSION") {
            tracing::info!(path = %file.display(), "the skill index cache is from another hermes version; rebuilding it");
            self.dirty = true;
            return;
        }
        if self.build.as_deref() == Some(disk.build.as_str()) {
            for v in disk.verdicts {
                if let Some(key) = parse_key(&v.sha256) {
                    self.verdicts.insert(key, v.withheld);
                }
            }
        } else if !disk.verdicts.is_empty() {
            // Another binary's verdicts (its rules may differ): scanned again, then rewritten.
            self.dirty = true;
        }
        for d in disk.dirs {
            self.dirs.insert(
                PathKey::from(d.path),
                DirEntry {
                    seen: 0,
                    mtime_ns: Some(d.mtime_ns),
                    settled: true,
                    listing: Arc::new(DirListing {
                        subdirs: d.subdirs,
                        links: d.links,
                    }),
                },
            );
        }
        for e in disk.entries {
            let parsed = match (e.summary, e.error) {
                (Some(summary), None) => Ok(Arc::new(SkillDoc {
                    frontmatter: summary.into_frontmatter(),
                    body: String::new(),
                })),
                (None, Some(error)) => Err(error),
                // Neither or both: not something we wrote; parse that file again.
                _ => continue,
            };
            self.entries.insert(
                PathKey::from(e.path),
                Entry {
                    seen: 0,
                    mtime_ns: Some(e.mtime_ns),
                    len: e.len,
                    settled: true,
                    parsed,
                },
            );
        }
    }

    /// The settled entries as the file's bytes (`None` if encoding fails, logged).
    fn encode(&self) -> Option<Vec<u8>> {
        let mut entries: Vec<DiskEntry> = self
            .entries
            .iter()
            // JSON holds UTF-8 paths only; another path is simply parsed again next time.
            .filter(|(path, e)| e.settled && path.path().to_str().is_some())
            .filter_map(|(path, e)| {
                Some(DiskEntry {
                    path: path.path().to_path_buf(),
                    len: e.len,
                    mtime_ns: e.mtime_ns?,
                    summary: e.parsed.as_ref().ok().map(|d| Summary::of(&d.frontmatter)),
                    error: e.parsed.as_ref().err().cloned(),
                })
            })
            .collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let mut dirs: Vec<DiskDir> = self
            .dirs
            .iter()
            .filter(|(path, d)| d.settled && path.path().to_str().is_some())
            .filter_map(|(path, d)| {
                Some(DiskDir {
                    path: path.path().to_path_buf(),
                    mtime_ns: d.mtime_ns?,
                    subdirs: d.listing.subdirs.clone(),
                    links: d.listing.links.clone(),
                })
            })
            .collect();
        dirs.sort_by(|a, b| a.path.cmp(&b.path));
        let (build, verdicts) = match &self.build {
            Some(build) => (build.clone(), self.disk_verdicts()),
            None => (String::new(), Vec::new()),
        };
        let disk = OnDisk {
            format: FORMAT,
            hermes: env!("CARGO_PKG_VERSION").to_string(),
            entries,
            dirs,
            build,
            verdicts,
        };
        serde_json::to_vec(&disk)
            .map_err(|e| tracing::warn!(error = %e, "cannot encode the skill index cache"))
            .ok()
    }
}

impl Inner {
    /// The verdicts to write, sorted: all of them while the table is small for the skills it
    /// serves, else only those this process used (descriptions since edited or removed go).
    fn disk_verdicts(&self) -> Vec<DiskVerdict> {
        let keep_all = self.verdicts.len() <= 2 * self.entries.len() + 64;
        let mut out: Vec<DiskVerdict> = self
            .verdicts
            .iter()
            .filter(|(key, _)| keep_all || self.used_verdicts.contains(*key))
            .map(|(key, withheld)| DiskVerdict {
                sha256: hex(key),
                withheld: withheld.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        out
    }
}

/// The verdict key of a description (the origin is part of it: a verdict is per origin).
fn verdict_key(text: &str) -> [u8; 32] {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"skill-description\0");
    hasher.update(text.as_bytes());
    hasher.finalize().into()
}

fn hex(key: &[u8; 32]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

/// This binary's identity: the executable's size and mtime. Verdicts written by another build
/// are not trusted (its scanner rules may differ); `None` (no readable executable) keeps
/// verdicts in memory only.
fn build_id() -> Option<String> {
    let meta = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
    Some(format!("{}-{}", meta.len(), mtime_ns(&meta)?))
}

#[cfg(test)]
#[path = "store_cache_tests.rs"]
mod tests;

//! `SkillStore`: finds skills under `$HERMES_HOME/skills` and `skills.external_dirs`, parses them
//! through a cache keyed by (path, size, mtime) so a re-scan only re-reads what changed
//! (`store_cache`: shared by the store and its clones — `Services` holds the one the process
//! shares — and, for the home store, persisted in `skills/.hub/store-index.json` so a new process
//! does not re-parse every SKILL.md), and answers the questions of the three disclosure tiers:
//! the list, one skill with its linked files and readiness, and one linked file.
//!
//! Discovery follows Python Hermes (`iter_skill_index_files`): every directory holding a
//! SKILL.md is a skill, including one nested inside another skill's folder
//! (`dogfood/adversarial-ux-test/`), except below a skill's own supporting directories
//! (`references/ templates/ scripts/ assets/`), which hold data, not skills.
//!
//! A broken SKILL.md never breaks the store: it is reported as invalid with the reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;

use crate::skills::skill::{self, SkillDoc};
pub use crate::skills::skill_info::Readiness;
use crate::skills::store_cache::{self, ParseCache};

/// Directories never searched for skills.
const EXCLUDED_DIRS: &[&str] = &[
    ".git",
    ".github",
    ".hub",
    ".archive",
    ".venv",
    "venv",
    "node_modules",
    "site-packages",
    "__pycache__",
    ".tox",
    ".nox",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
];
/// A skill's supporting directories (never searched for nested skills).
pub const SUPPORT_DIRS: &[&str] = &["references", "templates", "scripts", "assets"];
/// Also listed as linked files (hub skills use it), but skill_manage never writes there.
pub(super) const EXTRA_LINKED_DIRS: &[&str] = &["examples"];
/// How deep below a root a SKILL.md may be (root/category/skill/SKILL.md is depth 3).
const MAX_DEPTH: usize = 6;

/// One usable skill.
#[derive(Debug, Clone)]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    /// First path segment under the root, when the skill sits in a category directory.
    pub category: Option<String>,
    /// The skill directory.
    pub dir: PathBuf,
    /// True for skills from `skills.external_dirs` (read-only for hermes).
    pub external: bool,
    /// What the store keeps of the frontmatter: name, description, platforms and the
    /// conditional-display fields (`store_cache::summary_only`); `doc.body` is empty.
    /// `frontmatter()` reads the whole frontmatter, `content()` the whole file.
    pub doc: Arc<SkillDoc>,
}

/// A SKILL.md that could not be used, and why.
#[derive(Debug, Clone)]
pub struct InvalidSkill {
    /// The directory name.
    pub name: String,
    pub category: Option<String>,
    pub path: PathBuf,
    pub error: String,
}

/// What a scan has met so far across roots: skill names (the first wins).
struct Found<'a> {
    seen: &'a mut BTreeSet<String>,
}

/// The result of a scan.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Visible skills (enabled, for this platform), sorted by category then name.
    pub skills: Vec<Arc<SkillInfo>>,
    pub invalid: Vec<InvalidSkill>,
    /// Category → description (from `DESCRIPTION.md`).
    pub categories: BTreeMap<String, Option<String>>,
    /// Names hidden by `skills.disabled` or the platform filter.
    pub hidden: Vec<String>,
}

/// Where skills are looked up, and which are switched off.
#[derive(Debug, Clone)]
pub struct SkillStore {
    home_root: PathBuf,
    external: Vec<PathBuf>,
    disabled: BTreeSet<String>,
    os: &'static str,
    /// Every skill, whatever `skills.disabled` and `platforms` say (audits).
    unfiltered: bool,
    cache: ParseCache,
}

impl SkillStore {
    /// The store for `$HERMES_HOME/skills` + `skills.external_dirs`, honouring `skills.disabled`
    /// and `skills.platform_disabled.cli`.
    pub fn from_config(config: &Config) -> Self {
        let section = &config.file.skills;
        let external = section
            .external_dirs
            .iter()
            .flatten()
            .map(|d| expand_home(d))
            .collect();
        let mut disabled: BTreeSet<String> = section.disabled.iter().flatten().cloned().collect();
        disabled.extend(
            section
                .platform_disabled
                .as_ref()
                .and_then(|p| p.get("cli"))
                .into_iter()
                .flatten()
                .cloned(),
        );
        SkillStore {
            home_root: config.home.skills_dir(),
            external,
            disabled,
            os: current_os(),
            unfiltered: false,
            cache: ParseCache::persistent(config.home.skills_dir().join(store_cache::INDEX_FILE)),
        }
    }

    /// A store over one root (tests, benchmarks, `skills audit PATH`).
    pub fn new(home_root: impl Into<PathBuf>) -> Self {
        SkillStore {
            home_root: home_root.into(),
            external: Vec::new(),
            disabled: BTreeSet::new(),
            os: current_os(),
            unfiltered: false,
            cache: ParseCache::default(),
        }
    }

    /// The same store showing every skill, including those for other platforms or disabled
    /// (an audit must see what a user could switch on).
    pub fn unfiltered(mut self) -> Self {
        self.unfiltered = true;
        self
    }

    /// The same store with another parse cache (e.g. a persistent one over a root).
    pub fn with_cache(mut self, cache: ParseCache) -> Self {
        self.cache = cache;
        self
    }

    pub fn home_root(&self) -> &Path {
        &self.home_root
    }

    /// The parse cache (tests look inside).
    #[cfg(test)]
    pub(crate) fn parse_cache(&self) -> &ParseCache {
        &self.cache
    }

    /// Writes the persistent parse cache if something changed since the last scan wrote it.
    pub fn save_cache(&self) {
        self.cache.save();
    }

    /// Why the guard withholds `description` from the model (`None`: it may be shown), from
    /// the verdict this store remembers for the same text, else from a scan.
    pub fn screen(&self, description: &str) -> Option<String> {
        self.cache.verdict(description, || {
            crate::skills::index::scan_reason(description)
        })
    }

    /// Walks every root; parses only SKILL.md files that changed since the last scan (or, with
    /// the persistent index, since any process last parsed them).
    pub fn scan(&self) -> Scan {
        let scan = self.scan_unsaved();
        self.cache.save();
        scan
    }

    /// `scan` without writing the persistent index: the caller calls `save_cache` once it has
    /// also asked for the verdicts it needs (a first start then writes the file once, not twice).
    pub fn scan_unsaved(&self) -> Scan {
        let mut scan = Scan::default();
        let mut seen = BTreeSet::new();
        let generation = self.cache.begin_scan();
        let roots = std::iter::once((&self.home_root, false))
            .chain(self.external.iter().map(|r| (r, true)));
        for (root, external) in roots {
            let mut found = Found { seen: &mut seen };
            self.scan_root(root, external, &mut found, &mut scan);
        }
        self.cache.finish_scan(generation);
        scan.skills
            .sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));
        scan
    }

    fn scan_root(&self, root: &Path, external: bool, found: &mut Found, scan: &mut Scan) {
        if !root.is_dir() {
            return;
        }
        // Depth first, children in file-name order (an earlier skill wins a duplicate name).
        // Symlinks are not descended into (following costs a stat per entry); a symlink to a
        // skill directory still counts as a skill below. Unchanged directories are not read
        // again: their listing comes from the cache (one stat instead of a read).
        let Ok(root_meta) = std::fs::metadata(root) else {
            return;
        };
        let root_is_skill = std::fs::symlink_metadata(root.join("SKILL.md")).is_ok();
        // (directory, depth, whether its parent holds a SKILL.md)
        let mut stack: Vec<(PathBuf, usize, bool)> = self
            .children(root, &root_meta)
            .into_iter()
            .rev()
            .map(|p| (p, 1, root_is_skill))
            .collect();
        while let Some((path, depth, in_skill)) = stack.pop() {
            let dir_name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // A supporting directory is data only directly inside a skill; elsewhere
            // (`skills/scripts/foo/`) it is an ordinary category, as in Python Hermes. Decided
            // by name before any stat: most skipped directories cost nothing.
            if EXCLUDED_DIRS.contains(&dir_name.as_str())
                || (in_skill
                    && (SUPPORT_DIRS.contains(&dir_name.as_str())
                        || EXTRA_LINKED_DIRS.contains(&dir_name.as_str())))
            {
                continue;
            }
            let own = std::fs::symlink_metadata(&path).ok();
            let real_dir = own.as_ref().is_some_and(|m| m.is_dir());
            let is_dir = real_dir || std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
            if !is_dir {
                continue;
            }
            let is_skill = self.visit(root, &path, depth, dir_name, external, found, scan);
            // No skip after a skill: it may hold nested skills (its supporting directories are
            // skipped above).
            if let Some(meta) = own.as_ref().filter(|_| real_dir && depth < MAX_DEPTH) {
                let children = self.children(&path, meta);
                stack.extend(children.into_iter().rev().map(|p| (p, depth + 1, is_skill)));
            }
        }
        // Categories that only hold invalid or hidden skills are not worth listing.
        let used: BTreeSet<&String> = scan
            .skills
            .iter()
            .filter_map(|s| s.category.as_ref())
            .collect();
        scan.categories.retain(|c, _| used.contains(c));
    }

    /// The subdirectories and symlinks of the real directory `dir`, sorted by name: from the
    /// cache when the directory's mtime is unchanged, else read (and remembered).
    fn children(&self, dir: &Path, meta: &std::fs::Metadata) -> Vec<PathBuf> {
        if let Some(listing) = self.cache.cached_dir(dir, meta) {
            let mut names: Vec<&String> = listing.subdirs.iter().chain(&listing.links).collect();
            names.sort();
            return names.into_iter().map(|n| dir.join(n)).collect();
        }
        let Ok(read) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut listing = store_cache::DirListing::default();
        let mut paths = Vec::new();
        let mut utf8 = true;
        for entry in read.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if !(kind.is_dir() || kind.is_symlink()) {
                continue;
            }
            match entry.file_name().into_string() {
                Ok(name) if kind.is_dir() => listing.subdirs.push(name),
                Ok(name) => listing.links.push(name),
                Err(_) => utf8 = false,
            }
            paths.push(entry.path());
        }
        // Names that are not UTF-8 cannot be written to the (JSON) cache: read every time.
        if utf8 {
            listing.subdirs.sort();
            listing.links.sort();
            self.cache.remember_dir(dir, meta, listing);
        }
        paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        paths
    }

    /// One directory of the walk: a skill (valid or not), a category, or neither. True when
    /// it holds a SKILL.md (its supporting directories are then data, not categories).
    #[allow(clippy::too_many_arguments)]
    fn visit(
        &self,
        root: &Path,
        path: &Path,
        depth: usize,
        dir_name: String,
        external: bool,
        found: &mut Found,
        scan: &mut Scan,
    ) -> bool {
        let category = category_of(root, path);
        let skill_md = path.join("SKILL.md");
        // A SKILL.md that is itself a symlink could point anywhere: not followed.
        let Ok(meta) = std::fs::symlink_metadata(&skill_md) else {
            if depth == 1 && !scan.categories.contains_key(&dir_name) {
                let description = self.category_description(path);
                scan.categories.insert(dir_name, description);
            }
            return false;
        };
        if !meta.is_file() {
            scan.invalid.push(InvalidSkill {
                name: dir_name,
                category,
                path: skill_md,
                error: "SKILL.md is not a regular file (symlinks are not followed)".into(),
            });
            return true;
        }
        match self.parse_cached(&skill_md, &meta) {
            Ok(doc) => {
                let name = doc
                    .frontmatter
                    .name
                    .clone()
                    .unwrap_or_else(|| dir_name.clone());
                if !found.seen.insert(name.clone()) {
                    tracing::info!(skill = %name, path = %skill_md.display(), "duplicate skill name ignored (an earlier one wins)");
                    return true;
                }
                if !self.enabled(&name, &doc) {
                    scan.hidden.push(name);
                    return true;
                }
                if let Some(cat) = &category {
                    scan.categories.entry(cat.clone()).or_insert(None);
                }
                scan.skills.push(Arc::new(SkillInfo {
                    description: doc.frontmatter.description.clone().unwrap_or_default(),
                    name,
                    category,
                    dir: path.to_path_buf(),
                    external,
                    doc,
                }));
            }
            Err(error) => {
                scan.invalid.push(InvalidSkill {
                    name: dir_name,
                    category,
                    path: skill_md,
                    error,
                });
            }
        }
        true
    }

    fn enabled(&self, name: &str, doc: &SkillDoc) -> bool {
        if self.unfiltered {
            return true;
        }
        if self.disabled.contains(name) {
            return false;
        }
        let platforms = &doc.frontmatter.platforms;
        platforms.is_empty() || platforms.iter().any(|p| p == self.os)
    }

    /// The visible skill called `name` (frontmatter name, else directory name).
    pub fn find(&self, name: &str) -> Option<Arc<SkillInfo>> {
        if let Some(found) = self.find_direct(name) {
            return Some(found);
        }
        let scan = self.scan();
        if let Some(s) = scan.skills.iter().find(|s| s.name == name) {
            return Some(s.clone());
        }
        scan.skills
            .into_iter()
            .find(|s| s.dir.file_name().is_some_and(|d| d == name))
    }
}

impl SkillStore {
    /// Fast path of `find` for the usual layout (`root/name` or `root/category/name` with a
    /// matching frontmatter name): a few stats instead of a walk over every skill.
    fn find_direct(&self, name: &str) -> Option<Arc<SkillInfo>> {
        if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
            return None;
        }
        let roots = std::iter::once((&self.home_root, false))
            .chain(self.external.iter().map(|r| (r, true)));
        for (root, external) in roots {
            let mut candidates = vec![(root.join(name), None)];
            let Ok(entries) = std::fs::read_dir(root) else {
                continue;
            };
            let mut categories: Vec<String> = entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|c| {
                    !EXCLUDED_DIRS.contains(&c.as_str()) && !SUPPORT_DIRS.contains(&c.as_str())
                })
                .collect();
            categories.sort();
            for cat in categories {
                // A category may itself be a skill holding nested skills (`dogfood/…`).
                candidates.push((root.join(&cat).join(name), Some(cat)));
            }
            for (dir, category) in candidates {
                let skill_md = dir.join("SKILL.md");
                let Ok(meta) = std::fs::symlink_metadata(&skill_md) else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                let Ok(doc) = self.parse_cached(&skill_md, &meta) else {
                    continue;
                };
                if doc.frontmatter.name.as_deref().unwrap_or(name) != name
                    || !self.enabled(name, &doc)
                {
                    // Not a plain match: let the full scan decide.
                    return None;
                }
                return Some(Arc::new(SkillInfo {
                    name: name.to_string(),
                    description: doc.frontmatter.description.clone().unwrap_or_default(),
                    category,
                    dir,
                    external,
                    doc,
                }));
            }
        }
        None
    }
}

fn current_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "macos",
        "windows" => "windows",
        // Termux and the BSDs count as linux, as in Python Hermes.
        _ => "linux",
    }
}

pub(super) fn expand_home(dir: &str) -> PathBuf {
    if let Some(rest) = dir.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    PathBuf::from(dir)
}

fn category_of(root: &Path, dir: &Path) -> Option<String> {
    let rel = dir.strip_prefix(root).ok()?;
    let mut comps = rel.components();
    let first = comps.next()?;
    comps.next()?;
    Some(first.as_os_str().to_string_lossy().into_owned())
}

/// A category's description: the `description` of its DESCRIPTION.md frontmatter, else the
/// file's first line of text.
fn read_category_description(path: &Path, len: u64) -> Result<SkillDoc, String> {
    if len > skill::MAX_SKILL_READ_BYTES {
        return Err(format!("DESCRIPTION.md is {len} bytes; not read"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let description = match skill::parse_lenient(&text) {
        Ok(doc) => doc.frontmatter.description,
        Err(_) => text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| crate::util::truncate_chars(l, 200).to_string()),
    };
    Ok(SkillDoc {
        frontmatter: skill::Frontmatter {
            description,
            ..skill::Frontmatter::default()
        },
        body: String::new(),
    })
}

impl SkillStore {
    /// The description of the category directory `dir`, through the parse cache (a warm scan
    /// stats DESCRIPTION.md instead of reading and parsing it).
    fn category_description(&self, dir: &Path) -> Option<String> {
        let path = dir.join("DESCRIPTION.md");
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let parsed = self.cache.get_or_parse(&path, &meta, || {
            read_category_description(&path, meta.len()).map(Arc::new)
        });
        parsed.ok()?.frontmatter.description.clone()
    }

    fn parse_cached(&self, path: &Path, meta: &std::fs::Metadata) -> Result<Arc<SkillDoc>, String> {
        self.cache.get_or_parse(path, meta, || {
            let parsed = read_and_parse(path, meta.len()).map(|doc| {
                // Bodies and the rest of the frontmatter are read from disk when needed.
                Arc::new(SkillDoc {
                    frontmatter: store_cache::summary_only(&doc.frontmatter),
                    body: String::new(),
                })
            });
            if let Err(error) = &parsed {
                // Logged when first read (or changed), not on every scan.
                tracing::warn!(path = %path.display(), %error, "skipping invalid skill");
            }
            parsed
        })
    }
}

fn read_and_parse(path: &Path, len: u64) -> Result<SkillDoc, String> {
    if len > skill::MAX_SKILL_READ_BYTES {
        return Err(format!(
            "SKILL.md is {len} bytes; skills larger than {} bytes are not loaded",
            skill::MAX_SKILL_READ_BYTES
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "SKILL.md is not valid UTF-8".to_string())?;
    skill::parse_lenient(&text).map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

//! `SkillStore`: finds skills under `$HERMES_HOME/skills` and `skills.external_dirs`, parses them
//! through a cache keyed by (path, mtime, size) so a re-scan only re-reads what changed (the
//! cache lives in the store and its clones — `Services` holds the one the process shares), and answers the questions of the three disclosure tiers: the list, one skill with
//! its linked files and readiness, and one linked file.
//!
//! A broken SKILL.md never breaks the store: it is reported as invalid with the reason.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::config::{Config, EnvVars};
use crate::skills::skill::{self, SkillDoc};

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
const EXTRA_LINKED_DIRS: &[&str] = &["examples"];
/// How deep below a root a SKILL.md may be (root/category/skill/SKILL.md is depth 3).
const MAX_DEPTH: usize = 6;
/// Linked files listed per skill at most (a runaway `assets/` must not flood the model).
const MAX_LINKED_FILES: usize = 500;

/// A parse result cached per SKILL.md path.
#[derive(Debug)]
struct CacheEntry {
    mtime: Option<SystemTime>,
    len: u64,
    parsed: Result<Arc<SkillDoc>, String>,
}

/// Parsed SKILL.md files by path; shared by a store and its clones.
type ParseCache = Arc<Mutex<HashMap<PathBuf, CacheEntry>>>;

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

/// Whether a skill can be used right now.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Readiness {
    pub missing_env: Vec<String>,
    pub missing_commands: Vec<String>,
    pub missing_files: Vec<String>,
}

impl Readiness {
    pub fn ready(&self) -> bool {
        self.missing_env.is_empty()
            && self.missing_commands.is_empty()
            && self.missing_files.is_empty()
    }
}

/// Where skills are looked up, and which are switched off.
#[derive(Debug, Clone)]
pub struct SkillStore {
    home_root: PathBuf,
    external: Vec<PathBuf>,
    disabled: BTreeSet<String>,
    os: &'static str,
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
            cache: ParseCache::default(),
        }
    }

    /// A store over one root (tests, benchmarks, `skills audit PATH`).
    pub fn new(home_root: impl Into<PathBuf>) -> Self {
        SkillStore {
            home_root: home_root.into(),
            external: Vec::new(),
            disabled: BTreeSet::new(),
            os: current_os(),
            cache: ParseCache::default(),
        }
    }

    pub fn home_root(&self) -> &Path {
        &self.home_root
    }

    /// Walks every root; parses only SKILL.md files that changed since the last scan.
    pub fn scan(&self) -> Scan {
        let mut scan = Scan::default();
        let mut seen = BTreeSet::new();
        let roots = std::iter::once((&self.home_root, false))
            .chain(self.external.iter().map(|r| (r, true)));
        for (root, external) in roots {
            self.scan_root(root, external, &mut seen, &mut scan);
        }
        scan.skills
            .sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));
        scan
    }

    fn scan_root(&self, root: &Path, external: bool, seen: &mut BTreeSet<String>, scan: &mut Scan) {
        if !root.is_dir() {
            return;
        }
        // Symlinks are not followed by the walk (following costs a stat per entry); a symlink
        // to a skill directory still counts as a skill below.
        let mut walk = walkdir::WalkDir::new(root)
            .follow_links(false)
            .max_depth(MAX_DEPTH)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = walk.next() {
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            let is_dir = entry.file_type().is_dir()
                || (entry.path_is_symlink()
                    && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()));
            if !is_dir {
                continue;
            }
            let dir_name = entry.file_name().to_string_lossy().into_owned();
            if EXCLUDED_DIRS.contains(&dir_name.as_str())
                || SUPPORT_DIRS.contains(&dir_name.as_str())
                || EXTRA_LINKED_DIRS.contains(&dir_name.as_str())
            {
                walk.skip_current_dir();
                continue;
            }
            let category = category_of(root, entry.path());
            let skill_md = entry.path().join("SKILL.md");
            // A SKILL.md that is itself a symlink could point anywhere: not followed.
            let Ok(meta) = std::fs::symlink_metadata(&skill_md) else {
                if entry.depth() == 1 && !scan.categories.contains_key(&dir_name) {
                    scan.categories
                        .insert(dir_name.clone(), category_description(entry.path()));
                }
                continue;
            };
            walk.skip_current_dir();
            if !meta.is_file() {
                scan.invalid.push(InvalidSkill {
                    name: dir_name,
                    category,
                    path: skill_md,
                    error: "SKILL.md is not a regular file (symlinks are not followed)".into(),
                });
                continue;
            }
            match self.parse_cached(&skill_md, &meta) {
                Ok(doc) => {
                    let name = doc
                        .frontmatter
                        .name
                        .clone()
                        .unwrap_or_else(|| dir_name.clone());
                    if !seen.insert(name.clone()) {
                        tracing::info!(skill = %name, path = %skill_md.display(), "duplicate skill name ignored (an earlier one wins)");
                        continue;
                    }
                    if !self.enabled(&name, &doc) {
                        scan.hidden.push(name);
                        continue;
                    }
                    if let Some(cat) = &category {
                        scan.categories.entry(cat.clone()).or_insert(None);
                    }
                    scan.skills.push(Arc::new(SkillInfo {
                        description: doc.frontmatter.description.clone().unwrap_or_default(),
                        name,
                        category,
                        dir: entry.path().to_path_buf(),
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
        }
        // Categories that only hold invalid or hidden skills are not worth listing.
        let used: BTreeSet<&String> = scan
            .skills
            .iter()
            .filter_map(|s| s.category.as_ref())
            .collect();
        scan.categories.retain(|c, _| used.contains(c));
    }

    fn enabled(&self, name: &str, doc: &SkillDoc) -> bool {
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
                let cat_dir = root.join(&cat);
                // A category that is itself a skill holds no nested skills.
                if !cat_dir.join("SKILL.md").exists() {
                    candidates.push((cat_dir.join(name), Some(cat)));
                }
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

fn expand_home(dir: &str) -> PathBuf {
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

fn category_description(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("DESCRIPTION.md")).ok()?;
    match skill::parse_lenient(&text) {
        Ok(doc) => doc.frontmatter.description,
        Err(_) => text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| crate::util::truncate_chars(l, 200).to_string()),
    }
}

impl SkillStore {
    fn parse_cached(&self, path: &Path, meta: &std::fs::Metadata) -> Result<Arc<SkillDoc>, String> {
        let mtime = meta.modified().ok();
        let len = meta.len();
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(hit) = cache.get(path)
                && hit.mtime == mtime
                && hit.len == len
            {
                return hit.parsed.clone();
            }
        }
        let parsed = read_and_parse(path, len).map(Arc::new);
        if let Err(error) = &parsed {
            // Logged when first read (or changed), not on every scan.
            tracing::warn!(path = %path.display(), %error, "skipping invalid skill");
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(
            path.to_path_buf(),
            CacheEntry {
                mtime,
                len,
                parsed: parsed.clone(),
            },
        );
        parsed
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

impl SkillInfo {
    pub fn skill_md(&self) -> PathBuf {
        self.dir.join("SKILL.md")
    }

    /// The full SKILL.md text as on disk.
    pub fn content(&self) -> std::io::Result<String> {
        std::fs::read_to_string(self.skill_md())
    }

    /// Files under the supporting directories, grouped by directory (relative paths).
    /// Symlinks are listed only when they resolve inside the skill directory.
    pub fn linked_files(&self) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        let mut count = 0;
        for sub in SUPPORT_DIRS.iter().chain(EXTRA_LINKED_DIRS) {
            let base = self.dir.join(sub);
            if !base.is_dir() {
                continue;
            }
            let mut files = Vec::new();
            for entry in walkdir::WalkDir::new(&base)
                .follow_links(false)
                .max_depth(8)
                .sort_by_file_name()
                .into_iter()
                .flatten()
            {
                if entry.file_type().is_dir() {
                    continue;
                }
                if entry.path_is_symlink()
                    && crate::security::paths::ensure_within(&self.dir, entry.path()).is_err()
                {
                    continue;
                }
                if let Ok(rel) = entry.path().strip_prefix(&self.dir) {
                    files.push(rel.to_string_lossy().into_owned());
                    count += 1;
                }
                if count >= MAX_LINKED_FILES {
                    break;
                }
            }
            if !files.is_empty() {
                out.insert((*sub).to_string(), files);
            }
        }
        out
    }

    /// Required environment variables, commands and credential files that are missing.
    pub fn readiness(&self, env: &EnvVars) -> Readiness {
        let fm = &self.doc.frontmatter;
        Readiness {
            missing_env: fm
                .required_env
                .iter()
                .filter(|r| !r.optional && env.get(&r.name).is_none())
                .map(|r| r.name.clone())
                .collect(),
            missing_commands: fm
                .required_commands
                .iter()
                .filter(|c| !command_exists(c, env))
                .cloned()
                .collect(),
            missing_files: fm
                .required_credential_files
                .iter()
                .filter(|f| !expand_home(f).exists())
                .cloned()
                .collect(),
        }
    }

    /// Conditional display: hidden when a `fallback_for_*` tool/toolset is available or a
    /// `requires_*` one is not.
    pub fn shown_with(
        &self,
        tool_names: &[String],
        custom: &BTreeMap<String, crate::config::ToolsetDef>,
    ) -> bool {
        let fm = &self.doc.frontmatter;
        let has_tool = |t: &String| tool_names.contains(t);
        let has_toolset = |ts: &String| {
            crate::tools::toolsets::resolve(std::slice::from_ref(ts), custom)
                .map(|tools| tools.iter().any(|t| tool_names.iter().any(|n| n == t)))
                .unwrap_or(false)
        };
        fm.requires_tools.iter().all(has_tool)
            && fm.requires_toolsets.iter().all(has_toolset)
            && !fm.fallback_for_tools.iter().any(has_tool)
            && !fm.fallback_for_toolsets.iter().any(has_toolset)
    }
}

fn command_exists(cmd: &str, env: &EnvVars) -> bool {
    if cmd.contains('/') {
        return Path::new(cmd).is_file();
    }
    let path = env
        .get("PATH")
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(cmd).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn write_skill(root: &Path, rel: &str, frontmatter: &str, body: &str) -> PathBuf {
        let dir = root.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\n{frontmatter}\n---\n{body}\n"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn scans_categories_invalid_and_duplicates() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write_skill(
            r,
            "dev/git-flow",
            "name: git-flow\ndescription: Branch and merge",
            "body",
        );
        write_skill(
            r,
            "dev/debug",
            "name: debug\ndescription: Find bugs",
            "body",
        );
        write_skill(r, "top", "name: top\ndescription: At the root", "body");
        std::fs::write(
            r.join("dev/DESCRIPTION.md"),
            "---\ndescription: Software work\n---\n",
        )
        .unwrap();
        std::fs::create_dir_all(r.join("broken")).unwrap();
        std::fs::write(r.join("broken/SKILL.md"), "no frontmatter here").unwrap();
        write_skill(
            r,
            "other/git-flow",
            "name: git-flow\ndescription: twin",
            "body",
        );
        write_skill(
            r,
            "dev/debug/references/nested",
            "name: nested\ndescription: no",
            "x",
        );
        write_skill(r, ".hub/quarantine/q", "name: q\ndescription: no", "x");
        write_skill(
            r,
            "mac-only",
            "name: mac-only\ndescription: m\nplatforms: [windows]",
            "x",
        );

        let scan = SkillStore::new(r).scan();
        let names: Vec<(&Option<String>, &str)> = scan
            .skills
            .iter()
            .map(|s| (&s.category, s.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (&None, "top"),
                (&Some("dev".to_string()), "debug"),
                (&Some("dev".to_string()), "git-flow"),
            ]
        );
        assert_eq!(
            scan.categories.get("dev"),
            Some(&Some("Software work".to_string()))
        );
        assert_eq!(scan.invalid.len(), 1);
        assert_eq!(scan.invalid[0].name, "broken");
        assert!(
            scan.invalid[0].error.contains("no frontmatter"),
            "{}",
            scan.invalid[0].error
        );
        assert_eq!(scan.hidden, ["mac-only"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_skill_directory_counts() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let real = write_skill(
            elsewhere.path(),
            "linked",
            "name: linked\ndescription: d",
            "b",
        );
        std::fs::create_dir_all(root.path().join("cat")).unwrap();
        std::os::unix::fs::symlink(&real, root.path().join("cat/linked")).unwrap();
        let scan = SkillStore::new(root.path()).scan();
        assert_eq!(scan.skills.len(), 1);
        assert_eq!(scan.skills[0].category.as_deref(), Some("cat"));
    }

    #[test]
    fn rescans_only_what_changed() {
        let root = tempfile::tempdir().unwrap();
        let dir = write_skill(root.path(), "a", "name: a\ndescription: one", "body");
        let store = SkillStore::new(root.path());
        assert_eq!(store.find("a").unwrap().description, "one");
        // Same size, different content and mtime: the cache must notice.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: a\ndescription: two\n---\nbody\n",
        )
        .unwrap();
        assert_eq!(store.find("a").unwrap().description, "two");
    }

    #[test]
    fn linked_files_skip_symlinks_that_leave_the_skill() {
        let root = tempfile::tempdir().unwrap();
        let dir = write_skill(root.path(), "s", "name: s\ndescription: d", "body");
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(dir.join("references/api.md"), "api").unwrap();
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("scripts/run.sh"), "echo").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", dir.join("references/passwd")).unwrap();
        let skill = SkillStore::new(root.path()).find("s").unwrap();
        let files = skill.linked_files();
        assert_eq!(files["references"], ["references/api.md"]);
        assert_eq!(files["scripts"], ["scripts/run.sh"]);
    }

    #[test]
    fn readiness_reports_missing_requirements() {
        let root = tempfile::tempdir().unwrap();
        write_skill(
            root.path(),
            "s",
            "name: s\ndescription: d\nrequired_environment_variables: [NEEDED_KEY, PRESENT_KEY]\nprerequisites:\n  commands: [definitely-not-a-command-xyz]",
            "body",
        );
        let mut env = EnvVars::default();
        env.set("PRESENT_KEY", "1");
        let r = SkillStore::new(root.path())
            .find("s")
            .unwrap()
            .readiness(&env);
        assert_eq!(r.missing_env, ["NEEDED_KEY"]);
        assert_eq!(r.missing_commands, ["definitely-not-a-command-xyz"]);
        assert!(!r.ready());
    }

    #[test]
    fn conditional_display_follows_tools() {
        let root = tempfile::tempdir().unwrap();
        write_skill(
            root.path(),
            "s",
            "name: s\ndescription: d\nmetadata:\n  hermes:\n    requires_toolsets: [terminal]\n    fallback_for_tools: [web_search]",
            "body",
        );
        let skill = SkillStore::new(root.path()).find("s").unwrap();
        let custom = BTreeMap::new();
        assert!(skill.shown_with(&["terminal".into()], &custom));
        assert!(!skill.shown_with(&["read_file".into()], &custom));
        assert!(!skill.shown_with(&["terminal".into(), "web_search".into()], &custom));
    }
}

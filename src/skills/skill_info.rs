//! What a found skill offers beyond its summary: the whole SKILL.md and frontmatter (read
//! from disk: the store keeps a summary), its linked files, whether it is ready to use
//! (`Readiness`: required variables, commands and credential files) and whether it is shown
//! with the tools of a session (conditional display).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::EnvVars;
use crate::skills::skill;
use crate::skills::store::{EXTRA_LINKED_DIRS, SUPPORT_DIRS, SkillInfo, expand_home};

/// Linked files listed per skill at most (a runaway `assets/` must not flood the model).
const MAX_LINKED_FILES: usize = 500;

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

impl SkillInfo {
    pub fn skill_md(&self) -> PathBuf {
        self.dir.join("SKILL.md")
    }

    /// The full SKILL.md text as on disk.
    pub fn content(&self) -> std::io::Result<String> {
        std::fs::read_to_string(self.skill_md())
    }

    /// The whole frontmatter, read from SKILL.md now (the store keeps a summary); the summary
    /// when the file cannot be read or parsed any more.
    pub fn frontmatter(&self) -> skill::Frontmatter {
        self.content()
            .ok()
            .and_then(|text| skill::parse_lenient(&text).ok())
            .map(|doc| doc.frontmatter)
            .unwrap_or_else(|| self.doc.frontmatter.clone())
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
                    && !crate::tools::file_path::stays_within(&self.dir, entry.path())
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
        Readiness::of(&self.frontmatter(), env)
    }
}

impl Readiness {
    /// What `fm` requires that is missing.
    pub fn of(fm: &skill::Frontmatter, env: &EnvVars) -> Readiness {
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
}

impl SkillInfo {
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

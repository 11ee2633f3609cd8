//! The read tiers of skills as tools: `skills_list` (name, description, category) and
//! `skill_view` (one skill in full with linked files and readiness, or one linked file).
//! Every `file_path` is checked twice: syntactically, then after resolving symlinks.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::security::protected::ProtectedPaths;
use crate::skills::store::SkillInfo;
use crate::skills::{SkillStore, index, usage};
use crate::tools::file_common::{blocking, looks_binary, similarity};
use crate::tools::file_path::{self, Access, PathRefusal, Place};
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

/// Linked files larger than this are cut (the registry caps results too).
const MAX_LINKED_FILE_BYTES: u64 = 1_048_576;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only skills of this category.
    #[serde(default)]
    pub category: Option<String>,
}

pub struct SkillsList;

impl TypedTool for SkillsList {
    type Args = ListArgs;
    const NAME: &'static str = "skills_list";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str =
        "List saved skills (name, description, category), optionally of one category.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: ListArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let store = ctx.skills.clone();
        blocking(move || Ok(list(&store, args.category.as_deref()).to_string())).await
    }
}

/// What `skills_list` answers (also used by the benchmark).
pub fn list(store: &SkillStore, category: Option<&str>) -> Value {
    let scan = store.scan();
    let categories: Vec<&String> = scan.categories.keys().collect();
    let category = category.map(str::trim).filter(|c| !c.is_empty());
    let skills: Vec<Value> = scan
        .skills
        .iter()
        .filter(|s| category.is_none() || s.category.as_deref() == category)
        .map(|s| json!({"name": s.name, "description": index::shown_description_in(store, &s.description), "category": s.category}))
        .collect();
    if skills.is_empty() {
        let message = match category {
            Some(c) => format!(
                "No skills in category `{c}`. Categories: {}",
                if categories.is_empty() { "(none)".to_string() } else { categories.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ") }
            ),
            None => "No skills found. Create one with skill_manage(action=\"create\") after a task worth repeating.".to_string(),
        };
        return json!({"success": true, "skills": [], "categories": categories, "count": 0, "message": message});
    }
    json!({
        "success": true,
        "count": skills.len(),
        "skills": skills,
        "categories": categories,
        "hint": "Use skill_view(name) to see full content, tags, and linked files",
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ViewArgs {
    /// The skill's name.
    pub name: String,
    /// A linked file inside the skill (e.g. references/api.md); omit for SKILL.md.
    #[serde(default)]
    pub file_path: Option<String>,
}

pub struct SkillView;

impl TypedTool for SkillView {
    type Args = ViewArgs;
    const NAME: &'static str = "skill_view";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str = "Load a skill: full SKILL.md, tags, linked files and readiness; with file_path, one linked file.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: ViewArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let store = ctx.skills.clone();
        let config = ctx.config.clone();
        let session = ctx.session_id.clone();
        let counted = store.clone();
        let shield = ctx.shield.clone();
        let result = blocking(move || {
            view(
                &store,
                &config,
                &shield.protected,
                &session,
                &args.name,
                args.file_path.as_deref(),
            )
        })
        .await?;
        if let Some(name) = result["name"].as_str() {
            // Read-before-write: a background review may only change skills it has viewed.
            ctx.scratch
                .viewed_skills
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.to_string());
        }
        // Use counts are telemetry: written off the answer's path (an fsync can take longer
        // than the whole view).
        if let Some(name) = result["name"].as_str().map(str::to_string) {
            tokio::task::spawn_blocking(move || {
                if let Err(e) = usage::mark_viewed(counted.home_root(), &name) {
                    tracing::debug!(error = %e, "cannot count skill view");
                }
            });
        }
        Ok(result.to_string())
    }
}

/// What `skill_view` answers (also used by the benchmark).
pub fn view(
    store: &SkillStore,
    config: &crate::config::Config,
    protected: &ProtectedPaths,
    session: &str,
    name: &str,
    file_path: Option<&str>,
) -> Result<Value, ToolError> {
    let skill = find(store, name)?;
    let result = match file_path.filter(|p| !p.trim().is_empty()) {
        Some(path) => view_file(&skill, protected, path)?,
        None => view_skill(&skill, config, session)?,
    };
    Ok(result)
}

fn find(store: &SkillStore, name: &str) -> Result<std::sync::Arc<SkillInfo>, ToolError> {
    if let Some(s) = store.find(name.trim()) {
        return Ok(s);
    }
    let scan = store.scan();
    let mut close: Vec<(f64, &str)> = scan
        .skills
        .iter()
        .map(|s| (similarity(name, &s.name), s.name.as_str()))
        .filter(|(score, _)| *score > 0.3)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    let hint = if close.is_empty() {
        "skills_list shows every skill".to_string()
    } else {
        format!(
            "did you mean {}? skills_list shows every skill",
            close
                .iter()
                .take(3)
                .map(|(_, n)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(ToolError::Respond(format!(
        "no skill named `{name}`; {hint}"
    )))
}

fn view_skill(
    skill: &SkillInfo,
    config: &crate::config::Config,
    session: &str,
) -> Result<Value, ToolError> {
    let raw = skill.content().map_err(|e| {
        ToolError::Respond(format!("cannot read {}: {e}", skill.skill_md().display()))
    })?;
    let content = raw
        .replace("${HERMES_SKILL_DIR}", &skill.dir.display().to_string())
        .replace("${HERMES_SESSION_ID}", session);
    // The whole frontmatter, from the text just read (the store keeps a summary).
    let fm = crate::skills::skill::parse_lenient(&raw)
        .map(|doc| doc.frontmatter)
        .unwrap_or_else(|_| skill.doc.frontmatter.clone());
    let readiness = crate::skills::store::Readiness::of(&fm, &config.env);
    let linked = skill.linked_files();
    let mut out = json!({
        "success": true,
        "name": skill.name,
        "description": index::shown_description(&skill.description),
        "category": skill.category,
        "tags": fm.tags,
        "related_skills": fm.related_skills,
        "content": content,
        "path": skill.skill_md().display().to_string(),
        "skill_dir": skill.dir.display().to_string(),
        "linked_files": linked,
        "required_environment_variables": fm.required_env,
        "required_commands": fm.required_commands,
        "missing_required_environment_variables": readiness.missing_env,
        "missing_required_commands": readiness.missing_commands,
        "missing_credential_files": readiness.missing_files,
        "setup_needed": !readiness.ready(),
        "readiness_status": if readiness.ready() { "available" } else { "setup_needed" },
    });
    if !linked.is_empty() {
        out["usage_hint"] = json!(format!(
            "Open a linked file with skill_view(\"{}\", file_path)",
            skill.name
        ));
    }
    if let Some(help) = &fm.setup_help {
        out["setup_help"] = json!(help);
    }
    if let Some(c) = &fm.compatibility {
        out["compatibility"] = json!(c);
    }
    if let Some(m) = &fm.metadata {
        out["metadata"] = m.clone();
    }
    // A new agent-made skill is unproven: say so, so the model checks its steps.
    if !skill.external
        && crate::skills::usage::record(&config.home.skills_dir(), &skill.name)
            .is_some_and(|r| r.on_probation(crate::skills::probation::required_uses(config)))
    {
        out["probation"] = json!(true);
        out["probation_note"] = json!(
            "New skill, not yet proven: follow it but check each step, and patch it if something is wrong or missing."
        );
    }
    Ok(out)
}

fn available_files(skill: &SkillInfo) -> String {
    let files: Vec<String> = skill.linked_files().into_values().flatten().collect();
    if files.is_empty() {
        "this skill has no linked files".to_string()
    } else {
        format!("available files: {}", files.join(", "))
    }
}

/// One linked file, through the path policy (inside the skill's directory; protected paths
/// such as a secrets file refused). A binary file is described, not shown.
fn view_file(
    skill: &SkillInfo,
    protected: &ProtectedPaths,
    file_path: &str,
) -> Result<Value, ToolError> {
    let checked = file_path::resolve_in(
        protected,
        Place::Within(&skill.dir),
        file_path,
        Access::Read,
    )
    .map_err(|refusal| {
        let why = match refusal {
            PathRefusal::Missing(_) => {
                format!("`{file_path}` is not a file in skill `{}`", skill.name)
            }
            other => format!("file_path refused: {other}"),
        };
        ToolError::Respond(format!("{why}; {}", available_files(skill)))
    })?;
    let resolved = &checked.resolved;
    let size = checked.meta.as_ref().map_or(0, std::fs::Metadata::len);
    let mut bytes = Vec::new();
    {
        use std::io::Read;
        let file = file_path::open_nofollow(resolved)
            .map_err(|e| ToolError::Respond(format!("cannot read `{file_path}`: {e}")))?;
        file.take(MAX_LINKED_FILE_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::Respond(format!("cannot read `{file_path}`: {e}")))?;
    }
    let text = if looks_binary(&bytes) {
        None
    } else {
        String::from_utf8(bytes).ok()
    };
    Ok(match text {
        Some(content) => {
            let mut v = json!({"success": true, "name": skill.name, "file_path": file_path, "content": content});
            if size > MAX_LINKED_FILE_BYTES {
                v["note"] = json!(format!(
                    "only the first {MAX_LINKED_FILE_BYTES} of {} bytes are shown",
                    size
                ));
            }
            v
        }
        None => json!({
            "success": true,
            "name": skill.name,
            "file_path": file_path,
            "binary": true,
            "size_bytes": size,
            "content": format!("binary file ({} bytes), not shown; its path is {}", size, resolved.display()),
        }),
    })
}

crate::register_tool!(SkillsList);
crate::register_tool!(SkillView);

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;

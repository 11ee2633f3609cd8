//! `skill_manage`: create, edit, patch, delete, write_file and remove_file — with the reference's
//! limits, two path checks (syntax, then canonical containment), the guard on every write,
//! atomic writes, provenance in `.usage.json`, and the background review's restrictions
//! (never bundled, hub-installed, external or pinned skills; read before write; no deletes).
//! A create is refused when an existing skill looks like the same one (`similar`): the model
//! gets the candidate to patch instead, and `force` when it is truly different. A created skill
//! starts on probation (`probation`).

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use crate::security::protected::ProtectedPaths;
use crate::skills::guard::{self, Category, Verdict};
use crate::skills::skill::{self, MAX_SKILL_CONTENT_CHARS};
use crate::skills::store::{SUPPORT_DIRS, SkillInfo, SkillStore};
use crate::skills::usage::{self, Origin};
use crate::tools::file_path::{self, Access, PathRefusal, Place};

/// Largest supporting file (bytes).
pub const MAX_SKILL_FILE_BYTES: usize = 1_048_576;
/// Characters of the file shown when a patch finds nothing.
const PREVIEW_CHARS: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    /// The request itself is wrong (the model can fix it).
    #[error("{0}")]
    Invalid(String),
    /// The guard or a write rule refused it.
    #[error("{0}")]
    Refused(String),
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

use ManageError::{Invalid, Refused};

/// One skill_manage call.
#[derive(Debug, Clone, Default)]
pub struct ManageRequest {
    pub action: String,
    pub name: String,
    pub content: Option<String>,
    pub category: Option<String>,
    pub old_string: Option<String>,
    pub new_string: Option<String>,
    pub replace_all: bool,
    pub file_path: Option<String>,
    pub file_content: Option<String>,
    /// create: even when a similar skill exists.
    pub force: bool,
}

/// Who is asking.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The background learning review (restricted writes).
    pub background_review: bool,
    /// Skills this caller has viewed in its session (read-before-write for the review).
    pub viewed: std::collections::BTreeSet<String>,
    /// `skills.probation_uses`: a created skill is on probation until used successfully this
    /// many times (0 = no probation).
    pub probation_uses: u64,
    /// The process's protected paths (`Shield::protected`): every file path goes through the
    /// one path policy (`tools::file_path`) with them. Empty for the user's own CLI.
    pub protected: ProtectedPaths,
}

/// Runs one request against the store's home root. Returns the JSON result for the model.
pub fn run(store: &SkillStore, req: &ManageRequest, caller: &Caller) -> Result<Value, ManageError> {
    match req.action.as_str() {
        // Existing skills are looked up by name (hand-made ones may predate the naming rule).
        "create" => {
            skill::validate_name("skill", &req.name).map_err(Invalid)?;
            create(store, req, caller)
        }
        "edit" | "patch" | "write_file" | "remove_file" | "delete" => {
            let found = find_writable(store, req, caller)?;
            match req.action.as_str() {
                "edit" => edit(store, req, &found),
                "patch" => patch(store, req, &found, caller),
                "write_file" => write_file(store, req, &found, caller),
                "remove_file" => remove_file(store, req, &found, caller),
                _ => delete(store, &found),
            }
        }
        other => Err(Invalid(format!(
            "unknown action `{other}`; use one of create, edit, patch, delete, write_file, remove_file"
        ))),
    }
}

fn required<'a>(
    value: &'a Option<String>,
    field: &str,
    action: &str,
) -> Result<&'a str, ManageError> {
    value
        .as_deref()
        .ok_or_else(|| Invalid(format!("action `{action}` needs `{field}`")))
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ManageError + 'a {
    move |source| ManageError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Validates a full SKILL.md text written by the agent and scans it.
fn check_skill_md(name: &str, content: &str) -> Result<Vec<String>, ManageError> {
    let chars = content.chars().count();
    if chars > MAX_SKILL_CONTENT_CHARS {
        return Err(Invalid(format!(
            "SKILL.md would have {chars} characters; the limit is {MAX_SKILL_CONTENT_CHARS}. Move details into references/ files with write_file"
        )));
    }
    let doc = skill::parse_strict(content).map_err(|e| Invalid(e.to_string()))?;
    if let Some(fm_name) = &doc.frontmatter.name
        && fm_name != name
    {
        return Err(Invalid(format!(
            "the frontmatter says `name: {fm_name}` but the skill is `{name}`; make them the same"
        )));
    }
    scan("SKILL.md", content)
}

/// Runs the guard on text about to be written: refuses dangerous content and hidden characters
/// (which would reach the system prompt unseen); returns cautions as warnings.
fn scan(file: &str, text: &str) -> Result<Vec<String>, ManageError> {
    let findings = guard::scan_text(file, text);
    if let Some(f) = findings.iter().find(|f| f.category == Category::Hidden) {
        return Err(Refused(format!(
            "refused: {file} line {} contains {} ({}: {}); remove it",
            f.line, f.id, f.description, f.matched
        )));
    }
    match guard::verdict(&findings) {
        Verdict::Dangerous => Err(Refused(format!(
            "refused by the skills guard (verdict: dangerous): {}. Rewrite the content without these patterns",
            guard::describe(&findings)
        ))),
        Verdict::Caution => Ok(vec![format!(
            "the skills guard flagged (caution): {}",
            guard::describe(&findings)
        )]),
        Verdict::Safe => Ok(Vec::new()),
    }
}

fn ensure_root(store: &SkillStore) -> Result<PathBuf, ManageError> {
    let root = store.home_root();
    std::fs::create_dir_all(root).map_err(io("create", root))?;
    Ok(root.to_path_buf())
}

fn create(store: &SkillStore, req: &ManageRequest, caller: &Caller) -> Result<Value, ManageError> {
    let content = required(&req.content, "content", "create")?;
    if let Some(existing) = store.find(&req.name) {
        return Err(Invalid(format!(
            "a skill named `{}` already exists at {}; use action `patch` or `edit` to change it",
            req.name,
            existing.dir.display()
        )));
    }
    let rel = match req.category.as_deref().filter(|c| !c.is_empty()) {
        Some(cat) => {
            skill::validate_name("category", cat).map_err(Invalid)?;
            format!("{cat}/{}", req.name)
        }
        None => req.name.clone(),
    };
    let warnings = check_skill_md(&req.name, content)?;
    if !req.force {
        refuse_near_twin(store, &req.name, content)?;
    }
    let root = ensure_root(store)?;
    let skill_md = format!("{rel}/SKILL.md");
    let checked = file_path::resolve_in(
        &caller.protected,
        Place::Door(&root),
        &skill_md,
        Access::Write,
    )
    .map_err(|e| match e {
        PathRefusal::Invalid(why) => Invalid(why),
        other => Refused(other.to_string()),
    })?;
    let dir = checked
        .resolved
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Invalid(format!("`{rel}` names no directory")))?;
    if dir.exists() {
        return Err(Invalid(format!(
            "{} already exists but holds no valid skill; pick another name or fix that directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir).map_err(io("create", &dir))?;
    let path = dir.join("SKILL.md");
    crate::util::atomic_write(&path, content.as_bytes()).map_err(io("write", &path))?;
    let probation = caller.probation_uses > 0;
    if let Err(e) = usage::mark_created(&root, &req.name, probation) {
        tracing::warn!(error = %e, "cannot record skill provenance");
    }
    let mut message = format!("created skill `{}`", req.name);
    if probation {
        message.push_str(&format!(
            "; it is on probation until used successfully {} times",
            caller.probation_uses
        ));
    }
    Ok(done(message, &path, warnings))
}

/// Refuses a create when an existing skill looks like the same one, handing the model the
/// closest candidate (name, description, where, the words they share) to patch instead.
fn refuse_near_twin(store: &SkillStore, name: &str, content: &str) -> Result<(), ManageError> {
    let description = skill::parse_lenient(content)
        .ok()
        .and_then(|d| d.frontmatter.description)
        .unwrap_or_default();
    let skills = store.scan().skills;
    let found = crate::skills::similar::find(name, &description, &skills);
    let Some(best) = found.first() else {
        return Ok(());
    };
    let others: Vec<String> = found[1..]
        .iter()
        .map(|s| format!("`{}`", s.skill.name))
        .collect();
    let also = if others.is_empty() {
        String::new()
    } else {
        format!(" (also close: {})", others.join(", "))
    };
    Err(Refused(format!(
        "not created: the existing skill `{}` looks like the same one{also}: \"{}\" at {} (shared words: {}). Improve it instead: skill_view(\"{}\"), then skill_manage(action=\"patch\", name=\"{}\", ...). If the new skill is truly different, call create again with force=true.",
        best.skill.name,
        crate::util::truncate_chars(&best.skill.description, 200),
        best.skill.dir.display(),
        best.shared.join(", "),
        best.skill.name,
        best.skill.name,
    )))
}

fn done(message: String, path: &Path, warnings: Vec<String>) -> Value {
    let mut v = json!({"success": true, "message": message, "path": path.display().to_string()});
    if !warnings.is_empty() {
        v["warnings"] = json!(warnings);
    }
    v
}

/// The skill to change, after the write rules for this caller.
fn find_writable(
    store: &SkillStore,
    req: &ManageRequest,
    caller: &Caller,
) -> Result<SkillInfo, ManageError> {
    let Some(found) = store.find(&req.name) else {
        return Err(Invalid(format!(
            "no skill named `{}`; skills_list shows the names",
            req.name
        )));
    };
    if found.external {
        return Err(Refused(format!(
            "`{}` comes from skills.external_dirs ({}), which hermes treats as read-only",
            req.name,
            found.dir.display()
        )));
    }
    let root = store.home_root();
    let record = usage::record(root, &found.name);
    if req.action == "delete" && record.as_ref().is_some_and(|r| r.pinned) {
        return Err(Refused(format!(
            "`{}` is pinned; unpin it before deleting",
            req.name
        )));
    }
    if caller.background_review {
        if req.action == "delete" {
            return Err(Refused("the background review cannot delete skills".into()));
        }
        let origin = usage::origin(root, &found.name);
        if matches!(origin, Origin::Bundled | Origin::Hub) {
            return Err(Refused(format!(
                "`{}` is {} and read-only for the background review; create a separate skill for your notes instead",
                req.name,
                if origin == Origin::Bundled {
                    "bundled with hermes"
                } else {
                    "installed from a hub"
                }
            )));
        }
        if record.as_ref().is_some_and(|r| r.pinned) {
            return Err(Refused(format!(
                "`{}` is pinned and read-only for the background review",
                req.name
            )));
        }
        if !caller.viewed.contains(&found.name) {
            return Err(Refused(format!(
                "call skill_view(\"{}\") before changing it, so the change is based on its current content",
                req.name
            )));
        }
    }
    Ok((*found).clone())
}

fn edit(store: &SkillStore, req: &ManageRequest, found: &SkillInfo) -> Result<Value, ManageError> {
    let content = required(&req.content, "content", "edit")?;
    let warnings = check_skill_md(&found.name, content)?;
    let path = found.skill_md();
    crate::util::atomic_write(&path, content.as_bytes()).map_err(io("write", &path))?;
    touched(store, &found.name);
    Ok(done(
        format!("rewrote SKILL.md of `{}`", found.name),
        &path,
        warnings,
    ))
}

fn touched(store: &SkillStore, name: &str) {
    if let Err(e) = usage::mark_updated(store.home_root(), name) {
        tracing::warn!(error = %e, "cannot record skill update");
    }
}

/// Resolves a `file_path` inside a skill: `SKILL.md`, or a file under one of the four
/// supporting directories, through the one path policy (skill_manage is the door to the
/// skill's directory: traversal, symlinks out of it and secrets files are refused).
fn skill_file(
    found: &SkillInfo,
    file_path: &str,
    allow_skill_md: bool,
    protected: &ProtectedPaths,
    access: Access,
) -> Result<PathBuf, ManageError> {
    file_path::within(&found.dir, file_path)
        .map_err(|e| Refused(format!("file_path refused: {e}")))?;
    let normalized: Vec<String> = Path::new(file_path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let is_skill_md = normalized.len() == 1 && normalized[0] == "SKILL.md";
    if is_skill_md && !allow_skill_md {
        return Err(Invalid(
            "use action `edit` or `patch` to change SKILL.md".into(),
        ));
    }
    if !is_skill_md && (normalized.len() < 2 || !SUPPORT_DIRS.contains(&normalized[0].as_str())) {
        return Err(Refused(format!(
            "file_path `{file_path}` must be a file under one of {} (e.g. references/notes.md)",
            SUPPORT_DIRS.join(", ")
        )));
    }
    door_path(found, &normalized.join("/"), protected, access)
}

fn door_path(
    found: &SkillInfo,
    rel: &str,
    protected: &ProtectedPaths,
    access: Access,
) -> Result<PathBuf, ManageError> {
    file_path::resolve_in(protected, Place::Door(&found.dir), rel, access)
        .map(|checked| checked.resolved)
        .map_err(|e| Refused(format!("file_path refused: {e}")))
}

fn patch(
    store: &SkillStore,
    req: &ManageRequest,
    found: &SkillInfo,
    caller: &Caller,
) -> Result<Value, ManageError> {
    let old = required(&req.old_string, "old_string", "patch")?;
    let new = required(&req.new_string, "new_string", "patch")?;
    if old.is_empty() {
        return Err(Invalid(
            "old_string is empty; give the exact text to replace".into(),
        ));
    }
    let file_path = req.file_path.as_deref().unwrap_or("SKILL.md");
    let path = skill_file(found, file_path, true, &caller.protected, Access::Edit)?;
    let content = std::fs::read_to_string(&path).map_err(io("read", &path))?;
    let Some(found_match) = crate::tools::patch_match::find(&content, old, new) else {
        let preview = crate::util::truncate_chars(&content, PREVIEW_CHARS);
        return Err(Invalid(format!(
            "old_string was not found in {file_path}; skill_view it and copy the text exactly. file_preview:\n{preview}"
        )));
    };
    let spans = if req.replace_all {
        crate::tools::patch_match::non_overlapping(found_match.spans)
    } else if found_match.spans.len() > 1 {
        let lines: Vec<String> = found_match
            .spans
            .iter()
            .map(|s| crate::tools::patch_match::line_of(&content, s.start).to_string())
            .collect();
        return Err(Invalid(format!(
            "old_string matches {} places in {file_path} (lines {}); include more surrounding text to pick one, or set replace_all",
            lines.len(),
            lines.join(", ")
        )));
    } else {
        found_match.spans
    };
    let mut updated = content.clone();
    for span in spans.iter().rev() {
        updated.replace_range(span.start..span.end, &span.replacement);
    }
    let warnings = if file_path == "SKILL.md" {
        check_skill_md(&found.name, &updated)?
    } else {
        check_file_size(&updated)?;
        scan(file_path, &updated)?
    };
    crate::util::atomic_write(&path, updated.as_bytes()).map_err(io("write", &path))?;
    touched(store, &found.name);
    Ok(done(
        format!(
            "patched {file_path} of `{}` ({} replacement(s))",
            found.name,
            spans.len()
        ),
        &path,
        warnings,
    ))
}

fn check_file_size(text: &str) -> Result<(), ManageError> {
    if text.len() > MAX_SKILL_FILE_BYTES {
        return Err(Invalid(format!(
            "the file would be {} bytes; supporting files are limited to {MAX_SKILL_FILE_BYTES} bytes",
            text.len()
        )));
    }
    Ok(())
}

fn write_file(
    store: &SkillStore,
    req: &ManageRequest,
    found: &SkillInfo,
    caller: &Caller,
) -> Result<Value, ManageError> {
    let file_path = required(&req.file_path, "file_path", "write_file")?;
    let content = required(&req.file_content, "file_content", "write_file")?;
    check_file_size(content)?;
    let path = skill_file(found, file_path, false, &caller.protected, Access::Write)?;
    let warnings = scan(file_path, content)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io("create", parent))?;
    }
    // Re-check after creating directories: nothing may have been swapped for a symlink.
    let path = door_path(found, file_path, &caller.protected, Access::Write)?;
    crate::util::atomic_write(&path, content.as_bytes()).map_err(io("write", &path))?;
    touched(store, &found.name);
    Ok(done(
        format!("wrote {file_path} in `{}`", found.name),
        &path,
        warnings,
    ))
}

fn remove_file(
    store: &SkillStore,
    req: &ManageRequest,
    found: &SkillInfo,
    caller: &Caller,
) -> Result<Value, ManageError> {
    let file_path = required(&req.file_path, "file_path", "remove_file")?;
    let path = skill_file(found, file_path, false, &caller.protected, Access::Write)?;
    let meta = std::fs::symlink_metadata(&path).map_err(|_| {
        let files: Vec<String> = found.linked_files().into_values().flatten().collect();
        Invalid(format!(
            "`{file_path}` does not exist in `{}`; its files are: {}",
            found.name,
            if files.is_empty() {
                "(none)".to_string()
            } else {
                files.join(", ")
            }
        ))
    })?;
    if meta.is_dir() {
        return Err(Invalid(format!(
            "`{file_path}` is a directory; remove the files in it one by one"
        )));
    }
    std::fs::remove_file(&path).map_err(io("remove", &path))?;
    touched(store, &found.name);
    Ok(done(
        format!("removed {file_path} from `{}`", found.name),
        &path,
        Vec::new(),
    ))
}

fn delete(store: &SkillStore, found: &SkillInfo) -> Result<Value, ManageError> {
    let root = ensure_root(store)?;
    let rel = found.dir.strip_prefix(&root).map_err(|_| {
        Refused(format!(
            "{} is outside the skills directory {}; only skills there can be deleted",
            found.dir.display(),
            root.display()
        ))
    })?;
    let dir =
        file_path::within(&root, &rel.to_string_lossy()).map_err(|e| Refused(e.to_string()))?;
    let root_canon = std::fs::canonicalize(&root).map_err(io("resolve", &root))?;
    if dir == root_canon {
        return Err(Refused(
            "refusing to delete the skills directory itself".into(),
        ));
    }
    // remove_dir_all does not follow symlinks inside the tree.
    std::fs::remove_dir_all(&dir).map_err(io("delete", &dir))?;
    if let Err(e) = usage::remove(&root, &found.name) {
        tracing::warn!(error = %e, "cannot update .usage.json after delete");
    }
    Ok(done(
        format!("deleted skill `{}`", found.name),
        &dir,
        Vec::new(),
    ))
}

#[cfg(test)]
#[path = "manage_tests.rs"]
mod tests;

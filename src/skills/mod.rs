//! Skills: procedures saved as `SKILL.md` directories that the agent finds, reads, writes,
//! patches and guards itself.
//!
//! `skill` parses SKILL.md; `store` scans the skill roots (parse cache in `store_cache`, kept
//! on disk between processes) and serves the three disclosure tiers; `index` renders the compact
//! index of the frozen system prompt; `manage` is `skill_manage` (`similar` finds the existing
//! skill a new one would duplicate); `guard` scans skill directories for threats (with
//! `security::scan`); `usage` keeps `.usage.json` and provenance; `probation` counts successful
//! uses of new agent-made skills; `bundled` ships and syncs our own skills; `hub` installs
//! skills from git repositories and skill indexes; `learning` is the
//! background review that turns long tool-using turns into skills.

pub mod bundled;
pub mod guard;
pub mod hub;
pub mod index;
pub mod learning;
pub mod manage;
pub mod probation;
pub mod similar;
pub mod skill;
pub mod skill_info;
pub mod store;
pub mod store_cache;
pub mod usage;

pub use store::{SkillInfo, SkillStore};

use crate::config::Config;

/// Tools whose presence puts the skills index into the system prompt.
const SKILL_TOOLS: &[&str] = &["skills_list", "skill_view", "skill_manage"];

/// Present in the prompt exactly when the index is (the learning loop keys on it).
pub const INDEX_MARKER: &str = "<available_skills>";

/// The skills index for the frozen system prompt, or `None` when no skills tool is offered.
pub fn prompt_index(config: &Config, store: &SkillStore, tool_names: &[String]) -> Option<String> {
    if !tool_names.iter().any(|t| SKILL_TOOLS.contains(&t.as_str())) {
        return None;
    }
    let scan = store.scan_unsaved();
    let shown: Vec<_> = scan
        .skills
        .into_iter()
        .filter(|s| s.shown_with(tool_names, &config.custom_toolsets))
        .collect();
    let text = index::render_for(store, &shown, &scan.categories, index::MAX_INDEX_BYTES);
    // The scan's changes and the verdicts found while rendering (a new or edited description)
    // are kept for the next start, in one write.
    store.save_cache();
    Some(text)
}

/// The user message for `/<skill-name> text` in the REPL: the skill's content with its
/// directory and files, then the user's instruction. `None` when no such skill exists.
pub fn invocation_message(
    config: &Config,
    name: &str,
    instruction: Option<&str>,
) -> Option<String> {
    let store = SkillStore::from_config(config);
    let skill = store.find(name)?;
    let content = skill.content().ok()?;
    let files: Vec<String> = skill.linked_files().into_values().flatten().collect();
    let mut text = format!(
        "[The user invoked the \"{}\" skill: follow its instructions. Its full content is below.]\n\n{}\n\n[Skill directory: {}]",
        skill.name,
        content.trim_end(),
        skill.dir.display()
    );
    if !files.is_empty() {
        text.push_str(&format!(
            "\n[Supporting files, readable with skill_view(\"{}\", file_path): {}]",
            skill.name,
            files.join(", ")
        ));
    }
    match instruction.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => text.push_str(&format!("\n\nThe user's instruction with this skill: {t}")),
        None => text.push_str(
            "\n\nThe user gave no further instruction: apply the skill to the current context.",
        ),
    }
    if let Err(e) = usage::mark_viewed(store.home_root(), &skill.name) {
        tracing::debug!(error = %e, "cannot count skill use");
    }
    Some(text)
}

//! The `skill_manage` tool: the model's way to create, change and delete skills. The rules live
//! in `skills::manage`; this file maps arguments and errors, and tells the manager whether the
//! caller is the background learning review (restricted writes).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::skills::manage::{self, Caller, ManageRequest};
use crate::tools::file_common::blocking;
use crate::tools::registry::{AgentRole, ToolContext, ToolError, TypedTool};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Create,
    Edit,
    Patch,
    Delete,
    WriteFile,
    RemoveFile,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Edit => "edit",
            Action::Patch => "patch",
            Action::Delete => "delete",
            Action::WriteFile => "write_file",
            Action::RemoveFile => "remove_file",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ManageArgs {
    pub action: Action,
    /// Skill name: lowercase letters, digits, `.` `_` `-`; at most 64 characters.
    pub name: String,
    /// create/edit: the whole SKILL.md (`---` YAML with name and description `---`, then Markdown).
    #[serde(default)]
    pub content: Option<String>,
    /// create: optional category directory.
    #[serde(default)]
    pub category: Option<String>,
    /// patch: exact text to replace (must match once unless replace_all).
    #[serde(default)]
    pub old_string: Option<String>,
    /// patch: the replacement text.
    #[serde(default)]
    pub new_string: Option<String>,
    /// patch: replace every match.
    #[serde(default)]
    pub replace_all: bool,
    /// patch/write_file/remove_file: file under references/, templates/, scripts/ or assets/ (patch: default SKILL.md).
    #[serde(default)]
    pub file_path: Option<String>,
    /// write_file: the file's content.
    #[serde(default)]
    pub file_content: Option<String>,
    /// create: even if a similar skill exists.
    #[serde(default)]
    pub force: bool,
}

pub struct SkillManage;

impl TypedTool for SkillManage {
    type Args = ManageArgs;
    const NAME: &'static str = "skill_manage";
    const TOOLSET: &'static str = "skills";
    const DESCRIPTION: &'static str = "Create, edit, patch or delete a skill, or write/remove its supporting files. Patch existing skills rather than creating near-duplicates.";

    async fn run(&self, args: ManageArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let store = ctx.skills.clone();
        let caller = Caller {
            background_review: ctx.role == AgentRole::SkillReview,
            viewed: ctx
                .scratch
                .viewed_skills
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
            probation_uses: crate::skills::probation::required_uses(&ctx.config),
            protected: ctx.shield.protected.clone(),
        };
        let request = ManageRequest {
            action: args.action.as_str().to_string(),
            name: args.name,
            content: args.content,
            category: args.category,
            old_string: args.old_string,
            new_string: args.new_string,
            replace_all: args.replace_all,
            file_path: args.file_path,
            file_content: args.file_content,
            force: args.force,
        };
        blocking(move || {
            manage::run(&store, &request, &caller)
                .map(|v| v.to_string())
                .map_err(|e| ToolError::Respond(e.to_string()))
        })
        .await
    }
}

crate::register_tool!(SkillManage);

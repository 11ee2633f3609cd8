//! File edits asked about where the person answering sees the workspace: an editor over ACP
//! (`RunMode::Acp`), as Python Hermes's ACP adapter asks before `write_file` / `patch`. Other run
//! modes edit without asking (the terminal user watches the turn; chats cannot review a diff).
//! The answer follows the command approvals: once, for the rest of the session (also `Always`,
//! which has no config entry for edits), or a denial; no answer within the timeout denies.

use std::path::Path;
use std::sync::PoisonError;

use super::{ApprovalChoice, ApprovalGate, ApprovalPrompt, ApprovalRequest, RunMode, Verdict};

/// The reason an edit question carries (front ends show edits differently from commands).
pub const EDIT_REASON: &str = "edits a file";
/// The session key an "allow for this session" answer records.
const EDIT_KEY: &str = "file_edit";

impl ApprovalGate {
    /// Whether `tool` may change `path` now, asking `prompt` where the run mode asks about edits.
    pub async fn check_edit(
        &self,
        tool: &str,
        path: &Path,
        prompt: &dyn ApprovalPrompt,
    ) -> Verdict {
        if self.run_mode(prompt) != RunMode::Acp || self.yolo() {
            return Verdict::Allowed;
        }
        if self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(EDIT_KEY)
        {
            return Verdict::Allowed;
        }
        let request = ApprovalRequest {
            command: format!("{tool} {}", path.display()),
            reasons: vec![EDIT_REASON.to_string()],
        };
        let shown = path.display();
        match tokio::time::timeout(self.timeout, prompt.ask(&request)).await {
            Err(_) => Verdict::Blocked(format!(
                "BLOCKED: no answer to the request to edit {shown} within {}s, so the edit was not made.",
                self.timeout.as_secs_f32()
            )),
            Ok(ApprovalChoice::Deny) => Verdict::Blocked(format!(
                "BLOCKED: the user rejected this edit of {shown}. Do not retry it; ask the user how they want to proceed."
            )),
            Ok(ApprovalChoice::Once) => Verdict::Allowed,
            Ok(ApprovalChoice::Session | ApprovalChoice::Always) => {
                self.session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(EDIT_KEY);
                Verdict::Allowed
            }
        }
    }
}

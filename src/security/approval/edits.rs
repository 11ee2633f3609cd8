//! File edits asked about where the person answering sees the workspace: an editor over ACP
//! (`RunMode::Acp`), as Python Hermes's ACP adapter asks before `write_file` / `patch`. Other run
//! modes edit without asking (the terminal user watches the turn; chats cannot review a diff).
//! The answer follows the command approvals: once, for the rest of the session (also `Always`,
//! which has no config entry for edits), or a denial; no answer within the timeout denies.
//!
//! An editor's session mode may widen what goes ahead unasked ([`EditScope`]: the workspace, or
//! every edit). This check runs after the file tools' path policy, so protected paths and
//! secret files stay refused whatever the scope.

use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use super::{ApprovalChoice, ApprovalGate, ApprovalPrompt, ApprovalRequest, RunMode, Verdict};

/// The reason an edit question carries (front ends show edits differently from commands).
pub const EDIT_REASON: &str = "edits a file";
/// The session key an "allow for this session" answer records.
const EDIT_KEY: &str = "file_edit";

/// Which file edits go ahead without a question.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EditScope {
    /// Every edit is asked about.
    #[default]
    Ask,
    /// Edits of files below these directories go ahead; others are asked about.
    Under(Vec<PathBuf>),
    /// Every edit the path policy lets through goes ahead.
    Any,
}

impl EditScope {
    /// Edits below `roots` (each as given and as its real path, so a symlinked workspace or
    /// temp dir matches the resolved paths the file tools check).
    pub fn under(roots: &[&Path]) -> Self {
        let mut dirs = Vec::new();
        for root in roots {
            dirs.push(root.to_path_buf());
            if let Ok(real) = std::fs::canonicalize(root)
                && real != *root
            {
                dirs.push(real);
            }
        }
        EditScope::Under(dirs)
    }

    fn allows(&self, path: &Path) -> bool {
        match self {
            EditScope::Ask => false,
            EditScope::Any => true,
            // `starts_with` compares whole components: `/p` does not cover `/pp/x`.
            EditScope::Under(roots) => roots.iter().any(|r| path.starts_with(r)),
        }
    }
}

impl ApprovalGate {
    /// Sets which edits go ahead without asking (an editor's session mode).
    pub fn set_edit_scope(&self, scope: EditScope) {
        *self
            .edit_scope
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = scope;
    }

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
        let scoped = self
            .edit_scope
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .allows(path);
        if scoped {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_covers_whole_components_only() {
        let scope = EditScope::Under(vec![PathBuf::from("/work/p")]);
        assert!(scope.allows(Path::new("/work/p/src/a.rs")));
        assert!(!scope.allows(Path::new("/work/pp/a.rs")));
        assert!(!scope.allows(Path::new("/etc/hosts")));
        assert!(EditScope::Any.allows(Path::new("/anywhere")));
        assert!(!EditScope::Ask.allows(Path::new("/work/p/a.rs")));
    }
}

//! Dangerous-command approval (being written by the security helper; this is the agreed API).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::ApprovalMode;

/// The user's answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalChoice {
    Once,
    Session,
    Always,
    Deny,
}

/// What the user is asked about.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub command: String,
    /// Human descriptions of why the command is dangerous.
    pub reasons: Vec<String>,
}

/// Someone who can answer approval questions (the REPL, a chat) — or nobody.
#[async_trait::async_trait]
pub trait ApprovalPrompt: Send + Sync {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalChoice;
    /// False for one-shot runs, cron, etc.: no one is there to ask.
    fn interactive(&self) -> bool {
        true
    }
}

/// Used where no one can answer (`-z`): every question is denied.
pub struct NoPrompt;

#[async_trait::async_trait]
impl ApprovalPrompt for NoPrompt {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalChoice {
        ApprovalChoice::Deny
    }
    fn interactive(&self) -> bool {
        false
    }
}

/// The gate's decision on one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Refused; the text explains why, for the model and the user.
    Blocked(String),
}

/// Per-session approval state: mode, yolo, allowlist, session approvals.
pub struct ApprovalGate {
    _mode: ApprovalMode,
}

impl ApprovalGate {
    pub fn new(
        mode: ApprovalMode,
        yolo: bool,
        allowlist: Vec<String>,
        deny: Vec<String>,
        config_path: PathBuf,
        timeout: Duration,
    ) -> Self {
        let _ = (yolo, allowlist, deny, config_path, timeout);
        ApprovalGate { _mode: mode }
    }

    pub fn set_yolo(&self, _on: bool) {}

    pub fn yolo(&self) -> bool {
        false
    }

    pub async fn check(&self, _command: &str, _prompt: &dyn ApprovalPrompt) -> Verdict {
        Verdict::Allowed
    }
}

//! The learning loop: a `TurnExtension` that counts tool iterations since the model last wrote a
//! skill, and after a turn that crossed `skills.creation_nudge_interval` (default 10) asks for a
//! background review (only the `skills` toolset, its own small budget, no one to answer) that
//! may create a skill or — preferably — patch an existing one.
//!
//! This module only *describes* the review ([`ReviewRequest`]); the agent runs it as a fork of
//! the conversation. Its writes are restricted in `manage.rs` (the review's tool calls carry
//! `AgentRole::SkillReview`, and a skill must have been viewed in the review before it changes).

use std::sync::Mutex;

use crate::config::Config;
use crate::llm::ToolCall;
use crate::tools::{AgentRole, ToolOutput};
use crate::turn::{ReviewRequest, SessionCounts, TurnExtension, TurnInfo};

const REVIEW_PROMPT: &str = include_str!("../prompts/skill_review.md");
/// Iteration budget of one review.
const REVIEW_BUDGET: u32 = 16;
const DEFAULT_NUDGE_INTERVAL: u64 = 10;

/// `skills.creation_nudge_interval` (0 turns the loop off).
pub fn nudge_interval(config: &Config) -> u64 {
    config
        .file
        .skills
        .creation_nudge_interval
        .unwrap_or(DEFAULT_NUDGE_INTERVAL)
}

/// The review instructions (a user copy in `$HERMES_HOME/prompts/skill_review.md` wins).
fn review_prompt(config: &Config) -> String {
    std::fs::read_to_string(config.home.prompts_dir().join("skill_review.md"))
        .ok()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| REVIEW_PROMPT.to_string())
}

/// The extension registered in `cli::services()`.
pub struct SkillLearning {
    interval: u64,
    /// Read once at start (a user copy in `$HERMES_HOME/prompts/` wins), not on the runtime.
    instructions: String,
    /// Tool iterations since the last skill write, per session.
    counts: Mutex<SessionCounts>,
}

impl SkillLearning {
    pub fn new(config: &Config) -> Self {
        SkillLearning {
            interval: nudge_interval(config),
            instructions: review_prompt(config),
            counts: Mutex::new(SessionCounts::default()),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, SessionCounts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl TurnExtension for SkillLearning {
    fn name(&self) -> &'static str {
        "skills-learning"
    }

    fn after_iteration(&self, info: &TurnInfo, calls: &[ToolCall], _outputs: &[ToolOutput]) {
        if info.ephemeral {
            return;
        }
        let mut counts = self.counts();
        if calls.iter().any(|c| c.name == "skill_manage") {
            counts.reset(&info.session_id);
        } else {
            counts.bump(&info.session_id);
        }
    }

    fn after_turn(&self, info: &TurnInfo, _answer: &str) -> Option<ReviewRequest> {
        // The index is in the frozen prompt exactly when a skills tool is offered
        // (`prompt_index`'s contract): no skills tools, no learning loop.
        if info.ephemeral
            || self.interval == 0
            || !info.system_prompt.contains(crate::skills::INDEX_MARKER)
        {
            return None;
        }
        let ticket =
            self.counts()
                .take_due_review(&info.session_id, self.interval, &info.reviews)?;
        Some(ReviewRequest {
            name: "skill review",
            role: AgentRole::SkillReview,
            instructions: self.instructions.clone(),
            toolsets: vec!["skills".to_string()],
            max_iterations: REVIEW_BUDGET,
            ticket,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_is_described_once_due_and_only_with_a_place_in_line() {
        let home = tempfile::tempdir().unwrap();
        let mut cfg = Config::defaults(
            crate::config::HermesHome::new(home.path()),
            crate::config::EnvVars::default(),
        );
        cfg.file.skills.creation_nudge_interval = Some(2);
        let learning = SkillLearning::new(&cfg);
        let line = crate::turn::Admission::new(1, 1);
        let info = TurnInfo {
            session_id: "s".into(),
            source: "cli".into(),
            system_prompt: format!("x {} y", crate::skills::INDEX_MARKER),
            user_text: "hi".into(),
            ephemeral: false,
            reviews: line.clone(),
        };
        let call = ToolCall {
            id: "1".into(),
            name: "terminal".into(),
            arguments: "{}".into(),
        };
        learning.after_iteration(&info, std::slice::from_ref(&call), &[]);
        assert!(learning.after_turn(&info, "done").is_none(), "not due yet");
        learning.after_iteration(&info, std::slice::from_ref(&call), &[]);
        let review = learning.after_turn(&info, "done").expect("due");
        assert_eq!(review.toolsets, vec!["skills".to_string()]);
        assert_eq!(review.role, AgentRole::SkillReview);
        // The line (one place) is taken: the next due review waits for a later turn.
        learning.after_iteration(&info, std::slice::from_ref(&call), &[]);
        learning.after_iteration(&info, std::slice::from_ref(&call), &[]);
        assert!(learning.after_turn(&info, "done").is_none());
        drop(review);
        assert!(learning.after_turn(&info, "done").is_some());
    }
}

//! What a subsystem sees of a turn, and how it takes part without knowing the loop.
//!
//! Memory, skills and other subsystems implement [`TurnExtension`]; the agent (`src/agent/`) calls
//! every registered extension at fixed points. An extension never runs an agent: when it wants
//! a background review it *describes* one ([`ReviewRequest`]: instructions, toolsets, budget),
//! with its place in the review line, and the agent runs it as a child of the conversation.
//! An extension that fails or is slow must never fail or block the user's turn.

pub mod admission;
pub mod session_counts;

pub use admission::{Admission, Ticket};
pub use session_counts::SessionCounts;

use crate::llm::ToolCall;
use crate::tools::{AgentRole, ToolOutput};

/// What an extension may look at during a turn.
#[derive(Clone)]
pub struct TurnInfo {
    pub session_id: String,
    /// `sessions.source` of the agent (`cli`, `telegram`, `subagent`, ...).
    pub source: String,
    /// The frozen system prompt of the session.
    pub system_prompt: String,
    /// The user's text for this turn.
    pub user_text: String,
    /// True for child and background agents: extensions must not start more background work.
    pub ephemeral: bool,
    /// The process's line for background reviews (take a place before asking for a review).
    pub reviews: Admission,
}

/// A background review an extension asks for after a turn. The agent runs it as a fork of the
/// conversation: same model, same tools array and message prefix (the provider's prompt cache
/// hits), the instructions as the next user message, and only `toolsets` usable.
#[derive(Debug)]
pub struct ReviewRequest {
    /// For logs ("memory review", "skill review").
    pub name: &'static str,
    pub role: AgentRole,
    pub instructions: String,
    pub toolsets: Vec<String>,
    pub max_iterations: u32,
    /// The review's place in the line; dropped when the review ends.
    pub ticket: Ticket,
}

#[async_trait::async_trait]
pub trait TurnExtension: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &'static str;

    /// Before the first model call of a turn. Returned text is appended to the API copy of the
    /// user message (persisted in `messages.api_content`), never to its visible content.
    /// The agent applies its own timeout; keep this fast.
    async fn before_turn(&self, _info: &TurnInfo) -> Option<String> {
        None
    }

    /// After each model call that produced tool calls, with the calls and their outputs.
    fn after_iteration(&self, _info: &TurnInfo, _calls: &[ToolCall], _outputs: &[ToolOutput]) {}

    /// After a turn ended with an answer (not after interrupted or failed turns). A review to
    /// run in the background may be returned; do not start agents or await anything here.
    fn after_turn(&self, _info: &TurnInfo, _answer: &str) -> Option<ReviewRequest> {
        None
    }
}

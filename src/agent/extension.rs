//! `TurnExtension`: the seam through which memory, skills and other subsystems take part in a
//! turn without living inside the loop. The agent calls every registered extension at fixed
//! points; an extension that fails or is slow must never fail or block the user's turn.

use std::sync::Arc;

use crate::agent::{Services, TurnOutcome};
use crate::llm::{LlmClient, Message, ToolCall};
use crate::tools::ToolOutput;

/// What an extension may look at during a turn.
#[derive(Clone)]
pub struct TurnInfo {
    pub services: Arc<Services>,
    /// The client of the parent agent (a background review uses the same provider and model).
    pub client: Arc<dyn LlmClient>,
    pub session_id: String,
    /// `sessions.source` of the agent (`cli`, `telegram`, `subagent`, ...).
    pub source: String,
    /// The frozen system prompt of the session.
    pub system_prompt: String,
    /// The user's text for this turn.
    pub user_text: String,
    /// True for background/ephemeral agents: extensions must not start more background work.
    pub ephemeral: bool,
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

    /// After a turn completed with an answer (not after interrupted or failed turns).
    /// `history` is the whole conversation including the final answer. Spawn background work
    /// here; do not await it.
    fn after_turn(&self, _info: &TurnInfo, _history: &[Message], _outcome: &TurnOutcome) {}
}

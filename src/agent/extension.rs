//! `TurnExtension`: the seam through which memory, skills and other subsystems take part in a
//! turn without living inside the loop. The agent calls every registered extension at fixed
//! points; an extension that fails or is slow must never fail or block the user's turn.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::{
    Agent, AgentError, AgentOptions, BEFORE_TURN_TIMEOUT, Services, TurnOutcome, db,
};
use crate::llm::{LlmClient, Message, ToolCall};
use crate::tools::{ToolOutput, ToolRegistry};

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

/// How the agent drives its extensions, and builds the background agents they use.
impl Agent {
    /// A background copy of this conversation that writes nothing to state.db: same client and
    /// frozen prompt, its own budget, only `toolsets`, and no one to answer approvals.
    pub fn fork_ephemeral(
        &self,
        toolsets: &[String],
        max_iterations: u32,
    ) -> Result<Self, AgentError> {
        Self::ephemeral_from(
            &self.turn_info(""),
            self.history.clone(),
            toolsets,
            max_iterations,
            self.options.cwd.clone(),
        )
    }

    /// A background agent built from a turn's `TurnInfo` (what extensions have at hand).
    pub fn ephemeral_from(
        info: &TurnInfo,
        history: Vec<Message>,
        toolsets: &[String],
        max_iterations: u32,
        cwd: PathBuf,
    ) -> Result<Self, AgentError> {
        let tools = ToolRegistry::for_config(&info.services.config, toolsets)?;
        let options = AgentOptions {
            source: "subagent".to_string(),
            cwd,
            toolsets: toolsets.to_vec(),
            max_iterations,
            yolo: false,
            interactive: false,
            ephemeral: true,
        };
        Ok(Self::assemble(
            info.services.clone(),
            info.client.clone(),
            crate::agent::failover::Failover::fixed(info.client.provider()),
            options,
            tools,
            format!("{}-fork", info.session_id),
            info.system_prompt.clone(),
            history,
        ))
    }

    pub(crate) fn turn_info(&self, user_text: &str) -> TurnInfo {
        TurnInfo {
            services: self.services.clone(),
            client: self.client.clone(),
            session_id: self.session_id.clone(),
            source: self.options.source.clone(),
            system_prompt: self.system_prompt.clone(),
            user_text: user_text.to_string(),
            ephemeral: self.options.ephemeral,
        }
    }

    /// Asks every extension for context to append to the API copy of the user message.
    pub(crate) async fn gather_context(
        &mut self,
        info: &TurnInfo,
        user_row: Option<i64>,
    ) -> Result<(), AgentError> {
        let mut parts = Vec::new();
        for ext in &self.services.extensions {
            match tokio::time::timeout(BEFORE_TURN_TIMEOUT, ext.before_turn(info)).await {
                Ok(Some(text)) if !text.trim().is_empty() => parts.push(text),
                Ok(_) => {}
                Err(_) => tracing::warn!(extension = ext.name(), "before_turn timed out; skipped"),
            }
        }
        if parts.is_empty() {
            return Ok(());
        }
        let Some(last) = self.history.last_mut() else {
            return Ok(());
        };
        let api = format!(
            "{}\n\n{}",
            last.content.as_deref().unwrap_or_default(),
            parts.join("\n\n")
        );
        last.api_content = Some(api.clone());
        if let Some(id) = user_row {
            db(&self.services.store, move |s| s.set_api_content(id, &api)).await?;
        }
        Ok(())
    }

    pub(crate) fn notify_turn_end(&self, info: &TurnInfo, turn: &TurnOutcome) {
        for ext in &self.services.extensions {
            ext.after_turn(info, &self.history, turn);
        }
    }
}

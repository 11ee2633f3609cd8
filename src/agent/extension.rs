//! How the agent drives the `TurnExtension`s (`crate::turn`): context before a turn, a look at
//! each tool round, and after a turn the background reviews they ask for, which the agent runs
//! as forks of this conversation through the child API (`child.rs`).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::agent::child::{ChildSpec, ChildStart, ParentLink};
use crate::agent::{Agent, AgentError, BEFORE_TURN_TIMEOUT, TurnOutcome, db};
use crate::tools::AgentRole;
use crate::turn::{ReviewRequest, TurnInfo};

/// A background review ends after this long, whatever it is doing.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(300);
/// A background review whose model goes quiet this long is stopped.
const REVIEW_STALL: Duration = Duration::from_secs(120);

impl Agent {
    pub(crate) fn turn_info(&self, user_text: &str) -> TurnInfo {
        TurnInfo {
            session_id: self.session_id.clone(),
            source: self.options.source.clone(),
            system_prompt: self.system_prompt.clone(),
            user_text: user_text.to_string(),
            ephemeral: self.options.ephemeral || self.role != AgentRole::Primary,
            reviews: self.services.reviews.clone(),
        }
    }

    /// This agent as the parent of a child; `cancel` ends the child with the parent.
    pub(crate) fn parent_link(&self, cancel: CancellationToken) -> ParentLink {
        ParentLink {
            session_id: self.cap_session.clone(),
            client: self.client.clone(),
            cwd: self.options.cwd.clone(),
            depth: self.depth,
            cancel,
            session_mcp: self.session_mcp.clone(),
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

    /// After a turn with an answer: every extension may ask for a background review.
    pub(crate) fn notify_turn_end(&self, info: &TurnInfo, turn: &TurnOutcome) {
        for ext in &self.services.extensions {
            if let Some(review) = ext.after_turn(info, &turn.text) {
                self.start_review(review);
            }
        }
    }

    /// Runs a review as a fork of this conversation: the same system prompt, tools array and
    /// messages (a cache hit), the review's instructions next, only its toolsets usable. It is
    /// not awaited and not cancelled by the next turn; its spend goes to this session.
    pub fn start_review(&self, review: ReviewRequest) {
        let spec = ChildSpec {
            label: format!("{} of {}", review.name, self.session_id),
            goal: review.instructions,
            role: review.role,
            toolsets: review.toolsets,
            only_tools: None,
            max_iterations: review.max_iterations,
            timeout: Some(REVIEW_TIMEOUT),
            stall_timeout: Some(REVIEW_STALL),
            start: ChildStart::Fork {
                system_prompt: self.system_prompt.clone(),
                history: self.history.clone(),
                tool_schemas: self.tool_schemas.clone(),
            },
            recorded: false,
            yolo: false,
            ticket: Some(review.ticket),
        };
        tracing::info!(session = %self.session_id, review = review.name, "background review started");
        drop(
            self.services
                .spawn_child(self.parent_link(CancellationToken::new()), spec),
        );
    }
}

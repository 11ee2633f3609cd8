//! How the loop uses the `ContextCompressor`: before each call when the prompt passes the
//! threshold, after a context-overflow error, and on `/compress [focus]`. A compaction archives
//! the replaced rows in state.db (still searchable), continues with the compacted history, and
//! rebuilds the frozen system prompt once. Nothing is lost when it fails: the old history stays.

use tokio::sync::mpsc::UnboundedSender;

use crate::agent::compressor::{Compaction, ContextCompressor, Trigger};
use crate::agent::{Agent, AgentEvent, db};
use crate::llm::Message;

impl Agent {
    /// Compacts before a call when the projected prompt passes the threshold.
    pub(crate) async fn maybe_compact(
        &mut self,
        with_tools: bool,
        extra: Option<&Message>,
        events: &UnboundedSender<AgentEvent>,
    ) {
        let tools = if with_tools {
            &self.tool_schemas[..]
        } else {
            &[]
        };
        let mut messages = self.history.clone();
        messages.extend(extra.cloned());
        let projected = ContextCompressor::estimate_tokens(&messages, &self.system_prompt, tools)
            .max(self.compressor.last_prompt_tokens());
        if self.compressor.should_compress(projected) {
            self.compact(Trigger::Threshold, events).await;
        }
    }

    /// `/compress [focus]`: compacts now, whatever the size. Returns how many messages were
    /// folded into the summary (0 when there was nothing to compact).
    pub async fn compress_now(
        &mut self,
        focus: Option<&str>,
        events: &UnboundedSender<AgentEvent>,
    ) -> usize {
        self.compact(Trigger::Manual { focus }, events)
            .await
            .unwrap_or(0)
    }

    /// Runs one compaction; `Some(messages archived)` when the history changed.
    pub(crate) async fn compact(
        &mut self,
        trigger: Trigger<'_>,
        events: &UnboundedSender<AgentEvent>,
    ) -> Option<usize> {
        let model = self.client.provider().model.clone();
        let client = self.client.clone();
        let result: Result<Compaction, String> = if self.options.ephemeral {
            Ok(self
                .compressor
                .compress(&self.history, client.as_ref(), &model, trigger)
                .await)
        } else {
            self.compressor
                .compress_session(
                    &self.services.store,
                    &self.session_id,
                    &self.history,
                    client.as_ref(),
                    &model,
                    trigger,
                )
                .await
                .map_err(|e| e.to_string())
        };
        let compaction = match result {
            Ok(c) if !c.is_noop() => c,
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "compaction not saved; continuing with the full history");
                let _ = events.send(AgentEvent::Compacted {
                    archived: 0,
                    used_fallback: false,
                    note: Some(e),
                });
                return None;
            }
        };
        let archived = compaction.archived;
        self.history = compaction.messages;
        self.refreeze_prompt().await;
        tracing::info!(
            archived = compaction.archived,
            fallback = compaction.used_fallback,
            "conversation compacted"
        );
        let _ = events.send(AgentEvent::Compacted {
            archived: compaction.archived,
            used_fallback: compaction.used_fallback,
            note: compaction.summary_error,
        });
        Some(archived)
    }

    /// After a compaction the system prompt is rebuilt once (fresh memory, context files) and
    /// frozen again; if that fails the old prompt stays.
    async fn refreeze_prompt(&mut self) {
        let fresh = match self
            .services
            .build_prompt(&self.options.cwd, &self.tools.names())
            .await
        {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "cannot rebuild the system prompt; keeping the old one");
                return;
            }
        };
        if !self.options.ephemeral {
            let (id, text) = (self.session_id.clone(), fresh.clone());
            if let Err(e) = db(&self.services.store, move |s| {
                s.set_system_prompt(&id, &text)
            })
            .await
            {
                tracing::warn!(error = %e, "cannot store the rebuilt system prompt");
                return;
            }
        }
        self.system_prompt = fresh;
    }
}

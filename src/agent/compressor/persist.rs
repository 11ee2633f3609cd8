//! Making a compaction durable: the one call the agent loop needs. It compacts, archives the
//! replaced rows and stores the new history (one transaction), and saves the summary-failure
//! state, so a resumed session sees exactly what the loop continues with.

use std::sync::Arc;

use crate::llm::{LlmClient, Message};
use crate::sessions::{SessionStore, StoreError};

use super::{Compaction, ContextCompressor, Trigger};

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The new history could not be written; nothing changed in state.db and the caller must
    /// keep its old history.
    #[error("cannot save the compacted conversation: {0}")]
    Store(#[from] StoreError),
}

impl ContextCompressor {
    /// Restores this session's saved summary-failure state (call once when resuming).
    pub async fn load_session_state(
        &mut self,
        store: &Arc<SessionStore>,
        session_id: &str,
    ) -> Result<(), CompactError> {
        let id = session_id.to_string();
        let state = store.call(move |s| s.compression_failure(&id)).await?;
        self.restore_failure_state(&state);
        Ok(())
    }

    /// [`Self::compress`], then durably: the active rows of `session_id` are archived
    /// (`active = 0, compacted = 1`, still searchable) and `Compaction::messages` inserted as the
    /// new active history, and the summary-failure state is saved. A no-op compaction writes
    /// nothing. On `Err` state.db is unchanged and the caller keeps `history`.
    pub async fn compress_session(
        &mut self,
        store: &Arc<SessionStore>,
        session_id: &str,
        history: &[Message],
        client: &dyn LlmClient,
        model: &str,
        trigger: Trigger<'_>,
    ) -> Result<Compaction, CompactError> {
        let compaction = self.compress(history, client, model, trigger).await;
        if compaction.is_noop() {
            return Ok(compaction);
        }
        let (id, messages, state) = (
            session_id.to_string(),
            compaction.messages.clone(),
            self.failure_state(),
        );
        store
            .call(move |db| -> Result<(), StoreError> {
                db.archive_and_compact(&id, &messages)?;
                // The history is what matters; a lost failure state only costs one extra attempt.
                if let Err(e) = db.set_compression_failure(&id, &state) {
                    tracing::warn!(error = %e, "cannot save the compression failure state");
                }
                Ok(())
            })
            .await?;
        Ok(compaction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::compressor::CompressorConfig;
    use crate::llm::{FailoverReason, LlmError, LlmStream, Provider, ToolCall};
    use crate::sessions::NewSession;

    /// Every call fails: the fallback path, which needs no scripted stream.
    struct Down(Provider);

    #[async_trait::async_trait]
    impl LlmClient for Down {
        async fn stream(&self, _: crate::llm::ChatRequest) -> Result<LlmStream, LlmError> {
            Err(LlmError::new(FailoverReason::Overloaded, "down"))
        }
        fn provider(&self) -> &Provider {
            &self.0
        }
    }

    /// Counts through a second connection, as another process would see it.
    fn count(path: &std::path::Path, sql: &str) -> i64 {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[tokio::test]
    async fn compaction_is_durable_and_loses_no_row() {
        let dir = tempfile::tempdir().unwrap();
        let db_path = dir.path().join("state.db");
        let store = Arc::new(SessionStore::open(&db_path).unwrap());
        let new = NewSession {
            id: "s".into(),
            source: "cli".into(),
            ..Default::default()
        };
        store.create_session(&new).unwrap();
        let mut history = Vec::new();
        for t in 0..30 {
            let call = ToolCall {
                id: format!("c{t}"),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/m{t}.rs"}}"#),
            };
            history.push(Message::user(format!("fix the quokka bug {t}")));
            history.push(Message::assistant(None, vec![call.clone()]));
            history.push(Message::tool_result(&call, "q".repeat(2_000)));
            history.push(Message::assistant(Some(format!("fixed {t}")), Vec::new()));
        }
        for m in &history {
            store.append_message("s", m).unwrap();
        }
        let rows_before = count(&db_path, "SELECT COUNT(*) FROM messages");

        let cfg = CompressorConfig {
            context_length: 16_000,
            ..CompressorConfig::default()
        };
        let mut c = ContextCompressor::new(cfg);
        let client = Down(Provider::new("custom", "m", "http://127.0.0.1:9/v1", None));
        let out = c
            .compress_session(&store, "s", &history, &client, "m", Trigger::Overflow)
            .await
            .unwrap();
        assert!(out.used_fallback && !out.is_noop());

        let active: Vec<Message> = store
            .messages("s")
            .unwrap()
            .into_iter()
            .map(|m| m.message)
            .collect();
        assert_eq!(active, out.messages);
        assert!(count(&db_path, "SELECT COUNT(*) FROM messages") >= rows_before);
        assert_eq!(
            count(
                &db_path,
                "SELECT COUNT(*) FROM messages WHERE active = 0 AND compacted = 1"
            ),
            rows_before
        );
        let hits = store.search("quokka", 100).unwrap();
        assert!(hits.len() >= 30, "archived originals must stay searchable");

        // A restarted compressor picks up the cooldown and does not call the model.
        let mut again = ContextCompressor::new(CompressorConfig::default());
        again.load_session_state(&store, "s").await.unwrap();
        assert_eq!(again.failure_state(), c.failure_state());
    }
}

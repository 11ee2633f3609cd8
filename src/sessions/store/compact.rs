//! In-place compaction of a session's history: the active rows are archived (`active = 0,
//! compacted = 1`, still found by search) and the compacted history is inserted as new active
//! rows, in one transaction. Nothing is ever deleted.

use rusqlite::{OptionalExtension, params};

use super::error::is_foreign_key_error;
use super::{SessionStore, StoreError, now};
use crate::llm::{Message, ToolCall};

impl SessionStore {
    /// Replaces the session's active history by `compacted` (in that order) without losing any
    /// row: every active row becomes `active = 0, compacted = 1` and each message of `compacted`
    /// is inserted as a new active row. One transaction: on any failure nothing changes.
    /// Returns the new rows' ids. Session counters (`message_count`, `tool_call_count`) are left
    /// alone: the conversation did not grow.
    pub fn archive_and_compact(
        &self,
        session_id: &str,
        compacted: &[Message],
    ) -> Result<Vec<i64>, StoreError> {
        let result = self.write("compact the session history", |tx| {
            let exists: i64 =
                tx.query_row("SELECT COUNT(*) FROM sessions WHERE id = ?1", [session_id], |r| r.get(0))?;
            if exists == 0 {
                return Ok(None);
            }
            tx.execute(
                "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ?1 AND active = 1",
                [session_id],
            )?;
            let mut insert = tx.prepare(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,
                     timestamp, finish_reason, reasoning, observed, active, api_content)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, 1, ?10)",
            )?;
            let t = now();
            let mut ids = Vec::with_capacity(compacted.len());
            for msg in compacted {
                let tool_calls = (!msg.tool_calls.is_empty()).then(|| ToolCall::list_to_json(&msg.tool_calls));
                insert.execute(params![
                    session_id,
                    msg.role.as_str(),
                    msg.content,
                    msg.tool_call_id,
                    tool_calls,
                    msg.tool_name,
                    t,
                    msg.finish_reason,
                    msg.reasoning,
                    msg.api_content
                ])?;
                ids.push(tx.last_insert_rowid());
            }
            Ok(Some(ids))
        });
        match result {
            Ok(Some(ids)) => Ok(ids),
            Ok(None) => Err(StoreError::SessionNotFound(session_id.to_string())),
            Err(e) if is_foreign_key_error(&e) => {
                Err(StoreError::SessionNotFound(session_id.to_string()))
            }
            Err(e) => Err(e),
        }
    }
}

/// The summary-failure state of a session's compressor, kept in `sessions` (Python's columns) so
/// a restart does not hammer a summary model that just failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompressionFailure {
    /// Unix seconds until which the summary model is not asked again.
    pub cooldown_until: Option<f64>,
    /// What went wrong last (already redacted by the caller).
    pub error: Option<String>,
    /// Compactions in a row that had to use the fallback summary.
    pub fallback_streak: u32,
}

impl SessionStore {
    /// Reads the session's compression failure state (defaults when never set).
    pub fn compression_failure(&self, session_id: &str) -> Result<CompressionFailure, StoreError> {
        let row = self.read("read the compression state", |c| {
            c.query_row(
                "SELECT compression_failure_cooldown_until, compression_failure_error,
                        COALESCE(compression_fallback_streak, 0)
                 FROM sessions WHERE id = ?1",
                [session_id],
                |r| {
                    Ok(CompressionFailure {
                        cooldown_until: r.get::<_, Option<f64>>(0).ok().flatten(),
                        error: r.get::<_, Option<String>>(1).ok().flatten(),
                        fallback_streak: u32::try_from(r.get::<_, i64>(2).unwrap_or(0))
                            .unwrap_or(0),
                    })
                },
            )
            .optional()
        })?;
        row.ok_or_else(|| StoreError::SessionNotFound(session_id.to_string()))
    }

    /// Stores the session's compression failure state.
    pub fn set_compression_failure(
        &self,
        session_id: &str,
        state: &CompressionFailure,
    ) -> Result<(), StoreError> {
        let changed = self.write("store the compression state", |tx| {
            tx.execute(
                "UPDATE sessions SET compression_failure_cooldown_until = ?1, compression_failure_error = ?2,
                     compression_fallback_streak = ?3 WHERE id = ?4",
                params![state.cooldown_until, state.error, i64::from(state.fallback_streak), session_id],
            )
        })?;
        if changed == 0 {
            return Err(StoreError::SessionNotFound(session_id.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::NewSession;
    use super::*;
    use crate::llm::Role;

    fn store_with_session() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(&dir.path().join("state.db")).unwrap();
        store
            .create_session(&NewSession {
                id: "s1".into(),
                source: "cli".into(),
                ..Default::default()
            })
            .unwrap();
        (dir, store)
    }

    fn count(store: &SessionStore, sql: &str) -> i64 {
        store.lock().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn archives_everything_and_inserts_the_compacted_history() {
        let (_dir, store) = store_with_session();
        let call = ToolCall {
            id: "c1".into(),
            name: "terminal".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        };
        store
            .append_message("s1", &Message::user("please find the zebrafish config"))
            .unwrap();
        store
            .append_message("s1", &Message::assistant(None, vec![call.clone()]))
            .unwrap();
        store
            .append_message("s1", &Message::tool_result(&call, "zebrafish.toml"))
            .unwrap();
        store
            .append_message("s1", &Message::user("now edit it"))
            .unwrap();
        let before = count(&store, "SELECT COUNT(*) FROM messages");
        let msg_count_before = store.session("s1").unwrap().unwrap().message_count;

        let compacted = vec![
            Message::user("[summary] found the config"),
            Message::user("now edit it"),
        ];
        let ids = store.archive_and_compact("s1", &compacted).unwrap();
        assert_eq!(ids.len(), 2);
        assert!(ids[0] < ids[1]);

        assert_eq!(count(&store, "SELECT COUNT(*) FROM messages"), before + 2);
        assert_eq!(
            count(
                &store,
                "SELECT COUNT(*) FROM messages WHERE active = 0 AND compacted = 1"
            ),
            before
        );
        let active = store.messages("s1").unwrap();
        let texts: Vec<_> = active
            .iter()
            .map(|m| m.message.content.clone().unwrap_or_default())
            .collect();
        assert_eq!(texts, ["[summary] found the config", "now edit it"]);
        assert_eq!(active[0].message.role, Role::User);
        assert_eq!(
            store.session("s1").unwrap().unwrap().message_count,
            msg_count_before
        );

        // The archived originals are still searchable.
        let hits = store.search("zebrafish", 10).unwrap();
        assert!(hits.len() >= 2, "{hits:?}");
        assert!(hits.iter().all(|h| h.session_id == "s1"));

        // A second compaction archives the first compacted set too; rows only ever grow.
        store
            .archive_and_compact("s1", &[Message::user("[summary 2]")])
            .unwrap();
        assert_eq!(count(&store, "SELECT COUNT(*) FROM messages"), before + 3);
        assert_eq!(store.messages("s1").unwrap().len(), 1);
    }

    #[test]
    fn unknown_session_changes_nothing() {
        let (_dir, store) = store_with_session();
        store
            .append_message("s1", &Message::user("keep me"))
            .unwrap();
        let err = store
            .archive_and_compact("nope", &[Message::user("x")])
            .unwrap_err();
        assert!(
            matches!(err, StoreError::SessionNotFound(ref id) if id == "nope"),
            "{err}"
        );
        assert_eq!(count(&store, "SELECT COUNT(*) FROM messages"), 1);
        assert_eq!(store.messages("s1").unwrap().len(), 1);
    }

    #[test]
    fn compression_failure_state_round_trips() {
        let (_dir, store) = store_with_session();
        assert_eq!(
            store.compression_failure("s1").unwrap(),
            CompressionFailure::default()
        );
        let state = CompressionFailure {
            cooldown_until: Some(1_700_000_000.5),
            error: Some("overloaded".into()),
            fallback_streak: 2,
        };
        store.set_compression_failure("s1", &state).unwrap();
        assert_eq!(store.compression_failure("s1").unwrap(), state);
        store
            .set_compression_failure("s1", &CompressionFailure::default())
            .unwrap();
        assert_eq!(
            store.compression_failure("s1").unwrap(),
            CompressionFailure::default()
        );
        assert!(matches!(
            store.compression_failure("nope"),
            Err(StoreError::SessionNotFound(_))
        ));
        assert!(store.set_compression_failure("nope", &state).is_err());
    }
}

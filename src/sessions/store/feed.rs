//! The message feed other programs follow (`hermes mcp serve`'s `events_poll` / `events_wait`):
//! conversation messages after a cursor, where the cursor is the message's row id — durable,
//! monotonic and the same for every reader, so a follower that restarts loses nothing.

use rusqlite::params;

use super::{HIDDEN_SOURCES, SessionStore, StoreError, StoredMessage, rows};

impl SessionStore {
    /// Live user and assistant messages with text (not tool-call-only turns) and an id above `after` (oldest first, at most
    /// `limit`), from visible sessions or only from `session_id`.
    pub fn messages_after(
        &self,
        after: i64,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let hidden = HIDDEN_SOURCES
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",");
        self.read("read new messages", |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {} FROM messages
                 WHERE id > ?1 AND active = 1 AND role IN ('user', 'assistant')
                   AND COALESCE(content, '') <> ''
                   AND (?2 IS NULL OR session_id = ?2)
                   AND session_id IN (SELECT id FROM sessions WHERE source NOT IN ({hidden}))
                 ORDER BY id LIMIT ?3",
                rows::MESSAGE_COLUMNS
            ))?;
            let loaded = stmt
                .query_map(params![after, session_id, limit], rows::stored_message)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(loaded.into_iter().flatten().collect())
        })
    }

    /// The newest message id (0 in an empty database): a follower's "from now on" cursor.
    pub fn latest_message_id(&self) -> Result<i64, StoreError> {
        self.read("read the newest message id", |c| {
            c.query_row("SELECT COALESCE(MAX(id), 0) FROM messages", [], |r| {
                r.get(0)
            })
        })
    }
}

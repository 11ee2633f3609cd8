//! What the MCP server reads from state.db: the conversation list, one conversation, its
//! messages and their attachments, full-text search (the `session_search` engine), the message
//! feed behind `events_poll` / `events_wait`, and the chats `messages_send` can reach.
//!
//! A conversation is named by its gateway session key (`agent:main:telegram:dm:42`) when a chat
//! routes to it, else by its session id; every tool accepts either, so CLI and ACP sessions
//! are readable too. Each function returns the JSON the tool answers with, or a readable error.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::config::Config;
use crate::llm::Role;
use crate::sessions::search::{self, DiscoverOptions};
use crate::sessions::{SessionStore, StoreError, StoredMessage};

/// Characters of one message returned by `messages_read` (Python's cap).
const READ_CHARS: usize = 2000;
/// Characters of one message in an event (Python's cap).
const EVENT_CHARS: usize = 500;
/// Sessions scanned for `conversations_list` before filtering.
const LIST_SCAN: usize = 2000;
/// How often `events_wait` looks for a new message.
const WAIT_TICK: Duration = Duration::from_millis(200);

/// Reads conversations from one state.db.
#[derive(Clone)]
pub struct Conversations {
    pub store: Arc<SessionStore>,
    pub config: Arc<Config>,
}

fn db_error(e: StoreError) -> String {
    format!("cannot read state.db: {e}")
}

/// Local time, ISO 8601 (as Python's `datetime.isoformat()`), or "" for no time.
fn iso(ts: f64) -> String {
    if ts <= 0.0 {
        return String::new();
    }
    let secs = ts.trunc() as i64;
    let nanos = ((ts - ts.trunc()) * 1e9) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string()
        })
        .unwrap_or_default()
}

/// `agent:main:<platform>:<chat_type>:<chat_id>[:…]` → `(platform, chat_type, chat_id)`.
fn key_parts(key: &str) -> Option<(&str, &str, &str)> {
    let mut parts = key.splitn(5, ':');
    let (Some("agent"), Some(_ns), Some(platform), Some(chat_type), Some(chat_id)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    Some((platform, chat_type, chat_id))
}

fn text_of(m: &StoredMessage) -> String {
    m.message.content.clone().unwrap_or_default()
}

impl Conversations {
    async fn db<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(&SessionStore) -> Result<T, StoreError> + Send + 'static,
    {
        self.store.call(f).await.map_err(db_error)
    }

    /// session id → its gateway session key.
    async fn keys_by_session(&self) -> Result<HashMap<String, String>, String> {
        let routes = self.db(|s| s.gateway_routes()).await?;
        let mut map = HashMap::new();
        for (key, id) in routes {
            // Most recently updated route first: keep the first key seen for a session.
            map.entry(id).or_insert(key);
        }
        Ok(map)
    }

    /// The session a conversation key (gateway key, session id or title) names.
    async fn resolve(&self, key: &str) -> Result<crate::sessions::SessionRow, String> {
        let wanted = key.to_string();
        let row = self
            .db(move |s| match s.gateway_routed_session(&wanted)? {
                Some(row) => Ok(Some(row)),
                None => s.find_session(&wanted),
            })
            .await?;
        row.ok_or_else(|| {
            format!("Conversation not found: {key} (conversations_list shows the session keys)")
        })
    }

    pub async fn list(
        &self,
        platform: Option<&str>,
        limit: usize,
        search: Option<&str>,
    ) -> Result<Value, String> {
        let summaries = self.db(|s| s.list_summaries(LIST_SCAN)).await?;
        let keys = self.keys_by_session().await?;
        let needle = search.map(str::to_lowercase).filter(|s| !s.is_empty());
        let mut out = Vec::new();
        for s in summaries {
            if platform.is_some_and(|p| !s.source.eq_ignore_ascii_case(p)) {
                continue;
            }
            let key = keys.get(&s.id).cloned().unwrap_or_else(|| s.id.clone());
            let title = s.title.clone().unwrap_or_default();
            if let Some(n) = &needle {
                let hay = [&key, &title, s.preview.as_deref().unwrap_or_default()];
                if !hay.iter().any(|h| h.to_lowercase().contains(n.as_str())) {
                    continue;
                }
            }
            let chat_type = key_parts(&key).map(|(_, t, _)| t).unwrap_or_default();
            out.push((
                s.last_active,
                json!({
                    "session_key": key,
                    "session_id": s.id,
                    "platform": s.source,
                    "chat_type": chat_type,
                    "display_name": title,
                    "preview": s.preview,
                    "message_count": s.message_count,
                    "updated_at": iso(s.last_active),
                }),
            ));
        }
        out.sort_by(|a, b| b.0.total_cmp(&a.0));
        out.truncate(limit);
        let conversations: Vec<Value> = out.into_iter().map(|(_, v)| v).collect();
        Ok(json!({"count": conversations.len(), "conversations": conversations}))
    }

    pub async fn get(&self, key: &str) -> Result<Value, String> {
        let row = self.resolve(key).await?;
        let keys = self.keys_by_session().await?;
        let session_key = keys.get(&row.id).cloned().unwrap_or_else(|| row.id.clone());
        let (chat_type, chat_id) = key_parts(&session_key)
            .map(|(_, t, c)| (t.to_string(), c.to_string()))
            .unwrap_or_default();
        Ok(json!({
            "session_key": session_key,
            "session_id": row.id,
            "platform": row.source,
            "chat_type": chat_type,
            "chat_id": chat_id,
            "display_name": row.title.clone().unwrap_or_default(),
            "model": row.model,
            "cwd": row.cwd,
            "created_at": iso(row.started_at),
            "ended_at": row.ended_at.map(iso),
            "message_count": row.message_count,
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "total_tokens": row.input_tokens + row.output_tokens,
        }))
    }

    pub async fn read(&self, key: &str, limit: usize) -> Result<Value, String> {
        let row = self.resolve(key).await?;
        let id = row.id.clone();
        let stored = self.db(move |s| s.messages(&id)).await?;
        let visible: Vec<Value> = stored
            .iter()
            .filter(|m| matches!(m.message.role, Role::User | Role::Assistant))
            .filter_map(|m| {
                let text = text_of(m);
                (!text.trim().is_empty()).then(|| {
                    json!({
                        "id": m.id.to_string(),
                        "role": m.message.role.as_str(),
                        "content": crate::util::truncate_chars(&text, READ_CHARS),
                        "timestamp": m.timestamp,
                    })
                })
            })
            .collect();
        let total = visible.len();
        let messages = visible[total.saturating_sub(limit)..].to_vec();
        Ok(json!({
            "session_key": key,
            "session_id": row.id,
            "count": messages.len(),
            "total_in_session": total,
            "messages": messages,
        }))
    }

    /// Media a message points at: `MEDIA:<path>` tags (how hermes hands files to chats) and
    /// image markers of multi-part content.
    pub async fn attachments(&self, key: &str, message_id: &str) -> Result<Value, String> {
        let row = self.resolve(key).await?;
        let id = row.id.clone();
        let stored = self.db(move |s| s.messages(&id)).await?;
        let Some(m) = stored.iter().find(|m| m.id.to_string() == message_id) else {
            return Err(format!(
                "Message not found: {message_id} in {key} (messages_read shows the ids)"
            ));
        };
        let text = text_of(m);
        let mut attachments = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("MEDIA:") {
            rest = &rest[at + "MEDIA:".len()..];
            let path: String = rest
                .trim_start()
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            if !path.is_empty() {
                attachments.push(json!({"type": "media", "path": path}));
            }
        }
        for _ in text.matches("[image]") {
            attachments
                .push(json!({"type": "image", "note": "image content (not stored as a file)"}));
        }
        Ok(json!({
            "message_id": message_id,
            "count": attachments.len(),
            "attachments": attachments,
        }))
    }

    /// Full-text search over every conversation (FTS5 + trigram, as `session_search`).
    pub async fn search(&self, query: &str, limit: usize) -> Result<Value, String> {
        let path = self.store.path().to_path_buf();
        let query = query.to_string();
        let found = crate::util::offload::offload("search conversations", move || {
            let conn = search::open_read(&path)
                .map_err(|e| format!("cannot open {} for reading: {e}", path.display()))?;
            let opts = DiscoverOptions {
                limit,
                window: 4,
                ..DiscoverOptions::default()
            };
            search::discover(&conn, &query, &opts).map_err(|e| format!("search failed: {e}"))
        })
        .await
        .map_err(|e| e.to_string())??;
        serde_json::to_value(found).map_err(|e| format!("cannot encode the results: {e}"))
    }

    /// Messages after `cursor` (the message id), oldest first.
    pub async fn poll(
        &self,
        cursor: i64,
        key: Option<&str>,
        limit: usize,
    ) -> Result<Value, String> {
        let session = match key {
            Some(k) => Some(self.resolve(k).await?.id),
            None => None,
        };
        let keys = self.keys_by_session().await?;
        let after = cursor.max(0);
        let (found, latest) = self
            .db(move |s| {
                Ok((
                    s.messages_after(after, session.as_deref(), limit)?,
                    s.latest_message_id()?,
                ))
            })
            .await?;
        let next = found.last().map(|m| m.id).unwrap_or(after);
        let events: Vec<Value> = found
            .iter()
            .map(|m| {
                json!({
                    "cursor": m.id,
                    "type": "message",
                    "session_key": keys.get(&m.session_id).cloned().unwrap_or_else(|| m.session_id.clone()),
                    "session_id": m.session_id,
                    "role": m.message.role.as_str(),
                    "content": crate::util::truncate_chars(&text_of(m), EVENT_CHARS),
                    "timestamp": m.timestamp,
                    "message_id": m.id.to_string(),
                })
            })
            .collect();
        Ok(json!({"events": events, "next_cursor": next, "latest_cursor": latest}))
    }

    /// The first message after `cursor`, waiting up to `timeout` for one to arrive.
    pub async fn wait(
        &self,
        cursor: i64,
        key: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let polled = self.poll(cursor, key, 1).await?;
            if let Some(event) = polled["events"].get(0) {
                return Ok(json!({"event": event}));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(json!({"event": null, "reason": "timeout"}));
            }
            tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + WAIT_TICK)).await;
        }
    }

    /// Chats hermes has talked in (from the gateway's routes), as `messages_send` targets.
    pub async fn channels(&self, platform: Option<&str>) -> Result<Value, String> {
        let routes = self.db(|s| s.gateway_routes()).await?;
        let configured = crate::gateway::configured(&self.config, None)
            .map(|p| p.names())
            .unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        let mut channels = Vec::new();
        for (key, session_id) in routes {
            let Some((p, chat_type, chat_id)) = key_parts(&key) else {
                continue;
            };
            // The chat id ends where a thread or user suffix begins.
            let chat = chat_id.split(':').next().unwrap_or(chat_id);
            if platform.is_some_and(|want| !p.eq_ignore_ascii_case(want)) || chat.is_empty() {
                continue;
            }
            let target = format!("{p}:{chat}");
            if !seen.insert(target.clone()) {
                continue;
            }
            channels.push(json!({
                "target": target,
                "platform": p,
                "chat_type": chat_type,
                "session_key": key,
                "session_id": session_id,
                "can_send": configured.iter().any(|c| c == p),
            }));
        }
        Ok(json!({"count": channels.len(), "channels": channels}))
    }

    /// Sends through the gateway's platform adapters (the `hermes send` path).
    pub async fn send(&self, target: &str, message: &str) -> Result<Value, String> {
        let chunks = crate::gateway::send::send_text(&self.config, target, message)
            .await
            .map_err(|e| e.to_string())?;
        Ok(json!({"success": true, "target": target, "chunks": chunks}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_split_into_platform_type_and_chat() {
        assert_eq!(
            key_parts("agent:main:telegram:dm:42"),
            Some(("telegram", "dm", "42"))
        );
        assert_eq!(
            key_parts("agent:main:slack:group:C1:T9"),
            Some(("slack", "group", "C1:T9"))
        );
        assert_eq!(key_parts("20260101_120000_abcd"), None);
        assert_eq!(key_parts("agent:main:telegram:dm"), None);
    }

    #[test]
    fn times_are_local_iso_or_empty() {
        assert_eq!(iso(0.0), "");
        assert_eq!(iso(1_700_000_000.5).len(), "2023-11-14T22:13:20".len());
    }
}

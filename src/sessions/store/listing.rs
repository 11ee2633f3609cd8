//! The session list people browse (`hermes sessions list`): each visible session with its
//! title, message count, when it was last active and a preview of its first user message —
//! read in one query, without the system prompt or message bodies beyond the preview.

use super::{HIDDEN_SOURCES, SessionStore, StoreError};

/// Characters of the first user message kept as the preview.
const PREVIEW_CHARS: usize = 80;

#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub source: String,
    pub title: Option<String>,
    pub model: Option<String>,
    pub started_at: f64,
    /// The newest message's time, or the start when there is none.
    pub last_active: f64,
    pub ended_at: Option<f64>,
    pub message_count: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The first user message, on one line, cut to 80 characters.
    pub preview: Option<String>,
}

impl SessionStore {
    /// Newest first (by start), without internal (`subagent`, `tool`) sessions.
    pub fn list_summaries(&self, limit: usize) -> Result<Vec<SessionSummary>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let hidden = HIDDEN_SOURCES
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",");
        self.read("list sessions", |c| {
            c.prepare(&format!(
                "SELECT s.id, s.source, s.title, s.model, s.started_at, s.ended_at,
                        COALESCE(s.message_count, 0), COALESCE(s.input_tokens, 0),
                        COALESCE(s.output_tokens, 0),
                        (SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id),
                        (SELECT substr(m.content, 1, 400) FROM messages m
                          WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.id LIMIT 1)
                 FROM sessions s WHERE s.source NOT IN ({hidden})
                 ORDER BY s.started_at DESC, s.rowid DESC LIMIT ?1"
            ))?
            .query_map([limit], |r| {
                let started_at: f64 = r.get::<_, Option<f64>>(4)?.unwrap_or(0.0);
                let last: Option<f64> = r.get(9)?;
                let preview: Option<String> = r.get(10).ok().flatten();
                Ok(SessionSummary {
                    id: r.get(0)?,
                    source: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    title: r.get(2).ok().flatten(),
                    model: r.get(3).ok().flatten(),
                    started_at,
                    last_active: last.unwrap_or(started_at).max(started_at),
                    ended_at: r.get(5).ok().flatten(),
                    message_count: r.get(6).unwrap_or(0),
                    input_tokens: r.get(7).unwrap_or(0),
                    output_tokens: r.get(8).unwrap_or(0),
                    preview: preview
                        .map(|p| one_line(&super::rows::decode_content(p)))
                        .filter(|p| !p.is_empty()),
                })
            })?
            .collect()
        })
    }
}

/// Whitespace collapsed, cut at [`PREVIEW_CHARS`] with "…".
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > PREVIEW_CHARS {
        format!(
            "{}…",
            crate::util::truncate_chars(&flat, PREVIEW_CHARS - 1).trim_end()
        )
    } else {
        flat
    }
}

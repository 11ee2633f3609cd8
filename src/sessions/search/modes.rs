//! The four ways `session_search` looks at past conversations, on a read connection (read and
//! scroll live in `read`):
//! - **discover** (a query): full-text hits grouped by conversation (lineage root), the best hit
//!   of each of the top N with a window of messages around it (a quarter before, the rest after);
//!   if an AND query finds nothing it is retried as OR;
//! - **browse** (no query): the most recent conversations;
//! - **read** (a session id): one conversation, head and tail when long;
//! - **scroll** (session id + message id): the messages around one message.
//!
//! The caller's own conversation (its lineage) and internal sources (`subagent`, `tool`) never
//! show up in discover or browse.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde::Serialize;

use super::read::window;
use super::{Filter, Token, first_positive_term, parse_query, search_tokens, snippet_around};
use crate::sessions::store::HIDDEN_SOURCES;

/// Rows considered before grouping (bounds work on very common words).
const SCAN_LIMIT: usize = 300;
/// Deepest parent chain followed (guards against cycles in hand-edited databases).
const MAX_LINEAGE: usize = 32;

/// Opens state.db for reading only (search never writes; WAL lets it run beside the writer).
pub fn open_read(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// One message shown in a window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WindowMessage {
    pub id: i64,
    pub role: String,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The message the window is centred on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub anchor: bool,
}

/// A conversation's identity for results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    /// Local time the session started, `YYYY-MM-DD HH:MM`.
    pub when: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Parent chain up to the root (nearest parent first), for child sessions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lineage: Vec<String>,
    pub message_count: i64,
    #[serde(skip)]
    pub started_at: f64,
}

/// One discovered conversation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionHit {
    #[serde(flatten)]
    pub session: SessionInfo,
    pub matched_role: String,
    pub match_message_id: i64,
    pub snippet: String,
    pub messages: Vec<WindowMessage>,
    pub messages_before: i64,
    pub messages_after: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Discovery {
    pub query: String,
    pub results: Vec<SessionHit>,
    pub count: usize,
    /// True when the words were not all found together and any-word matching was used.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub broadened: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What discover is asked for.
#[derive(Debug, Clone)]
pub struct DiscoverOptions {
    /// Conversations returned (clamped 1–10).
    pub limit: usize,
    /// Messages shown around the best hit besides the hit itself.
    pub window: usize,
    /// Only these roles match (empty: all, tool output too).
    pub roles: Vec<String>,
    /// The caller's session: its whole lineage is left out.
    pub current_session: Option<String>,
    /// `newest` / `oldest` reorder results by date; anything else keeps relevance order.
    pub sort: Option<String>,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions {
            limit: 3,
            window: 8,
            roles: Vec::new(),
            current_session: None,
            sort: None,
        }
    }
}

/// Full-text discovery; see the module docs.
pub fn discover(
    conn: &Connection,
    query: &str,
    opts: &DiscoverOptions,
) -> rusqlite::Result<Discovery> {
    let limit = opts.limit.clamp(1, 10);
    let mut tokens = parse_query(query);
    let mut result = Discovery {
        query: query.to_string(),
        results: Vec::new(),
        count: 0,
        broadened: false,
        note: None,
    };
    if tokens.is_empty() {
        result.note = Some("the query has no searchable words".into());
        return Ok(result);
    }
    let mut lineage_cache = LineageCache::default();
    let current_root = match &opts.current_session {
        Some(id) => Some(lineage_cache.root(conn, id)?),
        None => None,
    };
    let mut filter = Filter {
        roles: opts.roles.clone(),
        ..Filter::default()
    };
    if let Some(id) = &opts.current_session {
        filter.exclude_sessions.push(id.clone());
        filter
            .exclude_sessions
            .extend(lineage_cache.chain(conn, id)?);
    }
    let mut hits = search_tokens(conn, &tokens, SCAN_LIMIT, &filter, false)?;
    let plain_terms = tokens.iter().all(|t| matches!(t, Token::Term { .. }));
    if hits.is_empty() && plain_terms && tokens.len() > 1 {
        tokens = as_any_word(tokens);
        hits = search_tokens(conn, &tokens, SCAN_LIMIT, &filter, false)?;
        result.broadened = !hits.is_empty();
    }
    // Best hit per conversation, in rank order; cron runs after interactive ones.
    let mut seen: Vec<String> = Vec::new();
    let mut best = Vec::new();
    for hit in hits {
        let root = lineage_cache.root(conn, &hit.session_id)?;
        if current_root.as_deref() == Some(root.as_str()) || seen.contains(&root) {
            continue;
        }
        seen.push(root);
        best.push(hit);
    }
    best.sort_by_key(|h| h.source == "cron");
    best.truncate(limit);
    let needle = first_positive_term(&tokens).unwrap_or_default();
    for hit in best {
        let Some(session) = session_info(conn, &hit.session_id, &mut lineage_cache)? else {
            continue;
        };
        let w = window(
            conn,
            &hit.session_id,
            hit.message_id,
            opts.window / 4,
            opts.window - opts.window / 4,
            &needle,
        )?;
        let anchor_text = w
            .messages
            .iter()
            .find(|m| m.anchor)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        result.results.push(SessionHit {
            session,
            matched_role: hit.role,
            match_message_id: hit.message_id,
            snippet: snippet_around(&anchor_text, &needle),
            messages: w.messages,
            messages_before: w.before,
            messages_after: w.after,
        });
    }
    match opts.sort.as_deref() {
        Some("newest") => result
            .results
            .sort_by(|a, b| b.session.started_at.total_cmp(&a.session.started_at)),
        Some("oldest") => result
            .results
            .sort_by(|a, b| a.session.started_at.total_cmp(&b.session.started_at)),
        _ => {}
    }
    result.count = result.results.len();
    Ok(result)
}

fn as_any_word(tokens: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len() * 2);
    for (i, t) in tokens.into_iter().enumerate() {
        if i > 0 {
            out.push(Token::Or);
        }
        out.push(t);
    }
    out
}

/// Recent conversations (newest first), without internal sources and the caller's lineage.
pub fn browse(
    conn: &Connection,
    limit: usize,
    current_session: Option<&str>,
) -> rusqlite::Result<Vec<SessionInfo>> {
    let limit = limit.clamp(1, 50);
    let mut cache = LineageCache::default();
    let current_root = match current_session {
        Some(id) => Some(cache.root(conn, id)?),
        None => None,
    };
    let hidden = HIDDEN_SOURCES
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let ids: Vec<String> = conn
        .prepare(&format!(
            "SELECT id FROM sessions WHERE source NOT IN ({hidden})
             ORDER BY started_at DESC, rowid DESC LIMIT ?1"
        ))?
        .query_map([(limit + 8) as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::new();
    for id in ids {
        if out.len() >= limit {
            break;
        }
        if let Some(root) = &current_root
            && cache.root(conn, &id)? == *root
        {
            continue;
        }
        if let Some(info) = session_info(conn, &id, &mut cache)? {
            out.push(info);
        }
    }
    Ok(out)
}

pub(super) fn session_info(
    conn: &Connection,
    id: &str,
    cache: &mut LineageCache,
) -> rusqlite::Result<Option<SessionInfo>> {
    let row = conn
        .query_row(
            "SELECT id, source, title, model, started_at, message_count FROM sessions WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1).unwrap_or(None).unwrap_or_default(),
                    r.get::<_, Option<String>>(2).unwrap_or(None),
                    r.get::<_, Option<String>>(3).unwrap_or(None),
                    r.get::<_, Option<f64>>(4).unwrap_or(None).unwrap_or(0.0),
                    r.get::<_, Option<i64>>(5).unwrap_or(None).unwrap_or(0),
                ))
            },
        )
        .optional()?;
    let Some((id, source, title, model, started_at, message_count)) = row else {
        return Ok(None);
    };
    let lineage = cache.chain(conn, &id)?;
    Ok(Some(SessionInfo {
        session_id: id,
        when: format_when(started_at),
        source,
        title,
        model,
        lineage,
        message_count,
        started_at,
    }))
}

pub(crate) fn format_when(ts: f64) -> String {
    chrono::DateTime::from_timestamp(ts as i64, 0)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "-".to_string())
}

/// Parent lookups, memoised for one call.
#[derive(Default)]
pub(super) struct LineageCache {
    parent: HashMap<String, Option<String>>,
}

impl LineageCache {
    pub(super) fn parent_of(
        &mut self,
        conn: &Connection,
        id: &str,
    ) -> rusqlite::Result<Option<String>> {
        if let Some(p) = self.parent.get(id) {
            return Ok(p.clone());
        }
        let p: Option<String> = conn
            .query_row(
                "SELECT parent_session_id FROM sessions WHERE id = ?1",
                [id],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten()
            .filter(|p| !p.is_empty());
        self.parent.insert(id.to_string(), p.clone());
        Ok(p)
    }

    /// Ancestors of `id`, nearest first (cycles cut).
    pub(super) fn chain(&mut self, conn: &Connection, id: &str) -> rusqlite::Result<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        let mut cur = id.to_string();
        while out.len() < MAX_LINEAGE {
            match self.parent_of(conn, &cur)? {
                Some(p) if p != id && !out.contains(&p) => {
                    out.push(p.clone());
                    cur = p;
                }
                _ => break,
            }
        }
        Ok(out)
    }

    pub(super) fn root(&mut self, conn: &Connection, id: &str) -> rusqlite::Result<String> {
        Ok(self
            .chain(conn, id)?
            .pop()
            .unwrap_or_else(|| id.to_string()))
    }
}

#[cfg(test)]
#[path = "modes_tests.rs"]
mod tests;

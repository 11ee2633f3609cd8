//! Reading stored conversations for `session_search`: one session whole (head + tail when
//! long), the messages around one message, and the window shown around a search hit. Message
//! text is shown as a person reads it (Python's JSON-encoded content unwrapped, tool calls
//! named) and cut to a bounded length, around the match when there is one.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::modes::{LineageCache, SessionInfo, WindowMessage, session_info};

/// Longest text of one message in a window; the anchor message shows the part with the match.
const MESSAGE_CHARS: usize = 600;
const ANCHOR_CHARS: usize = 1_500;
/// A read shows the whole conversation up to this many messages, else head + tail.
const READ_HEAD: usize = 20;
const READ_TAIL: usize = 10;
/// Prefix Python Hermes puts before JSON-encoded message content.
const CONTENT_JSON_PREFIX: &str = "\0json:";

/// One conversation read whole (or head + tail when long).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionRead {
    #[serde(flatten)]
    pub session: SessionInfo,
    pub messages: Vec<WindowMessage>,
    /// Messages left out between head and tail (scroll to see them).
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Reads a session by id, unique id prefix, or title; `@session:<profile>/<id>` links work too.
pub fn read(conn: &Connection, id: &str) -> rusqlite::Result<Option<SessionRead>> {
    let Some(id) = resolve_id(conn, id)? else {
        return Ok(None);
    };
    let mut cache = LineageCache::default();
    let Some(session) = session_info(conn, &id, &mut cache)? else {
        return Ok(None);
    };
    let all = messages(conn, &id, "1 = 1", None, i64::MAX, MESSAGE_CHARS)?;
    let total = all.len();
    let (messages, omitted) = if total > READ_HEAD + READ_TAIL {
        let mut shown: Vec<WindowMessage> = all[..READ_HEAD].to_vec();
        shown.extend_from_slice(&all[total - READ_TAIL..]);
        (shown, (total - READ_HEAD - READ_TAIL) as i64)
    } else {
        (all, 0)
    };
    Ok(Some(SessionRead {
        session,
        messages,
        omitted,
    }))
}

/// The messages around one message of a session.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Scroll {
    #[serde(flatten)]
    pub session: SessionInfo,
    pub messages: Vec<WindowMessage>,
    pub messages_before: i64,
    pub messages_after: i64,
}

pub fn scroll(
    conn: &Connection,
    id: &str,
    around: i64,
    radius: usize,
) -> rusqlite::Result<Option<Scroll>> {
    let Some(id) = resolve_id(conn, id)? else {
        return Ok(None);
    };
    let mut cache = LineageCache::default();
    let Some(session) = session_info(conn, &id, &mut cache)? else {
        return Ok(None);
    };
    let radius = radius.clamp(1, 25);
    let w = window(conn, &id, around, radius, radius, "")?;
    Ok(Some(Scroll {
        session,
        messages: w.messages,
        messages_before: w.before,
        messages_after: w.after,
    }))
}

/// Exact id, `@session:profile/id` link, unique id prefix, then exact title.
fn resolve_id(conn: &Connection, raw: &str) -> rusqlite::Result<Option<String>> {
    let mut id = raw.trim();
    if let Some(rest) = id.strip_prefix("@session:") {
        id = rest.rsplit('/').next().unwrap_or(rest);
    }
    if id.is_empty() {
        return Ok(None);
    }
    let exact: Option<String> = conn
        .query_row("SELECT id FROM sessions WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    if exact.is_some() {
        return Ok(exact);
    }
    let escaped = crate::sessions::store::like_escape(id);
    let prefixed: Vec<String> = conn
        .prepare("SELECT id FROM sessions WHERE id LIKE ?1 ESCAPE '\\' LIMIT 2")?
        .query_map([format!("{escaped}%")], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if prefixed.len() == 1 {
        return Ok(prefixed.into_iter().next());
    }
    conn.query_row(
        "SELECT id FROM sessions WHERE title = ?1 ORDER BY started_at DESC LIMIT 1",
        [id],
        |r| r.get(0),
    )
    .optional()
}

pub(super) struct Window {
    pub(super) messages: Vec<WindowMessage>,
    pub(super) before: i64,
    pub(super) after: i64,
}

/// `before` messages before `anchor`, the anchor, `after` messages after it, plus how many
/// visible messages lie outside the window on each side.
pub(super) fn window(
    conn: &Connection,
    session: &str,
    anchor: i64,
    before: usize,
    after: usize,
    needle: &str,
) -> rusqlite::Result<Window> {
    let mut prev = messages(
        conn,
        session,
        "id < ?2 ORDER BY id DESC",
        Some(anchor),
        before as i64,
        MESSAGE_CHARS,
    )?;
    prev.reverse();
    let mut this = messages(conn, session, "id = ?2", Some(anchor), 1, usize::MAX)?;
    for m in &mut this {
        m.anchor = true;
    }
    let next = messages(
        conn,
        session,
        "id > ?2",
        Some(anchor),
        after as i64,
        MESSAGE_CHARS,
    )?;
    let first = prev
        .first()
        .or(this.first())
        .map(|m| m.id)
        .unwrap_or(anchor);
    let last = next.last().or(this.last()).map(|m| m.id).unwrap_or(anchor);
    let count = |cond: &str, id: i64| -> rusqlite::Result<i64> {
        conn.query_row(
            &format!(
                "SELECT COUNT(*) FROM messages WHERE session_id = ?1 AND (active = 1 OR compacted = 1) AND {cond}"
            ),
            params![session, id],
            |r| r.get(0),
        )
    };
    let before_count = count("id < ?2", first)?;
    let after_count = count("id > ?2", last)?;
    let mut messages = prev;
    for mut m in this {
        m.content = excerpt(&m.content, needle, ANCHOR_CHARS);
        messages.push(m);
    }
    messages.extend(next);
    Ok(Window {
        messages,
        before: before_count,
        after: after_count,
    })
}

/// Visible messages of `session` matching `cond` (which may use `?2` = `arg`), in id order
/// unless `cond` orders otherwise, each cut to `max_chars`.
fn messages(
    conn: &Connection,
    session: &str,
    cond: &str,
    arg: Option<i64>,
    limit: i64,
    max_chars: usize,
) -> rusqlite::Result<Vec<WindowMessage>> {
    let order = if cond.contains("ORDER BY") {
        ""
    } else {
        " ORDER BY id"
    };
    let sql = format!(
        "SELECT id, role, content, tool_name, tool_calls FROM messages
         WHERE session_id = ?1 AND (active = 1 OR compacted = 1) AND {cond}{order} LIMIT {limit}"
    );
    let mut stmt = conn.prepare(&sql)?;
    let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<WindowMessage> {
        let id: i64 = r.get(0)?;
        let content: Option<String> = r.get::<_, Option<String>>(2).unwrap_or(None);
        let tool_calls: Option<String> = r.get::<_, Option<String>>(4).unwrap_or(None);
        let text = display_text(content.as_deref(), tool_calls.as_deref());
        Ok(WindowMessage {
            id,
            role: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            content: excerpt(&text, "", max_chars),
            tool_name: r.get::<_, Option<String>>(3).unwrap_or(None),
            anchor: false,
        })
    };
    match arg {
        None => stmt.query_map(params![session], map)?.collect(),
        Some(a) => stmt.query_map(params![session, a], map)?.collect(),
    }
}

/// Content as a person reads it: Python's JSON-encoded content unwrapped, tool calls named.
pub(super) fn display_text(content: Option<&str>, tool_calls: Option<&str>) -> String {
    let text = content
        .map(|c| c.strip_prefix(CONTENT_JSON_PREFIX).unwrap_or(c).to_string())
        .unwrap_or_default();
    let calls = tool_calls
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v.as_array().cloned())
        .map(|list| {
            list.iter()
                .filter_map(|c| {
                    c.pointer("/function/name")
                        .or_else(|| c.get("name"))
                        .and_then(|n| n.as_str())
                        .map(str::to_string)
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    match (text.trim().is_empty(), calls.is_empty()) {
        (_, true) => text,
        (true, false) => format!("[called {}]", calls.join(", ")),
        (false, false) => format!("{text}\n[called {}]", calls.join(", ")),
    }
}

/// At most `max` characters of `text`: all of it, or the stretch around `needle` (a quarter
/// before it), or the head.
pub(crate) fn excerpt(text: &str, needle: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let at = if needle.is_empty() {
        None
    } else {
        text.to_lowercase()
            .find(&needle.to_lowercase())
            .map(|byte| text.get(..byte).map(|p| p.chars().count()).unwrap_or(0))
    };
    let start = at
        .map(|c| c.saturating_sub(max / 4))
        .unwrap_or(0)
        .min(total - max);
    let body: String = text.chars().skip(start).take(max).collect();
    format!(
        "{}{body}{}",
        if start > 0 { "…" } else { "" },
        if start + max < total { "…" } else { "" }
    )
}

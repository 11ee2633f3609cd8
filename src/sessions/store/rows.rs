//! Turning state.db rows into our types and back, tolerant of what older or foreign writers
//! (Python Hermes, hand edits) may have left: wrong column types, NULL counters, tool calls in
//! shapes other than OpenAI's, JSON-encoded multimodal content.

use rusqlite::Row;
use rusqlite::types::ValueRef;

use crate::llm::{Message, Role, ToolCall};
use crate::sessions::store::{SessionRow, StoredMessage};

/// Prefix Python Hermes puts before JSON-encoded (list/dict) message content.
const CONTENT_JSON_PREFIX: &str = "\0json:";

/// Reads any column as text: TEXT as is, numbers formatted, BLOBs decoded lossily.
pub(super) fn text(row: &Row<'_>, idx: &str) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(idx)? {
        ValueRef::Null => None,
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    })
}

/// Reads a counter; NULL or non-numeric values count as 0.
fn int(row: &Row<'_>, idx: &str) -> rusqlite::Result<i64> {
    Ok(match row.get_ref(idx)? {
        ValueRef::Integer(i) => i,
        ValueRef::Real(f) => f as i64,
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0),
        ValueRef::Null | ValueRef::Blob(_) => 0,
    })
}

/// Reads a timestamp; NULL stays `None`, text that is not a number too.
fn real(row: &Row<'_>, idx: &str) -> rusqlite::Result<Option<f64>> {
    Ok(match row.get_ref(idx)? {
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(f) => Some(f),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    })
}

/// The `sessions` columns [`session_row`] reads, for `SELECT {SESSION_COLUMNS} FROM sessions`.
pub(super) const SESSION_COLUMNS: &str = "id, source, model, system_prompt, parent_session_id, \
     title, cwd, billing_provider, billing_base_url, started_at, ended_at, end_reason, \
     message_count, tool_call_count, api_call_count, input_tokens, output_tokens, \
     cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd";

pub(super) fn session_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: text(row, "id")?.unwrap_or_default(),
        source: text(row, "source")?.unwrap_or_default(),
        model: text(row, "model")?,
        system_prompt: text(row, "system_prompt")?,
        parent_session_id: text(row, "parent_session_id")?,
        title: text(row, "title")?,
        cwd: text(row, "cwd")?,
        billing_provider: text(row, "billing_provider")?,
        billing_base_url: text(row, "billing_base_url")?,
        started_at: real(row, "started_at")?.unwrap_or(0.0),
        ended_at: real(row, "ended_at")?,
        end_reason: text(row, "end_reason")?,
        message_count: int(row, "message_count")?,
        tool_call_count: int(row, "tool_call_count")?,
        api_call_count: int(row, "api_call_count")?,
        input_tokens: int(row, "input_tokens")?,
        output_tokens: int(row, "output_tokens")?,
        cache_read_tokens: int(row, "cache_read_tokens")?,
        cache_write_tokens: int(row, "cache_write_tokens")?,
        reasoning_tokens: int(row, "reasoning_tokens")?,
        estimated_cost_usd: real(row, "estimated_cost_usd")?,
    })
}

/// The `messages` columns [`stored_message`] reads.
pub(super) const MESSAGE_COLUMNS: &str = "id, session_id, role, content, tool_call_id, tool_calls, \
     tool_name, timestamp, finish_reason, reasoning, reasoning_content, api_content, active, \
     platform_message_id";

/// Converts one `messages` row. `None` for a role we cannot represent (logged, skipped).
pub(super) fn stored_message(row: &Row<'_>) -> rusqlite::Result<Option<StoredMessage>> {
    let id: i64 = row.get("id")?;
    let role_text = text(row, "role")?.unwrap_or_default();
    let Some(role) = Role::parse(&role_text) else {
        tracing::warn!(message_id = id, role = %role_text, "state.db: skipping message with unknown role");
        return Ok(None);
    };
    let tool_calls = match text(row, "tool_calls")? {
        Some(raw) if !raw.trim().is_empty() => parse_tool_calls(&raw).unwrap_or_else(|| {
            tracing::warn!(
                message_id = id,
                "state.db: unreadable tool_calls JSON; keeping the text only"
            );
            Vec::new()
        }),
        _ => Vec::new(),
    };
    let reasoning = text(row, "reasoning")?
        .filter(|r| !r.is_empty())
        .or(text(row, "reasoning_content")?);
    let message = Message {
        role,
        content: text(row, "content")?.map(decode_content),
        tool_calls,
        tool_call_id: text(row, "tool_call_id")?,
        tool_name: text(row, "tool_name")?,
        reasoning,
        api_content: text(row, "api_content")?,
        finish_reason: text(row, "finish_reason")?,
        platform_message_id: text(row, "platform_message_id")?,
    };
    Ok(Some(StoredMessage {
        id,
        session_id: text(row, "session_id")?.unwrap_or_default(),
        timestamp: real(row, "timestamp")?.unwrap_or(0.0),
        active: int(row, "active")? != 0,
        message,
    }))
}

/// Python stores list/dict content as `"\0json:" + json`; we keep the text parts of a part list
/// (images become a marker), a JSON string as itself, and anything else as the raw JSON.
pub(super) fn decode_content(raw: String) -> String {
    let Some(json) = raw.strip_prefix(CONTENT_JSON_PREFIX) else {
        return raw;
    };
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("type").and_then(|t| t.as_str()) {
                Some("text") => Some(
                    p.get("text")
                        .and_then(|t| t.as_str())
                        .unwrap_or("")
                        .to_string(),
                ),
                Some("image" | "image_url" | "input_image") => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Ok(other) => other.to_string(),
        Err(_) => raw,
    }
}

/// Our own format first, then the looser shapes Python has written over time: `call_id` instead
/// of `id`, `{"name", "arguments"}` without the `function` wrapper, arguments as an object.
pub(super) fn parse_tool_calls(raw: &str) -> Option<Vec<ToolCall>> {
    if let Ok(calls) = ToolCall::list_from_json(raw) {
        return Some(calls);
    }
    let value: serde_json::Value = serde_json::from_str(raw).ok()?;
    let items = match value {
        serde_json::Value::Array(items) => items,
        obj @ serde_json::Value::Object(_) => vec![obj],
        _ => return None,
    };
    items
        .iter()
        .map(|item| {
            let func = item.get("function").unwrap_or(item);
            let name = func.get("name")?.as_str()?.to_string();
            let arguments = match func.get("arguments") {
                None | Some(serde_json::Value::Null) => "{}".to_string(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            let id = ["id", "call_id"]
                .iter()
                .find_map(|k| item.get(*k).and_then(|v| v.as_str()))
                .unwrap_or_default()
                .to_string();
            Some(ToolCall {
                id,
                name,
                arguments,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_in_python_shapes() {
        let full = r#"[{"id": "c1", "call_id": "c1", "response_item_id": "fc_1", "type": "function",
                        "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}]"#;
        let calls = parse_tool_calls(full).unwrap();
        assert_eq!(calls[0].id, "c1");
        assert_eq!(calls[0].arguments, r#"{"command": "ls"}"#);

        let flat = r#"[{"name": "read_file", "arguments": {"path": "a.txt"}}]"#;
        let calls = parse_tool_calls(flat).unwrap();
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].id, "");
        assert_eq!(calls[0].arguments, r#"{"path":"a.txt"}"#);

        let call_id_only = r#"[{"call_id": "x9", "function": {"name": "t"}}]"#;
        let calls = parse_tool_calls(call_id_only).unwrap();
        assert_eq!(
            (calls[0].id.as_str(), calls[0].arguments.as_str()),
            ("x9", "{}")
        );
    }

    #[test]
    fn garbage_tool_calls_are_rejected_not_panicking() {
        for raw in [
            "not json",
            "[1, 2]",
            "{\"function\": 3}",
            "[{\"id\": \"a\"}]",
            "\"str\"",
            "[{",
        ] {
            assert!(parse_tool_calls(raw).is_none(), "{raw}");
        }
    }

    #[test]
    fn python_multimodal_content_keeps_text() {
        let raw = format!(
            "{CONTENT_JSON_PREFIX}{}",
            r#"[{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:x"}}]"#
        );
        assert_eq!(decode_content(raw), "look\n[image]");
        assert_eq!(decode_content(format!("{CONTENT_JSON_PREFIX}\"hi\"")), "hi");
        let broken = format!("{CONTENT_JSON_PREFIX}[oops");
        assert_eq!(decode_content(broken.clone()), broken);
        assert_eq!(decode_content("plain".into()), "plain");
    }
}

//! Translations between hermes and ACP's session updates, kept pure so they are tested alone:
//! a tool call's kind, title and file location; the `todo` list as a plan; the editor's prompt
//! content blocks as the user's text; a stored conversation replayed on `session/load`.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, EmbeddedResourceResource, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, TextContent, ToolCall, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};

use crate::llm::{Message, Role};
use crate::tools::todo::{TodoList, TodoStatus};

/// What kind of work a tool does, for the editor's icon and grouping.
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" => ToolKind::Read,
        "write_file" | "patch" => ToolKind::Edit,
        "search_files" | "session_search" | "tool_search" => ToolKind::Search,
        "terminal" | "execute_code" => ToolKind::Execute,
        "web_extract" | "web_search" => ToolKind::Fetch,
        "todo" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// `read_file src/main.rs`, or the bare name when there is no summary.
pub fn tool_title(name: &str, summary: &str) -> String {
    if summary.is_empty() {
        name.to_string()
    } else {
        format!("{name} {summary}")
    }
}

/// The file a file tool works on (its summary is the path), absolute against `cwd`. Summaries
/// cut short (`…`) name no usable path.
pub fn tool_location(name: &str, summary: &str, cwd: &Path) -> Option<ToolCallLocation> {
    if !matches!(tool_kind(name), ToolKind::Read | ToolKind::Edit)
        || summary.is_empty()
        || summary.ends_with('…')
    {
        return None;
    }
    let path = PathBuf::from(summary);
    let path = if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    };
    Some(ToolCallLocation::new(path))
}

/// A tool call that has started.
pub fn tool_started(id: &str, name: &str, summary: &str, cwd: &Path) -> SessionUpdate {
    let mut call = ToolCall::new(id.to_string(), tool_title(name, summary))
        .kind(tool_kind(name))
        .status(ToolCallStatus::InProgress);
    if let Some(location) = tool_location(name, summary, cwd) {
        call = call.locations(vec![location]);
    }
    SessionUpdate::ToolCall(call)
}

/// A tool call that has ended.
pub fn tool_finished(id: &str, is_error: bool) -> SessionUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new().status(status),
    ))
}

/// The todo list as ACP's plan (cancelled items are left out: a plan has no such state).
pub fn plan(todos: &TodoList) -> SessionUpdate {
    let entries = todos
        .items
        .iter()
        .filter_map(|item| {
            let status = match item.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
                TodoStatus::Cancelled => return None,
            };
            Some(PlanEntry::new(
                item.content.clone(),
                PlanEntryPriority::Medium,
                status,
            ))
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

pub fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text.to_string())))
}

/// The user's message from the editor's content blocks: text as is, an attached file's text
/// inside `<file>` tags, a link to a file as `@path`, media as a note (hermes reads text only).
pub fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                let path = link.uri.strip_prefix("file://").unwrap_or(&link.uri);
                parts.push(format!("@{path}"));
            }
            ContentBlock::Resource(res) => match &res.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    let path = t.uri.strip_prefix("file://").unwrap_or(&t.uri);
                    parts.push(format!("<file path=\"{path}\">\n{}\n</file>", t.text));
                }
                _ => parts.push("[binary attachment omitted: hermes reads text only]".into()),
            },
            _ => parts.push("[media attachment omitted: hermes reads text only]".into()),
        }
    }
    parts.join("\n\n")
}

/// A stored conversation as the updates that show it again (`session/load`): user and
/// assistant text, and each tool call with its final status.
pub fn replay(history: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for m in history {
        let text = m.content.as_deref().unwrap_or_default();
        match m.role {
            Role::User if !text.is_empty() => {
                out.push(SessionUpdate::UserMessageChunk(text_chunk(text)));
            }
            Role::Assistant => {
                if !text.is_empty() {
                    out.push(SessionUpdate::AgentMessageChunk(text_chunk(text)));
                }
                for call in &m.tool_calls {
                    let summary = summary_of(&call.arguments);
                    out.push(tool_started(&call.id, &call.name, &summary, cwd));
                }
            }
            Role::Tool => {
                if let Some(id) = &m.tool_call_id {
                    let failed = text.starts_with("Error") || text.starts_with("error");
                    out.push(tool_finished(id, failed));
                }
            }
            _ => {}
        }
    }
    out
}

/// The argument a replayed call is shown by (the path or command), as the live summary is.
fn summary_of(arguments: &str) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(arguments) else {
        return String::new();
    };
    ["command", "path", "pattern", "query", "name"]
        .iter()
        .find_map(|k| value.get(*k).and_then(|v| v.as_str()))
        .and_then(|s| s.lines().next())
        .map(str::to_string)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::todo::TodoItem;

    #[test]
    fn file_tools_point_at_their_file() {
        let cwd = Path::new("/work/p");
        let loc = tool_location("read_file", "src/main.rs", cwd).unwrap();
        assert_eq!(loc.path, PathBuf::from("/work/p/src/main.rs"));
        let loc = tool_location("patch", "/abs/x.rs", cwd).unwrap();
        assert_eq!(loc.path, PathBuf::from("/abs/x.rs"));
        assert!(tool_location("terminal", "ls", cwd).is_none());
        assert!(tool_location("read_file", "very/long/pa…", cwd).is_none());
    }

    #[test]
    fn todos_become_a_plan_without_cancelled_items() {
        let item = |id: &str, status| TodoItem {
            id: id.into(),
            content: format!("task {id}"),
            status,
        };
        let list = TodoList {
            items: vec![
                item("1", TodoStatus::Completed),
                item("2", TodoStatus::InProgress),
                item("3", TodoStatus::Cancelled),
            ],
        };
        let SessionUpdate::Plan(plan) = plan(&list) else {
            panic!("not a plan")
        };
        assert_eq!(plan.entries.len(), 2);
        assert_eq!(plan.entries[1].status, PlanEntryStatus::InProgress);
    }

    #[test]
    fn prompt_blocks_become_one_text() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("explain")),
            ContentBlock::ResourceLink(agent_client_protocol::v1::schema::ResourceLink::new(
                "main.rs",
                "file:///p/main.rs",
            )),
        ];
        assert_eq!(prompt_text(&blocks), "explain\n\n@/p/main.rs");
    }
}

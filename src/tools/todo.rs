//! The `todo` tool: a per-session task list (being written).

/// The session's task list (kept in `SessionScratch`).
#[derive(Debug, Default, Clone)]
pub struct TodoList {
    pub items: Vec<TodoItem>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TodoItem {
    pub id: String,
    pub content: String,
    pub status: String,
}

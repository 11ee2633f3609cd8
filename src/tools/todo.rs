//! The `todo` tool: the session's task list, kept in `SessionScratch` (memory only, lives as long
//! as the agent). No arguments reads it; `todos` replaces it, or with `merge` updates items by id
//! and appends new ones. Answers with the whole list, compactly, and the counts per status.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::registry::{ToolContext, ToolError, TypedTool};

/// Most items in the list (reference §6.3).
pub const MAX_ITEMS: usize = 256;
/// Longest content (and id), in characters.
pub const MAX_ITEM_CHARS: usize = 4_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl TodoStatus {
    fn mark(self) -> &'static str {
        match self {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
            TodoStatus::Cancelled => "[-]",
        }
    }

    fn label(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Cancelled => "cancelled",
        }
    }
}

/// The session's task list (kept in `SessionScratch`).
#[derive(Debug, Default, Clone)]
pub struct TodoList {
    pub items: Vec<TodoItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TodoItem {
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

impl TodoList {
    /// The list as the model sees it: a count line, then one line per item.
    pub fn render(&self) -> String {
        if self.items.is_empty() {
            return "The todo list is empty.".into();
        }
        let counts: Vec<String> = [
            TodoStatus::Completed,
            TodoStatus::InProgress,
            TodoStatus::Pending,
            TodoStatus::Cancelled,
        ]
        .iter()
        .filter_map(|s| {
            let n = self.items.iter().filter(|i| i.status == *s).count();
            (n > 0).then(|| format!("{n} {}", s.label()))
        })
        .collect();
        let mut out = format!("Todo list ({}): {}\n", self.items.len(), counts.join(", "));
        for item in &self.items {
            out.push_str(&format!(
                "{} {}: {}\n",
                item.status.mark(),
                item.id,
                item.content
            ));
        }
        out
    }

    /// Applies one call's items: replace the list, or (merge) update by id and append.
    /// On error the list is left unchanged.
    fn apply(&mut self, inputs: Vec<TodoInput>, merge: bool) -> Result<(), String> {
        let mut seen = HashSet::new();
        for input in &inputs {
            validate(input)?;
            if !seen.insert(input.id.as_str()) {
                return Err(format!(
                    "id `{}` appears twice in todos; give each item a unique id",
                    input.id
                ));
            }
        }
        let mut next = if merge {
            self.items.clone()
        } else {
            Vec::new()
        };
        for input in inputs {
            match next.iter_mut().find(|i| i.id == input.id) {
                Some(existing) => {
                    if let Some(content) = input.content {
                        existing.content = content;
                    }
                    if let Some(status) = input.status {
                        existing.status = status;
                    }
                }
                None => {
                    let Some(content) = input.content.filter(|c| !c.trim().is_empty()) else {
                        return Err(format!(
                            "new item `{}` has no content; every new item needs content (status defaults to pending)",
                            input.id
                        ));
                    };
                    next.push(TodoItem {
                        id: input.id,
                        content,
                        status: input.status.unwrap_or(TodoStatus::Pending),
                    });
                }
            }
        }
        if next.len() > MAX_ITEMS {
            return Err(format!(
                "the list would have {} items; the limit is {MAX_ITEMS}: remove completed or cancelled items (send the list without merge)",
                next.len()
            ));
        }
        self.items = next;
        Ok(())
    }
}

fn validate(input: &TodoInput) -> Result<(), String> {
    if input.id.trim().is_empty() {
        return Err("an item has an empty id; give every item an id".into());
    }
    if input.id.chars().count() > MAX_ITEM_CHARS {
        return Err(format!(
            "an item id is longer than {MAX_ITEM_CHARS} characters; use short ids"
        ));
    }
    if let Some(content) = &input.content {
        let n = content.chars().count();
        if n > MAX_ITEM_CHARS {
            return Err(format!(
                "item `{}` has {n} characters; the limit is {MAX_ITEM_CHARS}: keep items short",
                crate::util::truncate_chars(&input.id, 40)
            ));
        }
    }
    Ok(())
}

pub struct Todo;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoArgs {
    /// Omit to read the list
    pub todos: Option<Vec<TodoInput>>,
    /// Update by id and append, instead of replacing
    #[serde(default)]
    pub merge: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoInput {
    pub id: String,
    pub content: Option<String>,
    // Shown as a plain enum: a `null` member in the schema confuses some providers.
    #[serde(default)]
    #[schemars(with = "TodoStatus")]
    pub status: Option<TodoStatus>,
}

impl TypedTool for Todo {
    type Args = TodoArgs;
    const NAME: &'static str = "todo";
    const TOOLSET: &'static str = "todo";
    const DESCRIPTION: &'static str = "Session task list for multi-step work. Keep one item in_progress; mark items done as you go.";

    async fn run(&self, args: TodoArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        if args.todos.is_none() && args.merge {
            return Err(ToolError::Respond(
                "merge=true needs todos to merge; call with no arguments to read the list".into(),
            ));
        }
        let mut list = ctx
            .scratch
            .todos
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(todos) = args.todos {
            if todos.len() > MAX_ITEMS {
                return Err(ToolError::Respond(format!(
                    "{} items sent; the limit is {MAX_ITEMS}",
                    todos.len()
                )));
            }
            list.apply(todos, args.merge).map_err(ToolError::Respond)?;
        }
        Ok(list.render())
    }
}

crate::register_tool!(Todo);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::env;
    use serde_json::json;

    #[tokio::test]
    async fn read_replace_and_merge() {
        let t = env();
        assert_eq!(t.ok("todo", json!({})).await, "The todo list is empty.");
        let out = t
            .ok(
                "todo",
                json!({"todos": [
                    {"id": "1", "content": "Set up", "status": "completed"},
                    {"id": "2", "content": "Write tests", "status": "in_progress"},
                    {"id": "3", "content": "Ship"}
                ]}),
            )
            .await;
        assert_eq!(
            out,
            "Todo list (3): 1 completed, 1 in progress, 1 pending\n[x] 1: Set up\n[>] 2: Write tests\n[ ] 3: Ship\n"
        );
        let out = t
            .ok(
                "todo",
                json!({"merge": true, "todos": [
                    {"id": "2", "status": "completed"},
                    {"id": "4", "content": "Old idea", "status": "cancelled"}
                ]}),
            )
            .await;
        assert_eq!(
            out,
            "Todo list (4): 2 completed, 1 pending, 1 cancelled\n[x] 1: Set up\n[x] 2: Write tests\n[ ] 3: Ship\n[-] 4: Old idea\n"
        );
        // Reading (empty arguments string too) returns the same list.
        let read = t.call_raw("todo", "").await;
        assert_eq!(read.content, out);
        // Replacing drops everything not sent.
        let out = t
            .ok(
                "todo",
                json!({"todos": [{"id": "a", "content": "Only", "status": "pending"}]}),
            )
            .await;
        assert_eq!(out, "Todo list (1): 1 pending\n[ ] a: Only\n");
        assert_eq!(t.ctx.scratch.todos.lock().unwrap().items.len(), 1);
    }

    #[tokio::test]
    async fn limits_and_bad_items_leave_the_list_unchanged() {
        let t = env();
        t.ok("todo", json!({"todos": [{"id": "1", "content": "keep"}]}))
            .await;
        let many: Vec<_> = (0..257)
            .map(|i| json!({"id": i.to_string(), "content": "x"}))
            .collect();
        let err = t.err("todo", json!({"todos": many})).await;
        assert!(err.contains("limit is 256"), "{err}");
        let err = t
            .err(
                "todo",
                json!({"todos": [{"id": "1", "content": "y".repeat(4001)}]}),
            )
            .await;
        assert!(err.contains("4001 characters"), "{err}");
        let err = t
            .err(
                "todo",
                json!({"todos": [{"id": "1", "content": "a"}, {"id": "1", "content": "b"}]}),
            )
            .await;
        assert!(err.contains("appears twice"), "{err}");
        let err = t
            .err("todo", json!({"merge": true, "todos": [{"id": "9"}]}))
            .await;
        assert!(err.contains("no content"), "{err}");
        let err = t
            .err(
                "todo",
                json!({"todos": [{"id": "1", "content": "a", "status": "done"}]}),
            )
            .await;
        assert!(err.contains("status"), "{err}");
        // 256 exactly is fine; merging one more is not.
        let full: Vec<_> = (0..256)
            .map(|i| json!({"id": i.to_string(), "content": "x"}))
            .collect();
        t.ok("todo", json!({"todos": full})).await;
        let err = t
            .err(
                "todo",
                json!({"merge": true, "todos": [{"id": "new", "content": "x"}]}),
            )
            .await;
        assert!(err.contains("would have 257 items"), "{err}");
        assert_eq!(t.ctx.scratch.todos.lock().unwrap().items.len(), 256);
        let exactly = "z".repeat(4000);
        t.ok("todo", json!({"todos": [{"id": "1", "content": exactly}]}))
            .await;
    }

    #[test]
    fn status_names_match_python_hermes() {
        let s: Vec<TodoStatus> =
            serde_json::from_str(r#"["pending","in_progress","completed","cancelled"]"#).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(
            serde_json::to_string(&TodoStatus::InProgress).unwrap(),
            r#""in_progress""#
        );
    }
}
